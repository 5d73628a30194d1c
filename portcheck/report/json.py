"""The `portcheck.report/1` JSON document (see the Interfaces contract in DESIGN.md)."""

from __future__ import annotations

import json

from portcheck.model import Finding, Report

SCHEMA = "portcheck.report/1"


def report_to_dict(report: Report) -> dict[str, object]:
    document: dict[str, object] = {
        "schema": SCHEMA,
        "tool": {"name": "portcheck", "version": report.tool_version},
        "root": report.root,
        "targets": [str(t) for t in report.targets],
        "summary": {
            "files_scanned": len(report.files),
            "files_skipped": len(report.skipped),
            "lines": report.lines,
            "uses": len(report.uses),
            "distinct_names": len({u.name for u in report.uses}),
            "unknown_names": len({u.name for u in report.uses if u.rule is None}),
            "findings": len(report.findings),
            "kernels": len(report.kernels),
            "scores": dict(report.scores),
            "effort": {t: dict(e) for t, e in report.effort.items()},
            "seconds": round(report.seconds, 3),
        },
        "files": [f.to_dict() for f in report.files],
        "usages": [u.to_dict() for u in report.uses],
        "findings": [_finding(f, report) for f in report.findings],
        "kernels": [k.to_dict() for k in report.kernels],
        "skipped": [s.to_dict() for s in report.skipped],
    }
    new = report.extra.get("new_findings")
    if isinstance(new, list):
        summary = document["summary"]
        assert isinstance(summary, dict)
        summary["new_findings"] = len(new)
    if report.compile_results:
        document["compile"] = [r.to_dict() for r in report.compile_results]  # type: ignore[attr-defined]
        document["hipcc"] = dict(report.extra.get("hipcc", {}))  # type: ignore[call-overload]
    return document


def _finding(finding: Finding, report: Report) -> dict[str, object]:
    data = finding.to_dict()
    new = report.extra.get("new_findings")
    if isinstance(new, list):
        data["new"] = any(finding is other for other in new)
    return data


def render_json(report: Report) -> str:
    return json.dumps(report_to_dict(report), indent=2, ensure_ascii=False) + "\n"
