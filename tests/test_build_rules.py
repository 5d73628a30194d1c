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
# Read at release tags: each subdirectory (rocm-X.Y.Z) becomes one tagged commit.
TAGGED_REPOS = ("hip-clr", "hip-public")


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


def _make_tagged_repo(source: Path, target: Path) -> dict[str, str]:
    """One commit per release directory, oldest first, each tagged with its name."""
    target.mkdir()
    _git(target, "init", "-q")
    shas = {}
    releases = sorted(
        (d for d in source.iterdir() if d.is_dir()),
        key=lambda d: tuple(int(n) for n in d.name.removeprefix("rocm-").split(".")),
    )
    for release in releases:
        for old in target.iterdir():
            if old.name != ".git":
                shutil.rmtree(old)
        shutil.copytree(release, target, dirs_exist_ok=True)
        _git(target, "add", "-A")
        _git(target, "commit", "-q", "--allow-empty", "-m", release.name)
        _git(target, "tag", release.name)
        shas[release.name] = _git(target, "rev-parse", "HEAD")
    return shas


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    tmp = tmp_path_factory.mktemp("build_rules")
    shas: dict = {name: _make_repo(FIXTURES / name, tmp / name) for name in REPOS}
    for name in TAGGED_REPOS:
        shas[name] = _make_tagged_repo(FIXTURES / name, tmp / name)
    out = tmp / "rules"
    cmd = [sys.executable, str(SCRIPT), "--seed-only", "--seeds", str(FIXTURES / "seeds.txt")]
    cmd += ["--hipify-via", "someone/HIPIFY-fork"]  # as for a fork carrying newer history
    for name in REPOS + TAGGED_REPOS:
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
        "sources.yaml",  # the snapshots read, not a family
    }
    for rule in rules:
        assert set(rule.source) == {"hip", "zluda", "scale"}
        assert all(isinstance(rule.status[t], Status) for t in ("hip", "zluda", "scale"))


def test_header_records_the_regeneration_command_and_commits(built):
    out, shas, _rules = built
    head = (out / "runtime.yaml").read_text().splitlines()[:3]
    # the fixture build names a fork that carries HIPIFY's history (--hipify-via)
    assert head[1].startswith(
        "# Regenerate: python tools/build_rules.py --hipify <someone/HIPIFY-fork>"
    )
    assert "--seed-only" in head[1]
    assert "--hip-clr <ROCm/clr>" in head[1]
    for name in REPOS:
        assert shas[name] in head[2]
    for tag, sha in shas["hip-clr"].items():
        assert f"{tag} (ROCm/clr@{sha[:12]}" in head[2]


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

    # what nvcc emits for __vadd2 (target_facts.yaml) is plain integer arithmetic, which
    # the fixture's two-rule grammar does not accept
    simd = rules.lookup("__vadd2")
    assert _status(simd) == ("unsupported", "unsupported", "unsupported")
    assert "xor.b32" in simd.notes and "nvcc" in simd.notes


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


# ---------------------------------------------------------------- HIP's own headers


def test_a_name_hip_declares_under_cudas_spelling_is_supported_whatever_hipify_says(built):
    _out, shas, rules = built
    half2 = rules.lookup("make_half2")  # HIPIFY's table: no HIP equivalent
    assert half2.hip == "make_half2"
    assert half2.status.hip is Status.SUPPORTED
    newest = shas["hip-clr"]["rocm-6.2.0"]
    assert half2.source["hip"] == (
        f"ROCm/clr@{newest[:12]} hipamd/include/hip/amd_detail/amd_hip_fp16.h (rocm-6.2.0)"
    )
    assert half2.hip_added is None  # already in the oldest release read
    assert "the headers win" in half2.notes


def test_hipifys_map_spelling_is_looked_up_and_a_later_release_dates_it(built):
    _out, _shas, rules = built
    pair = rules.lookup("__nv_bfloat162")  # table: no HIP name; src map: __hip_bfloat162
    assert pair.hip == "__hip_bfloat162"
    assert pair.status.hip is Status.SUPPORTED
    assert pair.hip_added == "6.2.0"
    assert "amd_hip_bf16.h (rocm-6.2.0)" in pair.source["hip"]


def test_macro_generated_declarations_count(built):
    _out, _shas, rules = built
    make = rules.lookup("make_fixture4")
    assert make.hip == "make_fixture4" and make.status.hip is Status.SUPPORTED
    assert "amd_hip_vector_types.h" in make.source["hip"]


def test_a_half_intrinsic_declared_only_for_bfloat16_is_partial(built):
    _out, _shas, rules = built
    hmax2 = rules.lookup("__hmax2")
    assert hmax2.status.hip is Status.PARTIAL
    assert "__half overload" in hmax2.notes and hmax2.hip_added == "6.2.0"


def test_fp8_with_only_the_fnuz_variant_is_partial(built):
    _out, _shas, rules = built
    fp8 = rules.lookup("__nv_fp8_e4m3")
    assert fp8.hip == "__hip_fp8_e4m3_fnuz"
    assert fp8.status.hip is Status.PARTIAL
    assert "FNUZ" in fp8.notes
    storage = rules.lookup("__nv_fp8_storage_t")  # an integer typedef: no encoding to differ
    assert storage.hip == "__hip_fp8_storage_t" and storage.status.hip is Status.SUPPORTED


def test_names_in_if0_comments_or_gone_from_the_newest_release_decide_nothing(built):
    _out, _shas, rules = built
    for name in ("__hidden_in_if0", "__commented_out", "__gone_fn"):
        rule = rules.lookup(name)
        assert rule.status.hip is Status.UNSUPPORTED, name
        assert "hipify_device" not in rule.source["hip"]  # described, not the id
        assert "CUDA_Device_API_supported_by_HIP.md" in rule.source["hip"], name
        assert rule.hip_added is None and rule.hip_removed is None
    popc = rules.lookup("__popc")  # HIPIFY maps it; the fixture headers do not declare it
    assert "CUDA_Device_API_supported_by_HIP.md" in popc.source["hip"]


def _lexer():
    sys.path.insert(0, str(ROOT / "tools"))
    import hip_headers

    return hip_headers


def _declared(text: str) -> dict:
    hip_headers = _lexer()
    pre = hip_headers.preprocess(text)
    macros = {k: v for k, v in pre.macros.items() if v.params is not None}
    return hip_headers.declared_names(pre, macros)


def test_lexer_reads_namespace_scope_declarations_only():
    found = _declared(
        """
        #define HD __host__ __device__
        #define GONE 1
        #undef GONE
        #if 0
        HD int dead_fn(int);
        #elif defined(X)
        HD int elif_fn(int);
        #else
        HD int else_fn(int);
        #endif
        #if defined(__HIP__)
        struct S {
        #else
        struct S : Base {
        #endif
            int member_fn(int) const;
        };
        typedef struct __attribute__((aligned(4))) { int a; } raw_t;
        using alias_t = S;
        enum E { kOne, kTwo = 2 };
        enum class Scoped { kHidden };
        extern "C" { __device__ float __ocml_fn(float); }
        DEPRECATED("use other") HD int old_fn(int);
        HD int deleted_fn(int) = delete;
        HD inline int body_fn(int x) { int local = helper(x); return local; }
        int after_body;
        """
    )
    assert {"HD", "S", "raw_t", "alias_t", "E", "kOne", "kTwo", "__ocml_fn", "old_fn"} <= set(found)
    assert {"elif_fn", "else_fn", "body_fn", "after_body"} <= set(found)
    for absent in ("dead_fn", "GONE", "member_fn", "kHidden", "deleted_fn", "local", "helper"):
        assert absent not in found, absent
    assert found["old_fn"].deprecated and not found["body_fn"].deprecated


def test_releases_are_the_first_of_each_minor_and_the_newest():
    hip_headers = _lexer()
    tags = {"rocm-4.5.0", "rocm-5.0.0", "rocm-5.0.2", "rocm-6.2.0", "rocm-6.2.2", "rocm-test"}
    assert hip_headers.select_releases(tags) == ["rocm-5.0.0", "rocm-6.2.0", "rocm-6.2.2"]


# ---------------------------------------------------------------- HIP versions
# The fixture's HIPIFY runtime table dates made-up hipWidget* calls; its HIP headers
# (hip-public/rocm-6.1.0 and rocm-6.2.0, include/hip/hip_runtime_api.h) declare some of them.


def test_hipify_dates_are_kept_when_the_headers_agree(built):
    _out, _shas, rules = built
    malloc_async = rules.lookup("cudaMallocAsync")  # HIPIFY 6.2.0; headers: 6.2.0, not 6.1.0
    assert malloc_async.hip_added == "6.2.0"
    assert malloc_async.notes is None
    malloc = rules.lookup("cudaMalloc")  # HIPIFY 1.5.0 (HIP 1.x: before any ROCm release)
    assert malloc.hip_added is None
    preview = rules.lookup("cudaWidgetPreview")  # 6.4.0: newer than any header read
    assert preview.hip_added == "6.4.0" and preview.experimental
    assert preview.status.hip is Status.PARTIAL


def test_headers_at_the_release_tags_win_over_hipifys_added_version(built):
    _out, _shas, rules = built
    launch = rules.lookup("cudaWidgetLaunch")  # HIPIFY 6.2.0, but declared at rocm-6.1.0
    assert launch.hip_added is None
    assert "already declare it at rocm-6.1.0; the headers win" in launch.notes
    query = rules.lookup("cudaWidgetQuery")  # HIPIFY 1.6.0, but first declared at rocm-6.2.0
    assert query.hip_added == "6.2.0"
    assert "dates hipWidgetQuery to HIP 1.6.0" in query.notes
    assert "first declare it at rocm-6.2.0 (not at rocm-6.1.0)" in query.notes


def test_removed_versions_and_the_headers_check_of_them(built):
    _out, _shas, rules = built
    bind = rules.lookup("cudaWidgetBind")  # HIPIFY: removed 6.2.0; gone from 6.2.0's header
    assert (bind.hip_added, bind.hip_removed) == ("5.0.0", "6.2.0")
    assert bind.status.hip is Status.UNSUPPORTED
    assert "removed in ROCm 6.2" in bind.notes
    unbind = rules.lookup("cudaWidgetUnbind")  # HIPIFY: removed 6.2.0; still declared there
    assert unbind.hip_removed is None and unbind.status.hip is Status.SUPPORTED
    assert "still declare it; the headers win" in unbind.notes


def test_a_hip_1x_deprecation_is_recorded_as_rocm_2_8(built):
    _out, _shas, rules = built
    alloc = rules.lookup("cudaWidgetAlloc")  # HIPIFY: deprecated in HIP 1.9.0
    assert alloc.hip_deprecated == "2.8.0"
    assert alloc.status.hip is Status.SUPPORTED  # deprecated still builds and runs
    assert "deprecated in ROCm 2.8" in alloc.notes


def test_sources_file_records_every_snapshot_and_the_releases(built):
    out, shas, rules = built
    snapshots = {s["project"]: s for s in rules.sources.snapshots}
    assert snapshots["ROCm/HIPIFY"]["commit"] == shas["hipify"]
    assert snapshots["ROCm/HIPIFY"]["via"] == "someone/HIPIFY-fork"
    assert snapshots["vosen/ZLUDA"]["commit"] == shas["zluda"]
    assert snapshots["ROCm/clr"]["tags"] == "rocm-6.1.0, rocm-6.2.0"
    assert all(s["date"] for s in snapshots.values())
    assert str(rules.oldest_rocm()) == "6.1"
    assert str(rules.newest_rocm()) == "6.4"  # HIP_LATEST of the fixture's src/Statistics.h
    head = (out / "runtime.yaml").read_text().splitlines()[1]
    assert "--hipify <someone/HIPIFY-fork>" in head and "--hipify-via someone/HIPIFY-fork" in head


def test_a_runtime_enumerator_hips_header_declares_is_supported_despite_hipify(built):
    """HIPIFY's table gives cudaWidgetModeFast no HIP name, but HIP's runtime header at
    rocm-6.2.0 declares hipWidgetModeFast: the header wins and dates it. An enumerator of
    another platform's interop (D3D11) that HIP declares only for source compatibility is
    partial."""
    _out, _shas, rules = built
    fast = rules.lookup("cudaWidgetModeFast")
    assert fast.hip == "hipWidgetModeFast"
    assert fast.status.hip is Status.SUPPORTED
    assert fast.hip_added == "6.2.0"
    assert "hip_runtime_api.h" in str(fast.source["hip"])
    d3d = rules.lookup("cudaWidgetHandleTypeD3D11")
    assert d3d.hip == "hipWidgetHandleTypeD3D11" and d3d.status.hip is Status.PARTIAL


def test_verify_rules_checks_a_verdict_cited_to_hips_public_header(built, tmp_path):
    """A runtime verdict cited to ROCm/HIP's include/hip/hip_runtime_api.h is re-read from
    that header by tools/verify_rules.py, not skipped as a curated citation."""
    out, _shas, _rules = built
    mirrors = tmp_path / "mirrors"
    subprocess.run(
        [
            "git",
            "clone",
            "-q",
            "--bare",
            str(out.parent / "hip-public"),
            str(mirrors / "ROCm+HIP" / "repo"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    cmd = [sys.executable, str(ROOT / "tools" / "verify_rules.py"), "--rules", str(out)]
    cmd += ["--mirrors", str(mirrors), "--routes", "hip", "-n", "1000", "--all"]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=300)
    assert result.returncode == 0, result.stderr
    line = next(ln for ln in result.stdout.splitlines() if "cudaWidgetModeFast" in ln)
    assert line.startswith("agree") and "hip_runtime_api.h" in line, line
