"""The JSON report of the shipped example and of the fixture trees, pinned.

Refactors promise "no behaviour change"; this is the test that holds them to it. A change that
is meant to alter a report regenerates the goldens with `pytest --update-goldens` and shows the
difference in review.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from portcheck import scan

from conftest import FIXTURES, REPO

GOLDEN = Path(__file__).parent / "golden"

TREES = {
    "heatflow": REPO / "examples" / "heatflow",
    "scan": FIXTURES / "scan",
    "hazards": FIXTURES / "hazards",
    "mlproj": FIXTURES / "python" / "mlproj",
    **{f"project-{p.name}": p for p in sorted((FIXTURES / "projects").iterdir()) if p.is_dir()},
}


def _stable(document: dict) -> dict:
    """The report without what legitimately varies between runs: timing and where the tree is."""
    document["summary"].pop("seconds", None)
    document["root"] = "<root>"
    return document


@pytest.mark.parametrize("name", sorted(TREES))
def test_json_report_matches_golden(name: str, request: pytest.FixtureRequest) -> None:
    report = scan(TREES[name], cache=False)
    got = json.dumps(_stable(json.loads(report.to_json())), indent=1, sort_keys=True) + "\n"
    golden = GOLDEN / f"{name}.json"
    if request.config.getoption("--update-goldens"):
        golden.write_text(got, encoding="utf-8")
    assert golden.exists(), f"no golden for {name}: run pytest --update-goldens"
    assert got == golden.read_text(encoding="utf-8"), f"JSON report of {name} changed"
