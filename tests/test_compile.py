"""Compiling translated CUDA with the real hipcc (Debian's ROCm 5.2 toolchain).

These tests need hipcc. Outside CI they skip when it is missing; in CI (CI=true) a
missing hipcc is a failure, because .ci/run installs it."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from portcheck.compile import CompileError, compile_tree, find_toolchain

from conftest import FIXTURES, run_portcheck

COMPILE_FIXTURES = FIXTURES / "compile"


def _hipcc_available() -> bool:
    try:
        find_toolchain()
    except CompileError:
        return False
    return True


@pytest.fixture(scope="module", autouse=True)
def hipcc():
    if not _hipcc_available():
        if os.environ.get("CI"):
            pytest.fail("hipcc is missing in CI: .ci/run must install it (apt-get install hipcc)")
        pytest.skip("hipcc not installed (apt-get install -y hipcc)")
    return find_toolchain()


def _one(tmp_path, name, archs):
    shutil.copy(COMPILE_FIXTURES / name, tmp_path / name)
    return compile_tree(tmp_path / name, archs).results


def test_clean_program_builds_for_cdna_and_rdna(tmp_path, hipcc):
    results = _one(tmp_path, "saxpy.cu", "gfx90a,gfx1030")
    assert [(r.arch, r.ok) for r in results] == [("gfx1030", True), ("gfx90a", True)]


def test_inline_ptx_fails_on_the_cuda_line_and_names_the_hazard(tmp_path):
    (result,) = _one(tmp_path, "inline_ptx.cu", "gfx90a")
    assert not result.ok
    assert result.failure_class == "port-problem"
    assert result.finding_ids == ["PC003"]
    error = next(d for d in result.diagnostics if d.severity == "error")
    assert "invalid instruction" in error.message
    assert (error.path, error.line) == ("inline_ptx.cu", 6)  # the asm line in the CUDA file
    assert error.source_line.startswith('asm volatile("mov.u32 %0, %%smid;"')


def test_missing_rocm_library_is_not_blamed_on_the_code(tmp_path):
    (result,) = _one(tmp_path, "missing_library.cu", "gfx90a")
    assert not result.ok
    assert result.failure_class == "missing-library"
    assert "hipFFT" in result.explanation and "not packaged in Debian 12" in result.explanation
    assert result.finding_ids == []


def test_debian_packaged_library_builds(tmp_path):
    if not os.path.exists("/usr/include/hiprand/hiprand.h"):
        pytest.skip("libhiprand-dev not installed")
    (result,) = _one(tmp_path, "random.cu", "gfx90a")
    assert result.ok, result.diagnostics


def test_targets_the_toolchain_lacks_are_said_plainly(tmp_path):
    results = _one(tmp_path, "saxpy.cu", "gfx90a,gfx1100")
    by_arch = {r.arch: r for r in results}
    assert by_arch["gfx90a"].ok
    assert by_arch["gfx1100"].failure_class == "unsupported-target"
    assert "cannot build gfx1100" in by_arch["gfx1100"].explanation
    with pytest.raises(CompileError, match="not an AMD GPU target"):
        compile_tree(tmp_path / "saxpy.cu", "sm_80")


def test_rerun_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PORTCHECK_CACHE_DIR", str(tmp_path / "cache"))
    first = _one(tmp_path, "saxpy.cu", "gfx90a")
    second = compile_tree(tmp_path / "saxpy.cu", "gfx90a").results
    assert not first[0].cached and second[0].cached and second[0].ok


def test_cli_compile_json_and_scan_compile(tmp_path):
    shutil.copy(COMPILE_FIXTURES / "inline_ptx.cu", tmp_path)
    shutil.copy(COMPILE_FIXTURES / "saxpy.cu", tmp_path)
    run = run_portcheck(
        "compile", str(tmp_path), "--offload-arch", "gfx90a", "--format", "json", timeout=600
    )
    assert run.returncode == 1  # one unit fails
    doc = json.loads(run.stdout)
    assert doc["schema"] == "portcheck.compile/1"
    assert {"path", "version"} <= set(doc["hipcc"])
    assert {(r["path"], r["ok"]) for r in doc["results"]} == {
        ("inline_ptx.cu", False),
        ("saxpy.cu", True),
    }
    for result in doc["results"]:
        assert {"path", "arch", "ok", "seconds", "diagnostics"} <= set(result)
    scan = run_portcheck(
        "scan",
        str(tmp_path),
        "--compile",
        "--offload-arch",
        "gfx90a",
        "--format",
        "json",
        timeout=600,
    )
    # inline_ptx.cu fails for a reason in the code: scan --compile says so with exit 1.
    assert scan.returncode == 1, scan.stderr
    assert "inline_ptx.cu [gfx90a], port-problem" in scan.stderr
    assert len(json.loads(scan.stdout)["compile"]) == 2


def test_no_hipcc_is_a_clear_message(tmp_path):
    env = dict(os.environ, PATH="/nonexistent", ROCM_PATH=str(tmp_path))
    run = run_portcheck(
        "compile", str(COMPILE_FIXTURES / "saxpy.cu"), "--offload-arch", "gfx90a", env=env
    )
    if shutil.which("hipcc", path="/opt/rocm/bin"):
        pytest.skip("a ROCm install in /opt/rocm is always found")
    assert run.returncode == 3
    assert "hipcc was not found" in run.stderr and "Traceback" not in run.stderr


def test_plain_project_headers_are_found_by_includes(tmp_path):
    # A header with no CUDA in it is not translated, but a unit including it must build.
    (tmp_path / "common").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "common" / "helper_plain.h").write_text("#pragma once\n#define SCALE_FACTOR 2\n")
    (tmp_path / "src" / "k.cu").write_text(
        '#include "../common/helper_plain.h"\n#include <cuda_runtime.h>\n'
        "__global__ void k(int* x) { x[0] = SCALE_FACTOR; }\n"
    )
    (result,) = compile_tree(tmp_path, "gfx90a").results
    assert result.ok, result.diagnostics


def test_hazard_in_an_included_header_explains_the_failure(tmp_path):
    (tmp_path / "lane.cuh").write_text(
        "__device__ unsigned laneId() {\n  unsigned id;\n"
        '  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));\n  return id;\n}\n'
    )
    (tmp_path / "k.cu").write_text(
        '#include "lane.cuh"\n__global__ void k(unsigned* x) { x[0] = laneId(); }\n'
    )
    (result,) = compile_tree(tmp_path, "gfx90a").results
    assert not result.ok
    assert result.failure_class == "port-problem" and result.finding_ids == ["PC003"]


def test_hip_api_missing_in_this_rocm_is_its_own_class(tmp_path, hipcc):
    # __shfl_down_sync exists in HIP only from ROCm 6.2; Debian's ROCm 5.2 lacks it. Code
    # written for a team's ROCm 6.2 (for 5.2 it would use __shfl_down) fails for that.
    if hipcc.rocm is None or hipcc.rocm >= (6, 2):
        pytest.skip(f"this hipcc ({hipcc.version}) has __shfl_down_sync")
    (tmp_path / "k.cu").write_text(
        "__global__ void k(float* x) {\n"
        "  float v = x[threadIdx.x];\n"
        "  for (int o = warpSize / 2; o > 0; o /= 2)\n"
        "    v += __shfl_down_sync(0xffffffffffffffffull, v, o);\n"
        "  x[threadIdx.x] = v;\n}\n"
    )
    (result,) = compile_tree(tmp_path, "gfx90a", rocm="6.2").results
    assert not result.ok
    assert result.failure_class == "rocm-version", result.explanation
    assert "__shfl_down_sync needs ROCm 6.2" in result.explanation
    assert not result.code_failure


def test_external_engine_output_lines_map_back_to_the_cuda_source():
    from portcheck.compile import _align_lines

    # hipify-perl adds its include on line 1 and renames in place.
    translated = [
        '#include "hip/hip_runtime.h"',
        "#include <hip/hip_runtime.h>",
        "int x = hipMalloc();",
        'asm("mov.u32 %0, %%laneid;");',
    ]
    original = [
        "#include <cuda_runtime.h>",
        "int x = cudaMalloc();",
        'asm("mov.u32 %0, %%laneid;");',
    ]
    assert _align_lines(translated, original) == {1: 1, 2: 1, 3: 2, 4: 3}


def test_scan_compile_scans_each_file_once(tmp_path, monkeypatch):
    """`scan --compile` translates from the scan's own results instead of scanning the
    tree a second time; the hazard that breaks the build is still named on its CUDA line."""
    from click.testing import CliRunner

    from portcheck.cli import main
    from portcheck.filescan import FileScanner

    shutil.copy(COMPILE_FIXTURES / "inline_ptx.cu", tmp_path)
    shutil.copy(COMPILE_FIXTURES / "saxpy.cu", tmp_path)
    scanned: list[str] = []
    real_scan = FileScanner.scan

    def counting_scan(self, path, language, raw):
        scanned.append(path)
        return real_scan(self, path, language, raw)

    monkeypatch.setattr(FileScanner, "scan", counting_scan)
    result = CliRunner().invoke(
        main,
        [
            "scan",
            str(tmp_path),
            "--compile",
            "--offload-arch",
            "gfx90a",
            "--format",
            "json",
            "--no-cache",
            "-j",
            "1",
        ],
    )
    assert result.exit_code == 1, result.output
    assert sorted(scanned) == ["inline_ptx.cu", "saxpy.cu"]
    doc = json.loads(result.stdout)
    failed = [r for r in doc["compile"] if not r["ok"]]
    assert [r["path"] for r in failed] == ["inline_ptx.cu"]
    assert failed[0]["class"] == "port-problem"
    assert failed[0]["findings"], "the inline-PTX finding explains the failure"


def test_compile_for_the_chosen_gpu_and_what_the_toolchain_lacks(tmp_path):
    """`--gpu` picks the offload target; a GPU the installed hipcc (ROCm 5.2) cannot build
    (gfx1100, RX 7900 XTX) and a newer --rocm are said plainly, not blamed on the code."""
    shutil.copy(COMPILE_FIXTURES / "saxpy.cu", tmp_path)
    run = run_portcheck(
        "compile",
        str(tmp_path),
        "--gpu",
        "rx7900xtx",
        "--rocm",
        "6.2",
        "--format",
        "json",
        timeout=600,
    )
    doc = json.loads(run.stdout)
    assert [(r["arch"], r["class"]) for r in doc["results"]] == [("gfx1100", "unsupported-target")]
    assert "cannot build gfx1100" in doc["results"][0]["explanation"]
    assert "older than the ROCm 6.2 you target" in run.stderr
    rdna2 = run_portcheck("compile", str(tmp_path), "--gpu", "rx6800", timeout=600)
    assert rdna2.returncode == 0 and "gfx1030" in rdna2.stdout
    neither = run_portcheck("compile", str(tmp_path))
    assert neither.returncode == 2 and "--offload-arch" in neither.stderr


def test_a_projects_vector_operators_do_not_clash_with_hips(tmp_path):
    """`operator+=(float4&, float4)` in a helper header and HIP's own member operator make
    `acc[i] += value` ambiguous; the translation writes the helper's as a template (it
    loses the tie to HIP's, which does the same) and the kernel builds."""
    shutil.copytree(COMPILE_FIXTURES / "vector_ops", tmp_path / "vector_ops")
    (result,) = compile_tree(tmp_path / "vector_ops", "gfx90a").results
    assert result.ok, (result.explanation, result.diagnostics)
    translated = run_portcheck(
        "translate", str(tmp_path / "vector_ops"), "-o", str(tmp_path / "out"), "--rocm", "5.2"
    )
    assert translated.returncode == 0, translated.stderr
    header = (tmp_path / "out" / "vec_math.h").read_text().splitlines()
    demoted = {n + 1 for n, line in enumerate(header) if line.startswith("template <typename")}
    assert demoted == {10, 26, 30}  # +=, *= and -= on two vectors; not the scalar ones
