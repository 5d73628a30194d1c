"""The CI recipes in docs/ci.md work as written: the code-scanning workflow's commands
produce SARIF that GitHub accepts and the reports it keeps, and the pre-commit hook's entry
runs and gates as documented."""

from __future__ import annotations

import json
import shlex
import shutil

import yaml

from conftest import REPO, assert_valid_report, run_portcheck

WORKFLOW = REPO / "docs" / "ci" / "github-code-scanning.yml"
HOOKS = REPO / ".pre-commit-hooks.yaml"
EXAMPLE = REPO / "examples" / "heatflow"


def _portcheck_commands(script: str) -> list[list[str]]:
    return [shlex.split(line)[1:] for line in script.splitlines() if line.startswith("portcheck ")]


def test_the_code_scanning_workflow_uploads_the_sarif_its_scan_writes(tmp_path):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    (job,) = workflow["jobs"].values()
    assert workflow["permissions"]["security-events"] == "write"
    steps = job["steps"]
    upload = next(s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/"))
    commands = [c for s in steps if "run" in s for c in _portcheck_commands(s["run"])]
    assert commands, "the workflow runs portcheck"
    tree = tmp_path / "repo"
    shutil.copytree(EXAMPLE, tree)
    for args in commands:
        args = [str(tree) if a == "." else a for a in args]
        args = [str(tmp_path / a) if a.startswith("portcheck.") else a for a in args]
        result = run_portcheck(*args, "--no-cache")
        assert result.returncode in (0, 1), result.stderr  # 1: the documented gate
    sarif = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text())
    (run,) = sarif["runs"]
    rules = run["tool"]["driver"]["rules"]
    # What code scanning needs of each result and rule.
    for result in run["results"]:
        assert result["ruleId"] == rules[result["ruleIndex"]]["id"]
        assert result["message"]["text"]
        location = result["locations"][0]["physicalLocation"]
        assert not location["artifactLocation"]["uri"].startswith("/")
        assert location["region"]["startLine"] >= 1
        assert result["partialFingerprints"]["portcheckFinding/v1"]
    for rule in rules:
        assert rule["shortDescription"]["text"] and rule["help"]["markdown"]
        assert rule.get("helpUri", "https://").startswith("https://")
    assert_valid_report((tmp_path / "portcheck.json").read_text())
    assert "data-fingerprint" in (tmp_path / "portcheck.html").read_text()


def test_the_pre_commit_hook_runs_its_entry_and_gates_on_a_baseline(tmp_path):
    (hook,) = yaml.safe_load(HOOKS.read_text())
    assert hook["id"] == "portcheck" and hook["pass_filenames"] is False
    assert hook["language"] == "python"
    program, *entry = shlex.split(hook["entry"])
    assert program == "portcheck"
    tree = tmp_path / "repo"
    shutil.copytree(EXAMPLE, tree)
    args = [str(tree) if a == "." else a for a in entry]
    plain = run_portcheck(*args, "--no-cache")
    assert plain.returncode == 0 and "Readiness by route" in plain.stdout

    baseline = tmp_path / "portcheck-baseline.json"
    run_portcheck(*args, "--format", "json", "-o", str(baseline), "--no-cache")
    assert run_portcheck(*args, "--baseline", str(baseline), "--no-cache").returncode == 0
    kernel = tree / "src" / "residual.cu"
    kernel.write_text(
        kernel.read_text() + "\n__global__ void tail(int* o) {\n"
        "  int lane = threadIdx.x % 32;\n  o[lane] = __shfl_sync(__activemask(), lane, 0);\n}\n"
    )
    gated = run_portcheck(*args, "--baseline", str(baseline), "--no-cache")
    assert gated.returncode == 1 and "1 new finding" in gated.stderr
