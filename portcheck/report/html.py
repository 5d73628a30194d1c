"""The HTML migration report: one self-contained page a lead can open offline.

Owns turning a Report into a view model of plain values (scores, recommendation,
chart geometry, blockers, tables, findings with source snippets, compile results,
the score arithmetic) and rendering it through the Jinja2 templates in templates/.
CSS, JS and SVG are inlined with `{% include %}`; nothing is fetched from the network.

Escaping: the environment autoescapes every `{{ }}` and no template marks source
text or paths safe. The only Markup built here comes from `_inline_code`, which
escapes each piece itself before wrapping backtick spans in <code>.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from jinja2 import BaseLoader, Environment, StrictUndefined, TemplateNotFound
from markupsafe import Markup, escape

from portcheck.model import (
    Diagnostic,
    Effort,
    EffortCategory,
    Excerpt,
    Finding,
    PyUse,
    Report,
    Severity,
    Status,
    Target,
)
from portcheck.report import for_display
from portcheck.report.compile import CLASS_TITLE
from portcheck.report.text import ROUTE_BLURB, STATUS_MARK
from portcheck.report.view import (
    NOTHING_TO_SCORE_SENTENCE,
    TARGET_TITLE,
    VERDICT_TITLE,
    HazardGroup,
    ReportView,
    TopItem,
)
from portcheck.resources import data_dir

# The score module is the single source of the formula; the report shows its arithmetic
# (from the work items the scan scored, in the Report) rather than re-deriving it.
from portcheck.score import CREDIT, HOURS

TEMPLATE = "report.html.j2"
STATUS_ORDER = (Status.SUPPORTED, Status.PARTIAL, Status.UNSUPPORTED, Status.UNKNOWN)
STATUS_LABEL = {
    Status.SUPPORTED: "supported",
    Status.PARTIAL: "partial",
    Status.UNSUPPORTED: "unsupported",
    Status.UNKNOWN: "unknown",
}
SNIPPET_CONTEXT = 3  # lines shown either side of a finding (the scan keeps EXCERPT_CONTEXT)
SNIPPET_MAX_COLUMNS = 240  # minified or generated lines are cut, not wrapped forever
MAX_BLOCKERS = 12
MAX_DIRECTORIES = 12  # rows of the effort-by-folder chart; the rest is one "other" row
MAX_DIAGNOSTICS = 3
CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")

# Chart geometry (SVG user units; the SVG scales to its box).
CHART_WIDTH = 380
CHART_LABEL_WIDTH = 124
CHART_COUNT_WIDTH = 36
CHART_ROW_HEIGHT = 22
CHART_BAR_HEIGHT = 14
CHART_TOP = 6


def render_html(report: Report) -> str:
    """The report as one self-contained HTML document."""
    view = ReportView(for_display(report))
    return _environment().get_template(TEMPLATE).render(**_context(view))


class _DataDirLoader(BaseLoader):
    """Templates from the shipped templates/ folder, read through importlib.resources so a
    wheel (even a zipped one) behaves like the checkout."""

    def get_source(self, environment: Environment, template: str) -> tuple[str, None, None]:
        if "/" in template or "\\" in template or template.startswith("."):
            raise TemplateNotFound(template)
        entry = data_dir("templates").joinpath(template)
        if not entry.is_file():
            raise TemplateNotFound(template)
        return entry.read_text("utf-8"), None, None


@lru_cache(maxsize=1)
def _environment() -> Environment:
    # autoescape=True, not select_autoescape: the latter keys on the file extension and
    # would leave `report.html.j2` unescaped.
    env = Environment(
        loader=_DataDirLoader(),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["code"] = _inline_code
    env.filters["hours"] = _hours
    return env


def _inline_code(text: str) -> Markup:
    """`like this` -> <code>like this</code>, every piece escaped first."""
    pieces = str(text).split("`")
    if len(pieces) % 2 == 0:  # an unpaired backtick: show the text as it is
        return escape(text)
    out = []
    for index, piece in enumerate(pieces):
        out.append(Markup("<code>%s</code>") % piece if index % 2 else escape(piece))
    return Markup("").join(out)


def _hours(value: float) -> str:
    """15.5 -> "15.5", 85.0 -> "85", 1234.0 -> "1,234"."""
    number = round(float(value), 1)
    return f"{number:,.1f}".removesuffix(".0")


# --------------------------------------------------------------------------- view model


@dataclass
class Route:
    target: str
    title: str
    blurb: str
    score: int | None  # None: nothing to score, or not applicable
    tone: str
    hours: float
    categories: dict[str, EffortCategory]
    blocked_by: str
    not_applicable: str = ""  # why the route cannot serve the chosen GPU
    verdict: str = ""
    verdict_title: str = ""
    coverage: int | None = None
    model: str = ""
    top: list[TopItem] = field(default_factory=list)
    blockers: int = 0


@dataclass
class FindingRow:
    """One finding as the page lists it: what it says, where, the verdict marks, and the
    line it points at (the lines around come from the page's excerpt store on demand)."""

    index: int
    finding: Finding
    severity: str
    targets: dict[str, str]
    line_text: str
    flags: str  # "amd-alt", "optional", "new": what the filters can hide or pick


@dataclass
class Group:
    """One hazard's findings, with what the page says about the hazard once."""

    hazard: HazardGroup
    severity: str
    verdicts: dict[str, str]
    hours: dict[str, float]
    rows: list[FindingRow]


def _context(view: ReportView) -> dict[str, object]:
    report = view.report
    targets = [str(t) for t in report.targets]
    blockers = view.blockers
    routes = _routes(view)
    return {
        "report": report,
        "where": report.where,  # `path:line`, or `nb.ipynb:cell 3:2` in a notebook
        "targets": targets,
        "target_title": {str(t): TARGET_TITLE[t] for t in report.targets},
        "status_order": [str(s) for s in STATUS_ORDER],
        "status_mark": {str(s): m for s, m in STATUS_MARK.items()},
        "routes": routes,
        "recommendation": _recommendation(routes),
        "counts": view.counts,
        "charts": [_family_chart(report, t) for t in report.targets],
        "blockers": blockers[:MAX_BLOCKERS],
        "blockers_total": len(blockers),
        "hazards": view.hazards,
        "names": _names(view),
        "families": sorted({u.family for u in report.uses}),
        "files": _files(report),
        "parse_errors": view.parse_error_files,
        "amd_path_sentence": view.amd_path_sentence,
        "target_sentence": view.target_sentence,
        "languages": sorted({str(f.language) for f in report.files}),
        "kernels": report.kernels,
        "kernel_slugs": sorted({s for k in report.kernels for s in k.findings}),
        "groups": _groups(view),
        "findings_total": len(report.findings),
        "excerpts": _excerpt_store(report.excerpts),
        "optional": [
            {"component": c, "sentence": view.optional_sentence(c)} for c in view.optional
        ],
        "effort_chart": _effort_chart(view),
        "directory_chart": _directory_chart(view),
        "verdict_title": VERDICT_TITLE,
        "severities": [s.name.lower() for s in sorted(Severity, reverse=True)],
        "slugs": sorted({f.slug for f in report.findings}),
        "compile": _compile(report),
        "python": _python(view),
        "scoring": _scoring(view),
        "credit": {str(s): CREDIT[s] for s in STATUS_ORDER},
        "hours_per_item": HOURS,
    }


def _python(view: ReportView) -> dict[str, object] | None:
    """The Python section: routes, dependencies, API names, findings, CUDA inside Python."""
    python = view.python
    if python is None:
        return None
    section = python.section
    first: dict[str, PyUse] = {}
    counts: Counter[str] = Counter()
    for use in section.uses:
        first.setdefault(use.rule.name, use)
        counts[use.rule.name] += 1
    apis = [
        {
            "name": name,
            "statuses": use.status.to_dict(),
            "note": use.rule.note,
            "uses": counts[name],
            "where": python.where(use.path, use.span.line),
        }
        for name, use in sorted(first.items(), key=lambda item: (-counts[item[0]], item[0]))
    ]
    routes = [
        {
            "route": route.route,
            "title": route.title,
            "blurb": route.blurb,
            "score": route.score,
            "reason": route.reason,
            "tone": _tone(route.score),
            "hours": None if route.hours is None else _hours(route.hours),
        }
        for route in python.routes
    ]
    findings = [{**item.finding.to_dict(), "where": item.where} for item in python.findings]
    dependencies = [
        {**d.to_dict(), "where": python.where(d.path, d.line)} for d in section.dependencies
    ]
    extensions = [
        {**e.to_dict(), "where": python.where(e.path, e.line)} for e in section.extensions
    ]
    kernels = [
        {
            "name": k.name,
            "where": python.where(k.path, k.span.line),
            "slugs": sorted(set(k.findings)),
        }
        for k in section.kernels
    ]
    return {
        "routes": routes,
        "nothing_to_judge": python.nothing_to_judge,
        "wheel_sentence": python.wheel_sentence,
        "dependencies": dependencies,
        "apis": apis,
        "findings": findings,
        "extensions": extensions,
        "kernels": kernels,
        "unknown_packages": section.unknown_packages,
        "files": section.files,
    }


def _tone(score: int | None) -> str:
    if score is None:
        return "none"
    return "good" if score >= 90 else "fair" if score >= 70 else "poor"


def _blocked_by(view: ReportView, target: Target) -> str:
    """What keeps one route from 100, in a few words (the view's top items)."""
    top = view.top_items(target)
    if top:
        verb = "blocked by" if view.route(target).blockers else "costliest"
        return f"{verb}: " + ", ".join(f"{item.label} ×{item.count}" for item in top)
    unknown = sum(
        1 for entry in view.names.values() if entry.first.status[target] is Status.UNKNOWN
    )
    if unknown:
        return f"to check: {_plural(unknown, 'name')} not in the rule set"
    return "nothing in the way"


def _routes(view: ReportView) -> list[Route]:
    routes = []
    for target in view.targets:
        score = view.score(target)
        estimate = view.effort(target)
        routes.append(
            Route(
                target=str(target),
                title=TARGET_TITLE[target],
                blurb=ROUTE_BLURB[target],
                score=score,
                tone="poor" if view.verdict(target) == "blocked" else _tone(score),
                hours=estimate.total_hours if estimate else 0.0,
                categories=dict(estimate.categories) if estimate else {},
                blocked_by=_blocked_by(view, target),
                not_applicable=view.not_applicable(target) or "",
                verdict=view.verdict(target),
                verdict_title=view.verdict_title(target),
                coverage=view.route(target).coverage,
                model=view.model(target),
                top=view.top_items(target),
                blockers=len(view.route(target).blockers),
            )
        )
    return routes


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _items_in(route: Route, category: str) -> int:
    found = route.categories.get(category)
    return found.items if found else 0


def _recommendation(routes: list[Route]) -> str:
    """One sentence that follows from the verdicts, scores and hours, whatever the project:
    the best route that is not blocked, then what the others need or what blocks them."""
    if not routes:
        return "No route was assessed."
    if all(r.score is None for r in routes):
        return f"{NOTHING_TO_SCORE_SENTENCE} in the scanned files: no route has a score."
    scored = [r for r in routes if r.score is not None]
    open_routes = [r for r in scored if r.verdict != "blocked"]
    if all(r.score == 100 for r in scored) and not any(r.hours for r in scored):
        return "Nothing to port: no CUDA construct that needs work was found."
    notes = []
    for route in routes:
        if route.verdict == "blocked":
            first = route.top[0].label if route.top else "an unsupported API"
            notes.append(
                f"{route.title} is blocked ({_plural(route.blockers, 'blocker')}, first: "
                f"{first}; {route.coverage}% of its work items would run)"
            )
    if not open_routes:
        return "Every route is blocked: " + "; ".join(notes) + "."
    best = max(open_routes, key=lambda r: (r.score or 0, -r.hours))
    rewrites = _items_in(best, "rewrite")
    reviews = _items_in(best, "review") + _items_in(best, "test")
    needs = []
    if rewrites:
        needs.append(_plural(rewrites, "rewrite"))
    if reviews:
        needs.append(_plural(reviews, "item") + " to review or test")
    work = " and ".join(needs) if needs else "only mechanical renames"
    tied = [r.title for r in open_routes if r is not best and r.score == best.score]
    tie = f" (tied with {' and '.join(tied)}, which needs more work)" if tied else ""
    lead = (
        f"{best.title} is the most direct route: readiness {best.score}/100{tie}, "
        f"about {_hours(best.hours)} h of work ({work})."
    )
    for route in sorted((r for r in open_routes if r is not best), key=lambda r: -(r.score or 0)):
        notes.append(
            f"{route.title} scores {route.score} (~{_hours(route.hours)} h; {route.blocked_by})"
        )
    return lead + (" " + "; ".join(notes) + "." if notes else "")


@dataclass
class ChartSegment:
    status: str
    count: int
    x: float
    width: float


@dataclass
class ChartRow:
    family: str
    total: int
    y: float
    segments: list[ChartSegment]


def _family_chart(report: Report, target: Target) -> dict[str, object]:
    """Stacked bars of uses per family by status on one target, geometry precomputed."""
    tallies: dict[str, Counter[str]] = defaultdict(Counter)
    for use in report.uses:
        tallies[use.family][str(use.status[target])] += 1
    order = sorted(tallies, key=lambda fam: (-sum(tallies[fam].values()), fam))
    largest = max((sum(t.values()) for t in tallies.values()), default=1)
    bar_space = CHART_WIDTH - CHART_LABEL_WIDTH - CHART_COUNT_WIDTH
    rows = []
    for index, family in enumerate(order):
        y = CHART_TOP + index * CHART_ROW_HEIGHT
        x = float(CHART_LABEL_WIDTH)
        segments: list[ChartSegment] = []
        for status in STATUS_ORDER:
            count = tallies[family][str(status)]
            if not count:
                continue
            width = bar_space * count / largest
            segments.append(ChartSegment(str(status), count, round(x, 2), round(width, 2)))
            x += width
        rows.append(ChartRow(family, sum(tallies[family].values()), y, segments))
    end = {row.family: row.segments[-1] for row in rows if row.segments}
    return {
        "target": str(target),
        "title": TARGET_TITLE[target],
        "rows": rows,
        "ends": {family: seg.x + seg.width for family, seg in end.items()},
        "width": CHART_WIDTH,
        "height": CHART_TOP * 2 + max(len(rows), 1) * CHART_ROW_HEIGHT,
        "label_width": CHART_LABEL_WIDTH,
        "row_height": CHART_ROW_HEIGHT,
        "bar_height": CHART_BAR_HEIGHT,
        "totals": {str(s): sum(t[str(s)] for t in tallies.values()) for s in STATUS_ORDER},
    }


def _names(view: ReportView) -> list[dict[str, object]]:
    rows = []
    for name, entry in sorted(view.names.items(), key=lambda kv: (kv[1].first.family, kv[0])):
        use = entry.first
        rows.append(
            {
                "name": name,
                "family": use.family,
                "kind": use.kind,
                "hip": use.hip or "",
                "statuses": {str(t): str(use.status[t]) for t in view.targets},
                "uses": entry.uses,
                "where": view.report.where(use.path, use.span.line),
                "note": (use.rule.notes or "") if use.rule else "not in the rule set",
            }
        )
    return rows


def _files(report: Report) -> list[dict[str, object]]:
    return [
        {
            "path": f.path,
            "language": str(f.language),
            "lines": f.lines,
            "uses": f.uses,
            "findings": f.findings,
            "scores": {str(t): f.scores.get(str(t)) for t in report.targets},
            "tones": {str(t): _tone(f.scores.get(str(t))) for t in report.targets},
        }
        for f in sorted(report.files, key=lambda f: f.path)
    ]


def _clean(text: str) -> str:
    text = CONTROL_CHARACTERS.sub("\ufffd", text.rstrip("\r\n"))
    if len(text) > SNIPPET_MAX_COLUMNS:
        return text[:SNIPPET_MAX_COLUMNS] + " …"
    return text


def _excerpt_store(excerpts: Iterable[Excerpt]) -> dict[str, list[list[object]]]:
    """The source kept around the findings, once per region of a file: path -> [[first
    line, [lines…]], …]. The page shows a finding's surrounding lines from here when a
    reader opens them (as text), so 5,000 findings do not carry 35,000 lines of markup."""
    store: dict[str, list[list[object]]] = defaultdict(list)
    for excerpt in excerpts:
        store[excerpt.path].append([excerpt.start_line, [_clean(t) for t in excerpt.lines]])
    return dict(store)


def _line_of(report: Report) -> dict[tuple[str, int], str]:
    lines: dict[tuple[str, int], str] = {}
    for excerpt in report.excerpts:
        for offset, text in enumerate(excerpt.lines):
            lines[(excerpt.path, excerpt.start_line + offset)] = text
    return lines


def _groups(view: ReportView) -> list[Group]:
    """Every finding, grouped by hazard (most severe first), each group in file order."""
    report = view.report
    source = _line_of(report)
    new = set(report.new_finding_indices or ())
    index_of = {id(f): i for i, f in enumerate(report.findings)}
    groups = []
    for hazard in view.hazards:
        rows = []
        for finding in sorted(hazard.findings, key=lambda f: (f.path, f.span.line, f.span.column)):
            index = index_of[id(finding)]
            flags = []
            if finding.amd_alternative:
                flags.append("amd-alt")
            if finding.optional:
                flags.append("optional")
            if index in new:
                flags.append("new")
            rows.append(
                FindingRow(
                    index=index,
                    finding=finding,
                    severity=finding.severity.name.lower(),
                    targets={str(t): str(finding.targets[t]) for t in report.targets},
                    line_text=_clean(source.get((finding.path, finding.span.line), "")).strip(),
                    flags=" ".join(flags),
                )
            )
        groups.append(
            Group(
                hazard=hazard,
                severity=hazard.severity.name.lower(),
                verdicts={t: str(s) for t, s in hazard.verdicts.items()},
                hours=dict(hazard.hours),
                rows=rows,
            )
        )
    return groups


# Effort charts (SVG user units; the SVG scales to its box).
EFFORT_WIDTH = 760
EFFORT_LABEL = 170
EFFORT_ROW = 26
EFFORT_BAR = 16
CATEGORY_ORDER = ("rename-only", "review", "rewrite", "test")
_NO_EFFORT = Effort(categories={}, total_hours=0.0)


def _effort_chart(view: ReportView) -> dict[str, object]:
    """One stacked bar per route: its hours by category (docs/scoring.md)."""
    rows = []
    largest = max(
        (view.effort_hours(t) or 0.0 for t in view.targets),
        default=0.0,
    )
    space = EFFORT_WIDTH - EFFORT_LABEL - 90
    for index, target in enumerate(view.targets):
        estimate = view.effort(target)
        x = float(EFFORT_LABEL)
        segments = []
        for name in CATEGORY_ORDER:
            found = estimate.categories.get(name) if estimate else None
            if not found or not found.hours:
                continue
            width = space * found.hours / largest if largest else 0.0
            segments.append(
                {
                    "category": name,
                    "items": found.items,
                    "hours": found.hours,
                    "x": round(x, 2),
                    "width": round(max(width, 1.0), 2),
                }
            )
            x += max(width, 1.0)
        route = view.route(target)
        note = ""
        if route.verdict == "blocked":
            note = f"blocked by {_plural(len(route.blockers), 'item')}"
        elif route.verdict == "not-applicable":
            note = "not applicable"
        rows.append(
            {
                "title": TARGET_TITLE[target],
                "y": 6 + index * EFFORT_ROW,
                "segments": segments,
                "end": x,
                "hours": view.effort_hours(target) or 0.0,
                "note": note,
            }
        )
    used = [
        name
        for name in CATEGORY_ORDER
        if any(
            found.hours
            for t in view.targets
            if (found := (view.effort(t) or _NO_EFFORT).categories.get(name)) is not None
        )
    ]
    return {
        "rows": rows,
        "width": EFFORT_WIDTH,
        "height": 12 + max(len(rows), 1) * EFFORT_ROW,
        "label_width": EFFORT_LABEL,
        "row_height": EFFORT_ROW,
        "bar_height": EFFORT_BAR,
        "categories": used,
    }


CHART_LABEL_CHARACTERS = 26  # what fits left of the bars; the full name is in the tooltip


def _chart_label(folder: str) -> str:
    """A folder as the chart names it: its end when it is long (`…/2_Concepts_and_Techniques`)."""
    if folder == ".":
        return "(top folder)"
    if len(folder) <= CHART_LABEL_CHARACTERS:
        return folder
    return "…" + folder[-(CHART_LABEL_CHARACTERS - 1) :]


def _directory_chart(view: ReportView) -> dict[str, object]:
    """Hours by folder, a bar per route: where the work is."""
    report = view.report
    by_route = {str(t): report.effort_by_directory.get(str(t), {}) for t in view.targets}
    totals: dict[str, float] = defaultdict(float)
    for folders_hours in by_route.values():
        for folder, spent in folders_hours.items():
            totals[folder] += spent
    folders = [f for f, spent in sorted(totals.items(), key=lambda kv: -kv[1]) if spent > 0]
    shown, rest = folders[:MAX_DIRECTORIES], folders[MAX_DIRECTORIES:]
    labels = shown + ([f"{len(rest)} other folders"] if rest else [])
    names = {folder: _chart_label(folder) for folder in labels}

    def hours_of(route: str, label: str) -> float:
        if label in by_route[route]:
            return by_route[route][label]
        if rest and label == labels[-1]:
            return sum(by_route[route].get(f, 0.0) for f in rest)
        return 0.0

    largest = max((hours_of(r, label) for r in by_route for label in labels), default=0.0)
    space = EFFORT_WIDTH - EFFORT_LABEL - 70
    bar = 8
    row_height = bar * len(by_route) + 8
    rows = []
    for index, label in enumerate(labels):
        y = 6 + index * row_height
        bars = []
        for position, route in enumerate(by_route):
            hours = round(hours_of(route, label), 1)
            width = space * hours / largest if largest else 0.0
            bars.append(
                {
                    "route": route,
                    "title": TARGET_TITLE[Target(route)],
                    "hours": hours,
                    "y": y + position * bar,
                    "width": round(width, 2),
                }
            )
        rows.append({"label": names[label], "full": label, "y": y, "bars": bars})
    return {
        "rows": rows,
        "width": EFFORT_WIDTH,
        "height": 12 + max(len(rows), 1) * row_height,
        "label_width": EFFORT_LABEL,
        "row_height": row_height,
        "bar": bar,
        "routes": [(r, TARGET_TITLE[Target(r)]) for r in by_route],
    }


def _distinct_diagnostics(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """A header included twice reports the same line twice; show it once."""
    seen: set[tuple[object, ...]] = set()
    distinct = []
    for diagnostic in diagnostics:
        key = (diagnostic.path, diagnostic.line, diagnostic.column, diagnostic.message)
        if key not in seen:
            seen.add(key)
            distinct.append(diagnostic)
    return distinct


def _compile(report: Report) -> dict[str, object] | None:
    if not report.compile_results:
        return None
    results = []
    by_arch: dict[str, list[bool]] = defaultdict(list)
    for result in report.compile_results:
        diagnostics = result.diagnostics
        errors = [d for d in diagnostics if d.severity.endswith("error")]
        shown = _distinct_diagnostics(errors or diagnostics)[:MAX_DIAGNOSTICS]
        by_arch[result.arch].append(result.ok)
        results.append(
            {
                "path": result.path,
                "arch": result.arch,
                "ok": result.ok,
                "class": result.failure_class,
                "class_title": CLASS_TITLE.get(result.failure_class, result.failure_class),
                "explanation": result.explanation,
                "seconds": round(result.seconds, 3),
                "diagnostics": shown,
                "more": len(_distinct_diagnostics(diagnostics)) - len(shown),
            }
        )
    toolchain = report.toolchain
    return {
        "hipcc": {
            "path": toolchain.hipcc if toolchain else "hipcc",
            "version": toolchain.version if toolchain else "?",
        },
        "archs": [
            {"arch": arch, "ok": sum(oks), "total": len(oks)}
            for arch, oks in sorted(by_arch.items())
        ],
        "results": results,
    }


def _effort_terms(view: ReportView, target: Target) -> dict[str, object]:
    estimate = view.effort(target)
    if estimate is None:
        return {"terms": "0", "total": 0.0}
    terms = [
        f"{c.items} × {HOURS[name]:g}"
        for name, c in estimate.categories.items()
        if c.items and name in HOURS
    ]
    return {"terms": " + ".join(terms) or "0", "total": estimate.total_hours}


def _scoring(view: ReportView) -> list[dict[str, object]]:
    """Per target: how many work items of each kind and status were scored, and the
    arithmetic that gives the score."""
    rows = []
    for target in view.targets:
        items = view.work_items(target)
        names = items.names if items else {}
        hazards = items.hazards if items else {}
        rows.append(
            {
                "target": str(target),
                "title": TARGET_TITLE[target],
                "names": {str(s): names.get(s, 0) for s in STATUS_ORDER},
                "hazards": {str(s): hazards.get(s, 0) for s in STATUS_ORDER},
                "items": items.total if items else 0,
                "credit": round(view.credit(target), 1),
                "score": view.score(target),
                "coverage": view.route(target).coverage,
                "verdict": view.verdict(target),
                "model": view.model(target),
                "effort": _effort_terms(view, target),
            }
        )
    return rows
