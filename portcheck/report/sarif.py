"""SARIF 2.1.0 for GitHub code scanning and other CI viewers: one run, the hazard
catalogue as rules, one result per finding with a physical location."""

from __future__ import annotations

import json
import os
from urllib.parse import quote

from portcheck.checks import HazardSpec, catalogue
from portcheck.checks.docs import render_hazard_doc
from portcheck.model import (
    Finding,
    Language,
    PyFinding,
    Report,
    Severity,
    Span,
    locate_in_cells,
)
from portcheck.paths import display_path
from portcheck.report.view import NOTHING_TO_SCORE_SENTENCE, ReportView

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = {
    Severity.HIGH: "error",
    Severity.MEDIUM: "warning",
    Severity.LOW: "note",
    Severity.INFO: "note",
}


def report_to_sarif(report: Report) -> dict[str, object]:
    view = ReportView(report)  # no for_display: URIs are percent-encoded, messages escaped
    # The CUDA hazards (PC…), then the Python ones (PY…), judged on the Python routes.
    specs = sorted(catalogue().values(), key=lambda s: (s.language is Language.PYTHON, s.id))
    index = {spec.slug: i for i, spec in enumerate(specs)}
    rules = [_rule(spec) for spec in specs]
    results = [
        _result(
            finding,
            index[finding.slug],
            f"HIP: {finding.targets.hip}, ZLUDA: {finding.targets.zluda}, "
            f"SCALE: {finding.targets.scale}",
            report,
            kernels=list(finding.kernels),
        )
        for finding in report.findings
    ]
    results += [
        _result(
            py,
            index[py.slug],
            f"PyTorch on ROCm: {py.targets.rocm}, DirectML: {py.targets.directml}",
            report,
        )
        for py in (report.python.findings if report.python else ())
    ]
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "portcheck",
                "version": report.tool_version,
                "rules": rules,
            }
        },
    }
    if report.root_uri:  # else SRCROOT is left for the viewer to resolve (it is optional)
        run["originalUriBaseIds"] = {"SRCROOT": {"uri": report.root_uri}}
    run.update(invocations=[_invocation(view)], results=results, properties=_run_properties(view))
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [run],
    }


def _run_properties(view: ReportView) -> dict[str, object]:
    """The figures the other formats state, for a reader of the SARIF file: scores, effort
    hours, counts, and each hazard's verdict per route (the worst among its findings)."""
    report = view.report
    return {
        "scores": dict(report.scores),
        "effort_hours": {str(t): view.effort_hours(t) for t in view.targets},
        "counts": view.counts.to_dict(),
        "hazards": [
            {
                "id": group.id,
                "slug": group.slug,
                "severity": group.severity.name.lower(),
                "findings": group.count,
                "targets": {t: str(status) for t, status in group.verdicts.items()},
            }
            for group in view.hazards
        ],
        "amd_paths": [p.to_dict() for p in report.amd_paths],
        "amd_paths_summary": view.amd_path_sentence,
        "target": report.target.to_dict(),
        "target_summary": view.target_sentence,
        "not_applicable": dict(report.not_applicable),
        "routes": {
            str(t): {**view.route(t).to_dict(), "model": view.model(t)} for t in view.targets
        },
        "optional": [{**c.to_dict(), "summary": view.optional_sentence(c)} for c in view.optional],
    }


def _invocation(view: ReportView) -> dict[str, object]:
    """What a reader of the results must know about the run itself: the files whose parse
    had errors (findings there may be incomplete), and a tree with nothing to score."""
    notes: list[dict[str, object]] = [
        {
            "level": "warning",
            "descriptor": {"id": "parse-error"},
            "message": {
                "text": f"{display_path(f.path)}: {f.parse_errors} parse error(s); uses and "
                "findings in this file may be incomplete"
            },
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": _uri(f.path), "uriBaseId": "SRCROOT"}
                    }
                }
            ],
        }
        for f in view.parse_error_files
    ]
    if view.nothing_to_score:
        notes.append(
            {
                "level": "warning",
                "descriptor": {"id": "nothing-to-score"},
                "message": {"text": f"{NOTHING_TO_SCORE_SENTENCE}: no route has a score."},
            }
        )
    invocation: dict[str, object] = {"executionSuccessful": True}
    if notes:
        invocation["toolExecutionNotifications"] = notes
    return invocation


def _uri(path: str) -> str:
    """A relative path as a URI reference: as it is when every character is printable;
    otherwise percent-encoded from its bytes (control characters, undecodable bytes)."""
    if path.isprintable():
        return path
    return quote(os.fsencode(path), safe="/")


def _rule(spec: HazardSpec) -> dict[str, object]:
    """A hazard as a SARIF rule. The help travels inside the file (help.text and
    help.markdown are the rule's page, as `portcheck explain` prints it): a viewer shows it
    wherever the file is opened. helpUri only when the pages are published at an absolute
    address (PORTCHECK_HELP_BASE_URL); a path inside a checkout is a dead link elsewhere."""
    page = render_hazard_doc(spec)
    tags = ["python", spec.slug] if spec.language is Language.PYTHON else [spec.slug]
    rule: dict[str, object] = {
        "id": spec.id,
        "name": spec.slug,
        "shortDescription": {"text": spec.summary},
        "fullDescription": {"text": spec.why},
        "help": {"text": _plain(page), "markdown": page},
        "defaultConfiguration": {"level": LEVEL[spec.severity]},
        "properties": {"tags": ["portability", "amd", *tags], "targets": spec.targets.to_dict()},
    }
    if spec.help_url:
        rule["helpUri"] = spec.help_url
    return rule


def _plain(markdown: str) -> str:
    """The page as plain text: without the generator's comment and the code fences' marks."""
    lines = [
        line
        for line in markdown.splitlines()
        if not line.startswith("<!--") and not line.startswith("```")
    ]
    return "\n".join(lines).replace("\n\n\n", "\n\n").strip() + "\n"


def _result(
    finding: Finding | PyFinding,
    rule_index: int,
    verdicts: str,
    report: Report,
    **properties: object,
) -> dict[str, object]:
    cells = report.notebooks.get(finding.path)
    if cells:
        # A notebook: the region is the .ipynb file's line holding the cell's line (the
        # columns of a JSON string are not the code's), the cell and its line are said.
        cell, within, raw_line = locate_in_cells(cells, finding.span.line)
        line = raw_line or 1
        location = _location(finding.path, Span(line, 1, line, 1, 0, 0), columns=False)
        properties = {**properties, "cell": cell, "cellLine": within}
        where = f" [cell {cell}, line {within}]"
    else:
        location, where = _location(finding.path, finding.span), ""
    return {
        "ruleId": finding.id,
        "ruleIndex": rule_index,
        "level": LEVEL[finding.severity],
        "message": {"text": f"{finding.message} ({verdicts}){where}"},
        "locations": [location],
        "partialFingerprints": {"portcheckFinding/v1": finding.fingerprint},
        "properties": {
            "slug": finding.slug,
            **properties,
            "targets": finding.targets.to_dict(),
            "amd_alternative": getattr(finding, "amd_alternative", False),
        },
    }


def _location(path: str, span: Span, columns: bool = True) -> dict[str, object]:
    region = {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": span.end_column,
    }
    if not columns:  # a notebook's line: the columns of its JSON text are not the code's
        del region["startColumn"], region["endColumn"]
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path), "uriBaseId": "SRCROOT"},
            "region": region,
        }
    }


def render_sarif(report: Report) -> str:
    return json.dumps(report_to_sarif(report), indent=2) + "\n"  # ASCII: nothing raw
