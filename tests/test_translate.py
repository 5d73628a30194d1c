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
    assert "hipHostMalloc(&p, bytes);" in text  # the #ifdef USE_PINNED branch
    assert "hipHostAlloc(&p, bytes, hipHostMallocDefault);" in text  # the #else branch
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
        "    out[threadIdx.x] = lane;\n"
        "}\n"
    )
    translate(source, tmp_path / "rdna.hip", gpu="rx7900xtx")
    translate(source, tmp_path / "cdna.hip", gpu="mi300x")
    assert "warp-size-assumption" not in (tmp_path / "rdna.hip").read_text()
    assert "warp-size-assumption" in (tmp_path / "cdna.hip").read_text()
