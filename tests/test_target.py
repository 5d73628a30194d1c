"""Verdicts for the user's target: the same tree judged for different AMD GPUs.

Facts tested, with their source (rules/gpus.yaml records each):
- gfx942 (MI300X, MI300A) runs 64-wide wavefronts only; gfx1100 (RX 7900 XTX) and gfx1151
  (Strix Halo) run 32-wide by default in HIP — LLVM AMDGPUUsage.rst, processor table.
- MI300A and gfx1151 share memory with the CPU (APUs) — ROCm MI300A system optimization
  guide; LLVM PR 163717 (gfx1151 products).
- gfx942 has MFMA, gfx1100 WMMA, gfx1010 (RDNA1) no matrix cores — rocWMMA README.
- ZLUDA runs on RDNA, not on CDNA data-centre GPUs — vosen/ZLUDA docs/src/faq.md.
- FP8: gfx940-942 compute FNUZ FP8, gfx950 and gfx12 (RDNA4) OCP, RDNA3 none — HIP's
  low_fp_types.rst / fp8_numbers.rst and ROCm's precision-support.rst (rules/gpus.yaml).
- The `_sync` warp builtins (`__shfl_xor_sync`) came to HIP in ROCm 6.2 — HIP's
  amd_warp_sync_functions.h first appears at the rocm-6.2.0 tag (ROCm/clr), HIPIFY's
  device-function table (HIP column "A" 6.2.0); rules/sources.yaml records both snapshots.
"""

from __future__ import annotations

import json

import pytest

from conftest import FIXTURES, run_portcheck

TREE = FIXTURES / "target" / "target_split"


def _report(*args):
    run = run_portcheck("scan", str(TREE), "--format", "json", "--no-cache", *args)
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _hip(doc, slug):
    return {f["targets"]["hip"] for f in doc["findings"] if f["slug"] == slug}


@pytest.fixture(scope="module")
def any_gpu():
    return _report()


@pytest.fixture(scope="module")
def mi300x():
    return _report("--gpu", "mi300x")


@pytest.fixture(scope="module")
def rx7900xtx():
    return _report("--gpu", "rx7900xtx")


@pytest.fixture(scope="module")
def strix_halo():
    return _report("--gpu", "gfx1151")


def test_warp_width_is_a_defect_on_wave64_only(any_gpu, mi300x, rx7900xtx):
    for slug in ("warp-size-assumption", "lane-mask-width"):
        assert _hip(any_gpu, slug) == {"partial"}
        assert _hip(mi300x, slug) == {"unsupported"}
        assert _hip(rx7900xtx, slug) == {"supported"}
    # Without a GPU the finding names the GPUs it affects.
    warp = next(f for f in any_gpu["findings"] if f["slug"] == "warp-size-assumption")
    assert "wave64 GPUs" in warp["message"] and "MI300X" not in warp["message"].split("[")[0]
    # Nothing to fix on an RDNA card costs no score there; on MI300X it costs more.
    assert rx7900xtx["summary"]["scores"]["hip"] > any_gpu["summary"]["scores"]["hip"]
    assert mi300x["summary"]["scores"]["hip"] < any_gpu["summary"]["scores"]["hip"]
    # ZLUDA builds 64-wide waves on every GPU: its verdict does not move.
    zluda = {f["targets"]["zluda"] for f in rx7900xtx["findings"] if f["slug"] == "lane-mask-width"}
    assert zluda == {
        f["targets"]["zluda"] for f in any_gpu["findings"] if f["slug"] == "lane-mask-width"
    }


def test_managed_memory_is_plain_memory_on_an_apu(mi300x, strix_halo):
    assert _hip(strix_halo, "managed-memory") == {"supported"}
    assert _hip(mi300x, "managed-memory") == {"partial"}
    apu = _report("--gpu", "mi300a")
    assert _hip(apu, "managed-memory") == {"supported"}
    messages = [f["message"] for f in mi300x["findings"] if f["slug"] == "managed-memory"]
    assert all("HSA_XNACK=1" in m for m in messages)


def test_tensor_core_code_without_matrix_cores(rx7900xtx):
    rdna1 = _report("--gpu", "gfx1010")
    assert _hip(rdna1, "tensor-core-wmma") == {"unsupported"}
    assert _hip(rx7900xtx, "tensor-core-wmma") == {"partial"}
    assert all(
        "WMMA" in f["message"] for f in rx7900xtx["findings"] if f["slug"] == "tensor-core-wmma"
    )


def test_an_unknown_gpu_is_one_line_and_exit_2():
    run = run_portcheck("scan", str(TREE), "--gpu", "mi300")
    assert run.returncode == 2
    assert "unknown GPU 'mi300'" in run.stderr and "mi300x" in run.stderr
    assert len(run.stderr.strip().splitlines()) == 1


def test_a_route_that_cannot_serve_the_gpu_is_not_applicable_in_every_format(mi300x, rx7900xtx):
    # ZLUDA's FAQ: no server-class (CDNA) GPUs. MI300X is CDNA3; the RX 7900 XTX is RDNA3.
    assert mi300x["summary"]["scores"]["zluda"] is None
    assert "ZLUDA" in mi300x["summary"]["not_applicable"]["zluda"]
    assert mi300x["target"] == {"rocm": "7.0", "gpu": "gfx942", "wavefront": 64}
    assert rx7900xtx["summary"]["not_applicable"] == {}
    assert isinstance(rx7900xtx["summary"]["scores"]["zluda"], int)
    assert rx7900xtx["target"]["wavefront"] == 32
    for fmt, says in (
        ("text", "not applicable"),
        ("markdown", "is not applicable"),
        ("html", "not applicable"),
        ("sarif", '"not_applicable"'),
    ):
        run = run_portcheck("scan", str(TREE), "--gpu", "mi300x", "--no-cache", "--format", fmt)
        assert run.returncode == 0, run.stderr
        assert says in run.stdout and "MI300X (gfx942)" in run.stdout, fmt


def test_an_older_rocm_lacks_what_was_added_later(tmp_path):
    rocm57 = _report("--rocm", "5.7")
    rocm62 = _report("--rocm", "6.2")
    assert rocm57["target"]["rocm"] == "5.7" and rocm62["target"]["rocm"] == "6.2"
    shfl57 = {u["status"]["hip"] for u in rocm57["usages"] if u["name"] == "__shfl_xor_sync"}
    shfl62 = {u["status"]["hip"] for u in rocm62["usages"] if u["name"] == "__shfl_xor_sync"}
    assert shfl57 == {"unsupported"} and shfl62 != {"unsupported"}
    why = [f["message"] for f in rocm57["findings"] if f["slug"] == "unsupported-api"]
    assert why and all("added in ROCm 6.2" in m for m in why)
    assert not [f for f in rocm62["findings"] if f["slug"] == "unsupported-api"]
    assert rocm57["summary"]["scores"]["hip"] < rocm62["summary"]["scores"]["hip"]


def test_the_project_can_name_its_rocm_and_a_bad_one_is_refused(tmp_path):
    (tmp_path / "softmax.cu").write_bytes((TREE / "softmax.cu").read_bytes())
    (tmp_path / ".portcheck.toml").write_text('rocm = "5.7"\ngpu = "rx7900xtx"\n')
    run = run_portcheck("scan", str(tmp_path), "--format", "json", "--no-cache")
    assert json.loads(run.stdout)["target"] == {"rocm": "5.7", "gpu": "gfx1100", "wavefront": 32}
    old = run_portcheck("scan", str(tmp_path), "--rocm", "4.5")
    assert old.returncode == 2 and "older than the oldest release" in old.stderr
    assert len(old.stderr.strip().splitlines()) == 1


def test_rules_show_on_a_gpu_closes_the_routes_that_cannot_run_there():
    cdna = run_portcheck("rules", "show", "cudaMalloc", "--gpu", "mi300x", "--format", "json")
    rdna = run_portcheck("rules", "show", "cudaMalloc", "--gpu", "rx7900xtx", "--format", "json")
    (on_cdna,) = json.loads(cdna.stdout)
    (on_rdna,) = json.loads(rdna.stdout)
    assert on_cdna["status"]["zluda"] == "unsupported" and "ZLUDA" in on_cdna["notes"]
    assert on_rdna["status"]["zluda"] == "supported"
    assert on_cdna["status"]["hip"] == on_rdna["status"]["hip"] == "supported"
    bad = run_portcheck("rules", "show", "cudaMalloc", "--gpu", "gfx9999")
    assert bad.returncode == 2 and "unknown GPU" in bad.stderr


def test_fp8_types_are_judged_by_the_gpus_fp8_format(mi300x, rx7900xtx):
    mi355x = _report("--gpu", "gfx950")
    assert _hip(mi355x, "fp8-format") == {"supported"}  # OCP, as NVIDIA's
    assert _hip(mi300x, "fp8-format") == {"partial"}  # FNUZ: other values for the same bits
    assert any("FNUZ" in f["message"] for f in mi300x["findings"] if f["slug"] == "fp8-format")
    assert any(
        "no FP8 hardware" in f["message"]
        for f in rx7900xtx["findings"]
        if f["slug"] == "fp8-format"
    )


def test_rocm_7_additions_are_judged_by_the_release():
    """HIP 7.0 added the warp reduce intrinsics and hipBLAS 3.0 (ROCm 7.0)
    hipblasSetWorkspace (ROCm's consolidated changelog, section ROCm 7.0.0): reported as
    unsupported for ROCm 6.4 with the release that added them, not for ROCm 7.0 or when no
    release is named."""
    tree = FIXTURES / "target" / "rocm7_additions"

    def unsupported(*args):
        run = run_portcheck("scan", str(tree), "--format", "json", "--no-cache", *args)
        assert run.returncode == 0, run.stderr
        doc = json.loads(run.stdout)
        return {
            f["message"].split("`")[1]: f["message"]
            for f in doc["findings"]
            if f["slug"] == "unsupported-api"
        }

    old = unsupported("--rocm", "6.4")
    assert set(old) == {
        "__reduce_min_sync",
        "__reduce_max_sync",
        "__reduce_or_sync",
        "cublasSetWorkspace",
    }
    assert all("added in ROCm 7.0" in message for message in old.values())
    assert unsupported("--rocm", "7.0") == {}
    assert unsupported() == {}
