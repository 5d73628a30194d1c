"""SARIF, Markdown and the baseline workflow, as CI systems and reviewers consume them."""

from __future__ import annotations

import json
import shutil

import portcheck
from portcheck.checks import catalogue
from portcheck.report.markdown import render_markdown
from portcheck.report.sarif import report_to_sarif

from conftest import FIXTURES, REPO, run_portcheck

EXAMPLE = REPO / "examples" / "heatflow"


def test_sarif_has_one_run_with_the_catalogue_and_located_results():
    report = portcheck.scan(EXAMPLE)
    sarif = report_to_sarif(report)
    assert sarif["version"] == "2.1.0"
    (run,) = sarif["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "portcheck"
    assert {rule["id"] for rule in driver["rules"]} == {s.id for s in catalogue().values()}
    assert len(run["results"]) == len(report.findings)
    ptx = next(r for r in run["results"] if r["ruleId"] == "PC003")
    assert ptx["level"] == "error"
    assert driver["rules"][ptx["ruleIndex"]]["name"] == "inline-ptx"
    location = ptx["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "src/residual.cu", "uriBaseId": "SRCROOT"}
    assert location["region"]["startLine"] == 12
    assert run["originalUriBaseIds"]["SRCROOT"]["uri"].endswith("/examples/heatflow/")


def test_markdown_summary_has_scores_hazards_and_locations():
    report = portcheck.scan(EXAMPLE)
    text = render_markdown(report)
    assert f"| HIP | **{report.scores['hip']}** / 100 |" in text
    assert "[PC003 inline-ptx](docs/rules/inline-ptx.md)" in text
    assert "`src/residual.cu:12`" in text


def _scan_json(path, *extra):
    return run_portcheck("scan", str(path), "--format", "json", *extra)


def test_baseline_fails_only_on_new_findings(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(FIXTURES / "hazards", project)
    baseline = tmp_path / "baseline.json"
    baseline.write_text(_scan_json(project).stdout)
    # Unrelated edits above old findings do not make them new.
    source = project / "warp_reduce.cu"
    source.write_text("// a new header comment\n\n" + source.read_text())
    same = _scan_json(project, "--baseline", str(baseline))
    assert same.returncode == 0, same.stderr
    assert json.loads(same.stdout)["summary"]["new_findings"] == 0
    # A new hazard is reported as new and fails the run.
    (project / "added.cu").write_text(
        "__global__ void k(int* x) {\n  x[threadIdx.x % 32] = 1;\n}\n"
    )
    added = _scan_json(project, "--baseline", str(baseline))
    assert added.returncode == 1
    doc = json.loads(added.stdout)
    assert doc["summary"]["new_findings"] == 1
    (new,) = [f for f in doc["findings"] if f["new"]]
    assert (new["path"], new["line"], new["slug"]) == ("added.cu", 2, "warp-size-assumption")
    assert "1 new finding(s) against the baseline" in added.stderr


def test_bad_baseline_is_a_usage_error(tmp_path):
    bogus = tmp_path / "old.json"
    bogus.write_text('{"not": "a report"}')
    run = _scan_json(EXAMPLE, "--baseline", str(bogus))
    assert run.returncode == 2 and "is not a portcheck.report/1 report" in run.stderr
