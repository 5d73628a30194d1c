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

from portcheck.checks import catalogue
from portcheck.model import (
    Diagnostic,
    EffortCategory,
    Excerpt,
    Finding,
    PyUse,
    Report,
    Severity,
    Status,
    Target,
    Use,
)
from portcheck.report import (
    NOTHING_TO_SCORE_SENTENCE,
    amd_path_sentence,
    for_display,
    parse_error_files,
)
from portcheck.report.compile import CLASS_TITLE
from portcheck.report.text import (
    PY_ROUTE_BLURB,
    PY_ROUTE_TITLE,
    ROUTE_BLURB,
    STATUS_MARK,
    TARGET_TITLE,
)
from portcheck.resources import data_dir

# The score module is the single source of the formula; the report shows its arithmetic
# rather than re-deriving it, so the two cannot drift.
from portcheck.score import CREDIT, HOURS, WORST_FIRST, category, work_items

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
MAX_FINDING_CARDS = 400  # past this the page gets heavy; JSON has the rest
MAX_BLOCKERS = 12
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
    return _environment().get_template(TEMPLATE).render(**_context(for_display(report)))


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
    score: int | None  # None: nothing to score
    tone: str
    hours: float
    categories: dict[str, EffortCategory]
    blocked_by: str
    counts: dict[str, int]  # work items by status


@dataclass
class Blocker:
    name: str
    kind: str  # "hazard" or the use kind
    family: str
    severity: str
    statuses: dict[str, str]
    hours: dict[str, float]
    occurrences: int
    where: str
    more_places: int
    anchor: str
    note: str
    full_note: str


@dataclass
class SnippetLine:
    number: int
    text: str
    hit: bool


@dataclass
class FindingCard:
    anchor: str
    finding: Finding
    severity: str
    summary: str
    targets: dict[str, str]
    notes: dict[str, str]
    fix: str
    snippet: list[SnippetLine]
    tokens: dict[str, str] = field(default_factory=dict)


def _context(report: Report) -> dict[str, object]:
    targets = [str(t) for t in report.targets]
    blockers = _blockers(report)
    routes = _routes(report)
    return {
        "report": report,
        "targets": targets,
        "target_title": {str(t): TARGET_TITLE[t] for t in report.targets},
        "status_order": [str(s) for s in STATUS_ORDER],
        "status_mark": {str(s): m for s, m in STATUS_MARK.items()},
        "routes": routes,
        "recommendation": _recommendation(routes),
        "counts": _counts(report),
        "charts": [_family_chart(report, t) for t in report.targets],
        "blockers": blockers[:MAX_BLOCKERS],
        "blockers_total": len(blockers),
        "names": _names(report),
        "families": sorted({u.family for u in report.uses}),
        "files": _files(report),
        "parse_errors": parse_error_files(report),
        "amd_path_sentence": amd_path_sentence(report),
        "languages": sorted({str(f.language) for f in report.files}),
        "kernels": report.kernels,
        "kernel_slugs": sorted({s for k in report.kernels for s in k.findings}),
        "cards": _finding_cards(report),
        "cards_total": len(report.findings),
        "severities": [s.name.lower() for s in sorted(Severity, reverse=True)],
        "slugs": sorted({f.slug for f in report.findings}),
        "compile": _compile(report),
        "python": _python(report),
        "scoring": _scoring(report),
        "credit": {str(s): CREDIT[s] for s in STATUS_ORDER},
        "hours_per_item": HOURS,
    }


def _python(report: Report) -> dict[str, object] | None:
    """The Python section: routes, dependencies, API names, findings, CUDA inside Python."""
    section = report.python
    if section is None:
        return None
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
            "where": f"{use.path}:{use.span.line}",
        }
        for name, use in sorted(first.items(), key=lambda item: (-counts[item[0]], item[0]))
    ]
    routes = [
        {
            "route": route,
            "title": PY_ROUTE_TITLE[route],
            "blurb": PY_ROUTE_BLURB[route],
            "score": score,
            "tone": _tone(score),
            "hours": _hours(section.effort[route].total_hours),
        }
        for route, score in section.scores.items()
    ]
    return {
        "routes": routes,
        "dependencies": [d.to_dict() for d in section.dependencies],
        "apis": apis,
        "findings": [f.to_dict() for f in section.findings],
        "extensions": [e.to_dict() for e in section.extensions],
        "unknown_packages": section.unknown_packages,
        "files": section.files,
    }


def _tone(score: int | None) -> str:
    if score is None:
        return "none"
    return "good" if score >= 90 else "fair" if score >= 70 else "poor"


def _counts(report: Report) -> dict[str, int]:
    return {
        "files": len(report.files),
        "skipped": len(report.skipped),
        "lines": report.lines,
        "uses": len(report.uses),
        "names": report.distinct_names,
        "unknown_names": report.unknown_names,
        "findings": len(report.findings),
        "kernels": len(report.kernels),
    }


def _first_uses(report: Report) -> tuple[dict[str, Use], Counter[str]]:
    first: dict[str, Use] = {}
    occurrences: Counter[str] = Counter()
    for use in report.uses:
        first.setdefault(use.name, use)
        occurrences[use.name] += 1
    return first, occurrences


def _item_hours(status: Status) -> float:
    """Hours a not-plainly-supported work item costs (score.category: review or rewrite)."""
    name = category("hazard", status, Target.HIP)  # hazards never count as rename-only
    return HOURS[name] if name else 0.0


def _worst(statuses: Iterable[Status]) -> Status:
    return min(statuses, key=WORST_FIRST.index, default=Status.SUPPORTED)


def _blockers(report: Report) -> list[Blocker]:
    """Names and hazards not plainly supported on some route, costliest first.

    Names of one family with the same verdicts form one row ("9 cufft names"): a lead
    plans the cuFFT port, not cufftPlan2d on its own. Hazards are one row per slug."""
    targets = report.targets
    blockers: list[Blocker] = []
    first, occurrences = _first_uses(report)
    groups: dict[tuple[str, tuple[Status, ...]], list[Use]] = defaultdict(list)
    for use in first.values():
        statuses = tuple(use.status[t] for t in targets)
        if any(s is not Status.SUPPORTED for s in statuses):
            groups[(use.family, statuses)].append(use)
    for (family, statuses), uses in groups.items():
        lead = uses[0]
        sites = sum(occurrences[u.name] for u in uses)
        if len(uses) == 1:
            name = lead.name
            kind = lead.kind if lead.kind == family.rstrip("s") else f"{family} {lead.kind}"
            note = (lead.rule.notes or "") if lead.rule else "not in the rule set"
        else:
            name, kind = f"{len(uses)} {family} names", family
            note = ", ".join(u.name for u in uses[:4]) + (", …" if len(uses) > 4 else "")
        blockers.append(
            Blocker(
                name=name,
                kind=kind,
                family=family,
                severity="",
                statuses={str(t): str(s) for t, s in zip(targets, statuses, strict=True)},
                hours={
                    str(t): _item_hours(s) * len(uses)
                    for t, s in zip(targets, statuses, strict=True)
                },
                occurrences=sites,
                where=f"{lead.path}:{lead.span.line}",
                more_places=sites - 1,
                anchor="",
                note=_shorten(note),
                full_note=note,
            )
        )
    by_slug: dict[str, list[Finding]] = defaultdict(list)
    for finding in report.findings:
        by_slug[finding.slug].append(finding)
    specs = catalogue()
    for slug, group in by_slug.items():
        files: dict[str, list[Finding]] = defaultdict(list)
        for finding in group:
            files[finding.path].append(finding)
        hours: dict[str, float] = {}
        statuses_by_target: dict[str, str] = {}
        for target in targets:
            # One work item per file, at the worst verdict in that file (docs/scoring.md).
            per_file = [_worst(f.targets[target] for f in fs) for fs in files.values()]
            hours[str(target)] = sum(_item_hours(s) for s in per_file)
            statuses_by_target[str(target)] = str(_worst(per_file))
        spec = specs.get(slug)
        blockers.append(
            Blocker(
                name=slug,
                kind="hazard",
                family=spec.id if spec else group[0].id,
                severity=group[0].severity.name.lower(),
                statuses=statuses_by_target,
                hours=hours,
                occurrences=len(group),
                where=f"{group[0].path}:{group[0].span.line}",
                more_places=len(group) - 1,
                anchor=f"finding-{slug}",
                note=spec.summary if spec else group[0].message,
                full_note=spec.summary if spec else group[0].message,
            )
        )

    def cost(blocker: Blocker) -> tuple[int, float, int, int, str]:
        unsupported = sum(s == Status.UNSUPPORTED for s in blocker.statuses.values())
        return (
            -unsupported,
            -sum(blocker.hours.values()),
            blocker.kind != "hazard",
            -blocker.occurrences,
            blocker.name,
        )

    return sorted(blockers, key=cost)


def _shorten(text: str, limit: int = 90) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


def _blocked_by(report: Report, target: Target) -> str:
    """What keeps one route from 100, in a few words: rewrites first, then reviews."""
    first, _ = _first_uses(report)
    for wanted, verb in ((Status.UNSUPPORTED, "rewrite"), (Status.PARTIAL, "review")):
        names_by_family: dict[str, list[str]] = defaultdict(list)
        for name, use in first.items():
            if use.status[target] is wanted:
                names_by_family[use.family].append(name)
        hazard_files: dict[str, set[str]] = defaultdict(set)
        for finding in report.findings:
            if finding.targets[target] is wanted:
                hazard_files[finding.slug].add(finding.path)
        groups: list[tuple[int, str]] = []
        for family, names in names_by_family.items():
            label = names[0] if len(names) == 1 else f"{len(names)} {family} names"
            groups.append((len(names), label))
        groups.extend((len(files), slug) for slug, files in hazard_files.items())
        if not groups:
            continue
        groups.sort(key=lambda group: (-group[0], group[1]))
        listed = ", ".join(label for _, label in groups[:3])
        more = ", …" if len(groups) > 3 else ""
        return f"to {verb}: {listed}{more}"
    unknown = sum(1 for use in first.values() if use.status[target] is Status.UNKNOWN)
    if unknown:
        return f"to check: {_plural(unknown, 'name')} not in the rule set"
    return "nothing in the way"


def _routes(report: Report) -> list[Route]:
    routes = []
    for target in report.targets:
        key = str(target)
        estimate = report.effort.get(key)
        items = work_items(report.uses, report.findings, target).values()
        counts = Counter(str(status) for _, status in items)
        routes.append(
            Route(
                target=key,
                title=TARGET_TITLE[target],
                blurb=ROUTE_BLURB[target],
                score=report.scores[key],
                tone=_tone(report.scores[key]),
                hours=estimate.total_hours if estimate else 0.0,
                categories=dict(estimate.categories) if estimate else {},
                blocked_by=_blocked_by(report, target),
                counts={str(s): counts[str(s)] for s in STATUS_ORDER},
            )
        )
    return routes


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _items_in(route: Route, category: str) -> int:
    found = route.categories.get(category)
    return found.items if found else 0


def _recommendation(routes: list[Route]) -> str:
    """One sentence that follows from the scores and hours, whatever the project."""
    if not routes:
        return "No route was assessed."
    if all(r.score is None for r in routes):
        return f"{NOTHING_TO_SCORE_SENTENCE} in the scanned files: no route has a score."
    routes = [r for r in routes if r.score is not None]
    if all(r.score == 100 for r in routes) and not any(r.hours for r in routes):
        return "Nothing to port: no CUDA construct that needs work was found."
    best = max(routes, key=lambda r: (r.score or 0, -r.hours))
    rewrites = _items_in(best, "rewrite")
    reviews = _items_in(best, "review")
    needs = []
    if rewrites:
        needs.append(_plural(rewrites, "rewrite"))
    if reviews:
        needs.append(_plural(reviews, "item") + " to review")
    work = " and ".join(needs) if needs else "only mechanical renames"
    tied = [r.title for r in routes if r is not best and r.score == best.score]
    tie = f" (tied with {' and '.join(tied)}, which needs more work)" if tied else ""
    lead = (
        f"{best.title} is the most direct route: readiness {best.score}/100{tie}, "
        f"about {_hours(best.hours)} h of work ({work})."
    )
    if len(routes) == 1:
        return lead
    others = []
    for route in sorted((r for r in routes if r is not best), key=lambda r: -(r.score or 0)):
        others.append(
            f"{route.title} scores {route.score} (~{_hours(route.hours)} h; {route.blocked_by})"
        )
    return lead + " " + "; ".join(others) + "."


@dataclass
class ChartRow:
    family: str
    total: int
    y: float
    segments: list[dict[str, object]]


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
        segments: list[dict[str, object]] = []
        for status in STATUS_ORDER:
            count = tallies[family][str(status)]
            if not count:
                continue
            width = bar_space * count / largest
            segments.append(
                {"status": str(status), "count": count, "x": round(x, 2), "width": round(width, 2)}
            )
            x += width
        rows.append(ChartRow(family, sum(tallies[family].values()), y, segments))
    end = {row.family: row.segments[-1] for row in rows if row.segments}
    return {
        "target": str(target),
        "title": TARGET_TITLE[target],
        "rows": rows,
        "ends": {
            family: float(seg["x"]) + float(seg["width"])  # type: ignore[arg-type]
            for family, seg in end.items()
        },
        "width": CHART_WIDTH,
        "height": CHART_TOP * 2 + max(len(rows), 1) * CHART_ROW_HEIGHT,
        "label_width": CHART_LABEL_WIDTH,
        "row_height": CHART_ROW_HEIGHT,
        "bar_height": CHART_BAR_HEIGHT,
        "totals": {str(s): sum(t[str(s)] for t in tallies.values()) for s in STATUS_ORDER},
    }


def _names(report: Report) -> list[dict[str, object]]:
    first, occurrences = _first_uses(report)
    rows = []
    for name, use in sorted(first.items(), key=lambda kv: (kv[1].family, kv[0])):
        rows.append(
            {
                "name": name,
                "family": use.family,
                "kind": use.kind,
                "hip": use.hip or "",
                "statuses": {str(t): str(use.status[t]) for t in report.targets},
                "uses": occurrences[name],
                "where": f"{use.path}:{use.span.line}",
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
            "scores": {str(t): f.scores.get(str(t), 100) for t in report.targets},
            "tones": {str(t): _tone(f.scores.get(str(t), 100)) for t in report.targets},
        }
        for f in sorted(report.files, key=lambda f: f.path)
    ]


class _Snippets:
    """The source around each finding, from the excerpts the scan kept in the Report."""

    def __init__(self, excerpts: Iterable[Excerpt]) -> None:
        self.by_path: dict[str, list[Excerpt]] = defaultdict(list)
        for excerpt in excerpts:
            self.by_path[excerpt.path].append(excerpt)

    def snippet(self, path: str, line: int) -> list[SnippetLine]:
        for excerpt in self.by_path.get(path, ()):
            if excerpt.start_line <= line < excerpt.start_line + len(excerpt.lines):
                return [
                    SnippetLine(number, _clean(text), number == line)
                    for number, text in excerpt.around(line, SNIPPET_CONTEXT)
                ]
        return []


def _clean(text: str) -> str:
    text = CONTROL_CHARACTERS.sub("\ufffd", text.rstrip("\r\n"))
    if len(text) > SNIPPET_MAX_COLUMNS:
        return text[:SNIPPET_MAX_COLUMNS] + " …"
    return text


def _finding_cards(report: Report) -> list[FindingCard]:
    reader = _Snippets(report.excerpts)
    specs = catalogue()
    ordered = sorted(
        report.findings, key=lambda f: (-f.severity, f.id, f.path, f.span.line, f.span.column)
    )
    cards = []
    seen_slugs: set[str] = set()
    for index, finding in enumerate(ordered[:MAX_FINDING_CARDS]):
        spec = specs.get(finding.slug)
        # The first card of each hazard carries the anchor the blockers table links to.
        anchor = f"finding-{finding.slug}" if finding.slug not in seen_slugs else f"f{index}"
        seen_slugs.add(finding.slug)
        targets = {str(t): str(finding.targets[t]) for t in report.targets}
        cards.append(
            FindingCard(
                anchor=anchor,
                finding=finding,
                severity=finding.severity.name.lower(),
                summary=spec.summary if spec else "",
                targets=targets,
                notes={t: spec.target_notes.get(t, "") if spec else "" for t in targets},
                fix=finding.fix or (spec.fix if spec else ""),
                snippet=reader.snippet(finding.path, finding.span.line),
                tokens={f"status-{t}": s for t, s in targets.items()},
            )
        )
    return cards


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


def _effort_terms(report: Report, target: str) -> dict[str, object]:
    estimate = report.effort.get(target)
    if estimate is None:
        return {"terms": "0", "total": 0.0}
    terms = [
        f"{c.items} × {HOURS[name]:g}"
        for name, c in estimate.categories.items()
        if c.items and name in HOURS
    ]
    return {"terms": " + ".join(terms) or "0", "total": estimate.total_hours}


def _scoring(report: Report) -> list[dict[str, object]]:
    """Per target: how many work items of each kind and status, and the arithmetic."""
    rows = []
    for target in report.targets:
        items = list(work_items(report.uses, report.findings, target).values())
        by_kind = {
            kind: Counter(str(status) for k, status in items if k == kind)
            for kind in ("name", "hazard")
        }
        credit = sum(CREDIT[status] for _, status in items)
        rows.append(
            {
                "target": str(target),
                "title": TARGET_TITLE[target],
                "names": {str(s): by_kind["name"][str(s)] for s in STATUS_ORDER},
                "hazards": {str(s): by_kind["hazard"][str(s)] for s in STATUS_ORDER},
                "items": len(items),
                "credit": round(credit, 1),
                "score": report.scores[str(target)],
                "effort": _effort_terms(report, str(target)),
            }
        )
    return rows
