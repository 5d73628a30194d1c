"""Findings that need the whole project: constants and device-qualifier macros defined in
other files, the project's own AMD paths (no finding inside one; NVIDIA-only code that has
one is marked `amd_alternative` and costs nothing), and locals that shadow CUDA names.

Fixtures are small multi-file projects under tests/fixtures/projects/, marked with
`// expect: slug` (a finding on the next line) and `// expect-amd-alt: slug` (a finding on
the next line that already has an AMD alternative)."""

from __future__ import annotations

import re
import shutil
from collections import Counter

import pytest

import portcheck
from portcheck.model import Severity

from conftest import FIXTURES

PROJECTS = FIXTURES / "projects"
MARK = re.compile(r"(?://|#)\s*expect(-amd-alt)?:\s*([\w\- ]+?)\s*$")


def expected(root) -> Counter[tuple[str, str, int, bool]]:
    found: Counter[tuple[str, str, int, bool]] = Counter()
    for path in sorted(root.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = MARK.search(line)
            if match:
                for slug in match.group(2).split():
                    found[(rel, slug, number + 1, bool(match.group(1)))] += 1
    return found


def scan_source(tmp_path, name: str, text: str):
    """The report of a project of one file, `name`, holding `text`."""
    (tmp_path / name).write_text(text)
    return portcheck.scan(tmp_path, cache=False)


def unknown_names(report) -> list[str]:
    return [f.message for f in report.findings if f.slug == "unknown-api"]


def findings(report) -> Counter[tuple[str, str, int, bool]]:
    return Counter((f.path, f.slug, f.span.line, f.amd_alternative) for f in report.findings)


@pytest.mark.parametrize("name", sorted(p.name for p in PROJECTS.iterdir()))
def test_project_findings_match_markers_exactly(name):
    root = PROJECTS / name
    found, wanted = findings(portcheck.scan(root, cache=False)), expected(root)
    assert found == wanted, (
        f"missing: {sorted((wanted - found).elements())}\n"
        f"unexpected: {sorted((found - wanted).elements())}"
    )


def test_amd_paths_are_listed_with_their_guards():
    report = portcheck.scan(PROJECTS / "fused_ops", cache=False)
    paths = {(p.path, p.start_line, p.end_line, p.guard) for p in report.amd_paths}
    assert ("include/platform.h", 4, 8, "#if defined(USE_ROCM)") in paths
    # A project macro defined only in the USE_ROCM branch is an AMD guard too.
    assert ("include/reduce.cuh", 8, 10, "#ifdef FUSED_ON_AMD") in paths
    assert ("include/reduce.cuh", 39, 41, "#if defined(__HIP_PLATFORM_AMD__)") in paths
    document = report.to_dict()
    assert document["summary"]["amd_paths"] == len(report.amd_paths) == len(document["amd_paths"])


def test_nothing_inside_an_amd_path_is_reported_or_counted():
    report = portcheck.scan(PROJECTS / "quant_kernels", cache=False)
    amd = [(p.path, p.start_line, p.end_line) for p in report.amd_paths]
    assert ("dot.cu", 5, 8) in amd  # the v_dot4 asm branch
    for item in [*report.findings, *report.uses]:
        line = item.span.line
        assert not any(item.path == p and s <= line <= e for p, s, e in amd), item


def test_amd_asm_outside_any_guard_is_not_inline_ptx(tmp_path):
    report = scan_source(
        tmp_path,
        "gfx.cu",
        "__global__ void k(int* p) {\n"
        '  asm volatile("s_waitcnt vmcnt(0) lgkmcnt(0)" ::: "memory");\n'
        '  asm volatile("v_dot2_f32_f16 %0, %1, %2, %0" : "+v"(p[0]) : "v"(p[1]), "v"(p[2]));\n'
        '  asm volatile("mov.u32 %0, %%laneid;" : "=r"(p[3]));\n'
        "}\n",
    )
    assert [(f.slug, f.span.line) for f in report.findings] == [("inline-ptx", 4)]


def test_an_amd_alternative_costs_no_score(tmp_path):
    ported = portcheck.scan(PROJECTS / "quant_kernels", cache=False)
    alt = [f for f in ported.findings if f.amd_alternative]
    assert alt, "the fixture has NVIDIA-only code with an AMD path"
    # The same code with its AMD branches taken out: the NVIDIA-only kernel is now work.
    shutil.copytree(PROJECTS / "quant_kernels", tmp_path / "q")
    dot = tmp_path / "q" / "dot.cu"
    dot.write_text(dot.read_text().replace("#if !defined(QK_AMD_BUILD)\n//", "#if 1\n//"))
    unported = portcheck.scan(tmp_path / "q", cache=False)
    assert any(not f.amd_alternative and f.slug == "lane-mask-width" for f in unported.findings)
    assert unported.scores["hip"] < ported.scores["hip"]
    assert unported.effort["hip"].total_hours > ported.effort["hip"].total_hours


def test_a_constant_changed_in_one_header_changes_another_files_findings(tmp_path):
    root = tmp_path / "fused"
    shutil.copytree(PROJECTS / "fused_ops", root)
    before = portcheck.scan(root)
    assert any(
        f.path == "kernels/softmax.cu" and f.slug == "warp-size-assumption" for f in before.findings
    )
    limits = root / "include" / "limits.h"
    limits.write_text(limits.read_text().replace("#define TILE_WARP 32", "#define TILE_WARP 64"))
    after = portcheck.scan(root)  # the cache must not answer with the old constant
    assert not any(
        f.path == "kernels/softmax.cu" and f.slug == "warp-size-assumption" for f in after.findings
    )


def test_locals_named_like_math_functions_are_not_cuda_uses(tmp_path):
    report = scan_source(
        tmp_path,
        "bessel.cu",
        "__global__ void sums(const float* in, float* out, int n) {\n"
        "  float j0 = 0.f, y0 = 0.f, y1 = 0.f;\n"
        "  for (int i = threadIdx.x; i < n; i += blockDim.x) {\n"
        "    j0 += in[i]; y0 += in[i] * in[i];\n"
        "  }\n"
        "  y1 = j0 + y0;\n"
        "  out[0] = y1;\n"
        "}\n"
        "__global__ void bessel(const double* x, double* out) {\n"
        "  out[threadIdx.x] = j0(x[threadIdx.x]) + y1(x[threadIdx.x]);\n"
        "}\n",
    )
    bessel = sorted((u.name, u.span.line) for u in report.uses if u.name in ("j0", "y0", "y1"))
    assert bessel == [("j0", 10), ("y1", 10)]


def test_device_code_behind_a_macro_from_another_header_is_checked(tmp_path):
    (tmp_path / "macros.h").write_text(
        "#pragma once\n#define CUTLASS_DEVICE __forceinline__ __device__\n"
    )
    report = scan_source(
        tmp_path,
        "warp.cu",
        '#include "macros.h"\n'
        "CUTLASS_DEVICE int lane_of(int tid) { return tid & 31; }\n"
        "inline int host_lane(int tid) { return tid & 31; }\n"
        "__global__ void k(int* p) { p[0] = lane_of(threadIdx.x); }\n",
    )
    assert [(f.slug, f.span.line) for f in report.findings] == [("warp-size-assumption", 2)]
    assert report.findings[0].kernels == ("k",)


# -- the libclang front end ------------------------------------------------------------


def test_libclang_decides_where_the_fast_parser_cannot():
    """Device code spelled with `__attribute__((device))` behind a macro, a warp width
    computed with sizeof in a header, a helper reached only through a functor handed to a
    template kernel, and a global declared in a header: libclang (the default front end
    for such files) gets all four; tree-sitter alone gets none of them."""
    root = PROJECTS / "stencil"
    deep = portcheck.scan(root, cache=False)
    fast = portcheck.scan(root, cache=False, front_end="tree-sitter")
    assert {f.path: f.front_end for f in deep.files}["stencil.cu"] == "libclang"
    assert {f.front_end for f in fast.files} == {"tree-sitter"}
    warp = {(f.path, f.span.line): f for f in deep.findings if f.slug == "warp-size-assumption"}
    assert set(warp) == {("config.h", 10), ("stencil.cu", 6), ("stencil.cu", 20)}
    # The helper's finding reaches the template kernel through Smooth::operator().
    assert warp[("stencil.cu", 6)].kernels == ("apply_stencil",)
    assert not [f for f in fast.findings if f.slug == "warp-size-assumption"]
    # `y1` is the project's own variable (declared in config.h), not CUDA's Bessel y1().
    assert "y1" not in {u.name for u in deep.uses}
    assert "y1" in {u.name for u in fast.uses}


def test_deep_runs_libclang_on_every_source_file(tmp_path):
    (tmp_path / "plain.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "__global__ void scale(float* x, float a) { x[threadIdx.x] *= a; }\n"
    )
    auto = portcheck.scan(tmp_path, cache=False)
    deep = portcheck.scan(tmp_path, cache=False, front_end="deep")
    assert [f.front_end for f in auto.files] == ["tree-sitter"]  # nothing there needs it
    assert [f.front_end for f in deep.files] == ["libclang"]
    assert [(u.name, u.span.line) for u in deep.uses] == [(u.name, u.span.line) for u in auto.uses]


def test_a_header_edit_reaches_a_file_libclang_read_it_for(tmp_path):
    root = tmp_path / "stencil"
    shutil.copytree(PROJECTS / "stencil", root)
    first = portcheck.scan(root)
    assert any(f.path == "stencil.cu" for f in first.findings)
    config = root / "config.h"
    config.write_text(config.read_text().replace("sizeof(unsigned) * 8", "sizeof(unsigned) * 16"))
    again = portcheck.scan(root)  # cached stencil.cu must not be trusted
    assert not [f for f in again.findings if f.slug == "warp-size-assumption"]


def test_unknown_front_end_is_a_scan_error():
    with pytest.raises(portcheck.ScanError):
        portcheck.scan(PROJECTS / "stencil", front_end="gcc")


def test_every_format_says_how_much_already_has_an_amd_path():
    from portcheck.report import formatter

    report = portcheck.scan(PROJECTS / "fused_ops", cache=False)
    sentence = (
        "Existing AMD paths: 3 branch(es) in 2 file(s) (11 lines) already build for AMD GPUs; "
        "3 finding(s) in NVIDIA-only code that has an AMD path"
    )
    for name in ("text", "markdown", "html", "sarif"):
        rendered = formatter(name)(report)
        flat = " ".join(rendered.split())
        assert sentence in flat, name
    import json

    sarif = json.loads(formatter("sarif")(report))
    run = sarif["runs"][0]
    assert len(run["properties"]["amd_paths"]) == 3
    alt = [r for r in run["results"] if r["properties"]["amd_alternative"]]
    assert len(alt) == 3
    assert "has an AMD path: not scored" in formatter("text")(report)


def test_deliberate_32_lane_groups_are_not_reported_at_each_use():
    """A library that builds for AMD and passes its WARP_SIZE (32) as the width of every
    shuffle works in logical 32-lane groups on purpose: the definition is reported once,
    for review; `threadIdx.x / WARP_SIZE` in its helpers is not. Arithmetic in 32s next to
    cooperative-groups tiles of 32 is consistent with them, right on wave64: not reported."""
    report = portcheck.scan(PROJECTS / "logical_warps", cache=False)
    warp = [f for f in report.findings if f.slug == "warp-size-assumption"]
    definition = next(f for f in warp if f.path == "common.cuh")
    assert "logical 32-lane groups" in definition.message
    assert not [f for f in warp if f.path == "common.cuh" and f is not definition]
    assert not [f for f in warp if f.path == "kernels.cu"]


def test_an_arch_test_that_lets_amd_in_is_the_projects_amd_path():
    report = portcheck.scan(PROJECTS / "logical_warps", cache=False)
    # `#if defined(LW_USE_HIP) || __CUDA_ARCH__ >= 600`: the port let the AMD build in by
    # name; the test is reported as already having its AMD path, naming the guard.
    found = [f for f in report.findings if f.path == "common.cuh" and f.slug == "arch-conditional"]
    assert [f.amd_alternative for f in found] == [True]
    assert "`LW_USE_HIP`" in found[0].message


def test_toolkit_version_branches_and_split_selector_calls_have_amd_alternatives(tmp_path):
    (tmp_path / "gpu.h").write_text(
        "#pragma once\n"
        "#if defined(__HIP_PLATFORM_AMD__)\n"
        "#define GPU_HIP_OR_CUDA(a, b) a\n"
        "#else\n"
        "#define GPU_HIP_OR_CUDA(a, b) b\n"
        "#endif\n"
    )
    report = scan_source(
        tmp_path,
        "memory.cu",
        '#include "gpu.h"\n'
        "#include <cuda_runtime.h>\n"
        "void advise(float* p, size_t n, int device) {\n"
        "  GPU_HIP_OR_CUDA\n"
        "    (hipMemAdvise(p, n, hipMemAdviseSetReadMostly, device);,\n"
        "     cudaMemAdvise(p, n, cudaMemAdviseSetReadMostly, device););\n"
        "}\n"
        "__global__ void k(float* p) {\n"
        "#if CUDART_VERSION >= 11000\n"
        "  p[threadIdx.x] = __shfl_down_sync(0xffffffff, p[threadIdx.x], 1);\n"
        "#else\n"
        "  p[threadIdx.x] = __shfl_down(p[threadIdx.x], 1);\n"
        "#endif\n"
        "}\n",
    )
    found = {(f.slug, f.span.line): f.amd_alternative for f in report.findings}
    # The CUDA argument of a macro whose name and `(` are on two lines.
    assert found[("managed-memory", 6)] is True
    # A branch only CUDA's toolkit version macro opens: an AMD build takes the #else.
    assert found[("lane-mask-width", 10)] is True
    assert all(found.values()), found


def test_tiles_named_by_a_constant_of_32_are_tiles_of_32():
    """`tiled_partition<ROW_TILE>` with ROW_TILE 32 in another header is a tile of 32, as
    the literal is (arithmetic in 32s there is right on wave64); a width that is 64 on AMD,
    or one the tree does not define, is not."""
    report = portcheck.scan(PROJECTS / "named_tiles", cache=False)
    severity = {f.function: f.severity for f in report.findings if f.slug == "warp-size-assumption"}
    assert severity == {"wide_sums": Severity.HIGH, "outside_sums": Severity.HIGH}


def test_a_copy_of_cub_in_the_tree_is_one_library_port_not_hundreds_of_findings():
    """`third_party/cub/` defines CUB's own names: porting it means building against
    hipCUB, one item; its warp code and PTX are the library's, not the project's work. The
    project's own kernels are still checked, and the copy scanned alone (porting CUB
    itself) keeps every finding."""
    tree = FIXTURES / "vendored" / "histogram"
    report = portcheck.scan(tree, cache=False)
    in_copy = [f for f in report.findings if f.path.startswith("third_party/cub/")]
    assert [(f.slug, f.span.line) for f in in_copy] == [("library-port", 1)]
    assert "hipCUB" in in_copy[0].message and "2 file(s)" in in_copy[0].message
    assert not [u for u in report.uses if u.path.startswith("third_party/cub/")]
    own = [(f.path, f.slug) for f in report.findings if f.path.startswith("src/")]
    assert own == [("src/histogram.cu", "warp-size-assumption")]
    alone = portcheck.scan(tree / "third_party" / "cub", cache=False)
    assert {f.slug for f in alone.findings} >= {"warp-size-assumption", "lane-mask-width"}
    assert "library-port" not in {f.slug for f in alone.findings}


def test_a_copy_of_nvtx_in_the_tree_builds_as_it_is_and_its_calls_are_no_work(tmp_path):
    """`third_party/nvtx3/` is NVTX's header-only library: it needs no CUDA, so the copy
    and the project's calls into it (`nvtx3::domain_range`, `nvtxRangePushA`) compile for
    AMD unchanged: nothing reported there, nothing counted. The project's own CUDA work is
    still reported; without the copy, the calls NVTX's ROCm counterpart lacks are."""
    tree = FIXTURES / "vendored" / "tracing"
    report = portcheck.scan(tree, cache=False)
    assert [(f.path, f.slug) for f in report.findings] == [("src/train.cu", "managed-memory")]
    assert not [u for u in report.uses if u.family == "nvtx" or "nvtx" in u.name]
    assert {u.name for u in report.uses} >= {"cudaMallocManaged", "cudaStream_t"}
    copy = tmp_path / "tracing"
    shutil.copytree(tree, copy)
    shutil.rmtree(copy / "third_party")
    without = portcheck.scan(copy, cache=False)
    assert {f.slug for f in without.findings} == {"managed-memory", "unsupported-api"}
    assert any("nvtx3" in f.message for f in without.findings if f.slug == "unsupported-api")


def test_three_way_backend_switches_are_amd_paths_and_parse_as_one_configuration():
    """`#ifdef _CUDA_ENABLED` / `#elif _HIP_ENABLED` / `#else` (RELION's switches): the HIP
    arm is an AMD path, the CUDA arm's findings have an AMD alternative, and a member
    initialiser written three ways is parsed as one configuration's, so the file reports
    no syntax errors."""
    report = portcheck.scan(PROJECTS / "backend_switches", cache=False)
    guards = {(p.path, p.guard) for p in report.amd_paths}
    assert ("acc_buffer.h", "#elif _HIP_ENABLED") in guards
    assert {f.path: f.parse_errors for f in report.files} == {"acc_buffer.h": 0, "reduce.cu": 0}


def test_names_the_project_renames_to_hip_already_have_an_amd_path(tmp_path):
    """`#define cudaMemcpyAsync hipMemcpyAsync` in a header for the AMD build: those names
    cost nothing more on HIP, and the header itself is AMD code (an AMD path). A name the
    header does not rename (`cudaMallocManaged`) is still work."""
    tree = FIXTURES / "vendored" / "renames"
    report = portcheck.scan(tree, cache=False)
    whole = [(p.path, p.start_line) for p in report.amd_paths if p.path == "gpu/hip_compat.h"]
    assert whole == [("gpu/hip_compat.h", 1)]
    assert not [u for u in report.uses if u.path == "gpu/hip_compat.h"]
    # the header's `__shfl_xor_sync(mask, var, lane)` drops the mask: a 32-bit mask passed
    # to it is moot in the AMD build; the 16-to-1 offsets still cover 32 lanes only
    assert [(f.slug, f.amd_alternative) for f in report.findings] == [
        ("managed-memory", False),
        ("warp-size-assumption", False),
        ("lane-mask-width", True),
    ]
    copy = tmp_path / "renames"
    shutil.copytree(tree, copy)
    (copy / "gpu" / "hip_compat.h").unlink()
    without = portcheck.scan(copy, cache=False)
    renames = report.effort["hip"].categories["rename-only"].items
    assert without.effort["hip"].categories["rename-only"].items - renames == 7
    # ZLUDA and SCALE run the CUDA code as written: the header changes nothing for them
    assert report.effort["scale"] == without.effort["scale"]


def test_a_rename_header_with_an_nvidia_branch_is_placed_branch_by_branch(tmp_path):
    """A header that renames CUDA to HIP in its `#if __HIP_PLATFORM_AMD__` branch and keeps
    an `#else` for NVIDIA builds (LightGBM's cuda_rocm_interop.h) is read by both builds: its
    AMD branch is an AMD path, and the warp width its `#else` fixes at 32 is NVIDIA code with
    that alternative, not part of an AMD-only header."""
    report = scan_source(
        tmp_path,
        "interop.h",
        "#pragma once\n#if defined(__HIP_PLATFORM_AMD__)\n#include <hip/hip_runtime.h>\n"
        "#define cudaStream_t hipStream_t\n#define cudaMalloc hipMalloc\n#define cudaFree hipFree\n"
        "#define cudaMemcpy hipMemcpy\n"
        "static inline constexpr int wave_lanes() {\n#if defined(__GFX9__)\n  return 64;\n"
        "#else\n  return 32;\n#endif\n}\n#define WARPSIZE (wave_lanes())\n"
        "#else\n#define WARPSIZE 32\n#endif\n",
    )
    assert [(p.start_line, p.end_line) for p in report.amd_paths] == [(2, 16)]
    assert [(f.slug, f.span.line, f.amd_alternative) for f in report.findings] == [
        ("warp-size-assumption", 17, True)
    ]


def test_hip_switches_of_a_project_that_builds_hip_for_nvidia_too_are_not_amd_paths(tmp_path):
    """A project written in HIP for both vendors (hoomd-blue: `ENABLE_HIP` on for every GPU
    build, `__HIP_PLATFORM_NVCC__` tested for its NVIDIA one) compiles `#ifdef ENABLE_HIP`
    code on NVIDIA GPUs too: it is not an AMD path, and its cuFFT calls are the NVIDIA
    build's. A project without HIP's NVIDIA platform keeps ENABLE_HIP as an AMD guard."""
    (tmp_path / "hip_first").mkdir()
    (tmp_path / "hip_first" / "fft.cc").write_text(
        "#ifdef ENABLE_HIP\n#include <hip/hip_runtime.h>\n"
        "#if defined(__HIP_PLATFORM_NVCC__)\n#include <cufft.h>\n"
        "void plan(cufftHandle* p, int n) { cufftPlan1d(p, n, CUFFT_C2C, 1); }\n"
        "#elif defined(__HIP_PLATFORM_AMD__)\n#include <hipfft/hipfft.h>\n"
        "void plan(hipfftHandle* p, int n) { hipfftPlan1d(p, n, HIPFFT_C2C, 1); }\n"
        "#endif\n#endif\n"
    )
    report = portcheck.scan(tmp_path / "hip_first", cache=False)
    assert [(p.start_line, p.guard) for p in report.amd_paths] == [
        (6, "#elif defined(__HIP_PLATFORM_AMD__)")
    ]
    assert "cufftPlan1d" in {u.name for u in report.uses}
    (tmp_path / "amd_switch").mkdir()
    (tmp_path / "amd_switch" / "fft.cu").write_text(
        "#ifdef ENABLE_HIP\n#include <hipfft/hipfft.h>\n#else\n#include <cufft.h>\n#endif\n"
    )
    other = portcheck.scan(tmp_path / "amd_switch", cache=False)
    assert [p.start_line for p in other.amd_paths] == [1]


def test_snake_case_names_after_a_library_prefix_are_the_projects(tmp_path):
    """NCCL's and cuBLAS's names are camelCase (`ncclAllReduce`, `cublasCreate`):
    `nccl_comm_` and `cublas_handle_`, members declared in a header the scan may not see,
    are the project's. cuRAND's device API is snake_case and stays CUDA's."""
    report = scan_source(
        tmp_path,
        "collective.cu",
        "#include <nccl.h>\n#include <cublas_v2.h>\n#include <curand_kernel.h>\n\n"
        "void Collective::Reduce(float* buf, size_t n, cudaStream_t stream) {\n"
        "  ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, *nccl_comm_, stream);\n"
        "  cublasSetStream(cublas_handle_, stream);\n}\n\n"
        "__global__ void seed(curandState* states, unsigned long long s) {\n"
        "  curand_init(s, threadIdx.x, 0, &states[threadIdx.x]);\n}\n",
    )
    assert not unknown_names(report)
    names = {u.name for u in report.uses}
    assert {"ncclAllReduce", "cublasSetStream", "curand_init"} <= names
    assert not names & {"nccl_comm_", "cublas_handle_"}


def test_a_cuda_type_after_a_qualifier_macro_is_a_known_type_not_an_unknown_name(tmp_path):
    """`DEVICE_INLINE __nv_bfloat16 to_bf16(float v)`: the grammar reads the type and the
    function name as one qualified name without `::`; the type is still CUDA's bf16."""
    report = scan_source(
        tmp_path,
        "convert.cuh",
        "#pragma once\n#include <cuda_bf16.h>\n"
        "#define DEVICE_INLINE __device__ inline __attribute__((always_inline))\n\n"
        "DEVICE_INLINE __nv_bfloat16 to_bf16(float v) {\n  return __float2bfloat16(v);\n}\n\n"
        "DEVICE_INLINE __nv_bfloat162 to_bf16_2(float2 v) {\n"
        "  return __halves2bfloat162(to_bf16(v.x), to_bf16(v.y));\n}\n",
    )
    assert not unknown_names(report)
    types = {u.name: u.rule is not None for u in report.uses if u.name.startswith("__nv_")}
    assert types == {"__nv_bfloat16": True, "__nv_bfloat162": True}


def test_pytorch_macros_named_like_cuda_are_not_unknown_cuda_names(tmp_path):
    """`CUDA_KERNEL_ASSERT` and `CUDA_KERNEL_LOOP` are PyTorch's macros (its ROCm builds
    define them too): an extension's use of them is neither unknown nor work."""
    report = scan_source(
        tmp_path,
        "bucketize.cu",
        "#include <ATen/cuda/detail/KernelUtils.h>\n#include <c10/macros/Macros.h>\n\n"
        "__global__ void bucketize(const float* x, const float* edges, int n, int m, int* out) {\n"
        "  CUDA_KERNEL_LOOP(i, n) {\n"
        "    int b = 0;\n    while (b < m && x[i] >= edges[b]) ++b;\n"
        "    CUDA_KERNEL_ASSERT(b <= m);\n    out[i] = b;\n  }\n}\n",
    )
    assert not unknown_names(report)
    asserts = [u for u in report.uses if u.name == "CUDA_KERNEL_ASSERT"]
    assert asserts and all(u.rule is not None and u.rule.family == "pytorch" for u in asserts)


def test_library_version_macros_are_known_and_partial_on_hip(tmp_path):
    """`#if CUSPARSE_VERSION >= 11000` picks an API generation by NVIDIA's library version:
    a known name (no unknown-api question), partial on HIP, where it is undefined."""
    report = scan_source(
        tmp_path,
        "spmv.cu",
        "#include <cusparse.h>\n#include <cudnn.h>\n\n"
        "#if CUSPARSE_VERSION >= 11000\n#define SPMV_ALG CUSPARSE_SPMV_CSR_ALG2\n"
        "#else\n#define SPMV_ALG CUSPARSE_CSRMV_ALG2\n#endif\n"
        "#if CUDNN_MAJOR >= 8 && CUBLAS_VER_MAJOR >= 11\nstatic const int kModern = 1;\n#endif\n",
    )
    assert not unknown_names(report)
    names = {u.name: u for u in report.uses}
    for name, family in [("CUSPARSE_VERSION", "cusparse"), ("CUDNN_MAJOR", "cudnn")]:
        rule = names[name].rule
        assert rule is not None and rule.family == family
        assert rule.status["hip"].value == "partial"


def test_nvtx_attribute_enumerators_are_known_nvtx_names(tmp_path):
    """The payload and message kinds of an NVTX event are NVTX's names (roctx has no
    attribute structure), not unknown CUDA APIs."""
    report = scan_source(
        tmp_path,
        "marks.c",
        "#include <nvtx3/nvToolsExt.h>\n\n"
        "void mark_step(const char *name, long long step)\n{\n"
        "   nvtxEventAttributes_t a = {0};\n   a.version = NVTX_VERSION;\n"
        "   a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;\n   a.messageType = NVTX_MESSAGE_TYPE_ASCII;\n"
        "   a.message.ascii = name;\n   a.payloadType = NVTX_PAYLOAD_TYPE_INT64;\n"
        "   a.payload.llValue = step;\n   nvtxMarkEx(&a);\n}\n",
    )
    assert not unknown_names(report)
    payload = next(u for u in report.uses if u.name == "NVTX_PAYLOAD_TYPE_INT64")
    assert payload.rule is not None and payload.rule.family == "nvtx"


def test_nvtx3_cuda_resource_header_is_a_known_header(tmp_path):
    """llm.c includes nvtx3/nvToolsExtCudaRt.h to name streams: NVTX's header, which roctx
    has no counterpart of, not an unknown name."""
    report = scan_source(
        tmp_path,
        "streams.cu",
        "#include <nvtx3/nvToolsExtCudaRt.h>\n#include <cuda_runtime.h>\n\n"
        'void name_main_stream(cudaStream_t s) { nvtxNameCudaStreamA(s, "main"); }\n',
    )
    header = next(f for f in report.findings if f.span.line == 1)
    assert header.slug == "unsupported-api"
    assert "nvToolsExtCudaRt.h" in header.message


def test_a_local_declared_in_a_macro_body_is_not_a_cuda_name(tmp_path):
    """`#define NVTX_RANGE_FN() NvtxRange nvtx_range(__FUNCTION__)` (llm.c) declares a
    local named like NVTX's API; the calls in the other macro body are still uses."""
    report = scan_source(
        tmp_path,
        "profile.cuh",
        "#include <nvtx3/nvToolsExt.h>\n#include <cuda_runtime.h>\n\n"
        "class NvtxRange {\n public:\n  NvtxRange(const char* s) { nvtxRangePush(s); }\n"
        "  ~NvtxRange() { nvtxRangePop(); }\n};\n"
        "#define NVTX_RANGE_FN() NvtxRange nvtx_range(__FUNCTION__)\n"
        "#define SYNC_AND_CHECK() (cudaDeviceSynchronize(), cudaGetLastError())\n\n"
        "__global__ void fill(float* p) { p[threadIdx.x] = 1.0f; }\n"
        "inline void run(float* p) { NVTX_RANGE_FN(); fill<<<1, 32>>>(p); SYNC_AND_CHECK(); }\n",
    )
    assert not unknown_names(report)
    names = {u.name for u in report.uses}
    assert "nvtx_range" not in names
    assert {"cudaDeviceSynchronize", "cudaGetLastError"} <= names


def test_cupti_is_one_library_to_port_not_unknown_names(tmp_path):
    """CUPTI (jax's vendor.h includes it) is a library to port to ROCprofiler-SDK: one
    library-port finding per file, no unknown-api question per CUPTI name."""
    report = scan_source(
        tmp_path,
        "tracer.cc",
        "#include <cupti.h>\n#include <cusolverDn.h>\n\n"
        "int start_tracing() {\n"
        "  CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL);\n"
        "  if (r != CUPTI_SUCCESS) return -1;\n"
        "  int solver_version = 0;\n  cusolverGetVersion(&solver_version);\n"
        "  return solver_version;\n}\n",
    )
    assert not unknown_names(report)
    ports = [f for f in report.findings if f.slug == "library-port"]
    assert len(ports) == 1 and "ROCprofiler-SDK" in ports[0].message


def test_an_upper_case_name_the_rules_lack_is_listed_not_reported(tmp_path):
    """Event names and version thresholds a project defines in a header outside the scanned
    folder (`NCCL_ALLREDUCE_EVENT`, `CUSPARSE_GENERIC_API_VERSION`) look like library macros;
    the rule set holds the libraries' own, so these are unknown names in the report, not an
    unknown-api question each. A camel-case call the rules lack still is one."""
    report = scan_source(
        tmp_path,
        "collectives.cc",
        "#include <nccl.h>\n#include <cusparse.h>\n#include \"timeline.h\"\n\n"
        "#if CUSPARSE_VERSION >= CUSPARSE_GENERIC_API_VERSION\n"
        "#define SPMV_ALG CUSPARSE_SPMV_CSR_ALG2\n#endif\n\n"
        "ncclResult_t all_reduce(Timeline& t, const float* in, float* out, size_t n,\n"
        "                        ncclComm_t comm, cudaStream_t s) {\n"
        "  t.start(NCCL_ALLREDUCE_EVENT);\n"
        "  ncclResult_t r = ncclAllReduce(in, out, n, ncclFloat, ncclSum, comm, s);\n"
        "  ncclCommFlushPendingWork(comm);\n"
        "  t.end(NCCL_ALLREDUCE_EVENT);\n  return r;\n}\n",
    )
    assert [m.split("`")[1] for m in unknown_names(report)] == ["ncclCommFlushPendingWork"]
    unknown = {u.name for u in report.uses if u.rule is None}
    assert {"NCCL_ALLREDUCE_EVENT", "CUSPARSE_GENERIC_API_VERSION"} <= unknown
    assert report.to_dict()["summary"]["unknown_names"] >= 3


def test_an_unknown_name_wrapping_a_cuda_call_is_the_projects_check(tmp_path):
    """`cudaErrorCheck(cudaProfilerStart(), "…")`, whose definition sits in a header outside
    the scanned folder: a wrapper around a known call is the project's error check, not an
    API to look up. An unknown name called with plain arguments still is one."""
    report = scan_source(
        tmp_path,
        "profiler.cpp",
        "#include <cuda_profiler_api.h>\n#include <cuda_runtime.h>\n"
        '#include "runtime_checks.hpp"\n\n'
        "void start_profiling(cudaStream_t s) {\n"
        '  cudaErrorCheck(cudaProfilerStart(), "cudaProfilerStart failed");\n'
        "  cudaErrorCheck(cudaStreamSynchronize(s), \"sync\");\n"
        "  cudaStreamFlushPendingWork(s);\n}\n",
    )
    assert [m.split("`")[1] for m in unknown_names(report)] == ["cudaStreamFlushPendingWork"]
    assert "cudaErrorCheck" in {u.name for u in report.uses if u.rule is None}


def test_a_member_named_like_an_api_that_the_code_assigns_is_the_projects(tmp_path):
    """A communicator wrapper whose class (in a header outside the scanned folder) keeps
    `void *ncclIdPtr` and `ncclCommPtr`: names the method assigns to or reaches through are
    variables, not NCCL APIs to look up. An unknown name that is only called still is one."""
    report = scan_source(
        tmp_path,
        "ccl_wrapper.cc",
        "#include <nccl.h>\n#include \"ccl_wrapper.h\"\n\n"
        "void CCLWrapper::init(int rank, int ranks) {\n"
        "  ncclIdPtr   = (void *)(new ncclUniqueId);\n"
        "  ncclCommPtr = (void *)(new ncclComm_t);\n"
        "  if (rank == 0) ncclGetUniqueId((ncclUniqueId *)ncclIdPtr);\n"
        "  ncclCommInitRank((ncclComm_t *)ncclCommPtr, ranks,\n"
        "                   *((ncclUniqueId *)ncclIdPtr), rank);\n"
        "  ncclStats->inits += 1;\n"
        "  ncclCommWarmUp(*((ncclComm_t *)ncclCommPtr));\n}\n",
    )
    assert [m.split("`")[1] for m in unknown_names(report)] == ["ncclCommWarmUp"]


def test_an_error_check_helper_named_for_the_library_is_the_projects(tmp_path):
    """`cudaCheck()` after a launch and `cudaSafeCall(err)`, defined in a header outside the
    scanned folder: a library prefix and a check word is how projects name their error
    checks, not an API to look up. An unknown name that says what it does still is one."""
    report = scan_source(
        tmp_path,
        "plchain.cu",
        "#include <cuda_runtime.h>\n#include \"hipify.cuh\"\n\n"
        "__global__ void chain(const int* a, int* s, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) s[i] = a[i] + 1;\n}\n\n"
        "void run_chain(const int* a, int* s, int n, cudaStream_t st) {\n"
        "  chain<<<(n + 255) / 256, 256, 0, st>>>(a, s, n);\n"
        "  cudaCheck();\n"
        "  cudaError_t err = cudaStreamSynchronize(st);\n"
        "  cudaSafeCall(err);\n"
        "  cudaStreamBeginCaptureToGraphLite(st);\n}\n",
    )
    assert [m.split("`")[1] for m in unknown_names(report)] == [
        "cudaStreamBeginCaptureToGraphLite"
    ]


def test_a_librarys_cuda_header_beside_its_hip_twin_and_a_qualified_template_are_not_apis(
    tmp_path,
):
    """`<cuda_buffer_util.hpp>` in the CUDA arm beside `<hip_buffer_util.hpp>` in the HIP
    arm is a third-party library's CUDA backend (CPPuddle's), and
    `Accelerator::cusparseSolverBackend<Scalar, 3>` the last segment of the project's
    qualified class: neither is an NVIDIA name to look up. An unknown toolkit-looking
    header with no HIP twin still is one."""
    report = scan_source(
        tmp_path,
        "hydro_interface.cpp",
        "#include <buffer_manager.hpp>\n#if defined(OCTO_HAVE_CUDA)\n"
        "#include <cuda_buffer_util.hpp>\n#include <cuda_runtime.h>\n"
        "#include <cuda_graph_ext.h>\n"
        "#elif defined(OCTO_HAVE_HIP)\n#include <hip/hip_runtime.h>\n"
        "#include <hip_buffer_util.hpp>\n#endif\n\n"
        "template <class Scalar, unsigned int block_size>\nvoid make_backend(int verbosity) {\n"
        "#if OCTO_HAVE_CUDA\n"
        "  using CU = Accelerator::cusparseSolverBackend<Scalar, block_size>;\n"
        "  backends.emplace(\"cusparse\", std::make_unique<CU>(verbosity));\n#endif\n}\n",
    )
    assert [m.split("`")[1] for m in unknown_names(report)] == ["cuda_graph_ext.h"]


def test_a_namespace_the_project_opens_is_its_own_name(tmp_path):
    """A BVH library named `cuBQL` that opens `namespace cuBQL {` (and `cuBQL::detail`)
    in its headers: the namespace is the project's, not a CUDA API to look up, wherever
    it is written. An unknown CUDA-shaped call inside it still is a question."""
    report = scan_source(
        tmp_path,
        "common.h",
        "#pragma once\n#include <cuda_runtime_api.h>\n\n"
        "namespace cuBQL {\n  template <typename T> struct box_t { T lower, upper; };\n}\n\n"
        "namespace cuBQL::detail {\n"
        "  inline void raise(const char *msg) { cudaDeviceSynchronize(); }\n"
        "  inline void reserve(size_t n) { cudaMallocFromPoolAsyncLite(n); }\n}\n\n"
        "#define CUBQL_RAISE(MSG) ::cuBQL::detail::raise(MSG);\n",
    )
    assert [m.split("`")[1] for m in unknown_names(report)] == ["cudaMallocFromPoolAsyncLite"]


def test_a_test_named_after_an_api_is_not_a_use_of_it(tmp_path):
    """GoogleTest and Google Benchmark name tests after the API they exercise
    (`TEST_F(Allocators, cudaMallocManaged)`, Umpire's `BENCHMARK_DEFINE_F(CudaMallocManaged,
    cudaMallocManaged)`): those names are pasted into class names. The calls in the bodies
    are uses."""
    report = scan_source(
        tmp_path,
        "allocators_test.cpp",
        "#include <cuda_runtime.h>\n#include <gtest/gtest.h>\n"
        "#include <benchmark/benchmark.h>\n\n"
        "class Allocators : public ::testing::Test {};\n\n"
        "TEST_F(Allocators, cudaMallocManaged) {\n"
        "  float* p = nullptr;\n"
        "  ASSERT_EQ(cudaMallocManaged(&p, 1024), cudaSuccess);\n"
        "  cudaFree(p);\n}\n\n"
        "static void managed(benchmark::State& st) {}\n"
        "BENCHMARK_REGISTER_F(Allocators, cudaMallocManaged)->Range(8, 1 << 20);\n",
    )
    managed = [f.span.line for f in report.findings if f.slug == "managed-memory"]
    assert managed == [9]
    lines = sorted(u.span.line for u in report.uses if u.name == "cudaMallocManaged")
    assert lines == [9]


def test_a_driver_api_bound_through_a_pointer_is_still_that_api(tmp_path):
    """`extern tcuModuleLoadData *cuModuleLoadData;`, filled with dlsym (cuda-samples'
    matrixMulDynlinkJIT): libclang sees a project variable, but a call through it under the
    API's name loads a PTX module all the same, in both front ends."""
    (tmp_path / "dynlink.h").write_text(
        "#pragma once\n#include <cuda.h>\n"
        "typedef CUresult tcuModuleLoadData(CUmodule* module, const void* image);\n"
        "extern tcuModuleLoadData* cuModuleLoadData;\n"
        "int cuda_driver_api_init();\n"
    )
    (tmp_path / "jit.cpp").write_text(
        '#include "dynlink.h"\n\nextern const char kernel_ptx[];\n\n'
        "CUmodule load_kernels() {\n  CUmodule module;\n"
        "  if (cuda_driver_api_init() != 0) return nullptr;\n"
        "  cuModuleLoadData(&module, kernel_ptx);\n  return module;\n}\n"
    )
    for front_end in ("auto", "deep"):
        report = portcheck.scan(tmp_path, cache=False, front_end=front_end)
        loads = [(f.path, f.span.line) for f in report.findings if f.slug == "ptx-module-load"]
        assert loads == [("jit.cpp", 8)], front_end


def test_specifier_macros_from_another_header_do_not_break_the_parse():
    """`accelerator_inline Real real(void) const`, `LAT_DEVICE_ONLY vobj f(`: qualifiers the
    project defines in another header. The file is parsed without them (no parse errors
    left), and the project's definitions still decide that the functions are device code,
    so the 32-lane split inside one is found."""
    report = portcheck.scan(PROJECTS / "specifier_macros", cache=False)
    errors = {f.path: f.parse_errors for f in report.files}
    assert errors["src/lattice_vec.h"] == 0
    assert ("src/lattice_vec.h", "warp-size-assumption", 25, False) in findings(report)


def test_a_typedef_before_a_declaration_is_not_taken_for_a_macro(tmp_path):
    """`Table table_ TF_GUARDED_BY(mu_);` after `typedef … Table;`: the run of names is a
    type, a member and an annotation macro; leaving out `Table` would misread the member."""
    from portcheck.filescan import FileScanner
    from portcheck.parse.text import LineIndex
    from portcheck.parse.treesitter import parse_cuda, structure_captures
    from portcheck.ruleset import default_rules

    text = (
        b"#include <cuda_runtime.h>\n"
        b"class Queues {\n  typedef std::map<int, cudaStream_t> Table;\n"
        b"  Table table_ TF_GUARDED_BY(mu_);\n};\n"
        b"HOSTDEVICE inline float2 make_pair2(float a, float b) { return make_float2(a, b); }\n"
    )
    errors = structure_captures(parse_cuda(text).root_node).get("error", ())
    hidden = FileScanner(default_rules())._specifier_macros(text, errors, LineIndex(text))
    assert {name for _, _, name in hidden} == {"HOSTDEVICE"}


def test_a_device_pass_test_beside_the_amd_one_is_listed_with_its_alternative(tmp_path):
    """Legion's half.h: `#ifdef __CUDA_ARCH__` … `#elif defined(__HIP_DEVICE_COMPILE__)`
    … `#else` (host). The first test is NVIDIA's device pass and the project wrote AMD's
    beside it: listed with amd_alternative, as the compute-capability gates are; when a
    gate sits inside, the gate alone is listed."""
    report = scan_source(
        tmp_path,
        "half_math.h",
        "#include <cuda_fp16.h>\n#include <cmath>\n\n"
        "__host__ __device__ inline __half tan(const __half &one) {\n"
        "#ifdef __CUDA_ARCH__\n"
        "  return __float2half(tanf(__half2float(one)));\n"
        "#elif defined(__HIP_DEVICE_COMPILE__)\n"
        "  return __float2half(tanf(__half2float(one)));\n"
        "#else\n"
        "  return __float2half(std::tan(__half2float(one)));\n"
        "#endif\n}\n\n"
        "__host__ __device__ inline __half exp(const __half &one) {\n"
        "#ifdef __CUDA_ARCH__\n"
        "#if __CUDA_ARCH__ >= 530\n"
        "  return hexp(one);\n"
        "#else\n"
        "  return __float2half(expf(__half2float(one)));\n"
        "#endif\n"
        "#elif defined(__HIP_DEVICE_COMPILE__)\n"
        "  return hexp(one);\n"
        "#else\n"
        "  return __float2half(std::exp(__half2float(one)));\n"
        "#endif\n}\n",
    )
    arch = [
        (f.span.line, f.amd_alternative) for f in report.findings if f.slug == "arch-conditional"
    ]
    assert arch == [(5, True), (16, True)]


def test_cublaslt_is_a_rename_unless_a_name_has_no_hipblaslt_counterpart():
    """cuBLASLt maps to hipBLASLt name by name (HIPIFY's tables): a file using only mapped
    names is a rename, not a library port; one that needs an unmapped call is told which."""
    report = portcheck.scan(PROJECTS / "wrapped_libraries", cache=False)
    ports = [f for f in report.findings if f.slug == "library-port" and "cublaslt" in f.message]
    assert [f.path for f in ports] == ["lt_gemm.cpp"]
    assert "`cublasLtMatmulAlgoCapGetAttribute`" in ports[0].message
    assert "2 of its names" in ports[0].message
    layouts = portcheck.scan(FIXTURES / "hazards" / "fp8_gemm_layout.cpp", cache=False)
    assert not [f for f in layouts.findings if f.slug == "library-port"]


def test_a_constant_defined_alike_in_two_headers_is_named_where_the_file_includes_it(tmp_path):
    # Two copies of the same width header (a training tree and a scratch tree of kernels);
    # each kernel file's findings name the copy it includes.
    for folder in ("dev", "lib"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "common.h").write_text(
            "#pragma once\n#include <cuda_runtime.h>\n#define WARP_SIZE 32\n"
        )
    (tmp_path / "dev" / "reduce.cu").write_text('#include "common.h"\n')
    (tmp_path / "lib" / "norm.cu").write_text(
        '#include "common.h"\n'
        "__global__ void row_norms(const float* x, float* out, int cols) {\n"
        "  const int lane = threadIdx.x % WARP_SIZE;\n"
        "  float s = 0.f;\n"
        "  for (int c = lane; c < cols; c += WARP_SIZE) s += x[blockIdx.x * cols + c];\n"
        "  s = __shfl_sync(__activemask(), s, 0);\n"
        "  if (lane == 0) out[blockIdx.x] = s;\n"
        "}\n"
    )
    report = portcheck.scan(tmp_path, cache=False)
    (split,) = [f for f in report.findings if f.path == "lib/norm.cu" and "splits" in f.message]
    assert "lib/common.h:3" in split.message
    (definition,) = [f for f in report.findings if f.path == "lib/common.h"]
    assert "lib/norm.cu:3" in definition.message


def test_exported_memory_is_asked_about_only_where_kernels_near_it_poll(tmp_path):
    """A tree of independent programs: one exports a cudaMalloc'd buffer to another process
    and synchronises on the host; another, in a sibling folder, spins on a flag in its
    kernel. The export is not the spinning program's signal buffer: nothing is reported."""
    (tmp_path / "ipc").mkdir()
    (tmp_path / "spin").mkdir()
    (tmp_path / "ipc" / "share.cu").write_text(
        "#include <cuda_runtime.h>\n"
        "int share(float** buf, size_t n, cudaIpcMemHandle_t* h) {\n"
        "  if (cudaMalloc(buf, n) != cudaSuccess) return 1;\n"
        "  return cudaIpcGetMemHandle(h, *buf) == cudaSuccess ? 0 : 1;\n"
        "}\n"
    )
    (tmp_path / "spin" / "wait.cu").write_text(
        "__global__ void wait_flag(volatile int* flag, int v) {\n"
        "  while (*(volatile int*)flag != v) {}\n"
        "}\n"
    )
    report = portcheck.scan(tmp_path, cache=False)
    assert not [f for f in report.findings if f.slug == "system-scope-sync"]
    (tmp_path / "ipc" / "wait.cu").write_text((tmp_path / "spin" / "wait.cu").read_text())
    report = portcheck.scan(tmp_path, cache=False)
    assert [(f.path, f.span.line) for f in report.findings if f.slug == "system-scope-sync"] == [
        ("ipc/share.cu", 3)
    ]
