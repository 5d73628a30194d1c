"""The JSON report validates against the schema the package publishes.

Every JSON report the tests make in-process is checked as it is written (conftest), and
so is the stdout of every `scan --format json` they run; here: the schema itself, the
pinned goldens, reports with every optional part (compile results, a baseline, a route
that does not apply, a Python section, nothing to score), and documents that break it."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import portcheck
from portcheck.compile import CompileResult, Diagnostic, Toolchain
from portcheck.report.json import json_schema

from conftest import FIXTURES, REPO, assert_valid_report, run_portcheck

GOLDEN = Path(__file__).parent / "golden"


def test_the_schema_is_a_valid_draft_2020_12_schema_and_ships_in_the_package():
    schema = json_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["properties"]["schema"] == {"const": "portcheck.report/1"}


@pytest.mark.parametrize("golden", sorted(GOLDEN.glob("*.json")), ids=lambda p: p.stem)
def test_every_golden_report_validates(golden):
    document = json.loads(golden.read_text(encoding="utf-8"))
    document["summary"]["seconds"] = 0.0  # the goldens drop it (it varies)
    assert_valid_report(json.dumps(document))


def test_reports_with_every_optional_part_validate(tmp_path):
    report = portcheck.scan(REPO / "examples" / "heatflow", cache=False)
    failed = CompileResult(
        "src/residual.cu",
        "gfx90a",
        False,
        0.5,
        [Diagnostic(6, 10, "error", "no member named 'x'", "src/residual.cu", "a.x = 1;")],
        failure_class="port-problem",
        explanation="PC002",
        finding_ids=["PC002"],
    )
    compiled = dataclasses.replace(
        report,
        compile_results=(failed, CompileResult("src/main.cu", "gfx90a", True, 1.0)),
        toolchain=Toolchain("/usr/bin/hipcc", "5.2", frozenset({"gfx90a"})),
        new_finding_indices=(0,),
    )
    document = json.loads(compiled.to_json())  # checked as it is written
    assert document["compile"] and document["findings"][0]["new"] is True
    on_cdna = run_portcheck(
        "scan", str(REPO / "examples" / "heatflow"), "--format", "json", "--gpu", "mi300x"
    )
    assert json.loads(on_cdna.stdout)["summary"]["scores"]["zluda"] is None
    python = json.loads(portcheck.scan(FIXTURES / "python" / "mlproj", cache=False).to_json())
    assert python["python"]["dependencies"]
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no CUDA here\n")
    empty = run_portcheck("scan", str(tmp_path / "empty"), "--format", "json", "--no-cache")
    assert json.loads(empty.stdout)["summary"]["routes"]["hip"]["verdict"] == "nothing-to-score"


def _broken(document: dict, change) -> dict:
    broken = copy.deepcopy(document)
    change(broken)
    return broken


def test_documents_that_break_the_contract_do_not_validate():
    document = json.loads((GOLDEN / "heatflow.json").read_text(encoding="utf-8"))
    document["summary"]["seconds"] = 0.0
    validator = Draft202012Validator(json_schema())
    assert validator.is_valid(document)
    breakages = {
        "score above 100": lambda d: d["summary"]["scores"].update(hip=101),
        "unknown status": lambda d: d["findings"][0]["targets"].update(hip="works"),
        "unknown verdict": lambda d: d["summary"]["routes"]["zluda"].update(verdict="fine"),
        "relative help link": lambda d: d["findings"][0].update(help_url="docs/rules/x.md"),
        "line 0": lambda d: d["usages"][0].update(line=0),
        "no fingerprint": lambda d: d["findings"][0].pop("fingerprint"),
        "wrong schema name": lambda d: d.update(schema="portcheck.report/2"),
    }
    for what, change in breakages.items():
        assert not validator.is_valid(_broken(document, change)), what
