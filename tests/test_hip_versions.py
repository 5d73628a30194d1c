"""A name's HIP status depends on the ROCm release: checked on the shipped rule set against
the facts of its sources, and through `portcheck rules show --rocm` / `rules stats`.

Facts used (each read from the snapshot rules/sources.yaml names):

* HIPIFY (ROCm/HIPIFY@0cd7efafdfe9, 2025-08-04, read from the fork vjelic/HIPIFY-glog-fork),
  docs/reference/tables/:
  - CUDA_Runtime_API_functions_supported_by_HIP.md: cudaGraphInstantiateWithParams ->
    hipGraphInstantiateWithParams added in HIP 6.2.0; cudaDeviceGetTexture1DLinearMaxWidth ->
    hipDeviceGetTexture1DLinearMaxWidth added in HIP 6.4.0;
  - CUDA_Driver_API_functions_supported_by_HIP.md: cuLaunchKernelEx -> hipDrvLaunchKernelEx
    added and experimental in HIP 7.0.0; CU_JIT_CACHE_MODE -> hipJitOptionCacheMode dated
    6.4.0;
  - CUTENSOR_API_supported_by_HIP.md: cutensorContraction -> hiptensorContraction added in
    6.1.0, removed in 7.0.0;
  - CUDA_Device_API_supported_by_HIP.md: __shfl_sync, __ballot_sync, ... added in 6.2.0;
  - src/Statistics.h: HIP_LATEST = HIP_7000 (the newest release HIPIFY knows).
* HIP's headers at release tags:
  - ROCm/clr hipamd/include/hip/amd_detail/amd_warp_sync_functions.h exists at rocm-6.2.0
    (its builtins inside `#ifdef HIP_ENABLE_WARP_SYNC_BUILTINS`) and not at rocm-6.1.0;
  - ROCm/HIP include/hip/hip_runtime_api.h declares hipGraphInstantiateWithParams at
    rocm-6.2.0 and not at rocm-6.1.0; declares the hipJitOption enumerators already at
    rocm-5.0.0 (so HIPIFY's 6.4.0 loses); marks hipHostAlloc
    `DEPRECATED("use hipHostMalloc instead")` at rocm-5.0.0.
"""

from __future__ import annotations

import json

import pytest

from portcheck.model import Status
from portcheck.rocm import RocmRelease, hip_status, parse_rocm_version
from portcheck.ruleset import default_rules

from conftest import run_portcheck as run

WARP_SYNC = ("__shfl_sync", "__shfl_xor_sync", "__ballot_sync", "__any_sync", "__all_sync")


@pytest.fixture(scope="module")
def rules():
    return default_rules()


def status_in(rules, name: str, version: str):
    return rules.hip_status(rules.lookup(name), parse_rocm_version(version))


# ---------------------------------------------------------------- versions as users type them


@pytest.mark.parametrize(
    ("text", "release"),
    [
        ("6.2", RocmRelease(6, 2, 0)),
        ("6.2.1", RocmRelease(6, 2, 1)),
        ("7.0", RocmRelease(7, 0, 0)),
        (" rocm-6.4.0 ", RocmRelease(6, 4, 0)),
    ],
)
def test_rocm_versions_parse(text, release):
    assert parse_rocm_version(text) == release


@pytest.mark.parametrize("text", ["6", "6.x", "", "6.2.1.4", "latest", "v6.2", "6..2"])
def test_bad_rocm_versions_say_what_was_expected(text):
    with pytest.raises(ValueError, match=r"invalid ROCm version .*MAJOR\.MINOR"):
        parse_rocm_version(text)


def test_releases_order_and_print_as_users_write_them():
    assert parse_rocm_version("6.10") > parse_rocm_version("6.9.9")
    assert str(parse_rocm_version("6.2.0")) == "6.2"
    assert str(parse_rocm_version("6.0.2")) == "6.0.2"


def test_the_rule_set_knows_rocm_5_0_to_7_0(rules):
    assert rules.newest_rocm() == RocmRelease(7, 0)  # HIPIFY's HIP_LATEST
    assert rules.oldest_rocm() == RocmRelease(5, 0)  # the oldest release whose headers were read
    with pytest.raises(ValueError, match=r"older than the oldest release .* \(5\.0\)"):
        rules.rocm_release("4.5")
    assert rules.rocm_caveat(RocmRelease(7, 2)) is not None
    assert rules.rocm_caveat(RocmRelease(6, 2)) is None


# ---------------------------------------------------------------- statuses per release


def test_a_runtime_api_added_in_6_2_is_unsupported_in_5_7_and_supported_in_6_2(rules):
    rule = rules.lookup("cudaGraphInstantiateWithParams")
    assert rule.hip == "hipGraphInstantiateWithParams" and rule.hip_added == "6.2.0"
    assert status_in(rules, rule.cuda, "5.7") == (Status.UNSUPPORTED, "added in ROCm 6.2")
    assert status_in(rules, rule.cuda, "6.1") == (Status.UNSUPPORTED, "added in ROCm 6.2")
    assert status_in(rules, rule.cuda, "6.2").status is Status.SUPPORTED
    assert status_in(rules, rule.cuda, "7.0").status is Status.SUPPORTED


def test_an_api_only_hipify_dates_6_4_is_missing_from_6_2(rules):
    name = "cudaDeviceGetTexture1DLinearMaxWidth"
    assert status_in(rules, name, "6.2") == (Status.UNSUPPORTED, "added in ROCm 6.4")
    assert status_in(rules, name, "6.4").status is Status.SUPPORTED


def test_a_removed_api_is_unsupported_from_its_removal_on(rules):
    rule = rules.lookup("cutensorContraction")
    assert (rule.hip_added, rule.hip_removed) == ("6.1.0", "7.0.0")
    assert rule.status.hip is Status.UNSUPPORTED  # the newest release (7.0) has it no more
    assert status_in(rules, rule.cuda, "5.7") == (Status.UNSUPPORTED, "added in ROCm 6.1")
    assert status_in(rules, rule.cuda, "6.2") == (Status.SUPPORTED, "removed in ROCm 7.0")
    assert status_in(rules, rule.cuda, "7.0") == (Status.UNSUPPORTED, "removed in ROCm 7.0")


@pytest.mark.parametrize("name", WARP_SYNC)
def test_warp_sync_intrinsics_arrive_in_rocm_6_2_behind_a_macro(rules, name):
    rule = rules.lookup(name)
    assert rule.hip == name and rule.hip_added == "6.2.0"
    assert status_in(rules, name, "6.1") == (Status.UNSUPPORTED, "added in ROCm 6.2")
    # 64-bit masks only, and in 6.2 declared only with HIP_ENABLE_WARP_SYNC_BUILTINS
    assert status_in(rules, name, "6.2").status is Status.PARTIAL
    assert "HIP_ENABLE_WARP_SYNC_BUILTINS" in rule.notes
    assert status_in(rules, name, "7.0").status is Status.PARTIAL


def test_syncwarp_arrives_in_rocm_7_0(rules):
    """hipcc of ROCm 6.x rejects __syncwarp (an undeclared identifier); ROCm 7.0 added it."""
    rule = rules.lookup("__syncwarp")
    assert rule.hip == "__syncwarp" and rule.hip_added == "7.0.0"
    assert status_in(rules, "__syncwarp", "6.2") == (Status.UNSUPPORTED, "added in ROCm 7.0")
    assert status_in(rules, "__syncwarp", "7.0").status is Status.SUPPORTED


def test_a_deprecated_api_stays_supported_with_a_note(rules):
    rule = rules.lookup("cudaHostAlloc")
    assert rule.hip_deprecated == "5.0.0"  # HIP's headers mark it; HIPIFY's table does not
    assert "the headers win" in rule.notes
    assert status_in(rules, rule.cuda, "5.7") == (Status.SUPPORTED, "deprecated in ROCm 5.0")


def test_an_experimental_api_is_partial_where_it_exists(rules):
    rule = rules.lookup("cuLaunchKernelEx")
    assert rule.hip == "hipDrvLaunchKernelEx" and rule.experimental
    assert status_in(rules, rule.cuda, "6.4") == (Status.UNSUPPORTED, "added in ROCm 7.0")
    assert status_in(rules, rule.cuda, "7.0") == (Status.PARTIAL, "experimental in HIP")


def test_headers_that_already_declare_a_name_overrule_hipifys_later_date(rules):
    rule = rules.lookup("CU_JIT_CACHE_MODE")
    assert rule.hip == "hipJitOptionCacheMode" and rule.hip_added is None
    assert "already declare it at rocm-5.0.0; the headers win" in rule.notes
    assert status_in(rules, rule.cuda, "5.0").status is Status.SUPPORTED


def test_the_family_files_hold_the_newest_releases_statuses(rules):
    newest = rules.newest_rocm()
    differ = [r.cuda for r in rules if hip_status(r, newest).status is not r.status.hip]
    assert differ == []


def test_undated_and_unmapped_names_do_not_depend_on_the_release(rules):
    malloc = rules.lookup("cudaMalloc")  # HIPIFY: HIP 1.6.0, i.e. before any ROCm release
    assert malloc.hip_added is None
    assert status_in(rules, "cudaMalloc", "5.0").status is Status.SUPPORTED
    flush = rules.lookup("cudaDeviceFlushGPUDirectRDMAWrites")  # no HIP equivalent
    assert status_in(rules, flush.cuda, "6.2") == (Status.UNSUPPORTED, None)


# ---------------------------------------------------------------- the rule set in one release


def test_at_rocm_adjusts_each_rule_once_and_keeps_the_rest(rules):
    older = rules.at_rocm("5.7")
    assert older.digest != rules.digest and older.release == RocmRelease(5, 7)
    rule = older.lookup("cudaGraphInstantiateWithParams")
    assert rule.status.hip is Status.UNSUPPORTED
    assert rule.notes.startswith("HIP in ROCm 5.7: added in ROCm 6.2")
    assert rule.status.zluda is rules.lookup(rule.cuda).status.zluda
    assert older.lookup("cudaGraphInstantiateWithParams") is rule  # built once
    assert older.lookup("cudaMalloc") is rules.lookup("cudaMalloc")  # unchanged: same object
    assert older.lookup("cudaNoSuchThing") is None
    assert len(older) == len(rules) and "cudaMalloc" in older.rules
    assert rules.at_rocm("7.0") is rules and rules.at_rocm("7.1") is rules


def test_per_release_statuses_are_computed_once_per_rule_and_release(rules, monkeypatch):
    import portcheck.ruleset as ruleset

    calls = []
    original = ruleset.hip_status

    def counting(rule, release):
        calls.append((rule.cuda, release))
        return original(rule, release)

    monkeypatch.setattr(ruleset, "hip_status", counting)
    rule = rules.lookup("cudaMallocAsync")
    release = RocmRelease(5, 1, 1)  # a release no other test asks about
    first = rules.hip_status(rule, release)
    assert first.status is Status.UNSUPPORTED  # hipMallocAsync: ROCm 5.2
    assert rules.hip_status(rule, release) is first
    assert calls == [("cudaMallocAsync", release)]


# ---------------------------------------------------------------- command line


def test_rules_show_rocm_gives_the_status_in_that_release():
    names = ("cudaGraphInstantiateWithParams", "cudaMalloc")
    newest = json.loads(run("rules", "show", *names, "--format", "json").stdout)
    result = run("rules", "show", *names, "--rocm", "5.7", "--format", "json")
    assert result.returncode == 0, result.stderr
    older = json.loads(result.stdout)
    assert newest[0]["status"]["hip"] == "supported"
    assert older[0]["status"]["hip"] == "unsupported"
    assert older[0]["hip_versions"] == {"added": "6.2.0", "deprecated": None, "removed": None}
    assert older[0]["experimental"] is False
    assert older[1]["status"] == newest[1]["status"]
    for entry in older:  # the contract's keys are all still there
        assert {"cuda", "family", "kind", "hip", "status", "source"} <= set(entry)


def test_rules_show_prints_the_versions_as_text():
    result = run("rules", "show", "cutensorContraction", "--rocm", "6.2")
    assert result.returncode == 0, result.stderr
    assert "(HIP statuses in ROCm 6.2)" in result.stdout
    assert "hip versions: added 6.1.0, deprecated -, removed 7.0.0" in result.stdout
    assert "  hip    supported" in result.stdout


@pytest.mark.parametrize(
    ("version", "message"), [("6.x", "invalid ROCm version"), ("4.5", "older than the oldest")]
)
def test_rules_show_rejects_a_bad_rocm_version(version, message):
    result = run("rules", "show", "cudaMalloc", "--rocm", version)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_rules_stats_names_the_snapshots_it_was_built_from():
    result = run("rules", "stats", "--format", "json")
    stats = json.loads(result.stdout)
    assert {"total", "families", "entries_without_full_status"} <= set(stats)
    snapshots = {s["project"]: s for s in stats["sources"]["snapshots"]}
    hipify = snapshots["ROCm/HIPIFY"]
    assert hipify["commit"] == "0cd7efafdfe9d69211d23064b9af5c55361a2ed0"
    assert hipify["date"].startswith("2025-08-04") and hipify["via"] == "vjelic/HIPIFY-glog-fork"
    assert stats["sources"]["rocm"] == {"oldest": "5.0", "newest": "7.0"}
    text = run("rules", "stats").stdout
    assert "ROCm/HIPIFY" in text and "0cd7efafdfe9  2025-08-04 via vjelic/HIPIFY-glog-fork" in text
