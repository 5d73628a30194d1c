"""A Markdown summary for pull requests: scores, effort, what changed against a
baseline, the hazards by kind and the first findings of each."""

from __future__ import annotations

import re

from portcheck.model import Report, Status
from portcheck.paths import display_path
from portcheck.report import for_display
from portcheck.report.view import (
    NOTHING_TO_JUDGE,
    NOTHING_TO_SCORE_SENTENCE,
    TARGET_TITLE,
    ReportView,
)

MARK = {
    Status.SUPPORTED: "✅",
    Status.PARTIAL: "⚠️",
    Status.UNSUPPORTED: "❌",
    Status.UNKNOWN: "❔",
}
VERDICT_MARK = {
    "ready": "✅",
    "needs-work": "⚠️",
    "blocked": "⛔",
    "not-applicable": "➖",
    "nothing-to-score": "➖",
}
PER_HAZARD = 5
MAX_OPTIONAL = 10
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


def render_markdown(report: Report) -> str:
    view = ReportView(for_display(report))
    report, counts = view.report, view.counts
    lines = [f"## portcheck: AMD readiness of {_code(report.root)}", ""]
    lines.append("| route | verdict | readiness | effort | in the way |")
    lines.append("|---|---|---:|---:|---|")
    for target in view.targets:
        hours = view.effort_hours(target)
        score = view.score(target)
        route = view.route(target)
        shown = "—" if score is None else f"**{score}** / 100"
        if view.not_applicable(target) is not None:
            shown = "n/a"
        verdict = VERDICT_MARK[route.verdict] + " " + view.verdict_title(target)
        if route.verdict == "blocked":
            verdict += f" (coverage {route.coverage})"
        way = "; ".join(f"{_cell(item.label)} ×{item.count}" for item in view.top_items(target))
        if way and route.blockers:
            way = f"blocked by {len(route.blockers)}: {way}"
        lines.append(
            f"| {TARGET_TITLE[target]} | {verdict} | {shown} | "
            f"{'—' if hours is None else f'{hours} h'} | {way or '—'} |"
        )
    lines.append("")
    lines += _optional(view)
    if view.nothing_to_score:
        lines += [f"**{NOTHING_TO_SCORE_SENTENCE}**: no route has a score.", ""]
    lines.append(view.target_sentence)
    for target in view.targets:
        reason = view.not_applicable(target)
        if reason is not None:
            lines.append(f"- {TARGET_TITLE[target]} is not applicable: {reason}")
    lines.append("")
    lines.append(
        f"{counts.files_scanned} files, {counts.lines:,} lines, {counts.uses:,} CUDA "
        f"uses of {counts.distinct_names} names, {counts.findings} findings, "
        f"{counts.kernels} kernels."
    )
    lines.append("")
    lines.append(view.amd_path_sentence)
    if view.new_findings is not None:
        lines.append(f"**{view.new_findings} new finding(s)** compared with the baseline.")
    lines.append("")
    lines += _parse_errors(view)
    if view.hazards:
        lines += _findings(view)
    unsupported = [
        entry
        for entry in view.names.values()
        if entry.first.rule is not None and entry.first.status.hip is Status.UNSUPPORTED
    ]
    if unsupported:
        lines.append("<details><summary>APIs with no HIP equivalent</summary>\n")
        for entry in sorted(unsupported, key=lambda e: -e.uses)[:30]:
            lines.append(f"- {_code(entry.name)} ×{entry.uses}")
        lines.append("\n</details>\n")
    if view.python is not None:
        lines += _python(view)
    lines.append(
        "Scores: mean credit over work items (each CUDA name, each hazard kind per "
        "file); see docs/scoring.md."
    )
    return "\n".join(lines) + "\n"


def _python(view: ReportView) -> list[str]:
    python = view.python
    assert python is not None
    lines = ["#### Python", "", "| Python route | readiness | effort |", "|---|---:|---:|"]
    for route in python.routes:
        if route.reason is not None:
            lines.append(f"| {route.title} | n/a | — |")
        elif route.score is None:
            lines.append(f"| {route.title} | — | — |")
        else:
            lines.append(f"| {route.title} | **{route.score}** / 100 | {route.hours} h |")
    lines.append("")
    if python.nothing_to_judge:
        lines.append(f"No Python route has a score: {NOTHING_TO_JUDGE}.\n")
    for route in python.routes:
        if route.reason is not None:
            lines.append(f"- {route.title} is not applicable: {_cell(route.reason)}")
    if python.wheel_sentence:
        lines.append(f"- {_cell(python.wheel_sentence)}")
    lines.append("")
    shown = python.findings[: PER_HAZARD * 4]
    for item in shown:
        lines.append(f"- {item.finding.id} {_code(item.where)} {_cell(item.finding.message)}")
    if len(python.findings) > len(shown):
        lines.append(f"- … and {len(python.findings) - len(shown)} more")
    if python.unknown_packages:
        lines.append(
            f"\n{len(python.unknown_packages)} package(s) not in portcheck's list: unknown."
        )
    lines.append("")
    return lines


def _optional(view: ReportView) -> list[str]:
    components = view.optional
    if not components:
        return []
    lines = [
        f"**Optional components** ({len(components)}, behind build switches; not in the "
        "scores above), cost if enabled:",
        "",
    ]
    for component in components[:MAX_OPTIONAL]:
        lines.append(
            f"- {_code(component.guard)} ({len(component.paths)} file(s), "
            f"{component.findings} finding(s)): {_cell(view.optional_sentence(component))}"
        )
    if len(components) > MAX_OPTIONAL:
        lines.append(f"- … and {len(components) - MAX_OPTIONAL} more")
    lines.append("")
    return lines


def _parse_errors(view: ReportView) -> list[str]:
    broken = view.parse_error_files
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


def _findings(view: ReportView) -> list[str]:
    targets = view.targets
    lines = [
        "| hazard | severity | count | " + " | ".join(TARGET_TITLE[t] for t in targets) + " |",
        "|---|---|---:|" + "---|" * len(targets),
    ]
    for group in view.hazards:
        marks = " | ".join(MARK[group.verdicts[t]] for t in targets)
        name = f"{group.id} {group.slug}"
        linked = f"[{name}]({group.help_url})" if group.help_url else name
        lines.append(f"| {linked} | {group.severity.name.lower()} | {group.count} | {marks} |")
    lines.append("")
    for group in view.hazards:
        lines.append(f"<details><summary>{group.id} {group.slug} ({group.count})</summary>\n")
        for finding in group.findings[:PER_HAZARD]:
            ported = " *(has an AMD path: not scored on HIP)*" if finding.amd_alternative else ""
            if finding.optional:
                ported += f" *(optional: {_cell(finding.optional)})*"
            lines.append(
                f"- {_code(view.report.where(finding.path, finding.span.line))} "
                f"{_cell(finding.message)}{ported}"
            )
        if group.count > PER_HAZARD:
            lines.append(f"- … and {group.count - PER_HAZARD} more")
        lines.append(f"\n_Fix:_ {_cell(group.fix)} _Help:_ {_code(group.help)}\n\n</details>\n")
    return lines
