"""The lines of source around each finding, read once at the end of a scan and kept in the
Report (`Report.excerpts`), so that a report that shows code (HTML) reads only the Report,
and a report rebuilt from the cache still has them.

Only files inside the scanned tree are read (a path that leads outside it, through `..` or
a link, gets no excerpt), each once, decoded leniently as the scan decoded it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from portcheck.discover import MAX_FILE_BYTES, read_regular_file
from portcheck.model import Excerpt, Finding

EXCERPT_CONTEXT = 3  # lines kept either side of a finding
EXCERPT_MAX_COLUMNS = 240  # a longer line (minified, generated) is cut and ends with " …"


def read_excerpts(root: Path, findings: Iterable[Finding]) -> tuple[Excerpt, ...]:
    """For each file with findings, its lines within EXCERPT_CONTEXT of one, as few
    excerpts as the ranges merge into; by path, then line."""
    base = root if root.is_dir() else root.parent
    wanted: dict[str, set[int]] = {}
    for finding in findings:
        if finding.path.endswith(".ipynb"):
            continue  # its lines are the cells' (portcheck.python.notebooks), not the file's
        wanted.setdefault(finding.path, set()).add(finding.span.line)
    real_base = base.resolve()
    excerpts: list[Excerpt] = []
    for path in sorted(wanted):
        lines = _read_lines(real_base, path)
        if lines is not None:
            excerpts.extend(_excerpts_of(path, lines, wanted[path]))
    return tuple(excerpts)


def _read_lines(real_base: Path, path: str) -> list[str] | None:
    try:
        real = (real_base / path).resolve()
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return None
    if not real.is_relative_to(real_base):
        return None
    data = read_regular_file(real, MAX_FILE_BYTES)
    if not isinstance(data, bytes):
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _excerpts_of(path: str, lines: list[str], hits: set[int]) -> Iterable[Excerpt]:
    ranges: list[list[int]] = []
    for line in sorted(hits):
        if not 1 <= line <= len(lines):
            continue
        start, stop = max(1, line - EXCERPT_CONTEXT), min(len(lines), line + EXCERPT_CONTEXT)
        if ranges and start <= ranges[-1][1] + 1:
            ranges[-1][1] = max(ranges[-1][1], stop)
        else:
            ranges.append([start, stop])
    for start, stop in ranges:
        yield Excerpt(path, start, tuple(_cut(text) for text in lines[start - 1 : stop]))


def _cut(text: str) -> str:
    if len(text) > EXCERPT_MAX_COLUMNS:
        return text[:EXCERPT_MAX_COLUMNS] + " …"
    return text
