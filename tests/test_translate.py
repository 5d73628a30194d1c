"""Translation to HIP: goldens, idempotence, and the safety of writing the output tree."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from portcheck.filescan import FileScanner
from portcheck.model import Language
from portcheck.ruleset import default_rules
from portcheck.translate import TranslateError, translate, translate_source
from portcheck.translate.hipify import find_tool

from conftest import FIXTURES, REPO, SCAN_FIXTURES, run_portcheck

TRANSLATE_FIXTURES = FIXTURES / "translate"
INPUTS = sorted(p for p in TRANSLATE_FIXTURES.iterdir() if p.suffix in (".cu", ".cpp"))


def _translate_bytes(path):
    language = Language.CPP if path.suffix == ".cpp" else Language.CUDA
    return translate_source(FileScanner(default_rules()), path.name, language, path.read_bytes())


@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.name)
def test_golden(source, update_goldens):
    golden = source.with_suffix(".hip")
    translated = _translate_bytes(source).text
    if update_goldens:
        golden.write_bytes(translated)
    assert translated.decode() == golden.read_text(), f"regenerate with --update-goldens: {golden}"


@pytest.mark.parametrize("source", INPUTS, ids=lambda p: p.name)
def test_translating_twice_changes_nothing(source):
    once = _translate_bytes(source)
    language = Language.CPP if source.suffix == ".cpp" else Language.CUDA
    twice = translate_source(FileScanner(default_rules()), source.name, language, once.text)
    assert twice.text == once.text
    assert not twice.injected_include and twice.replacements == 0


def test_decoys_are_untouched_and_real_calls_translated():
    text = _translate_bytes(TRANSLATE_FIXTURES / "decoys.cu").text.decode()
    assert "// Only real code changes: cudaMalloc in this comment stays as written." in text
    assert '"cudaMalloc failed, see cudaGetErrorString"' in text
    assert "/* cudaMemcpy */" in text
    assert "int cudaFree(void* p);" in text and "mylib::cudaFree(*p);" in text
    assert "mycudaMalloc(p);" in text
    assert "hipDeviceSynchronize();" in text


def test_every_preprocessor_branch_is_translated_and_arch_tests_are_marked():
    result = _translate_bytes(TRANSLATE_FIXTURES / "conditional.cu")
    text = result.text.decode()
    # Both branches: #ifdef USE_PINNED (cudaMallocHost) and #else (cudaHostAlloc, whose HIP
    # name is deprecated for hipHostMalloc).
    assert text.count("hipHostMalloc(&p, bytes, hipHostMallocDefault);") == 2
    assert "#if defined(__HIPCC__)" in text
    assert "#ifdef __HIP_DEVICE_COMPILE__" in text
    # A numeric arch comparison has no HIP meaning: it stays, with a marker.
    assert "#if __CUDA_ARCH__ >= 800 /* portcheck: PC004 arch-conditional" in text


def test_line_numbers_are_kept_and_inserted_lines_recorded():
    source = TRANSLATE_FIXTURES / "libraries.cu"
    result = _translate_bytes(source)
    original = source.read_text().splitlines()
    translated = result.text.decode().splitlines()
    assert len(translated) == len(original) + len(result.inserted_lines)
    line = next(i for i, t in enumerate(translated, 1) if "hipblasSgemm(" in t)
    assert "cublasSgemm(" in original[result.original_line(line) - 1]


def _tree_digest(root):
    digest = hashlib.sha256()
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            path = os.path.join(folder, name)
            digest.update(path.encode() + Path(path).read_bytes())
    return digest.hexdigest()


def test_directory_mode_mirrors_the_tree_and_never_touches_the_input(tmp_path):
    example = REPO / "examples" / "heatflow"
    before = _tree_digest(example)
    out = tmp_path / "heatflow-hip"
    report = translate(example, out)
    assert _tree_digest(example) == before
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    expected = sorted(p.relative_to(example).as_posix() for p in example.rglob("*") if p.is_file())
    assert written == expected  # headers, the PTX file and CMakeLists.txt too
    assert "hipMallocManaged" in (out / "src" / "ensemble.cu").read_text()
    assert "#include <hip/hip_runtime.h>" in (out / "include" / "check.cuh").read_text()
    assert {f.path for f in report.files if f.changed} >= {"src/main.cu", "src/loader.cpp"}
    assert not list(out.rglob(".*.cu.*"))  # no temporary files left behind


def test_output_inside_the_input_or_equal_to_it_is_refused(tmp_path):
    tree = tmp_path / "repo"
    tree.mkdir()
    (tree / "k.cu").write_text("__global__ void k() {}\n")
    with pytest.raises(TranslateError, match="inside the input tree"):
        translate(tree, tree / "hip")
    with pytest.raises(TranslateError, match="must not be the input"):
        translate(tree / "k.cu", tree / "k.cu")


def test_symlink_in_the_output_cannot_lead_writes_outside(tmp_path):
    tree = tmp_path / "repo"
    (tree / "src").mkdir(parents=True)
    (tree / "src" / "k.cu").write_text("void f() { cudaDeviceSynchronize(); }\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "src")
    with pytest.raises(TranslateError, match="leads outside"):
        translate(tree, out)
    assert list(outside.iterdir()) == []


def test_single_file_and_diff_mode(tmp_path):
    source = SCAN_FIXTURES / "reduction.cu"
    target = tmp_path / "reduction.hip"
    translate(source, target)
    assert "hipMalloc(&d_in" in target.read_text()
    report = translate(source, None, diff_only=True)
    (result,) = report.files
    assert result.diff.startswith("--- a/reduction.cu\n+++ b/reduction.cu\n")
    assert "-  cudaMalloc(&d_in, n * sizeof(float));\n+  hipMalloc(&d_in, n * sizeof(float));" in (
        result.diff
    )


_cli = run_portcheck


def test_cli_translate_reports_changes_and_refuses_bad_output(tmp_path):
    done = _cli("translate", "examples/heatflow", "-o", str(tmp_path / "hip"))
    assert done.returncode == 0, done.stderr
    assert "src/residual.cu: 7 replacement(s), 7 marker(s)" in done.stdout
    refused = _cli("translate", "examples/heatflow", "-o", "examples/heatflow/hip")
    assert refused.returncode == 2 and "inside the input tree" in refused.stderr
    assert not (REPO / "examples" / "heatflow" / "hip").exists()


@pytest.mark.skipif(find_tool("hipify-perl") is not None, reason="hipify-perl is installed here")
def test_missing_external_engine_is_a_clear_error(tmp_path):
    done = _cli(
        "translate", "examples/heatflow", "-o", str(tmp_path / "x"), "--engine", "hipify-perl"
    )
    assert done.returncode == 2
    assert "hipify-perl was not found on PATH or in $ROCM_PATH/bin" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(find_tool("hipify-perl") is None, reason="hipify-perl not installed")
def test_hipify_perl_engine_translates(tmp_path):
    report = translate(SCAN_FIXTURES / "reduction.cu", tmp_path / "r.hip", engine="hipify-perl")
    assert not report.files[0].error
    assert "hipMalloc" in (tmp_path / "r.hip").read_text()


def test_runtime_include_is_added_even_when_a_comment_mentions_it():
    source = b"// was: #include <hip/hip_runtime.h>\n__global__ void k(int* x) { x[0] = 1; }\n"
    result = translate_source(FileScanner(default_rules()), "k.cu", Language.CUDA, source)
    assert result.injected_include
    assert result.text.startswith(
        b"// was: #include <hip/hip_runtime.h>\n#include <hip/hip_runtime.h>\n"
    )
    assert result.inserted_lines == [2]


def test_engine_disagreements_ignore_markers_blank_lines_and_include_placement():
    from portcheck.translate import disagreements

    ours = (
        b"#include <hip/hip_runtime.h>\n#include <hipblas/hipblas.h>\n\n"
        b"x(); /* portcheck: PC003 a */\n"
    )
    theirs = b'#include "hip/hip_runtime.h"\n#include <hipblas.h>\nx();\n'
    assert disagreements(ours, theirs) == [
        (1, "#include <hipblas/hipblas.h>", "#include <hipblas.h>")
    ]


@pytest.mark.skipif(find_tool("hipify-perl") is None, reason="hipify-perl not installed")
def test_compare_with_hipify_perl_lists_where_engines_disagree(tmp_path):
    report = translate(REPO / "examples" / "heatflow", tmp_path / "out", compare="hipify-perl")
    spectral = next(f for f in report.files if f.path == "src/spectral.cu")
    assert ("#include <hipblas/hipblas.h>", "#include <hipblas.h>") in {
        (ours, theirs) for _, ours, theirs in spectral.disagreements
    }


def test_runtime_header_goes_before_other_hip_headers():
    # ROCm's cooperative-groups header needs hip_runtime.h first; nvcc included it implicitly.
    source = (
        b"#include <cooperative_groups.h>\n#include <cuda_runtime.h>\n"
        b"__global__ void k(int* x) { x[0] = 1; }\n"
    )
    text = translate_source(FileScanner(default_rules()), "k.cu", Language.CUDA, source).text
    assert text.startswith(
        b"#include <hip/hip_runtime.h>\n#include <hip/hip_cooperative_groups.h>\n"
    )


def test_cuda_header_hip_does_not_need_is_commented_out_in_place():
    # Visual Studio's CUDA template includes device_launch_parameters.h; HIP has no such file.
    source = (
        b'#include "cuda_runtime.h"\n#include "device_launch_parameters.h"\n'
        b"__global__ void k(int* x) { x[threadIdx.x] = 0; }\n"
    )
    text = translate_source(FileScanner(default_rules()), "k.cu", Language.CUDA, source).text
    assert text.splitlines()[:2] == [
        b'#include "hip/hip_runtime.h"',
        b'// #include "device_launch_parameters.h"',
    ]


def test_translation_for_an_older_rocm_writes_the_maskless_warp_builtins(tmp_path):
    """The `_sync` warp builtins came to HIP in ROCm 6.2 (rules: hip_added 6.2.0, from
    HIP's headers at the rocm-6.2.0 tag): for 5.7 the output uses the mask-less builtins
    every release has, as the human ports did; for the newest release it keeps them."""
    from portcheck.translate import translate

    source = tmp_path / "reduce.cu"
    source.write_text(
        "__device__ float warp_sum(float v) {\n"
        "    for (int o = 16; o > 0; o >>= 1)\n"
        "        v += __shfl_down_sync(0xffffffffu, v, o);\n"
        "    unsigned voted = __ballot_sync(__activemask(), v > 0.f);\n"
        "    return __any_sync(0xffffffff, voted != 0u) ? v : 0.f;\n"
        "}\n"
    )
    old = translate(source, tmp_path / "old.hip", rocm="5.7")
    text = (tmp_path / "old.hip").read_text()
    assert "v += __shfl_down(v, o);" in text
    assert "__ballot(v > 0.f)" in text and "__any(voted != 0u)" in text
    assert "_sync(" not in text
    assert old.files[0].replacements >= 3
    translate(source, tmp_path / "new.hip")
    assert "__shfl_down_sync(0xffffffffu, v, o)" in (tmp_path / "new.hip").read_text()


def test_markers_name_only_what_is_a_problem_on_the_chosen_gpu(tmp_path):
    """On a 32-wide RDNA GPU (RX 7900 XTX, gfx1100: rules/gpus.yaml) a 32-lane warp is
    right, so the translation for it carries no warp-width marker; for MI300X it does."""
    from portcheck.translate import translate

    source = tmp_path / "lane.cu"
    source.write_text(
        "__global__ void lanes(int* out) {\n"
        "    int lane = threadIdx.x % 32;\n"
        "    out[threadIdx.x] = __shfl_down_sync(__activemask(), lane, 1);\n"
        "}\n"
    )
    translate(source, tmp_path / "rdna.hip", gpu="rx7900xtx")
    translate(source, tmp_path / "cdna.hip", gpu="mi300x")
    assert "warp-size-assumption" not in (tmp_path / "rdna.hip").read_text()
    assert "warp-size-assumption" in (tmp_path / "cdna.hip").read_text()


def _translated(tmp_path, name, text, **options):
    from portcheck.translate import translate

    source = tmp_path / name
    source.write_text(text)
    out = tmp_path / ("out_" + "_".join(f"{k}{v}" for k, v in options.items()) + name)
    translate(source, out, **options)
    return out.read_text()


def test_a_call_passed_to_a_check_macro_without_its_semicolon_is_translated(tmp_path):
    """`CHECK_CUDA(cudaMemcpy(...))` with no `;` is parsed as a declaration of a function
    `cudaMemcpy` (the next line is a declaration): still a call to translate."""
    text = _translated(
        tmp_path,
        "upload.cu",
        "#include <cuda_runtime.h>\n"
        '#include "check.h"\n\n'
        "template <typename T>\n"
        "void upload(T* dst, const T* src, size_t n) {\n"
        "    CHECK_CUDA(cudaMemcpy(dst, src, n * sizeof(T), cudaMemcpyHostToDevice))\n"
        "    float* staging = nullptr;\n"
        "    CHECK_CUDA(cudaMalloc(&staging, n))\n"
        "    CHECK_CUDA(cudaFree(staging))\n"
        "}\n",
    )
    assert "CHECK_CUDA(hipMemcpy(dst, src, n * sizeof(T), hipMemcpyHostToDevice))" in text
    assert "CHECK_CUDA(hipMalloc(&staging, n))" in text and "cuda" not in text.replace(
        "CHECK_CUDA", ""
    )


def test_cuda_version_tests_keep_the_cuda_branches(tmp_path):
    """HIP defines no CUDA_VERSION: left alone in `#if`, the test reads 0 and HIP takes the
    branch for an older CUDA; a value used in code becomes HIP_VERSION."""
    text = _translated(
        tmp_path,
        "alloc.cu",
        "#include <cuda.h>\n#include <cstdio>\n"
        "void* grab(size_t n, cudaStream_t s) {\n"
        "    void* p = nullptr;\n"
        "#if CUDA_VERSION >= 11020\n"
        "    cudaMallocAsync(&p, n, s);\n"
        "#else\n"
        "    cudaMalloc(&p, n);\n"
        "#endif\n"
        '    std::printf("built with %d\\n", CUDART_VERSION);\n'
        "    return p;\n"
        "}\n",
    )
    assert "#if CUDA_VERSION >= 11020" in text
    assert 'std::printf("built with %d\\n", HIP_VERSION);' in text


def test_the_chosen_rocm_release_decides_names_and_header_paths(tmp_path):
    """hipBLAS's cuBLAS-shaped functions are `hipblasX_v2` in ROCm 6.x and `hipblasX`
    from 7.0 (HIPIFY's maps); the library headers moved to hipblas/ in ROCm 5.2;
    bfloat16 is `hip_bfloat16` before ROCm 5.7."""
    source = (
        "#include <cublas_v2.h>\n#include <cuda_bf16.h>\n"
        "float norm(cublasHandle_t h, int n, const cuComplex* x) {\n"
        "    float r = 0.f;\n"
        "    cublasScnrm2(h, n, x, 1, &r);\n"
        "    return r;\n"
        "}\n"
        "__global__ void widen(const __nv_bfloat16* in, float* out) { out[0] = in[0]; }\n"
    )
    old = _translated(tmp_path, "norm.cu", source, rocm="5.1")
    assert "#include <hipblas.h>" in old and "hipblasScnrm2(h, n, x, 1, &r);" in old
    assert "#include <hip/hip_bfloat16.h>" in old and "const hip_bfloat16* in" in old
    widen = next(line for line in old.splitlines() if "hip_bfloat16* in" in line)
    assert "unsupported-api" not in widen  # written as that release has it: no marker
    six = _translated(tmp_path, "norm.cu", source, rocm="6.2")
    assert "#include <hipblas/hipblas.h>" in six and "hipblasScnrm2_v2(h, n, x, 1, &r);" in six
    assert "#include <hip/hip_bf16.h>" in six and "const __hip_bfloat16* in" in six
    seven = _translated(tmp_path, "norm.cu", source, rocm="7.0")
    assert "hipblasScnrm2(h, n, x, 1, &r);" in seven


def test_activemask_before_rocm_6_2_is_a_ballot_of_every_lane(tmp_path):
    text = _translated(
        tmp_path,
        "vote.cu",
        "__device__ int leaders(int flag) {\n"
        "    unsigned live = __activemask();\n"
        "    return __popc(__ballot_sync(live, flag));\n"
        "}\n",
        rocm="5.2",
    )
    assert "unsigned live = __ballot(1);" in text and "__popc(__ballot(flag))" in text


def test_an_arch_guard_whose_branch_reads_the_number_is_kept(tmp_path):
    """`#ifdef __CUDA_ARCH__` over `__CUDA_ARCH__ >= 200` in an enum: as
    `__HIP_DEVICE_COMPILE__` the device pass would read an undefined name; kept, HIP
    takes the `#else`, as the human port does. A plain guard is still translated."""
    text = _translated(
        tmp_path,
        "buffer.cuh",
        "template <int SIZE>\nclass TransformBuffer {\n  enum {\n"
        "    #ifdef __CUDA_ARCH__\n"
        "    SHM_BANKS = ((__CUDA_ARCH__ >= 200) ? 32 : 16),\n"
        "    #else\n"
        "    SHM_BANKS = 16,\n"
        "    #endif\n"
        "    BUFFER_SIZE = SIZE + SIZE / SHM_BANKS\n  };\n};\n"
        "__host__ __device__ inline int lane() {\n"
        "#ifdef __CUDA_ARCH__\n  return threadIdx.x;\n#else\n  return 0;\n#endif\n}\n",
    )
    assert "    #ifdef __CUDA_ARCH__\n    SHM_BANKS = ((__CUDA_ARCH__ >= 200)" in text
    assert "#ifdef __HIP_DEVICE_COMPILE__\n  return threadIdx.x;" in text


def test_a_spaced_launch_is_written_as_one_clang_reads(tmp_path):
    text = _translated(
        tmp_path,
        "filter.cu",
        "__global__ void likelihood(float* w, int n) { w[threadIdx.x] = n; }\n"
        "void step(float* w, int n, int blocks, int threads) {\n"
        "    likelihood << < blocks, threads >> > (w, n);\n"
        "}\n",
    )
    assert "likelihood <<< blocks, threads >>> (w, n);" in text


def test_the_runtime_header_goes_outside_extern_c_and_own_headers_stay(tmp_path):
    """Rodinia's b+tree includes its own util/cuda/cuda.h inside `extern "C" {`: that
    include stays (it is the project's file) and the HIP runtime header goes on top."""
    from portcheck.translate import translate

    project = tmp_path / "btree"
    (project / "util" / "cuda").mkdir(parents=True)
    (project / "util" / "cuda" / "cuda.h").write_text("void setdevice(void);\n")
    (project / "util" / "cuda" / "cuda.cu").write_text(
        '#ifdef __cplusplus\nextern "C" {\n#endif\n'
        '#include "cuda.h"\n'
        "void setdevice(void) {\n    int count = 0;\n    cudaGetDeviceCount(&count);\n"
        "    if (count > 1) cudaSetDevice(1);\n}\n"
        "#ifdef __cplusplus\n}\n#endif\n"
    )
    translate(project, tmp_path / "out")
    text = (tmp_path / "out" / "util" / "cuda" / "cuda.cu").read_text()
    assert text.startswith("#include <hip/hip_runtime.h>\n#ifdef __cplusplus\nextern")
    assert '#include "cuda.h"' in text and "hipGetDeviceCount(&count);" in text


def test_arguments_hip_needs_in_another_form(tmp_path):
    """HIPIFY's transforming matchers, as byte edits on the call's own arguments: kernels
    as `const void*`, symbols through HIP_SYMBOL, pinned allocations with their flag, a
    null occupancy callback dropped; a project's own cast or a real callback is kept."""
    text = _translated(
        tmp_path,
        "setup.cu",
        "#include <cuda.h>\n#include <cuda_runtime.h>\n"
        "__constant__ float coeffs[16];\n"
        "__global__ void scale(float* x) { x[threadIdx.x] *= coeffs[0]; }\n"
        "size_t smem(int block) { return block * sizeof(float); }\n"
        "void setup(const float* h, void** pinned, CUfunction f, int* grid, int* block) {\n"
        "    cudaFuncAttributes attr;\n"
        "    CHECK(cudaFuncGetAttributes(&attr, scale));\n"
        "    cudaFuncSetCacheConfig((const void*)scale, cudaFuncCachePreferL1);\n"
        "    cudaMemcpyToSymbol(coeffs, h, sizeof(float) * 16);\n"
        "    cudaMallocHost(pinned, 1 << 20);\n"
        "    cuOccupancyMaxPotentialBlockSize(grid, block, f, NULL, 0, 256);\n"
        "    cuOccupancyMaxPotentialBlockSize(grid, block, f, smem, 0, 256);\n"
        "    int* ints = nullptr;\n"
        "    cudaHostAlloc(&ints, 64 * sizeof(int), cudaHostAllocMapped);\n"
        "    cudaStreamWaitEvent(0, nullptr);\n"
        "}\n",
        rocm="5.2",
    )
    assert "CHECK(hipFuncGetAttributes(&attr, reinterpret_cast<const void*>(scale)));" in text
    assert "hipFuncSetCacheConfig((const void*)scale, hipFuncCachePreferL1);" in text
    assert "hipMemcpyToSymbol(HIP_SYMBOL(coeffs), h, sizeof(float) * 16);" in text
    assert "hipHostMalloc(pinned, 1 << 20, hipHostMallocDefault);" in text
    assert "hipModuleOccupancyMaxPotentialBlockSize(grid, block, f, 0, 256);" in text
    assert "hipModuleOccupancyMaxPotentialBlockSize(grid, block, f, smem, 0, 256);" in text
    # HIP deprecates hipHostAlloc for hipHostMalloc, which also takes an `int**`.
    assert "hipHostMalloc(&ints, 64 * sizeof(int), hipHostMallocMapped);" in text
    assert "hipStreamWaitEvent(0, nullptr, 0);" in text  # CUDA's default flags, written out


def test_renamed_hip_names_follow_the_release(tmp_path):
    """HIP renamed its JIT options after ROCm 6.3 (HIPRTC_JIT_* -> hipJitOption*, in 6.4)
    and spelled the PCI-domain attribute `...PciDomainID` through 6.2 at least."""
    source = (
        "#include <cuda.h>\n"
        "int domain(CUdevice d) {\n"
        "    int id = 0;\n"
        "    cuDeviceGetAttribute(&id, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d);\n"
        "    CUjit_option opts[] = {CU_JIT_MAX_REGISTERS};\n"
        "    return id + (int)opts[0];\n"
        "}\n"
    )
    old = _translated(tmp_path, "jit.cu", source, rocm="5.2")
    assert "hipDeviceAttributePciDomainID" in old and "HIPRTC_JIT_MAX_REGISTERS" in old
    new = _translated(tmp_path, "jit.cu", source, rocm="7.0")
    assert "hipDeviceAttributePciDomainId" in new and "hipJitOptionMaxRegisters" in new


def test_a_cu_file_gets_the_runtime_header_nvcc_would_give_it(tmp_path):
    """nvcc includes cuda_runtime.h in every .cu file; the HIP one goes after a leading
    `#pragma once` or inside the include guard."""
    plain = _translated(tmp_path, "main.cu", "#pragma once\nint main() { return 0; }\n")
    assert plain == "#pragma once\n#include <hip/hip_runtime.h>\nint main() { return 0; }\n"
    guarded = _translated(
        tmp_path,
        "table.cuh",
        "// lookup table\n#ifndef TABLE_CUH\n#define TABLE_CUH\n#include <cstdio>\n"
        "__device__ int lookup(int i) { return i; }\n#endif\n",
    )
    assert guarded.startswith("// lookup table\n#ifndef TABLE_CUH\n#include <hip/hip_runtime.h>\n")


def test_legacy_cublas_calls_are_left_for_a_person(tmp_path):
    """The handle-less legacy API (cublas.h) has no hipBLAS twin: `cublasSscal(n, a, x, 1)`
    renamed to hipBLAS's handle-taking function would be wrong; it stays."""
    text = _translated(
        tmp_path,
        "legacy.cu",
        '#include "cublas.h"\n'
        "void scale(float* m, int n, float alpha) {\n"
        "    cublasInit();\n"
        "    cublasSscal(n, alpha, m, 1);\n"
        "    cublasShutdown();\n"
        "}\n",
    )
    assert "    cublasSscal(n, alpha, m, 1);" in text


def test_the_register_keyword_clang_rejects_in_cxx17_goes(tmp_path):
    text = _translated(
        tmp_path,
        "rates.cu",
        "// register pressure is what this kernel is about\n"
        "__global__ void rates(const float* t, float* out) {\n"
        "    const register float temp = t[threadIdx.x];\n"
        '    const char* unit = "register";\n'
        "    out[threadIdx.x] = temp * unit[0];\n"
        "}\n",
    )
    assert "    const float temp = t[threadIdx.x];" in text
    assert "// register pressure" in text and '"register"' in text


def test_a_helper_header_the_project_has_is_kept_and_translated(tmp_path):
    """HIPIFY's table maps cuda-samples' helper_cuda.h to hip_runtime_api.h, for code that
    lacks it; a project that has its own helper_cuda.h keeps the include (its
    checkCudaErrors is needed) and the helper is translated like any file."""
    from portcheck.translate import translate

    project = tmp_path / "sample"
    (project / "common").mkdir(parents=True)
    (project / "common" / "helper_cuda.h").write_text(
        "#pragma once\n#include <cstdio>\n#include <cuda_runtime.h>\n"
        "#define checkCudaErrors(call) do { cudaError_t e = (call); "
        'if (e) std::printf("%s\\n", cudaGetErrorString(e)); } while (0)\n'
    )
    (project / "vector_add.cu").write_text(
        "#include <helper_cuda.h>\n"
        "__global__ void add(const float* a, float* b) { b[threadIdx.x] += a[threadIdx.x]; }\n"
        "void run(float* a, float* b) { add<<<1, 32>>>(a, b); "
        "checkCudaErrors(cudaDeviceSynchronize()); }\n"
    )
    translate(project, tmp_path / "out")
    unit = (tmp_path / "out" / "vector_add.cu").read_text()
    assert "#include <helper_cuda.h>" in unit and "checkCudaErrors(hipDeviceSynchronize())" in unit
    helper = (tmp_path / "out" / "common" / "helper_cuda.h").read_text()
    assert "hipGetErrorString(e)" in helper
    alone = _translated(tmp_path, "lone.cu", "#include <helper_cuda.h>\nint main() { return 0; }\n")
    assert "#include <hip/hip_runtime_api.h>" in alone


def test_the_callback_calling_convention_macro_is_dropped():
    """CUDART_CB is empty on Linux and HIP does not define it: left in, `void CUDART_CB
    done(...)` reads as a variable of type void. A #define that tests it stays."""
    source = (
        b"#include <cuda_runtime.h>\n#ifndef CUDART_CB\n#define CUDART_CB\n#endif\n\n"
        b"void CUDART_CB done(cudaStream_t stream, cudaError_t status, void* data) {\n"
        b"  *static_cast<int*>(data) = status == cudaSuccess;\n}\n\n"
        b"void enqueue(cudaStream_t stream, int* flag) {\n"
        b"  cudaStreamAddCallback(stream, done, flag, 0);\n}\n"
    )
    text = translate_source(FileScanner(default_rules()), "k.cu", Language.CUDA, source).text
    assert b"void done(hipStream_t stream, hipError_t status, void* data)" in text
    assert b"#ifndef CUDART_CB\n#define CUDART_CB\n" in text
    assert b"hipStreamAddCallback(stream, done, flag, 0);" in text


def test_a_header_that_only_includes_vector_types_is_translated(tmp_path):
    """cuda-samples' Mandelbrot_kernel.h declares host entry points on `uchar4` and includes
    nothing but <vector_types.h>: it is CUDA, and its include must become HIP's."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "render.h").write_text(
        "#ifndef RENDER_H\n#define RENDER_H\n#include <vector_types.h>\n\n"
        'extern "C" void render(uchar4* frame, int width, int height);\n#endif\n'
    )
    (src / "render.cu").write_text(
        '#include "render.h"\n\n__global__ void shade(uchar4* frame, int width) {\n'
        "  frame[blockIdx.x * width + threadIdx.x] = make_uchar4(0, 0, 0, 255);\n}\n\n"
        'extern "C" void render(uchar4* frame, int width, int height) {\n'
        "  shade<<<height, width>>>(frame, width);\n}\n"
    )
    translate(src, tmp_path / "out")
    assert "#include <hip/hip_vector_types.h>" in (tmp_path / "out" / "render.h").read_text()
