"""tools/build_rules.py rebuilt end to end from tiny synthetic upstream repositories.

Each directory under tests/fixtures/build_rules/ becomes a throwaway git repository; the
generator reads them at HEAD exactly as it reads the real mirrors, and the result must
load with the strict rule loader and carry the fixture commits as provenance.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from portcheck.model import Status
from portcheck.ruleset import load_rules

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "build_rules"
SCRIPT = ROOT / "tools" / "build_rules.py"
REPOS = ("hipify", "zluda", "scale-docs", "scale-wrappers")


def _git(cwd: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def _make_repo(source: Path, target: Path) -> str:
    shutil.copytree(source, target)
    _git(target, "init", "-q")
    _git(target, "add", "-A")
    _git(target, "commit", "-q", "-m", "fixture")
    return _git(target, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tmp = tmp_path_factory.mktemp("build_rules")
    shas = {name: _make_repo(FIXTURES / name, tmp / name) for name in REPOS}
    out = tmp / "rules"
    cmd = [sys.executable, str(SCRIPT), "--seed-only", "--seeds", str(FIXTURES / "seeds.txt")]
    for name in REPOS:
        cmd += [f"--{name}", str(tmp / name)]
    cmd += ["--out", str(out)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return out, shas, load_rules(out, use_cache=False)


def _status(rule) -> tuple[str, str, str]:
    return (rule.status.hip.value, rule.status.zluda.value, rule.status.scale.value)


def test_every_seed_becomes_a_valid_entry(built):
    out, _shas, rules = built
    seeds = [
        line.strip()
        for line in (FIXTURES / "seeds.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert sorted(rule.cuda for rule in rules) == sorted(seeds)
    assert {p.name for p in out.glob("*.yaml")} == {
        "runtime.yaml",
        "driver.yaml",
        "device.yaml",
        "cublas.yaml",
        "headers.yaml",
    }
    for rule in rules:
        assert set(rule.source) == {"hip", "zluda", "scale"}
        assert all(isinstance(rule.status[t], Status) for t in ("hip", "zluda", "scale"))


def test_header_records_the_regeneration_command_and_commits(built):
    out, shas, _rules = built
    head = (out / "runtime.yaml").read_text().splitlines()[:3]
    assert head[1].startswith("# Regenerate: python tools/build_rules.py --hipify <ROCm/HIPIFY>")
    assert "--seed-only" in head[1]
    for sha in shas.values():
        assert sha in head[2]


def test_runtime_entries(built):
    _out, shas, rules = built
    malloc = rules.lookup("cudaMalloc")
    assert malloc.hip == "hipMalloc"
    assert _status(malloc) == ("supported", "supported", "supported")
    assert shas["hipify"][:12] in malloc.source["hip"]
    assert shas["scale-docs"][:12] in malloc.source["scale"]
    assert "cuMemAlloc" in malloc.source["zluda"]  # inferred through the driver call

    query = rules.lookup("cudaStreamQuery")
    assert _status(query) == ("supported", "supported", "unsupported")

    # no HIP equivalent; no recorded mapping, so the same-named driver call decides
    widget = rules.lookup("cudaWidgetReset")
    assert widget.hip is None and widget.since == "12.9"
    assert _status(widget) == ("unsupported", "unsupported", "supported")
    assert widget.source["zluda"].startswith("inferred:")
    assert "cuWidgetReset" in widget.source["zluda"]


def test_driver_entries(built):
    _out, shas, rules = built
    alloc = rules.lookup("cuMemAlloc")
    assert _status(alloc) == ("supported", "supported", "supported")
    assert shas["zluda"][:12] in alloc.source["zluda"]

    launch = rules.lookup("cuLaunchKernel")
    assert launch.hip == "hipModuleLaunchKernel"
    # experimental in HIP; absent from ZLUDA's list; marked missing by SCALE's diff but
    # announced in a changelog
    assert _status(launch) == ("partial", "unsupported", "supported")
    assert "changelogs/v9.9.0.md" in launch.source["scale"]

    ptr = rules.lookup("CUdeviceptr")
    assert ptr.kind == "type" and ptr.hip == "hipDeviceptr_t"


def test_device_entries_are_checked_against_the_ptx_grammar(built):
    _out, shas, rules = built
    popc = rules.lookup("__popc")
    assert _status(popc) == ("supported", "supported", "supported")
    assert shas["zluda"][:12] in popc.source["zluda"]
    assert "ptx_parser/src/lib.rs" in popc.source["zluda"]

    # pattern rule: __fadd_rd -> add.rm.f32, accepted through the optional {.rnd} segment
    fadd = rules.lookup("__fadd_rd")
    assert fadd.status.zluda is Status.SUPPORTED
    assert "add.rm.f32" in fadd.notes

    simd = rules.lookup("__vadd2")
    assert _status(simd) == ("unsupported", "unknown", "unsupported")


def test_library_entries(built):
    _out, shas, rules = built
    sgemm = rules.lookup("cublasSgemm")
    assert sgemm.hip == "hipblasSgemm"
    assert _status(sgemm) == ("supported", "supported", "supported")
    assert shas["zluda"][:12] in sgemm.source["zluda"]
    assert shas["scale-wrappers"][:12] in sgemm.source["scale"]

    dgemm = rules.lookup("cublasDgemm")
    assert _status(dgemm) == ("supported", "unsupported", "unsupported")
    assert dgemm.source["scale"].startswith("inferred:")


def test_header_entry(built):
    _out, shas, rules = built
    header = rules.lookup("cuda_runtime.h")
    assert header.hip == "hip/hip_runtime.h"
    assert shas["hipify"][:12] in header.source["hip"]
    assert shas["scale-docs"][:12] in header.source["scale"]
