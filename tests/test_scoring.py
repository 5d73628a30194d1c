"""Route scores that mean what they say (docs/scoring.md).

Each route counts what it needs: HIP translation plus hazards, SCALE what its compiler
does not cover, ZLUDA nothing to rewrite — what it does not implement blocks it, the rest
is testing. Code behind a build switch is an optional component, costed apart."""

from __future__ import annotations

import shutil

import portcheck
from portcheck.options import ScanOptions

from conftest import FIXTURES, REPO

SCORING = FIXTURES / "scoring"
EXAMPLE = REPO / "examples" / "heatflow"


def test_a_project_zluda_runs_unchanged_costs_only_testing_there():
    """cuBLAS, streams and plain kernels: ZLUDA implements all of it, so the route needs
    no rewrite hours (the old model counted ZLUDA work as rewrites)."""
    report = portcheck.scan(SCORING / "gemm_service", cache=False)
    zluda = report.routes["zluda"]
    assert zluda.verdict in ("ready", "needs-work") and not zluda.blockers
    assert report.scores["zluda"] == zluda.coverage >= 90
    assert set(report.effort["zluda"].categories) == {"test"}
    assert report.effort["zluda"].total_hours <= 1.0
    # HIP renames every CUDA name: mechanical work, and nothing else in the way.
    assert report.routes["hip"].verdict == "ready"
    hip = report.effort["hip"].categories
    assert hip["rename-only"].items > 10 and hip["rewrite"].items == hip["review"].items == 0


def test_zluda_is_blocked_by_what_it_does_not_implement_named_where_it_is_used():
    report = portcheck.scan(EXAMPLE, cache=False)
    zluda = report.routes["zluda"]
    assert zluda.verdict == "blocked"
    assert report.scores["zluda"] == 0  # not the mean credit of what would work
    assert 0 < zluda.coverage < 100
    named = {(b.name, b.path, b.line) for b in zluda.blockers}
    assert ("cudaMallocManaged", "src/ensemble.cu", 21) in named
    assert ("cudaLaunchCooperativeKernel", "src/ensemble.cu", 30) in named
    assert all("ZLUDA" in b.reason for b in zluda.blockers)
    # Blockers are not hours: nothing done on the ZLUDA route removes them.
    assert report.effort["zluda"].total_hours < report.effort["hip"].total_hours
    # HIP and SCALE can rewrite what they lack: work, not a block.
    assert report.routes["hip"].verdict == report.routes["scale"].verdict == "needs-work"
    assert report.scores["hip"] == report.routes["hip"].coverage


def test_zluda_and_scale_do_not_move_with_the_rocm_release(tmp_path):
    """The ROCm release decides what HIP has; unsupported-api findings it adds are the
    names' call sites, not work items of their own, on any route."""
    old = portcheck.scan(EXAMPLE, ScanOptions.of(rocm="5.0", cache=False))
    new = portcheck.scan(EXAMPLE, ScanOptions.of(rocm="7.0", cache=False))
    assert sum(f.slug == "unsupported-api" for f in old.findings) > sum(
        f.slug == "unsupported-api" for f in new.findings
    )
    for route in ("zluda", "scale"):
        assert old.routes[route] == new.routes[route]
        assert old.effort[route] == new.effort[route]
        assert old.work_items[route] == new.work_items[route]
    assert old.routes["hip"].coverage < new.routes["hip"].coverage


def test_an_unsupported_name_is_one_work_item_however_many_files_call_it(tmp_path):
    body = "__global__ void k(unsigned* out) { out[0] = __vsubss4(out[1], out[2]); }\n"
    for name in ("a.cu", "b.cu", "c.cu"):
        (tmp_path / name).write_text("#include <cuda_runtime.h>\n" + body)
    report = portcheck.scan(tmp_path, cache=False)
    assert sum(f.slug == "unsupported-api" for f in report.findings) == 3
    rewrite = report.effort["hip"].categories["rewrite"]
    assert rewrite.items == 1 and rewrite.hours == 4.0


def test_code_behind_a_build_switch_is_optional_and_costed_if_enabled(tmp_path):
    report = portcheck.scan(SCORING / "dist_trainer", cache=False)
    (component,) = report.optional
    assert component.guard == "DIST_USE_NCCL"
    assert component.paths == ("step.cu",)
    assert {"ncclAllReduce", "ncclCommInitRank"} <= set(component.names)
    # Not in the scores: the default build has no NCCL, and ZLUDA runs it.
    assert report.routes["zluda"].verdict != "blocked"
    assert report.scores["zluda"] == 100
    # Enabled, NCCL would block ZLUDA (it ships no NCCL) and add hours elsewhere.
    zluda = component.if_enabled["zluda"]
    assert "ncclAllReduce" in {b.name for b in zluda.blockers}
    assert component.if_enabled["scale"].hours > 0 and not component.if_enabled["scale"].blockers

    # The same code with NCCL always built: now it is what every build needs.
    tree = tmp_path / "always"
    shutil.copytree(SCORING / "dist_trainer", tree)
    step = tree / "step.cu"
    step.write_text(step.read_text().replace("#ifdef DIST_USE_NCCL", "#if 1"))
    mandatory = portcheck.scan(tree, cache=False)
    assert not mandatory.optional
    assert mandatory.routes["zluda"].verdict == "blocked"
    assert mandatory.effort["scale"].total_hours > report.effort["scale"].total_hours


def test_optional_components_are_stated_in_every_format():
    from portcheck.report import formatter

    report = portcheck.scan(SCORING / "dist_trainer", cache=False)
    text, markdown = formatter("text")(report), formatter("markdown")(report)
    html, sarif = formatter("html")(report), formatter("sarif")(report)
    for rendered in (text, markdown, html, sarif):
        assert "DIST_USE_NCCL" in rendered
        assert "ZLUDA blocked (" in rendered  # the same sentence, from the view
    assert '"guard": "DIST_USE_NCCL"' in report.to_json()


def test_code_with_an_amd_path_counts_on_zluda_and_scale_but_not_on_hip():
    """The project's own HIP branch serves the HIP build; ZLUDA runs and SCALE compiles
    the NVIDIA branch, so its hazards are theirs."""
    report = portcheck.scan(FIXTURES / "projects" / "quant_kernels", cache=False)
    alternative = [f for f in report.findings if f.amd_alternative]
    assert alternative
    hazards = {route: sum(report.work_items[route].hazards.values()) for route in report.scores}
    assert hazards["zluda"] > hazards["hip"] and hazards["scale"] > hazards["hip"]
