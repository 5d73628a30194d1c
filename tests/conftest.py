"""Shared helpers: fixture paths and the `expect-use:` marker reader."""

from __future__ import annotations

import itertools
import os
import re
import tempfile
from collections import Counter
from pathlib import Path

import pytest

# Every test run starts with an empty rule cache of its own (and never writes to ~/.cache);
# subprocesses inherit it.
os.environ["PORTCHECK_CACHE_DIR"] = tempfile.mkdtemp(prefix="portcheck-test-cache-")

FIXTURES = Path(__file__).parent / "fixtures"
SCAN_FIXTURES = FIXTURES / "scan"
REPO = Path(__file__).parent.parent

# `// expect-use: a b c` (or inside /* … */ in a macro) names the CUDA uses
# expected on the next line, in any order, duplicates counted.
MARKER = re.compile(r"expect-use:\s*([^*\\]*?)\s*(?:\*/)?\s*\\?\s*$")


def expected_uses(path: Path) -> Counter[tuple[str, int]]:
    expected: Counter[tuple[str, int]] = Counter()
    text = path.read_bytes().decode("utf-8", "replace")
    for number, line in enumerate(text.splitlines(), start=1):
        match = MARKER.search(line)
        if match:
            for name in match.group(1).split():
                expected[(name, number + 1)] += 1
    return expected


@pytest.fixture(autouse=True)
def _json_reports_match_their_schema(monkeypatch):
    """Every JSON report a test makes in this process is checked against the schema the
    package publishes (portcheck/report/report.schema.json), as it is written."""
    from portcheck.model import Report

    original = Report.iter_json

    def checked(self):
        pieces = []
        for piece in original(self):
            pieces.append(piece)
            yield piece
        assert_valid_report("".join(pieces))

    monkeypatch.setattr(Report, "iter_json", checked)


def assert_valid_report(text: str) -> None:
    """Fail with the first few schema errors, each with where it is in the document."""
    import json

    errors = sorted(_report_validator().iter_errors(json.loads(text)), key=lambda e: e.path)
    listed = "; ".join(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in errors[:5])
    assert not errors, f"JSON report does not match report.schema.json: {listed}"


_VALIDATOR = []


def _report_validator():
    if not _VALIDATOR:
        from jsonschema import Draft202012Validator

        from portcheck.report.json import json_schema

        _VALIDATOR.append(Draft202012Validator(json_schema()))
    return _VALIDATOR[0]


@pytest.fixture(scope="session")
def rules():
    from portcheck.ruleset import default_rules

    return default_rules()


def pytest_addoption(parser):
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="Rewrite translation goldens (tests/fixtures/translate/*.hip) from the current "
        "engine; review the diff before committing.",
    )


@pytest.fixture
def update_goldens(request) -> bool:
    return bool(request.config.getoption("--update-goldens"))


def run_portcheck(*args, env=None, timeout=120):
    """The command line as a user runs it: a fresh process, output captured as text."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "portcheck", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    formats = [b for a, b in itertools.pairwise(args) if a == "--format"]
    writes = "-o" in args or "--output" in args
    if args and args[0] == "scan" and formats == ["json"] and not writes and result.stdout:
        assert_valid_report(result.stdout)  # the JSON a CI job would read
    return result
