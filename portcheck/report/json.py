"""The `portcheck.report/1` JSON document (see the Interfaces contract in DESIGN.md).

`iter_json` streams it piece by piece, one list entry at a time, so that a report on a
million lines is written without holding the whole document in memory twice.

The text is ASCII: every other character is a JSON escape. Paths keep every character
(even a control character or an undecodable byte, as `\\u001b` or `\\udcff`), and none
reaches a terminal or a log raw."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from portcheck.model import Finding, Report, Use
from portcheck.report import parse_error_files

SCHEMA = "portcheck.report/1"
_encode = json.JSONEncoder().encode  # built once: json.dumps rebuilds it per call
_string = json.encoder.encode_basestring_ascii  # type: ignore[attr-defined]  # C, as _encode uses
BATCH = 512  # list entries per piece of text yielded


def _head(report: Report) -> dict[str, object]:
    summary: dict[str, object] = {
        "files_scanned": len(report.files),
        "files_skipped": len(report.skipped),
        "lines": report.lines,
        "uses": len(report.uses),
        "distinct_names": report.distinct_names,
        "unknown_names": report.unknown_names,
        "findings": len(report.findings),
        "files_with_parse_errors": len(parse_error_files(report)),
        "kernels": len(report.kernels),
        "amd_paths": len(report.amd_paths),
        "amd_alternative_findings": sum(1 for f in report.findings if f.amd_alternative),
        "scores": dict(report.scores),
        "effort": {t: dict(e) for t, e in report.effort.items()},
        "seconds": round(report.seconds, 3),
    }
    new = report.extra.get("new_findings")
    if isinstance(new, list):
        summary["new_findings"] = len(new)
    return {
        "schema": SCHEMA,
        "tool": {"name": "portcheck", "version": report.tool_version},
        "root": report.root,
        "targets": [str(t) for t in report.targets],
        "summary": summary,
    }


def _lists(report: Report) -> dict[str, Iterable[object]]:
    new = report.extra.get("new_findings")
    new_ids = {id(f) for f in new} if isinstance(new, list) else None

    def finding(item: Finding) -> dict[str, object]:
        data = item.to_dict()
        if new_ids is not None:
            data["new"] = id(item) in new_ids
        return data

    lists: dict[str, Iterable[object]] = {
        "files": (f.to_dict() for f in report.files),
        "usages": report.uses,
        "findings": (finding(f) for f in report.findings),
        "kernels": (k.to_dict() for k in report.kernels),
        "skipped": (s.to_dict() for s in report.skipped),
        "amd_paths": (p.to_dict() for p in report.amd_paths),
    }
    if report.compile_results:
        lists["compile"] = (r.to_dict() for r in report.compile_results)  # type: ignore[attr-defined]
    return lists


def _encoded_uses(uses: Iterable[Use]) -> Iterator[str]:
    """Each use as `_encode(use.to_dict())` would write it, built directly: a report has
    tens of thousands of uses, and most of each entry is shared with other uses (the
    name, kind, family and path; the hip name and statuses of one rule), so those parts
    are encoded once each."""
    tails: dict[int, str] = {}
    heads: dict[tuple[str, str, str, str], str] = {}
    for use in uses:
        name, kind, family, path, span, device, rule = use
        tail = tails.get(id(rule))
        if tail is None:
            data = use.to_dict()
            tail = tails[id(rule)] = _encode({"hip": data["hip"], "status": data["status"]})[1:]
        key = (name, kind, family, path)
        head = heads.get(key)
        if head is None:
            head = heads[key] = (
                f'{{"name": {_string(name)}, "kind": {_string(kind)}, '
                f'"family": {_string(family)}, "path": {_string(path)}, '
            )
        line, column, end_line, end_column = span[:4]
        yield (
            f'{head}"line": {line}, "column": {column}, "end_line": {end_line}, '
            f'"end_column": {end_column}, "in_device_code": {"true" if device else "false"}, {tail}'
        )


def report_to_dict(report: Report) -> dict[str, object]:
    document = _head(report)
    lists = _lists(report)
    lists["usages"] = (u.to_dict() for u in report.uses)
    document.update({key: list(items) for key, items in lists.items()})
    if report.compile_results:
        document["hipcc"] = dict(report.extra.get("hipcc", {}))  # type: ignore[call-overload]
    if report.python is not None:
        document["python"] = report.python.to_dict()
    return document


def iter_json(report: Report) -> Iterator[str]:
    """The document as text pieces: the head indented, list entries one per line."""
    yield "{"
    first = True
    for key, value in _head(report).items():
        text = json.dumps(value, indent=2).replace("\n", "\n  ")
        yield ("" if first else ",") + f"\n  {json.dumps(key)}: {text}"
        first = False
    for key, items in _lists(report).items():
        yield f",\n  {json.dumps(key)}: ["
        empty = True
        batch: list[str] = []
        encoded = _encoded_uses(report.uses) if key == "usages" else map(_encode, items)
        for item in encoded:
            batch.append(item)
            if len(batch) == BATCH:
                yield ("\n    " if empty else ",\n    ") + ",\n    ".join(batch)
                empty = False
                batch.clear()
        if batch:
            yield ("\n    " if empty else ",\n    ") + ",\n    ".join(batch)
            empty = False
        yield "]" if empty else "\n  ]"
    if report.compile_results:
        hipcc = dict(report.extra.get("hipcc", {}))  # type: ignore[call-overload]
        yield f',\n  "hipcc": {json.dumps(hipcc)}'
    if report.python is not None:
        text = json.dumps(report.python.to_dict(), indent=2)
        yield ',\n  "python": ' + text.replace("\n", "\n  ")
    yield "\n}\n"


def render_json(report: Report) -> str:
    return "".join(iter_json(report))
