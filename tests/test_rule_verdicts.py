"""SCALE and ZLUDA verdicts as tools/build_rules.py reads them off the upstream sources.

The generator runs on the tiny stand-ins under tests/fixtures/build_rules/ (each becomes a
throwaway git repository), with the names of seeds_verdicts.txt. Each test pins one class
of error the generator used to make:

* SCALE: a name in a documentation section SCALE marks unsupported as a whole (EGL, FP8)
  was "supported" because the page does not list it; a routine commented out of SCALE's
  wrapper sources counted as declared; a versioned ABI name (cuMemsetD8_v2) was not
  matched to the base name the page lists.
* ZLUDA: types and enumerators counted as supported whether or not any function ZLUDA
  implements takes them (cuDNN backend enums); device and launch attributes were not
  checked against the code that answers them.

and the provenance every status now carries (`origin`), and the statistics of it.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from portcheck.cli import main
from portcheck.model import Status
from portcheck.ruleset import RuleError, load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "build_rules"
SCRIPT = ROOT / "tools" / "build_rules.py"
REPOS = ("hipify", "zluda", "scale-docs", "scale-wrappers")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        check=True,
        timeout=60,
    )


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the fixture repositories (one git repository each) and the
    rules/ built from them."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tmp = tmp_path_factory.mktemp("verdicts")
    cmd = [sys.executable, str(SCRIPT), "--seed-only"]
    cmd += ["--seeds", str(FIXTURES / "seeds_verdicts.txt")]
    for name in REPOS:
        shutil.copytree(FIXTURES / name, tmp / name)
        _git(tmp / name, "init", "-q")
        _git(tmp / name, "add", "-A")
        _git(tmp / name, "commit", "-q", "-m", "fixture")
        cmd += [f"--{name}", str(tmp / name)]
    cmd += ["--out", str(tmp / "rules")]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr
    return tmp


@pytest.fixture(scope="module")
def rules(built: Path):
    return load_rules(built / "rules", use_cache=False)


def _verdict(rules, name: str, target: str) -> tuple[Status, str]:
    rule = rules.lookup(name)
    assert rule is not None, name
    return rule.status[target], rule.origin[target]


# ---------------------------------------------------------------- SCALE


def test_a_name_in_a_section_scale_marks_unsupported_is_unsupported(rules):
    # api-runtime.md: "## [6.24. EGL Interoperability]" holds only "-EGL is currently
    # unsupported"; HIPIFY files cudaEGLStreamConsumerConnect under the same section.
    assert _verdict(rules, "cudaEGLStreamConsumerConnect", "scale") == (
        Status.UNSUPPORTED,
        "derived:section-unsupported",
    )
    connect = rules.lookup("cudaEGLStreamConsumerConnect")
    assert "EGL Interoperability" in connect.notes
    assert "api-runtime.md" in connect.source["scale"]
    # the module's data type sits in HIPIFY's data-types section: its name places it
    assert _verdict(rules, "cudaEglFrame", "scale")[0] is Status.UNSUPPORTED
    # FP8 Intrinsics: "-8 bit floating point is not supported"
    assert _verdict(rules, "__nv_fp8_e4m3", "scale") == (
        Status.UNSUPPORTED,
        "derived:section-unsupported",
    )


def test_sentences_of_an_unsupported_section_are_not_read_as_declarations(rules):
    # "-EGL is currently unsupported" names nothing; cudaMalloc stays what its line says
    assert _verdict(rules, "cudaMalloc", "scale") == (Status.SUPPORTED, "source")
    assert _verdict(rules, "__popc", "scale") == (Status.SUPPORTED, "source")


def test_a_routine_commented_out_of_scales_wrapper_is_not_declared(rules):
    # level3.h: BLAS_API(S, s, gemm, …) is code; "// BLAS_API(Z, z, gemm, …)" is not
    status, origin = _verdict(rules, "cublasZgemm", "scale")
    assert status is Status.UNSUPPORTED
    assert origin == "derived:absent-from-wrapper"
    assert _verdict(rules, "cublasSgemm", "scale") == (Status.SUPPORTED, "source")


def test_a_versioned_name_follows_the_base_name_the_page_lists(rules):
    # api-driver.md lists "-CUresult cuMemsetD8(...)" and " CUresult cuMemAlloc(...)"
    assert _verdict(rules, "cuMemsetD8_v2", "scale") == (
        Status.UNSUPPORTED,
        "derived:versioned-name",
    )
    alloc = rules.lookup("cuMemAlloc_v2")
    assert alloc.status.scale is Status.SUPPORTED
    assert "api-driver.md" in alloc.source["scale"]
    assert "cuMemAlloc" in alloc.notes


def test_an_enumerator_of_a_type_scale_flags_as_differing_is_partial_when_recent(rules):
    # "-enum cudaWidgetMode": SCALE's declaration differs; the enumerator is from CUDA 12.9
    assert _verdict(rules, "cudaWidgetModeFast", "scale") == (
        Status.PARTIAL,
        "derived:enum-consumer",
    )


def test_a_type_scale_does_not_list_follows_the_calls_that_take_it(rules):
    # " __host__ cudaError_t cudaWidgetConfigure(cudaWidgetDesc* desc, …)" is present
    assert _verdict(rules, "cudaWidgetDesc", "scale") == (Status.SUPPORTED, "derived:type-use")


# ---------------------------------------------------------------- ZLUDA


def test_cudnn_types_and_enumerators_no_implemented_function_takes_are_unsupported(rules):
    # zluda_dnn implements cudnnCreate only; cudnnBackendSetAttribute is a stub
    assert _verdict(rules, "cudnnBackendAttributeName_t", "zluda") == (
        Status.UNSUPPORTED,
        "derived:type-use",
    )
    assert _verdict(rules, "CUDNN_ATTR_POINTWISE_MODE", "zluda") == (
        Status.UNSUPPORTED,
        "derived:enum-consumer",
    )
    assert _verdict(rules, "cudnnBackendSetAttribute", "zluda")[0] is Status.UNSUPPORTED
    assert _verdict(rules, "cudnnCreate", "zluda") == (Status.SUPPORTED, "source")
    assert _verdict(rules, "cudnnHandle_t", "zluda") == (Status.SUPPORTED, "derived:type-use")
    assert "cudnnCreate" in rules.lookup("cudnnHandle_t").notes


def test_device_attributes_are_checked_against_zludas_cuDeviceGetAttribute(rules):
    # device.rs: WARP_SIZE answered with a fixed 32, MAX THREADS PER BLOCK remapped to
    # HIP, "//[CAN USE STREAM MEM OPS]" commented out, so INVALID_VALUE
    stream_ops = rules.lookup("CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS")
    assert stream_ops.status.zluda is Status.UNSUPPORTED
    assert "CUDA_ERROR_INVALID_VALUE" in stream_ops.notes
    warp = rules.lookup("CU_DEVICE_ATTRIBUTE_WARP_SIZE")
    assert warp.status.zluda is Status.SUPPORTED and "fixed 32" in warp.notes
    assert "zluda/src/impl/device.rs" in warp.source["zluda"]
    assert _verdict(rules, "CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK", "zluda") == (
        Status.SUPPORTED,
        "source",
    )


def test_launch_attributes_are_checked_against_zludas_cuLaunchKernelEx(rules):
    assert _verdict(rules, "CU_LAUNCH_ATTRIBUTE_COOPERATIVE", "zluda") == (
        Status.UNSUPPORTED,
        "source",
    )
    serialization = rules.lookup("CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION")
    assert serialization.status.zluda is Status.PARTIAL
    # the runtime spelling shares its HIP name with the driver one, which decides
    assert _verdict(rules, "cudaLaunchAttributeCooperative", "zluda") == (
        Status.UNSUPPORTED,
        "derived:driver-counterpart",
    )


def test_a_runtime_type_only_unserved_calls_take_is_unsupported_on_zluda(rules):
    # cudaWidgetConfigure needs cuWidgetConfigure, commented out of ZLUDA's list
    assert _verdict(rules, "cudaWidgetConfigure", "zluda")[0] is Status.UNSUPPORTED
    status, origin = _verdict(rules, "cudaWidgetDesc", "zluda")
    assert (status, origin) == (Status.UNSUPPORTED, "derived:type-use")
    assert "cudaWidgetConfigure" in rules.lookup("cudaWidgetDesc").notes


# ---------------------------------------------------------------- provenance


def test_every_status_records_where_it_came_from(rules):
    for rule in rules:
        assert rule.origin is not None and set(rule.origin) == {"hip", "zluda", "scale"}
        for target, origin in rule.origin.items():
            kind = origin.partition(":")[0]
            assert kind in ("source", "derived", "default"), (rule.cuda, target, origin)
            if kind == "source":  # read off a source: it names that source, not a reason
                assert not rule.source[target].startswith("inferred:"), (rule.cuda, target)


def test_stats_count_statuses_by_route_and_origin(rules):
    stats = rules.stats()
    assert {"total", "families", "entries_without_full_status"} <= set(stats)
    for target in ("hip", "zluda", "scale"):
        counts = stats["origins"][target]
        assert sum(counts.values()) == stats["total"]
        expected = sum(1 for r in rules if r.origin[target].startswith("derived:"))
        assert counts.get("derived", 0) == expected
        assert sum(stats["derivations"][target].values()) == expected
    assert stats["derivations"]["scale"]["section-unsupported"] >= 3


def test_the_loader_rejects_an_origin_it_does_not_know(tmp_path):
    (tmp_path / "runtime.yaml").write_text(
        "schema: portcheck.rules/1\n"
        "family: runtime\n"
        "entries:\n"
        "- cuda: cudaMalloc\n"
        "  kind: function\n"
        "  hip: hipMalloc\n"
        "  status: {hip: supported, zluda: supported, scale: supported}\n"
        "  source: {hip: 'inferred: a', zluda: 'inferred: b', scale: 'inferred: c'}\n"
        "  origin: {hip: source, zluda: guessed, scale: default}\n"
    )
    with pytest.raises(RuleError, match=r"origin\.zluda.*guessed"):
        load_rules(tmp_path, use_cache=False)


def test_rules_stats_reports_origins_per_route():
    runner = CliRunner()
    as_json = runner.invoke(main, ["rules", "stats", "--format", "json"])
    assert as_json.exit_code == 0, as_json.output
    stats = json.loads(as_json.output)
    assert {"total", "families", "entries_without_full_status"} <= set(stats)
    text = runner.invoke(main, ["rules", "stats"]).output
    for target in ("hip", "zluda", "scale"):
        counts = stats["origins"][target]
        assert sum(counts.values()) == stats["total"]
        line = next(ln for ln in text.splitlines() if ln.split()[:1] == [target])
        for kind, count in counts.items():
            assert f"{kind} {count}" in line


# ---------------------------------------------------------------- tools/verify_rules.py


VERIFY = ROOT / "tools" / "verify_rules.py"
CHECKOUTS = {
    "ROCm/HIPIFY": "hipify",
    "vosen/ZLUDA": "zluda",
    "spectral-compute/scale-docs": "scale-docs",
    "spectral-compute/scale-library-wrappers": "scale-wrappers",
}


@pytest.fixture(scope="module")
def mirrors(built: Path) -> Path:
    """Bare clones of the fixture repositories in the layout tools/verify_rules.py reads:
    MIRRORS/<owner>+<name>/repo."""
    root = built / "mirrors"
    for project, checkout in CHECKOUTS.items():
        target = root / project.replace("/", "+") / "repo"
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(built / checkout), str(target)],
            check=True,
            capture_output=True,
            timeout=60,
        )
    return root


def _verify(rules_dir: Path, mirrors: Path) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, str(VERIFY), "--rules", str(rules_dir), "--mirrors", str(mirrors)]
    cmd += ["-n", "1000", "--seed", "3"]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)


def test_verify_rules_agrees_with_the_rules_built_from_the_same_text(built, mirrors):
    result = _verify(built / "rules", mirrors)
    assert result.returncode == 0, result.stderr
    assert not [ln for ln in result.stdout.splitlines() if ln.startswith("disagree")]
    for target in ("hip", "zluda", "scale"):
        line = next(ln for ln in result.stdout.splitlines() if ln.startswith(target))
        assert "disagree 0" in line and "error rate 0.0%" in line
        checked = int(re.search(r"checked\s+(\d+)", line).group(1))
        assert checked >= 10, line


def test_verify_rules_reports_a_verdict_the_cited_text_contradicts(built, mirrors, tmp_path):
    # hand-edit one SCALE verdict back to what the old generator wrote: cublasZgemm is
    # only commented out in the wrapper, so the verifier must call it a disagreement
    edited = tmp_path / "rules"
    shutil.copytree(built / "rules", edited)
    cublas = edited / "cublas.yaml"
    lines = cublas.read_text().splitlines()
    at = lines.index("- cuda: cublasZgemm")
    status = next(i for i in range(at, at + 6) if lines[i].startswith("  status:"))
    lines[status] = lines[status].replace("scale: unsupported", "scale: supported")
    cublas.write_text("\n".join(lines) + "\n")
    result = _verify(edited, mirrors)
    assert result.returncode == 0, result.stderr
    reported = [ln for ln in result.stdout.splitlines() if ln.startswith("disagree")]
    assert [ln.split()[1:3] for ln in reported] == [["scale", "cublasZgemm"]]
    assert "not declared under redscale_wrappers/BLAS/" in reported[0]
    scale = next(ln for ln in result.stdout.splitlines() if ln.startswith("scale"))
    assert "disagree 1" in scale
