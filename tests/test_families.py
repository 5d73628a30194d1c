"""The families HIPIFY does not map (cuSPARSELt, nvJPEG, NPP, cuFile, NVML, CUTLASS, libcu++,
and CUDA features such as clusters and asynchronous copies) are known to the rule set: a
scan of code that uses them lists each name with its HIP counterpart and status, and never
reports such a name as unknown. Also: the unknown-api hazard across a project."""

from __future__ import annotations

from pathlib import Path

import pytest

import portcheck

from conftest import FIXTURES

FAMILIES = FIXTURES / "families"


def _usages(name: str) -> dict[str, tuple[str, str | None, str]]:
    """name -> (family, HIP name, HIP status) of every use in one fixture file."""
    report = portcheck.scan(FAMILIES / name)
    return {u.name: (u.family, u.hip, u.status.hip.value) for u in report.uses}


def _slugs(name: str) -> set[str]:
    return {f.slug for f in portcheck.scan(FAMILIES / name).findings}


@pytest.mark.parametrize(
    ("fixture", "expected"),
    [
        (
            "sparse_gemm.cu",
            {
                "cusparseLt.h": ("cusparselt", "hipsparselt/hipsparselt.h", "supported"),
                "cusparseLtInit": ("cusparselt", "hipsparseLtInit", "supported"),
                "cusparseLtSpMMAPrune2": ("cusparselt", "hipsparseLtSpMMAPrune2", "supported"),
                "CUSPARSELT_SPARSITY_50_PERCENT": (
                    "cusparselt",
                    "HIPSPARSELT_SPARSITY_50_PERCENT",
                    "supported",
                ),
                # hipsparselt.h has no counterpart of this one
                "cusparseLtGetErrorString": ("cusparselt", None, "unsupported"),
            },
        ),
        (
            "jit_link.cpp",
            {
                "nvvmCompileProgram": ("nvvm", None, "unsupported"),
                "nvvmProgram": ("nvvm", None, "unsupported"),
                "NVVM_SUCCESS": ("nvvm", None, "unsupported"),
                "nvJitLinkCreate": ("nvjitlink", None, "unsupported"),
                "NVJITLINK_INPUT_LTOIR": ("nvjitlink", None, "unsupported"),
                "nvJitLink.h": ("nvjitlink", "hip/hiprtc.h", "unsupported"),
                "cublasXtSgemm": ("cublas", None, "unsupported"),
                "cublasXtHandle_t": ("cublas", None, "unsupported"),
                "cublasXt.h": ("cublas", None, "unsupported"),
                # plain cuBLAS in the same file keeps its hipBLAS counterpart
                "CUBLAS_OP_N": ("cublas", "HIPBLAS_OP_N", "supported"),
            },
        ),
        (
            "fft_errors.cpp",
            {
                "CUFFT_NOT_SUPPORTED": ("cufft", "HIPFFT_NOT_SUPPORTED", "supported"),
                "CUFFT_MISSING_DEPENDENCY": ("cufft", None, "unsupported"),
                "CUFFT_NVJITLINK_FAILURE": ("cufft", None, "unsupported"),
                "CUFFT_NVSHMEM_FAILURE": ("cufft", None, "unsupported"),
            },
        ),
        (
            "jpeg_decode.cpp",
            {
                "nvjpeg.h": ("nvjpeg", "rocjpeg/rocjpeg.h", "unsupported"),
                "nvjpegDecode": ("nvjpeg", None, "unsupported"),
                "nvjpegHandle_t": ("nvjpeg", None, "unsupported"),
                "NVJPEG_OUTPUT_RGBI": ("nvjpeg", None, "unsupported"),
            },
        ),
        (
            "box_filter.cpp",
            {
                "npp.h": ("npp", None, "unsupported"),
                "nppiMalloc_8u_C1": ("npp", None, "unsupported"),
                "Npp8u": ("npp", None, "unsupported"),
                "NppStreamContext": ("npp", None, "unsupported"),
                "NPP_BORDER_REPLICATE": ("npp", None, "unsupported"),
            },
        ),
        (
            "gds_read.cpp",
            {
                "cufile.h": ("cufile", "hipfile.h", "partial"),
                "cuFileRead": ("cufile", "hipFileRead", "partial"),
                "CUfileHandle_t": ("cufile", "hipFileHandle_t", "partial"),
                "CU_FILE_SUCCESS": ("cufile", "hipFileSuccess", "partial"),
                "CU_FILE_HANDLE_TYPE_OPAQUE_FD": (
                    "cufile",
                    "hipFileHandleTypeOpaqueFD",
                    "partial",
                ),
            },
        ),
        (
            "shmem_halo.cu",
            {
                "nvshmem.h": ("nvshmem", "rocshmem/rocshmem.hpp", "partial"),
                "nvshmem_malloc": ("nvshmem", "rocshmem::rocshmem_malloc", "partial"),
                # block scope is rocSHMEM's work-group scope, as a suffix or after the prefix
                "nvshmemx_float_put_nbi_block": (
                    "nvshmem",
                    "rocshmem::rocshmem_float_put_nbi_wg",
                    "partial",
                ),
                "nvshmemx_barrier_all_block": (
                    "nvshmem",
                    "rocshmem::rocshmem_wg_barrier_all",
                    "partial",
                ),
                "NVSHMEM_CMP_EQ": ("nvshmem", "rocshmem::ROCSHMEM_CMP_EQ", "partial"),
                # rocSHMEM waits on ulong/ulonglong words, and has no stream-ordered calls
                "nvshmem_uint64_wait_until": ("nvshmem", None, "unsupported"),
                "nvshmemx_barrier_all_on_stream": ("nvshmem", None, "unsupported"),
            },
        ),
        (
            "expert_exchange.cpp",
            {
                # in RCCL under NCCL's name, or (all-to-all) under RCCL's spelling
                "ncclScatter": ("nccl", "ncclScatter", "supported"),
                "ncclAlltoAll": ("nccl", "ncclAllToAll", "supported"),
                # symmetric-memory windows: not in the RCCL the rules were read from
                "ncclCommWindowRegister": ("nccl", None, "unsupported"),
                "ncclWindow_t": ("nccl", None, "unsupported"),
                "NCCL_WIN_COLL_SYMMETRIC": ("nccl", None, "unsupported"),
            },
        ),
        (
            "cpu_mapped_flags.cpp",
            {
                "gdrapi.h": ("gdrcopy", None, "unsupported"),
                "gdr_open": ("gdrcopy", None, "unsupported"),
                "gdr_pin_buffer": ("gdrcopy", None, "unsupported"),
                "gdr_mh_t": ("gdrcopy", None, "unsupported"),
            },
        ),
        (
            "gpu_monitor.cpp",
            {
                "nvml.h": ("nvml", "amd_smi/amdsmi.h", "unsupported"),
                "nvmlInit": ("nvml", None, "unsupported"),  # nvml.h's alias of nvmlInit_v2
                "nvmlDeviceGetMemoryInfo": ("nvml", None, "unsupported"),
                "nvmlDevice_t": ("nvml", None, "unsupported"),
                "NVML_SUCCESS": ("nvml", None, "unsupported"),
            },
        ),
        (
            "cxx_sync.cu",
            {
                "cuda::atomic_ref": ("libcudacxx", "cuda::atomic_ref", "partial"),
                "cuda::barrier": ("libcudacxx", "cuda::barrier", "partial"),
                "cuda::std": ("libcudacxx", "cuda::std", "partial"),
                "cuda::make_pipeline": ("libcudacxx", None, "unsupported"),
                "cuda/pipeline": ("libcudacxx", None, "unsupported"),
                "cutlass": ("cutlass", None, "unsupported"),
                "cutlass/numeric_types.h": ("cutlass", None, "unsupported"),
                "__pipeline_memcpy_async": ("device", None, "unsupported"),
                "__cvta_generic_to_shared": ("device", None, "unsupported"),
                "cooperative_groups::this_cluster": ("cooperative_groups", None, "unsupported"),
                "cudaGridDependencySynchronize": ("runtime", None, "unsupported"),
                "cudaTriggerProgrammaticLaunchCompletion": ("runtime", None, "unsupported"),
            },
        ),
    ],
)
def test_family_names_are_classified_with_their_hip_counterpart(fixture, expected):
    found = _usages(fixture)
    assert {name: found.get(name) for name in expected} == expected
    assert "unknown-api" not in _slugs(fixture)


@pytest.mark.parametrize(
    "fixture",
    [
        "jpeg_decode.cpp",
        "box_filter.cpp",
        "gpu_monitor.cpp",
        "cxx_sync.cu",
        "shmem_halo.cu",
        "cpu_mapped_flags.cpp",
    ],
)
def test_libraries_without_a_drop_in_are_a_library_port(fixture):
    assert "library-port" in _slugs(fixture)


def test_nvshmem_is_one_port_to_rocshmem_and_the_projects_own_names_are_not_its():
    """NVSHMEM's generated names are known one by one (tools/families/nvshmem.yaml), so a
    member `nvshmem_rank` and the project's `nvshmem_fence_neighbours` stay the project's:
    one library-port finding names rocSHMEM, and nothing is an unknown API."""
    report = portcheck.scan(FAMILIES / "shmem_halo.cu")
    names = {u.name for u in report.uses}
    assert "nvshmem_rank" not in names and "nvshmem_fence_neighbours" not in names
    ports = [f for f in report.findings if f.slug == "library-port"]
    assert len(ports) == 1 and "rocSHMEM" in ports[0].message and ports[0].span.line == 5
    assert not [f for f in report.findings if f.slug == "unknown-api"]


def test_an_npp_primitive_the_rules_do_not_list_is_left_to_library_port():
    """The ~12,400 image/signal primitives are not listed one by one (see
    tools/families/npp.yaml): nppiFilterBoxBorder_8u_C1R_Ctx is an NPP use, reported with
    the library, not as an unknown API."""
    report = portcheck.scan(FAMILIES / "box_filter.cpp")
    primitive = [u for u in report.uses if u.name == "nppiFilterBoxBorder_8u_C1R_Ctx"]
    assert [(u.family, u.rule) for u in primitive] == [("npp", None)]
    ports = [f for f in report.findings if f.slug == "library-port"]
    assert len(ports) == 1 and "npp" in ports[0].message
    assert not [f for f in report.findings if f.slug == "unknown-api"]


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


CHECK_HEADER = """\
#pragma once
#include <cuda_runtime.h>
#include <cstdio>
#define CUDA_CHECK(x) do { cudaError_t e_ = (x); if (e_) std::printf("%d\\n", (int)e_); } while (0)
inline void cudaCheckError() { CUDA_CHECK(cudaGetLastError()); }
int cudaDeviceWarmupSpins(int device);
"""

KERNELS = """\
#include "check.cuh"
__global__ void fill(float* v, float x) { v[threadIdx.x] = x; }
void run(float* d, cudaStream_t s) {
  cudaStream_t cuda_stream = s;
  fill<<<1, 64, 0, cuda_stream>>>(d, 1.0f);
  CUDA_CHECK(cudaStreamSynchronize(cuda_stream));
  cudaCheckError();
  cudaDeviceWarmupSpins(0);
  cudaStreamFlushPendingWork(cuda_stream);
  cudaStreamFlushPendingWork(s);
}
"""

OTHER = """\
#include <cuda_runtime.h>
void other(cudaStream_t s) { cudaStreamFlushPendingWork(s); }
"""


def test_unknown_api_is_once_per_name_per_file_and_never_for_project_names(tmp_path):
    """CUDA_CHECK, cudaCheckError and cudaDeviceWarmupSpins are defined (or declared) in
    the project's header, `cuda_stream` is a local: none is reported. The made-up
    cudaStreamFlushPendingWork is, once in each file that uses it."""
    root = _write(
        tmp_path, {"check.cuh": CHECK_HEADER, "kernels.cu": KERNELS, "other.cu": OTHER}
    )
    report = portcheck.scan(root, cache=False)
    unknown = sorted((f.path, f.span.line) for f in report.findings if f.slug == "unknown-api")
    assert unknown == [("kernels.cu", 9), ("other.cu", 2)]
    messages = [f.message for f in report.findings if f.slug == "unknown-api"]
    assert all("cudaStreamFlushPendingWork" in m for m in messages)
    assert "2 uses in this file" in messages[0]
    names = {u.name for u in report.uses}
    assert not names & {"CUDA_CHECK", "cudaCheckError", "cuda_stream", "cudaDeviceWarmupSpins"}


def test_an_unsupported_name_says_what_the_rules_know_of_it_on_amd():
    """The fix of an unsupported-api finding is the rule's note on HIP when it has one: for
    NCCL's symmetric-memory windows, which RCCL release the rule set read, not the hazard's
    general advice."""
    report = portcheck.scan(FAMILIES / "expert_exchange.cpp", cache=False)
    register = [f for f in report.findings if "`ncclCommWindowRegister`" in f.message]
    assert len(register) == 1 and register[0].slug == "unsupported-api"
    assert "RCCL's nccl.h.in at 0cbce2a7" in register[0].fix
