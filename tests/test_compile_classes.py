"""Every failure class `compile` reports, each from a failure of the kind real projects
hit, built with the real hipcc (Debian's ROCm 5.2). The class must be the one a
maintainer reading the error would pick: what to do next differs for each (install a
library, install a newer ROCm, port the code by hand, fix the translation, or nothing
portcheck can tell).

Classes tested elsewhere: timeout (test_compile_inputs.py, with a hanging fake hipcc),
unsupported-target and missing-library (test_compile.py), rocm-version
(test_compile_inputs.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from portcheck.compile import CompileError, compile_tree, find_toolchain


@pytest.fixture(scope="module", autouse=True)
def hipcc():
    try:
        return find_toolchain()
    except CompileError:
        if os.environ.get("CI"):
            pytest.fail("hipcc is missing in CI: .ci/run must install it (apt-get install hipcc)")
        pytest.skip("hipcc not installed (apt-get install -y hipcc)")


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))


def _build(tmp_path: Path, name: str, text: str, engine: str = "builtin"):
    source = tmp_path / "src" / name
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(text)
    (result,) = compile_tree(tmp_path / "src", "gfx90a", engine=engine).results
    assert not result.ok
    return result


def test_a_cuda_only_header_with_no_hip_counterpart_is_a_port_problem(tmp_path):
    """cooperative_groups/reduce.h has nothing in HIP to be translated to: the reduction
    must be written by hand; calling it untranslated would promise a rename that fixes it."""
    result = _build(
        tmp_path,
        "block_sum.cu",
        "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n"
        "namespace cg = cooperative_groups;\n\n"
        "__global__ void block_sum(const float* in, float* out) {\n"
        "  cg::thread_block block = cg::this_thread_block();\n"
        "  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);\n"
        "  float v = cg::reduce(warp, in[block.thread_rank()], cg::plus<float>());\n"
        "  if (warp.thread_rank() == 0) atomicAdd(out, v);\n}\n",
    )
    assert result.failure_class == "port-problem", result.explanation
    assert "cooperative_groups/reduce.h has no HIP counterpart" in result.explanation
    assert result.code_failure


def test_cuda_left_in_the_source_is_untranslated(tmp_path):
    """Compiled without translation (the team's own half-port): CUDA names the HIP
    headers do not declare are untranslated CUDA, with the name."""
    result = _build(
        tmp_path,
        "alloc.cpp",
        "#include <hip/hip_runtime.h>\n"
        "float* device_buffer(size_t n) {\n"
        "  float* p = nullptr;\n"
        "  cudaMalloc(reinterpret_cast<void**>(&p), n * sizeof(float));\n"
        "  return p;\n}\n",
        engine="none",
    )
    assert result.failure_class == "untranslated-cuda", result.explanation
    assert "cudaMalloc" in result.explanation


def test_a_library_header_on_an_old_path_is_a_translation_to_fix(tmp_path):
    """`hiprand.h` (how hipify-perl spells it) is installed as hiprand/hiprand.h since
    ROCm 5.2: not a missing library (it is installed), the include path is wrong."""
    result = _build(
        tmp_path,
        "noise.cu",
        "#include <hip/hip_runtime.h>\n#include <hiprand.h>\n"
        "void fill(float* d, size_t n, hiprandGenerator_t gen) {\n"
        "  hiprandGenerateUniform(gen, d, n);\n}\n",
        engine="none",
    )
    assert result.failure_class == "untranslated-cuda", result.explanation
    assert "installed as hiprand/hiprand.h" in result.explanation


def test_a_header_of_another_project_is_a_missing_dependency(tmp_path):
    result = _build(
        tmp_path,
        "viewer.cu",
        "#include <cuda_runtime.h>\n#include <GLFW/glfw3.h>\n\n"
        "__global__ void shade(uchar4* pixels, int w) {\n"
        "  int x = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (x < w) pixels[x] = make_uchar4(x, 0, 0, 255);\n}\n",
    )
    assert result.failure_class == "missing-dependency", result.explanation
    assert "GLFW/glfw3.h" in result.explanation and not result.finding_ids


def test_a_hip_signature_that_differs_from_cudas_is_a_hip_api_difference(tmp_path):
    """CUDA's C++ API takes any `T**` for the device pointer of mapped memory; HIP's
    hipHostGetDevicePointer only `void**`."""
    result = _build(
        tmp_path,
        "zero_copy.cu",
        "#include <cuda_runtime.h>\n"
        "float* mapped_view(float* host) {\n"
        "  float* device = nullptr;\n"
        "  cudaHostGetDevicePointer(&device, host, 0);\n"
        "  return device;\n}\n",
    )
    assert result.failure_class == "hip-api-difference", result.explanation
    assert "hipHostGetDevicePointer" in result.explanation


def test_a_mistake_in_the_code_itself_is_other(tmp_path):
    result = _build(
        tmp_path,
        "saxpy.cu",
        "#include <cuda_runtime.h>\n"
        "__global__ void saxpy(int n, float a, const float* x, float* y) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) y[i] = a * x[i] + y[i]\n}\n",
    )
    assert result.failure_class == "other", result.explanation
    assert result.diagnostics[0].line == 4


def test_a_missing_library_that_would_not_fix_the_code_is_a_port_problem(tmp_path):
    """mma.h becomes rocwmma/rocwmma.hpp, which Debian does not package; but installing
    rocWMMA would not make `nvcuda::wmma` code build (other fragment shapes and names):
    the tensor-core finding on that line is the reason, the install hint comes with it."""
    result = _build(
        tmp_path,
        "tile_gemm.cu",
        "#include <mma.h>\nusing namespace nvcuda;\n\n"
        "__global__ void tile(const half* a, const half* b, float* c) {\n"
        "  wmma::fragment<wmma::matrix_a, 16, 16, 16, half, wmma::row_major> fa;\n"
        "  wmma::fragment<wmma::matrix_b, 16, 16, 16, half, wmma::col_major> fb;\n"
        "  wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;\n"
        "  wmma::fill_fragment(acc, 0.0f);\n"
        "  wmma::load_matrix_sync(fa, a, 16);\n  wmma::load_matrix_sync(fb, b, 16);\n"
        "  wmma::mma_sync(acc, fa, fb, acc);\n"
        "  wmma::store_matrix_sync(c, acc, 16, wmma::mem_row_major);\n}\n",
    )
    assert result.failure_class == "port-problem", result.explanation
    assert "tensor-core-wmma" in result.explanation and "rocWMMA" in result.explanation


def test_a_follow_on_error_of_a_name_this_rocm_lacks_is_still_the_rocm_version(tmp_path):
    """hipDeviceSetLimit came with ROCm 5.3; clang 15 corrects it to hipDeviceGetLimit and
    then fails on that call's arguments, on the same line. That second error is the first
    one's echo: the unit needs a newer ROCm, nothing else."""
    result = _build(
        tmp_path,
        "heap.cu",
        "#include <cstdio>\n#include <cuda_runtime.h>\n\n"
        "__global__ void fill(int** slots) {\n"
        "  slots[threadIdx.x] = new int[4];\n}\n\n"
        "int main() {\n"
        "  cudaDeviceSetLimit(cudaLimitMallocHeapSize, 64 * 1024 * 1024);\n"
        "  int** slots;\n  cudaMalloc(&slots, 32 * sizeof(int*));\n"
        "  fill<<<1, 32>>>(slots);\n  return cudaDeviceSynchronize() != cudaSuccess;\n}\n",
    )
    assert result.failure_class == "rocm-version", result.explanation
    assert "hipDeviceSetLimit needs ROCm 5.3" in result.explanation


def test_libcudacxx_headers_are_a_library_to_install(tmp_path):
    """`cuda/barrier` is libcu++: HIP's counterpart (libhipcxx) keeps the same paths but is
    installed on its own, so the translation is right and the library is what is missing."""
    result = _build(
        tmp_path,
        "stage.cu",
        "#include <cuda/barrier>\n#include <cuda_runtime.h>\n\n"
        "__global__ void stage(const float* in, float* out) {\n"
        "  __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
        "  if (threadIdx.x == 0) init(&bar, blockDim.x);\n  __syncthreads();\n"
        "  out[threadIdx.x] = in[threadIdx.x];\n  bar.arrive_and_wait();\n}\n",
    )
    assert result.failure_class == "missing-library", result.explanation
    assert "libhipcxx" in result.explanation


def test_a_cuda_header_without_a_known_hip_counterpart_is_a_port_problem(tmp_path):
    """cuDLA (NVIDIA's deep-learning accelerator API) has nothing on AMD: calling its header
    "neither CUDA nor ROCm" would send the user looking for a third-party package."""
    result = _build(
        tmp_path,
        "dla.cu",
        '#include <cuda_runtime.h>\n#include "cudla.h"\n\n'
        "int open_dla(cudlaDevHandle* handle) {\n"
        "  return cudlaCreateDevice(0, handle, CUDLA_CUDA_DLA) == cudlaSuccess;\n}\n",
    )
    assert result.failure_class == "port-problem", result.explanation
    assert "cudla.h is a CUDA header with no known HIP counterpart" in result.explanation


def test_a_cuda_qualifier_hip_does_not_define_is_a_port_problem(tmp_path):
    """`__grid_constant__` (CUDA 11.7) on a kernel parameter: HIP does not define it, and
    no rename fixes that; the rule's note says to drop it."""
    result = _build(
        tmp_path,
        "params.cu",
        "#include <cuda_runtime.h>\n\nstruct Params { float scale[256]; int n; };\n\n"
        "__global__ void apply(__grid_constant__ const Params p, float* x) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < p.n) x[i] *= p.scale[i % 256];\n}\n",
    )
    assert result.failure_class == "port-problem", result.explanation
    assert "__grid_constant__" in result.explanation
    assert "has no HIP equivalent" in result.explanation
