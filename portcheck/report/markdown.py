"""A Markdown summary for pull requests: scores, effort, what changed against a
baseline, the hazards by kind and the first findings of each."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from portcheck.checks import catalogue
from portcheck.model import Finding, Report
from portcheck.paths import display_path
from portcheck.report import (
    NOTHING_TO_SCORE_SENTENCE,
    amd_path_sentence,
    for_display,
    nothing_to_score,
    parse_error_files,
)
from portcheck.report.text import PY_ROUTE_TITLE, TARGET_TITLE

MARK = {"supported": "✅", "partial": "⚠️", "unsupported": "❌", "unknown": "❔"}
PER_HAZARD = 5
MAX_PARSE_ERROR_FILES = 20


def _cell(text: str) -> str:
    """Text in a table cell or list item: a `|` cannot end the cell, nothing breaks a line."""
    return display_path(text).replace("|", "\\|")


def _code(text: str) -> str:
    """`text` as an inline code span that its own backticks cannot close: fenced with one
    backtick more than its longest run of them (CommonMark), control characters escaped.
    Not for table cells (a `|` there would need escaping, which a code span keeps)."""
    text = display_path(text)
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") or not text.strip() else text
    return f"{fence}{padded}{fence}"


def _where(path: str, line: int) -> str:
    return _code(f"{path}:{line}")


def render_markdown(report: Report) -> str:
    report = for_display(report)
    lines = [f"## portcheck: AMD readiness of {_code(report.root)}", ""]
    lines.append("| route | readiness | effort |")
    lines.append("|---|---:|---:|")
    for target in report.targets:
        effort = report.effort.get(str(target))
        hours = effort.total_hours if effort else "—"
        score = report.scores[str(target)]
        shown = "—" if score is None else f"**{score}** / 100"
        lines.append(f"| {TARGET_TITLE[target]} | {shown} | {hours} h |")
    lines.append("")
    if nothing_to_score(report):
        lines += [f"**{NOTHING_TO_SCORE_SENTENCE}**: no route has a score.", ""]
    distinct = report.distinct_names
    lines.append(
        f"{len(report.files)} files, {report.lines:,} lines, {len(report.uses):,} CUDA "
        f"uses of {distinct} names, {len(report.findings)} findings, "
        f"{len(report.kernels)} kernels."
    )
    lines.append("")
    lines.append(amd_path_sentence(report))
    new = report.new_finding_indices
    if new is not None:
        lines.append(f"**{len(new)} new finding(s)** compared with the baseline.")
    lines.append("")
    lines += _parse_errors(report)
    if report.findings:
        lines += _findings(report)
    unsupported = Counter(
        u.name for u in report.uses if u.rule is not None and str(u.status.hip) == "unsupported"
    )
    if unsupported:
        lines.append("<details><summary>APIs with no HIP equivalent</summary>\n")
        for name, count in unsupported.most_common(30):
            lines.append(f"- {_code(name)} ×{count}")
        lines.append("\n</details>\n")
    if report.python is not None:
        lines += _python(report)
    lines.append(
        "Scores: mean credit over work items (each CUDA name, each hazard kind per "
        "file); see docs/scoring.md."
    )
    return "\n".join(lines) + "\n"


def _python(report: Report) -> list[str]:
    section = report.python
    assert section is not None
    lines = ["#### Python", "", "| Python route | readiness | effort |", "|---|---:|---:|"]
    for route, score in section.scores.items():
        hours = section.effort[route].total_hours
        lines.append(f"| {PY_ROUTE_TITLE[route]} | **{score}** / 100 | {hours} h |")
    lines.append("")
    for finding in section.findings[: PER_HAZARD * 4]:
        where = _where(finding.path, finding.span.line)
        lines.append(f"- {finding.id} {where} {_cell(finding.message)}")
    if len(section.findings) > PER_HAZARD * 4:
        lines.append(f"- … and {len(section.findings) - PER_HAZARD * 4} more")
    if section.unknown_packages:
        lines.append(f"\n{section.unknown_packages} package(s) not in portcheck's list: unknown.")
    lines.append("")
    return lines


def _parse_errors(report: Report) -> list[str]:
    broken = parse_error_files(report)
    if not broken:
        return []
    lines = [
        f"**Parse errors in {len(broken)} file(s)**: uses and findings there may be incomplete.",
        "",
    ]
    for summary in broken[:MAX_PARSE_ERROR_FILES]:
        lines.append(f"- {_code(summary.path)}: {summary.parse_errors} error(s)")
    if len(broken) > MAX_PARSE_ERROR_FILES:
        lines.append(f"- … and {len(broken) - MAX_PARSE_ERROR_FILES} more")
    lines.append("")
    return lines


def _findings(report: Report) -> list[str]:
    specs = catalogue()
    groups: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        groups[finding.slug].append(finding)
    lines = [
        "| hazard | severity | count | "
        + " | ".join(TARGET_TITLE[t] for t in report.targets)
        + " |",
        "|---|---|---:|" + "---|" * len(report.targets),
    ]
    ordered = sorted(groups.items(), key=lambda kv: (-kv[1][0].severity, specs[kv[0]].id))
    for slug, group in ordered:
        spec = specs[slug]
        marks = " | ".join(MARK[str(spec.targets[t])] for t in report.targets)
        lines.append(
            f"| [{spec.id} {slug}]({spec.help_url}) | {spec.severity.name.lower()} | "
            f"{len(group)} | {marks} |"
        )
    lines.append("")
    for slug, group in ordered:
        lines.append(f"<details><summary>{specs[slug].id} {slug} ({len(group)})</summary>\n")
        for finding in group[:PER_HAZARD]:
            ported = " *(has an AMD path: not scored)*" if finding.amd_alternative else ""
            lines.append(
                f"- {_where(finding.path, finding.span.line)} {_cell(finding.message)}{ported}"
            )
        if len(group) > PER_HAZARD:
            lines.append(f"- … and {len(group) - PER_HAZARD} more")
        lines.append(f"\n_Fix:_ {_cell(specs[slug].fix)}\n\n</details>\n")
    return lines
