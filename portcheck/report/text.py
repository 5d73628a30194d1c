"""The terminal view: scores first, then what needs attention, then detail."""

from __future__ import annotations

import io
from collections import Counter, defaultdict

from rich.console import Console
from rich.table import Table
from rich.text import Text

from portcheck.model import CompileReport, Report, Status, Target, Toolchain, Use
from portcheck.report import for_display
from portcheck.report.view import (
    NOTHING_TO_JUDGE,
    NOTHING_TO_SCORE,
    NOTHING_TO_SCORE_SENTENCE,
    TARGET_TITLE,
    ReportView,
)

STATUS_STYLE = {
    Status.SUPPORTED: "green",
    Status.PARTIAL: "yellow",
    Status.UNSUPPORTED: "red",
    Status.UNKNOWN: "dim",
}
STATUS_MARK = {
    Status.SUPPORTED: "✓",
    Status.PARTIAL: "~",
    Status.UNSUPPORTED: "✗",
    Status.UNKNOWN: "?",
}
MAX_ATTENTION_ROWS = 40
MAX_OPTIONAL = 10
VERDICT_STYLE = {
    "ready": "green",
    "needs-work": "yellow",
    "blocked": "red",
    "not-applicable": "dim",
    "nothing-to-score": "dim",
}
SCORE_BAR_WIDTH = 30
ROUTE_BLURB = {
    Target.HIP: "translate to HIP, build with hipcc",
    Target.ZLUDA: "run the CUDA binary unchanged (RDNA)",
    Target.SCALE: "compile the CUDA source for AMD",
}


def _score_style(score: int) -> str:
    return "green" if score >= 90 else "yellow" if score >= 70 else "red"


def render_text(report: Report, color: bool = False, width: int = 120) -> str:
    view = ReportView(for_display(report))  # no file name reaches the terminal raw
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        force_terminal=color,
        color_system="standard" if color else None,
        width=width,
        highlight=False,
        soft_wrap=False,
    )
    report = view.report
    _header(console, view)
    _scores(console, view)
    if report.uses:
        _families(console, report)
        _attention(console, view)
        _unknown(console, view)
    _parse_errors(console, view)
    _findings(console, view)
    _kernels(console, report)
    _effort(console, view)
    _compiled(console, report)
    _python(console, view)
    _skipped(console, report)
    console.print(
        "[dim]Readiness = mean credit over the work items (each distinct CUDA name, each "
        "hazard kind per file): supported 1, partial 0.5, unknown 0.5, unsupported 0; "
        "see docs/scoring.md.[/dim]"
    )
    return buffer.getvalue()


def _header(console: Console, view: ReportView) -> None:
    report, counts = view.report, view.counts
    title = Text(f"portcheck {report.tool_version}", style="bold")
    title.append(f" — {report.root}")  # plain text: a folder named "[red]" is not markup
    console.print(title)
    console.print(
        Text(
            f"{counts.files_scanned} files, {counts.lines:,} lines scanned in "
            f"{report.seconds:.2f} s · {counts.uses:,} CUDA uses of {counts.distinct_names} "
            f"distinct names · {counts.kernels} kernels · {counts.files_skipped} skipped"
        )
    )
    console.print(Text(view.target_sentence))
    console.print(Text(view.amd_path_sentence))


def _scores(console: Console, view: ReportView) -> None:
    console.print(Text("Readiness by route (0–100)", style="bold"))
    if view.nothing_to_score:
        said = f"  {NOTHING_TO_SCORE_SENTENCE} in the scanned files: no route has a score."
        console.print(Text(said, style="bold"))
        console.print()
        return
    for target in view.targets:
        score = view.score(target)
        reason = view.not_applicable(target)
        if reason is not None:
            console.print(Text(f"  {TARGET_TITLE[target]:<6}  n/a  not applicable: {reason}"))
            continue
        if score is None:  # not when nothing at all was scored (above); kept for safety
            console.print(Text(f"  {TARGET_TITLE[target]:<6}   —  {NOTHING_TO_SCORE}"))
            continue
        filled = round(score / 100 * SCORE_BAR_WIDTH)
        route = view.route(target)
        line = Text(f"  {TARGET_TITLE[target]:<6} ")
        line.append(f"{score:>3}  ", style=f"bold {_score_style(score)}")
        line.append("█" * filled, style=_score_style(score))
        line.append("·" * (SCORE_BAR_WIDTH - filled), style="dim")
        line.append(f"  {view.verdict_title(target)}", style=f"bold {VERDICT_STYLE[route.verdict]}")
        if route.verdict == "blocked":
            line.append(f" (coverage {route.coverage})", style="dim")
        line.append(f" · {ROUTE_BLURB[target]}", style="dim")
        console.print(line)
        for item in view.top_items(target):
            verb = "blocked by" if route.blockers else "costliest"
            hours = f", {item.hours:g} h" if item.hours else ""
            console.print(
                Text(f"           {verb}: {item.label} ×{item.count}{hours} ({item.where})")
            )
    console.print()
    _optional(console, view)


def _optional(console: Console, view: ReportView) -> None:
    """Components compiled only behind a build switch: not in the scores above."""
    components = view.optional
    if not components:
        return
    console.print(
        Text(f"Optional components ({len(components)}): not scored; cost if enabled", style="bold")
    )
    for component in components[:MAX_OPTIONAL]:
        names = f", {len(component.names)} names only there" if component.names else ""
        console.print(
            Text(
                f"  {component.guard} ({len(component.paths)} file(s){names}, "
                f"{component.findings} finding(s)): {view.optional_sentence(component)}"
            )
        )
    if len(components) > MAX_OPTIONAL:
        console.print(Text(f"  … and {len(components) - MAX_OPTIONAL} more (see --format json)"))
    console.print()


def _families(console: Console, report: Report) -> None:
    uses_by_family: Counter[str] = Counter(u.family for u in report.uses)
    names_by_family: dict[str, dict[str, Use]] = defaultdict(dict)
    for use in report.uses:
        names_by_family[use.family].setdefault(use.name, use)
    table = Table(title="CUDA uses by family", title_justify="left", show_edge=False)
    table.add_column("family")
    table.add_column("uses", justify="right")
    table.add_column("names", justify="right")
    for target in report.targets:
        table.add_column(f"{TARGET_TITLE[target]} ok/partial/no/?", justify="right")
    for family, count in uses_by_family.most_common():
        names = names_by_family[family].values()
        cells = []
        for target in report.targets:
            tally = Counter(u.status[target] for u in names)
            cells.append(
                f"{tally[Status.SUPPORTED]}/{tally[Status.PARTIAL]}/"
                f"{tally[Status.UNSUPPORTED]}/{tally[Status.UNKNOWN]}"
            )
        table.add_row(family, str(count), str(len(names)), *cells)
    console.print(table)


def _attention(console: Console, view: ReportView) -> None:
    """Known names that are not plainly supported on some chosen target."""
    attention = view.attention
    if not attention:
        return
    targets = view.targets
    table = Table(
        title="Needs attention: partial (~) or unsupported (✗) on a route; ✓ supported, ? unknown",
        title_justify="left",
        show_edge=False,
    )
    table.add_column("CUDA name", no_wrap=True)
    table.add_column("HIP equivalent", no_wrap=True, max_width=28)
    for target in targets:
        table.add_column(TARGET_TITLE[target], justify="center", min_width=5)
    table.add_column("first use", no_wrap=True)
    table.add_column("uses", justify="right", min_width=4)
    for entry in attention[:MAX_ATTENTION_ROWS]:
        use = entry.first
        marks = [
            Text(STATUS_MARK[use.status[t]], style=STATUS_STYLE[use.status[t]]) for t in targets
        ]
        table.add_row(
            Text(entry.name),
            Text(use.hip or "—"),
            *marks,
            Text(view.report.where(use.path, use.span.line)),
            str(entry.uses),
        )
    console.print(table)
    if len(attention) > MAX_ATTENTION_ROWS:
        console.print(f"  … and {len(attention) - MAX_ATTENTION_ROWS} more (see --format json)")
    console.print()


MAX_FINDINGS_PER_HAZARD = 5
SEVERITY_STYLE = {"high": "red", "medium": "yellow", "low": "cyan", "info": "dim"}


def _findings(console: Console, view: ReportView) -> None:
    """Hazards renaming cannot fix, grouped by hazard, most severe first."""
    if not view.hazards:
        return
    console.print(Text(f"Hazards renaming cannot fix ({view.counts.findings})", style="bold"))
    for group in view.hazards:
        severity = group.severity.name.lower()
        verdicts = "  ".join(
            f"{TARGET_TITLE[t]} {STATUS_MARK[group.verdicts[t]]}" for t in view.targets
        )
        header = Text(f"  {group.id} {group.slug} ", style="bold")
        header.append(f"[{severity}] ", style=SEVERITY_STYLE[severity])
        header.append(f"×{group.count}   {verdicts}   help: {group.help}", style="dim")
        console.print(header)
        for finding in group.findings[:MAX_FINDINGS_PER_HAZARD]:
            where = view.report.where(finding.path, finding.span.line)
            reached = f" (kernels: {', '.join(finding.kernels)})" if finding.kernels else ""
            ported = " [has an AMD path: not scored on HIP]" if finding.amd_alternative else ""
            if finding.optional:
                ported += f" [optional: {finding.optional}]"
            console.print(Text(f"    {where}  {finding.message}{reached}{ported}"))
        if group.count > MAX_FINDINGS_PER_HAZARD:
            console.print(Text(f"    … and {group.count - MAX_FINDINGS_PER_HAZARD} more"))
        console.print(Text(f"    fix: {group.fix}", style="dim"))
    console.print()


MAX_PARSE_ERROR_FILES = 20


def _parse_errors(console: Console, view: ReportView) -> None:
    """Files the parser could not fully read: what was found there may be incomplete."""
    broken = view.parse_error_files
    if not broken:
        return
    console.print(
        Text(
            f"Parse errors in {len(broken)} file(s): uses and findings there may be incomplete",
            style="bold yellow",
        )
    )
    for summary in broken[:MAX_PARSE_ERROR_FILES]:
        console.print(Text(f"  {summary.path}: {summary.parse_errors} error(s)"))
    if len(broken) > MAX_PARSE_ERROR_FILES:
        more = len(broken) - MAX_PARSE_ERROR_FILES
        console.print(Text(f"  … and {more} more (see --format json: files[].parse_errors)"))
    console.print()


def _kernels(console: Console, report: Report) -> None:
    needy = [k for k in report.kernels if k.findings]
    if not needy:
        return
    console.print(
        Text("Kernels by what they need (hazards reached through the call graph)", style="bold")
    )
    for kernel in needy[:10]:
        counts = Counter(kernel.findings)
        listed = ", ".join(f"{slug} ×{n}" for slug, n in counts.most_common())
        where = report.where(kernel.path, kernel.span.line)
        console.print(Text(f"  {kernel.name} ({where}): {listed}"))
    console.print()


def _effort(console: Console, view: ReportView) -> None:
    if all(view.effort(target) is None for target in view.targets):
        return  # no CUDA to port, or no route that can serve the GPU
    console.print(Text("Estimated effort (hours; assumptions in docs/scoring.md)", style="bold"))
    for target in view.targets:
        estimate = view.effort(target)
        if estimate is None:
            continue
        parts = ", ".join(
            f"{name} {c.items} items = {c.hours} h"
            for name, c in estimate.categories.items()
            if c.items
        )
        console.print(
            Text(f"  {TARGET_TITLE[target]:<6} {estimate.total_hours:>6} h   {parts or '—'}")
        )
        console.print(Text(f"{'':>17}{view.model(target)}", style="dim"))
    console.print()


def _compiled(console: Console, report: Report) -> None:
    if not report.compile_results:
        return
    from portcheck.report.compile import render_compile

    toolchain = report.toolchain or Toolchain("hipcc", "?", frozenset())
    console.print(Text("Compiled with hipcc", style="bold"))
    compiled = CompileReport(toolchain, list(report.compile_results))
    console.print(Text(render_compile(compiled)))


def _unknown(console: Console, view: ReportView) -> None:
    unknown = view.unknown_names
    if not unknown:
        return
    listed = ", ".join(f"{entry.name} ×{entry.uses}" for entry in unknown[:20])
    more = f", … ({len(unknown) - 20} more)" if len(unknown) > 20 else ""
    console.print(Text(f"Not in the rule set (status unknown): {listed}{more}"))


def _python(console: Console, view: ReportView) -> None:
    python = view.python
    if python is None:
        return
    console.print(Text(python.headline, style="bold"))
    if python.nothing_to_judge:
        console.print(Text(f"  No route has a score: {NOTHING_TO_JUDGE}."))
    else:
        for route in python.routes:
            if route.reason is not None:
                line = Text(f"  {route.route:<9}n/a  not applicable: ", style="bold")
                line.append(route.reason, style="")
                console.print(line)
                continue
            if route.score is None:
                console.print(Text(f"  {route.route:<9}  —  {NOTHING_TO_JUDGE}"))
                continue
            score = route.score
            line = Text(f"  {route.route:<9}{score:>3}  ")
            line.append("█" * (score * 30 // 100), style=_score_style(score))
            line.append("·" * (30 - score * 30 // 100), style="dim")
            line.append(f"  {route.blurb}, ~{route.hours} h")
            console.print(line)
    if python.wheel_sentence:
        console.print(Text(f"  {python.wheel_sentence}"))
    routes = [r.route for r in python.routes]
    for item in python.findings:
        finding = item.finding
        marks = "  ".join(f"{route} {STATUS_MARK[finding.targets[route]]}" for route in routes)
        console.print(Text(f"  {finding.id} {item.where}  {finding.message}  [{marks}]"))
    kernels = python.section.kernels
    if kernels:
        listed = ", ".join(f"{k.name} ({python.where(k.path, k.span.line)})" for k in kernels[:10])
        more = f", … ({len(kernels) - 10} more)" if len(kernels) > 10 else ""
        console.print(Text(f"  Triton kernels: {listed}{more}"))
    if python.unknown_packages:
        console.print(
            Text(
                "  Not in the package list (status unknown, not scored): "
                + ", ".join(python.unknown_packages),
                style="dim",
            )
        )
    console.print()


def _skipped(console: Console, report: Report) -> None:
    if not report.skipped:
        return
    console.print(Text(f"Skipped {len(report.skipped)} file(s):", style="bold"))
    for item in report.skipped[:20]:
        console.print(Text(f"  {item.path}: {item.reason}"))
    if len(report.skipped) > 20:
        console.print(f"  … and {len(report.skipped) - 20} more (see --format json)")
