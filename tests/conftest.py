"""Shared helpers: fixture paths and the `expect-use:` marker reader."""

from __future__ import annotations

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

    return subprocess.run(
        [sys.executable, "-m", "portcheck", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
