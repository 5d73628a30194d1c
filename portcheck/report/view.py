"""The figures and marks every report format states, computed once from a Report.

Text, Markdown, HTML and SARIF render a `ReportView` of the report; each draws its scores,
effort, counts, verdict marks, blockers, parse-error files and sentences from here and
only chooses how to show them (✓ or ✅, a table or a line), so no two formats can
disagree. The JSON document states the same counts: both take them from
`Report.counts()`.

Aggregates follow the scoring rules (docs/scoring.md) where they mean the same thing:
a hazard's verdict on a route is the worst verdict among its findings (a hazard kind in
a file is one work item, judged by its worst finding), and its severity the highest.
Everything is computed on first use, so a formatter pays only for what it shows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property

from portcheck.checks import catalogue
from portcheck.checks.docs import render_hazard_doc
from portcheck.model import (
    ROUTES,
    Counts,
    Effort,
    EffortCategory,
    FileSummary,
    Finding,
    OptionalComponent,
    PyFinding,
    PythonSection,
    Report,
    RouteAssessment,
    RouteBlocker,
    Severity,
    Status,
    Target,
    Use,
    WorkItems,
)
from portcheck.report import NOTHING_TO_SCORE, NOTHING_TO_SCORE_SENTENCE, nothing_to_score
from portcheck.score import CREDIT, NAME_HAZARDS, ROUTE_MODEL, WORST_FIRST
from portcheck.score import item_hours as route_item_hours

TARGET_TITLE = {Target.HIP: "HIP", Target.ZLUDA: "ZLUDA", Target.SCALE: "SCALE"}
# A route's verdict as every format words it (RouteAssessment.verdict -> words).
VERDICT_TITLE = {
    "ready": "ready",
    "needs-work": "needs work",
    "blocked": "blocked",
    "not-applicable": "not applicable",
    "nothing-to-score": "nothing to score",
}
TOP_BLOCKERS = 3  # per route, in the summaries


def worst(statuses: Iterable[Status]) -> Status:
    """The worst of some verdicts (supported when there are none)."""
    return min(statuses, key=WORST_FIRST.index, default=Status.SUPPORTED)


def item_hours(status: Status, target: str = Target.HIP) -> float:
    """Hours one work item that is not a plain rename costs at this status on `target`
    (review, rewrite or test); hazards are never rename-only, on any route."""
    return route_item_hours("hazard", status, target)


@dataclass(frozen=True)
class TopItem:
    """One line of a route's "what is in the way" in the summaries: a group of blockers or
    of costly work items (a family's names, or a hazard), with how many and where first."""

    label: str
    count: int
    hours: float
    where: str


@dataclass(frozen=True)
class HazardGroup:
    """The findings of one hazard, and what every format says about them together."""

    id: str
    slug: str
    severity: Severity  # the highest among its findings
    verdicts: Mapping[str, Status]  # per chosen target: the worst among its findings
    hours: Mapping[str, float]  # per chosen target: its scored work items' hours
    findings: tuple[Finding, ...]  # in report order
    summary: str
    fix: str
    help_url: str  # the published page's absolute address, or ""
    help: str  # that address, or the command that prints the page
    help_text: str  # the page itself (Markdown), for the formats that carry it
    target_notes: Mapping[str, str]  # what the catalogue says about each route

    @property
    def count(self) -> int:
        return len(self.findings)

    @property
    def first(self) -> Finding:
        return self.findings[0]


@dataclass(frozen=True)
class NameUses:
    """One distinct CUDA name: its first use (where the reports point) and how often."""

    name: str
    first: Use
    uses: int


@dataclass(frozen=True)
class Blocker:
    """A row of "what is in the way": a name, names of one family with the same verdicts,
    or a hazard; costliest first (`ReportView.blockers`)."""

    name: str
    kind: str  # "hazard" or the use kind
    family: str  # for a hazard: its id
    severity: str  # for a hazard: its severity's name; "" for names
    statuses: Mapping[str, str]
    hours: Mapping[str, float]
    occurrences: int
    where: str
    more_places: int
    anchor: str  # for a hazard: the finding the reports link to
    note: str
    full_note: str
    members: tuple[str, ...] = ()  # the names of a row of several names


def _label(family: str, members: list[str]) -> str:
    """`device: __vsubss4, __vcmpne4 and 3 more`: a family's names, the first two named."""
    more = f" and {len(members) - 2} more" if len(members) > 2 else ""
    return f"{family}: {', '.join(members[:2])}{more}"


class ReportView:
    """What every format says about one report. Build it from the report the format
    renders (after `for_display`, for the formats that show file names raw)."""

    def __init__(self, report: Report) -> None:
        self.report = report
        self.targets: tuple[Target, ...] = report.targets

    # -- scores and effort

    def score(self, target: Target) -> int | None:
        """The readiness on `target`; None when there was nothing to score."""
        return self.report.scores.get(str(target))

    def not_applicable(self, target: Target) -> str | None:
        """Why `target` cannot serve the chosen GPU at all (its score is None), or None."""
        return self.report.not_applicable.get(str(target))

    def route(self, target: Target) -> RouteAssessment:
        """The route's verdict, coverage and blockers (as the scan assessed them)."""
        found = self.report.routes.get(str(target))
        if found is not None:
            return found
        score = self.score(target)  # a Report built by hand, without assessments
        if self.not_applicable(target) is not None:
            return RouteAssessment("not-applicable", None)
        if score is None:
            return RouteAssessment("nothing-to-score", None)
        return RouteAssessment("needs-work" if score < 100 else "ready", score)

    def verdict(self, target: Target) -> str:
        return self.route(target).verdict

    def verdict_title(self, target: Target) -> str:
        return VERDICT_TITLE[self.verdict(target)]

    def model(self, target: Target) -> str:
        """What the route's cost is made of (docs/scoring.md)."""
        return ROUTE_MODEL[target]

    def top_items(self, target: Target, limit: int = TOP_BLOCKERS) -> list[TopItem]:
        """What stands in the route's way, most first: for a blocked route its blockers
        (names of one family together), else its costliest work (the blockers table's rows
        by their hours on this route)."""
        route = self.route(target)
        if route.blockers:
            return self._blocker_groups(route.blockers)[:limit]
        rows = [b for b in self.blockers if b.hours.get(str(target))]
        rows.sort(key=lambda b: (-b.hours[str(target)], b.name))
        return [
            TopItem(
                _label(b.family, list(b.members)) if b.members else b.name,
                b.occurrences,
                b.hours[str(target)],
                b.where,
            )
            for b in rows[:limit]
        ]

    def _blocker_groups(self, blockers: Iterable[RouteBlocker]) -> list[TopItem]:
        families: dict[str, list[RouteBlocker]] = defaultdict(list)
        for blocker in blockers:
            entry = self.names.get(blocker.name) if blocker.kind == "name" else None
            family = entry.first.family if entry else blocker.name
            families[family].append(blocker)
        groups = []
        for family, members in families.items():
            first = members[0]
            label = first.name if len(members) == 1 else _label(family, [m.name for m in members])
            groups.append(TopItem(label, len(members), 0.0, f"{first.path}:{first.line}"))
        return sorted(groups, key=lambda g: (-g.count, g.label))

    @cached_property
    def optional(self) -> tuple[OptionalComponent, ...]:
        """Components behind build switches, the costliest (if enabled) first."""
        return tuple(
            sorted(
                self.report.optional,
                key=lambda c: (
                    -sum(len(cost.blockers) for cost in c.if_enabled.values()),
                    -sum(cost.hours for cost in c.if_enabled.values()),
                    c.guard,
                ),
            )
        )

    def optional_sentence(self, component: OptionalComponent) -> str:
        """What enabling one component costs, route by route, said the same way everywhere."""
        parts = []
        for target in self.targets:
            cost = component.if_enabled.get(str(target))
            if cost is None:
                continue
            if cost.blockers:
                names = ", ".join(b.name for b in cost.blockers[:2])
                more = f" and {len(cost.blockers) - 2} more" if len(cost.blockers) > 2 else ""
                parts.append(f"{TARGET_TITLE[target]} blocked ({names}{more})")
            else:
                parts.append(f"{TARGET_TITLE[target]} +{cost.hours:g} h")
        return "; ".join(parts)

    @cached_property
    def python(self) -> PythonView | None:
        """The Python section as every format states it; None without one."""
        section = self.report.python
        return None if section is None else PythonView(self.report, section)

    @cached_property
    def target_sentence(self) -> str:
        """The ROCm release and GPU the report judged for, said the same way everywhere."""
        return self.report.target.sentence()

    @cached_property
    def nothing_to_score(self) -> bool:
        """True when no chosen route has a score: the scan found no CUDA to judge."""
        return nothing_to_score(self.report)

    def effort(self, target: Target) -> Effort | None:
        """The effort on `target`; None for a route that cannot serve the chosen GPU, and
        when there was no CUDA to score (no route has work to estimate)."""
        if self.not_applicable(target) is not None or self.nothing_to_score:
            return None
        return self.report.effort.get(str(target))

    def effort_hours(self, target: Target) -> float | None:
        estimate = self.effort(target)
        return estimate.total_hours if estimate else None

    def work_items(self, target: Target) -> WorkItems | None:
        """The work items the score of `target` was computed from."""
        return self.report.work_items.get(str(target))

    def credit(self, target: Target) -> float:
        """The total credit of the work items on `target` (readiness = 100 * credit / items)."""
        items = self.work_items(target)
        if items is None:
            return 0.0
        return sum(
            CREDIT[status] * count
            for counts in (items.names, items.hazards)
            for status, count in counts.items()
        )

    # -- counts

    @cached_property
    def counts(self) -> Counts:
        return self.report.counts()

    @cached_property
    def parse_error_files(self) -> tuple[FileSummary, ...]:
        return self.report.parse_error_files

    @cached_property
    def new_findings(self) -> int | None:
        """With --baseline: how many findings the baseline does not have."""
        indices = self.report.new_finding_indices
        return None if indices is None else len(indices)

    @cached_property
    def amd_path_sentence(self) -> str:
        """How much of the project already builds for AMD, said the same way everywhere."""
        paths = self.report.amd_paths
        alternatives = self.counts.amd_alternative_findings
        if not paths and not alternatives:
            return "Existing AMD paths: none found (no branch built only for AMD GPUs)."
        files = len({p.path for p in paths})
        lines = sum(p.end_line - p.start_line + 1 for p in paths)
        return (
            f"Existing AMD paths: {len(paths)} branch(es) in {files} file(s) ({lines:,} lines) "
            f"already build for AMD GPUs; {alternatives} finding(s) in NVIDIA-only code that "
            "has an AMD path are listed but cost nothing on HIP (ZLUDA runs and SCALE compiles "
            "the NVIDIA branch)."
        )

    # -- hazards

    @cached_property
    def hazards(self) -> tuple[HazardGroup, ...]:
        """One group per hazard, most severe first, then by id."""
        by_slug: dict[str, list[Finding]] = defaultdict(list)
        for finding in self.report.findings:
            by_slug[finding.slug].append(finding)
        specs = catalogue()
        groups = []
        for slug, findings in by_slug.items():
            spec = specs.get(slug)
            first = findings[0]
            groups.append(
                HazardGroup(
                    id=spec.id if spec else first.id,
                    slug=slug,
                    severity=max(f.severity for f in findings),
                    verdicts={str(t): worst(f.targets[t] for f in findings) for t in self.targets},
                    hours=self._hazard_hours(findings),
                    findings=tuple(findings),
                    summary=spec.summary if spec else "",
                    fix=spec.fix if spec else first.fix,
                    help_url=spec.help_url if spec else first.help_url,
                    help=spec.help if spec else first.help_url,
                    help_text=render_hazard_doc(spec) if spec else "",
                    target_notes=spec.target_notes if spec else {},
                )
            )
        return tuple(sorted(groups, key=lambda g: (-g.severity, g.id)))

    def _hazard_hours(self, findings: list[Finding]) -> dict[str, float]:
        """One work item per file, at the worst verdict in that file (docs/scoring.md), in
        the code every build compiles; on HIP, findings in NVIDIA-only code with an AMD path
        cost nothing; `unsupported-api` and `unknown-api` findings point at a name, which carries
        the hours."""
        hours: dict[str, float] = {}
        for target in self.targets:
            by_file: dict[str, list[Finding]] = defaultdict(list)
            for finding in findings:
                skipped = finding.optional or finding.slug in NAME_HAZARDS
                if not skipped and not (finding.amd_alternative and target is Target.HIP):
                    by_file[finding.path].append(finding)
            verdicts = (worst(f.targets[target] for f in fs) for fs in by_file.values())
            hours[str(target)] = sum((item_hours(v, target) for v in verdicts), 0.0)
        return hours

    # -- names

    @cached_property
    def names(self) -> dict[str, NameUses]:
        """Each distinct CUDA name, in the order of first use."""
        first: dict[str, Use] = {}
        occurrences: Counter[str] = Counter()
        for use in self.report.uses:
            first.setdefault(use.name, use)
            occurrences[use.name] += 1
        return {name: NameUses(name, use, occurrences[name]) for name, use in first.items()}

    @cached_property
    def unknown_names(self) -> list[NameUses]:
        """Names the rule set does not know, most used first."""
        unknown = [n for n in self.names.values() if n.first.rule is None]
        return sorted(unknown, key=lambda n: -n.uses)

    @cached_property
    def attention(self) -> list[NameUses]:
        """Known names that are not plainly supported on some chosen route: those HIP does
        not plainly support first, then by how many routes lack them, then by name."""
        targets = self.targets

        def needs_attention(entry: NameUses) -> bool:
            use = entry.first
            return use.rule is not None and any(
                use.status[t] is not Status.SUPPORTED for t in targets
            )

        def badness(entry: NameUses) -> tuple[int, int, str]:
            status = entry.first.status
            unsupported = sum(status[t] is Status.UNSUPPORTED for t in targets)
            return (-int(status[Target.HIP] is not Status.SUPPORTED), -unsupported, entry.name)

        return sorted(filter(needs_attention, self.names.values()), key=badness)

    @cached_property
    def blockers(self) -> list[Blocker]:
        """Names and hazards not plainly supported on some route, costliest first.

        Names of one family with the same verdicts form one row ("9 cufft names"): a lead
        plans the cuFFT port, not cufftPlan2d on its own. Hazards are one row each."""
        targets = self.targets
        groups: dict[tuple[str, tuple[Status, ...]], list[NameUses]] = defaultdict(list)
        optional = {name for component in self.report.optional for name in component.names}
        for entry in self.names.values():
            if entry.name in optional:
                continue  # listed with its component, not among what every build needs
            statuses = tuple(entry.first.status[t] for t in targets)
            if any(s is not Status.SUPPORTED for s in statuses):
                groups[(entry.first.family, statuses)].append(entry)
        blockers = [self._name_blocker(family, s, e) for (family, s), e in groups.items()]
        blockers.extend(self._hazard_blocker(group) for group in self.hazards)

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

    def _name_blocker(
        self, family: str, statuses: tuple[Status, ...], entries: list[NameUses]
    ) -> Blocker:
        lead = entries[0].first
        sites = sum(e.uses for e in entries)
        if len(entries) == 1:
            name = lead.name
            kind = lead.kind if lead.kind == family.rstrip("s") else f"{family} {lead.kind}"
            note = (lead.rule.notes or "") if lead.rule else "not in the rule set"
        else:
            name, kind = f"{len(entries)} {family} names", family
            note = ", ".join(e.name for e in entries[:4]) + (", …" if len(entries) > 4 else "")
        pairs = list(zip(self.targets, statuses, strict=True))
        return Blocker(
            name=name,
            kind=kind,
            family=family,
            severity="",
            statuses={str(t): str(s) for t, s in pairs},
            hours={str(t): self._names_hours(entries, s, t) for t, s in pairs},
            occurrences=sites,
            where=self.report.where(lead.path, lead.span.line),
            more_places=sites - 1,
            anchor="",
            note=shorten(note),
            full_note=note,
            members=tuple(e.name for e in entries) if len(entries) > 1 else (),
        )

    def _names_hours(self, entries: list[NameUses], status: Status, target: Target) -> float:
        """The hours some names of one status cost on `target` beyond their rename (on HIP,
        nothing for names used only where the project already has an AMD path)."""
        if status is Status.SUPPORTED:
            return 0.0
        alternative = self.report.alternative_names if target is Target.HIP else frozenset()
        counted = sum(1 for e in entries if e.name not in alternative)
        return route_item_hours("name", status, target) * counted

    def _hazard_blocker(self, group: HazardGroup) -> Blocker:
        note = group.summary or group.first.message
        return Blocker(
            name=group.slug,
            kind="hazard",
            family=group.id,
            severity=group.severity.name.lower(),
            statuses={t: str(s) for t, s in group.verdicts.items()},
            hours=dict(group.hours),
            occurrences=group.count,
            where=self.report.where(group.first.path, group.first.span.line),
            more_places=group.count - 1,
            anchor=f"finding-{group.slug}",
            note=note,
            full_note=note,
        )


# -- the Python section ------------------------------------------------------------------------

# The Python routes, as every format names them.
PY_ROUTE_TITLE = {"rocm": "PyTorch on ROCm", "directml": "DirectML"}
PY_ROUTE_BLURB = {
    "rocm": "ROCm builds of PyTorch and GPU packages (Linux)",
    "directml": "torch-directml (Windows/WSL, DirectX 12 GPUs)",
}
NOTHING_TO_JUDGE = "nothing GPU-related to judge in the Python code"


@dataclass(frozen=True)
class PythonRoute:
    """One Python route as every format states it."""

    route: str
    title: str
    blurb: str
    score: int | None  # None: not applicable (see `reason`) or nothing to judge
    reason: str | None  # why the route cannot serve the project at all
    hours: float | None  # None when the route is not applicable
    categories: Mapping[str, EffortCategory]


@dataclass(frozen=True)
class PythonFinding:
    finding: PyFinding
    where: str  # `path:line`, or `nb.ipynb:cell 3:2`


class PythonView:
    """What every format says about the Python section of a report."""

    def __init__(self, report: Report, section: PythonSection) -> None:
        self.report = report
        self.section = section

    @cached_property
    def routes(self) -> tuple[PythonRoute, ...]:
        section = self.section
        routes = []
        for route in map(str, ROUTES):
            reason = section.not_applicable.get(route)
            estimate = None if reason else section.effort.get(route)
            routes.append(
                PythonRoute(
                    route=route,
                    title=PY_ROUTE_TITLE[route],
                    blurb=PY_ROUTE_BLURB[route],
                    score=section.scores.get(route),
                    reason=reason,
                    hours=estimate.total_hours if estimate else None,
                    categories=dict(estimate.categories) if estimate else {},
                )
            )
        return tuple(routes)

    @cached_property
    def nothing_to_judge(self) -> bool:
        """True when no Python route has a score and none was ruled out: no GPU code,
        GPU package or GPU API was found in the Python files."""
        return all(r.score is None and r.reason is None for r in self.routes)

    @cached_property
    def headline(self) -> str:
        section = self.section
        kernels = f", {len(section.kernels)} Triton kernels" if section.kernels else ""
        return (
            f"Python ({section.files} files: {len(section.dependencies)} requirements, "
            f"{len(section.uses)} GPU API uses, {len(section.extensions)} CUDA builds/kernels"
            f"{kernels})"
        )

    def where(self, path: str, line: int) -> str:
        return self.report.where(path, line)

    @cached_property
    def findings(self) -> tuple[PythonFinding, ...]:
        return tuple(
            PythonFinding(f, self.where(f.path, f.span.line)) for f in self.section.findings
        )

    @cached_property
    def unknown_packages(self) -> list[str]:
        return sorted({d.name for d in self.section.dependencies if d.rule is None})

    @cached_property
    def wheel_sentence(self) -> str | None:
        """Where ROCm PyTorch comes from for the target ROCm release, in one sentence."""
        wheels = self.section.rocm_wheels
        if wheels is None:
            return None
        if wheels.command:
            return f"PyTorch for ROCm {wheels.rocm}: `{wheels.command}` ({wheels.note})."
        return f"PyTorch for ROCm {wheels.rocm}: {wheels.note}."


def shorten(text: str, limit: int = 90) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


__all__ = [
    "NOTHING_TO_JUDGE",
    "NOTHING_TO_SCORE",
    "NOTHING_TO_SCORE_SENTENCE",
    "PY_ROUTE_BLURB",
    "PY_ROUTE_TITLE",
    "TARGET_TITLE",
    "VERDICT_TITLE",
    "Blocker",
    "HazardGroup",
    "NameUses",
    "PythonFinding",
    "PythonRoute",
    "PythonView",
    "ReportView",
    "TopItem",
    "item_hours",
    "shorten",
    "worst",
]
