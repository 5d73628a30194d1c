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
    # The rule carries its help page itself; no helpUri unless the pages are published.
    rule = driver["rules"][ptx["ruleIndex"]]
    assert "helpUri" not in rule
    assert "## Why is this a problem?" in rule["help"]["markdown"]
    assert "Why is this a problem?" in rule["help"]["text"]
    assert "```" not in rule["help"]["text"] and "<!--" not in rule["help"]["text"]
    assert rule["help"]["markdown"] == run_portcheck("explain", "PC003").stdout


def test_sarif_links_help_only_to_an_absolute_address(monkeypatch):
    monkeypatch.setenv("PORTCHECK_HELP_BASE_URL", "https://docs.example.org/portcheck/rules")
    sarif = report_to_sarif(portcheck.scan(EXAMPLE, cache=False))
    rules = {r["name"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["inline-ptx"]["helpUri"] == "https://docs.example.org/portcheck/rules/inline-ptx.md"
    monkeypatch.setenv("PORTCHECK_HELP_BASE_URL", "../docs/rules")
    sarif = report_to_sarif(portcheck.scan(EXAMPLE, cache=False))
    assert not [r for r in sarif["runs"][0]["tool"]["driver"]["rules"] if "helpUri" in r]


def test_explain_prints_a_rules_page_by_id_or_slug_and_refuses_unknown_ones():
    by_id, by_slug = run_portcheck("explain", "pc005"), run_portcheck("explain", "launch-bounds")
    assert by_id.returncode == by_slug.returncode == 0
    assert by_id.stdout == by_slug.stdout
    assert by_id.stdout.startswith("# launch-bounds (PC005)")
    assert "## Use instead" in by_id.stdout and "__launch_bounds__" in by_id.stdout
    python = run_portcheck("explain", "PY001")
    assert python.returncode == 0 and "(PY001)" in python.stdout
    unknown = run_portcheck("explain", "PC999")
    assert unknown.returncode == 2
    assert unknown.stderr.count("\n") == 1 and "PC999" in unknown.stderr
    assert "Traceback" not in unknown.stderr
    listed = run_portcheck("explain", "--list")
    assert listed.returncode == 0 and "PC005  launch-bounds" in listed.stdout


def test_markdown_summary_has_scores_hazards_and_locations():
    report = portcheck.scan(EXAMPLE)
    text = render_markdown(report)
    assert f"| **{report.scores['hip']}** / 100 |" in text
    assert "| PC003 inline-ptx | high |" in text  # no link into a checkout's docs/ folder
    assert "](docs/" not in text
    assert "_Help:_ `portcheck explain PC003`" in text
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
        "__global__ void k(int* x) {\n  int lane = threadIdx.x % 32;\n"
        "  x[lane] = __shfl_sync(__activemask(), lane, 0);\n}\n"
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
