"""Readiness scores, effort estimates and verdicts per route (docs/scoring.md).

Work items are what a porting engineer deals with one at a time:
- each distinct CUDA name the code uses, judged by its status on the route;
- each hazard kind in each file (`warp-size-assumption` in reduce.cu), judged by the
  hazard's verdict on the route; the worst verdict wins when a file has several.
  `unsupported-api` findings point at the call sites of a name that is already a work
  item, so they are not items of their own.

Each route counts what it needs by its own model:
- HIP translates the source: every supported name is a rename, a partial or unknown item
  a review, an unsupported one a rewrite. Code whose conditional already has an AMD path
  (the project's own HIP branch) costs nothing here.
- SCALE compiles the CUDA source as it is: what its compiler and libraries cover costs
  nothing; the rest is a review or a rewrite. The NVIDIA branch is what it compiles.
- ZLUDA runs the unmodified binary: there is nothing to rewrite. An item ZLUDA does not
  implement at run time blocks the route (named, with where it is used); partial and
  unknown items are things to test.

Coverage is the mean credit of a route's items, as a percentage; it is the route's score
unless the route is blocked, whose score is 0. Code compiled only behind a build switch
(an optional component) is left out of the scores and costed apart, as "if enabled".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from portcheck.model import (
    Effort,
    EffortCategory,
    Finding,
    OptionalComponent,
    OptionalCost,
    RouteAssessment,
    RouteBlocker,
    Status,
    Target,
    Use,
    WorkItems,
)


class _Verdicts(Protocol):
    def __getitem__(self, target: str) -> Status: ...


class Judged(Protocol):
    """A use of a name (CUDA Use, Python PyUse, Dependency): one status per target."""

    @property
    def name(self) -> str: ...
    @property
    def status(self) -> _Verdicts: ...


class Hazard(Protocol):
    """A finding (CUDA Finding or Python PyFinding)."""

    @property
    def slug(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def targets(self) -> _Verdicts: ...


CREDIT: dict[Status, float] = {
    Status.SUPPORTED: 1.0,
    Status.PARTIAL: 0.5,  # works with changes: half the way there
    Status.UNKNOWN: 0.5,  # no source tells either way: neither counted as working nor as broken
    Status.UNSUPPORTED: 0.0,
}
WORST_FIRST = (Status.UNSUPPORTED, Status.PARTIAL, Status.UNKNOWN, Status.SUPPORTED)

# Hours per work item, by category. Assumptions (docs/scoring.md): a renamed name is
# mechanical (a tool does it, a person checks the diff: ~3 minutes); a partial API or
# hazard needs reading the code and testing the change (~30 minutes); an unsupported API
# or hazard needs a rewrite with its own test (~4 hours); on ZLUDA, where nothing is
# changed, a partial or unknown item is run and checked against the NVIDIA result
# (~30 minutes).
HOURS = {"rename-only": 0.05, "review": 0.5, "rewrite": 4.0, "test": 0.5}
# The categories each route's effort is stated in, in order.
ROUTE_CATEGORIES: dict[str, tuple[str, ...]] = {
    Target.HIP: ("rename-only", "review", "rewrite"),
    Target.SCALE: ("review", "rewrite"),
    Target.ZLUDA: ("test",),
}
DEFAULT_CATEGORIES = ("rename-only", "review", "rewrite")  # the Python routes
# What each route's cost is made of, in a few words (every format states it).
ROUTE_MODEL = {
    Target.HIP: "translation plus hazards: renames, reviews and rewrites",
    Target.ZLUDA: "no source change: what ZLUDA does not implement blocks; the rest is testing",
    Target.SCALE: "compiler coverage: what SCALE does not cover is reviewed or rewritten",
}
# Hazards whose findings are the call sites of a name that is itself a work item (a name
# with no HIP equivalent, a name the rule set does not know): counted once, as the name.
NAME_HAZARDS = frozenset({"unsupported-api", "unknown-api"})


def category(kind: str, status: Status, target: str) -> str | None:
    """The effort category of one work item on one route (None: no hours: no work, or a
    blocker, which no amount of work on the route removes)."""
    if target == Target.ZLUDA:
        return "test" if status in (Status.PARTIAL, Status.UNKNOWN) else None
    if status is Status.UNSUPPORTED:
        return "rewrite"
    if status in (Status.PARTIAL, Status.UNKNOWN):
        return "review"
    # A supported name still has to be renamed for HIP; SCALE takes it as it is.
    return "rename-only" if kind == "name" and target == Target.HIP else None


def blocks(status: Status, target: str) -> bool:
    """Does an item of this status stop the route outright? Only on ZLUDA, which runs the
    binary as it is: what it does not implement cannot be worked around on the route."""
    return target == Target.ZLUDA and status is Status.UNSUPPORTED


def item_hours(kind: str, status: Status, target: str) -> float:
    name = category(kind, status, target)
    return HOURS[name] if name else 0.0


# --------------------------------------------------------------------------- work items


@dataclass(frozen=True, slots=True)
class WorkItem:
    kind: str  # "name" or "hazard"
    label: str  # the CUDA name or the hazard slug
    status: Status
    path: str
    line: int


_Key = tuple[str, ...]


def _hazard_items(findings: Iterable[Hazard], target: str) -> dict[_Key, tuple[str, Status]]:
    items: dict[_Key, tuple[str, Status]] = {}
    for finding in findings:
        if finding.slug in NAME_HAZARDS:
            continue
        key = ("hazard", finding.slug, finding.path)
        status = finding.targets[target]
        previous = items.get(key)
        if previous is None or WORST_FIRST.index(status) < WORST_FIRST.index(previous[1]):
            items[key] = ("hazard", status)
    return items


def _items(
    statuses: Mapping[str, _Verdicts], findings: Iterable[Hazard], target: str
) -> dict[_Key, tuple[str, Status]]:
    items: dict[_Key, tuple[str, Status]] = {
        ("name", name): ("name", status[target]) for name, status in statuses.items()
    }
    items.update(_hazard_items(findings, target))
    return items


def _statuses(uses: Iterable[Judged]) -> dict[str, _Verdicts]:
    """Every use of a name has the same status: one entry per distinct name."""
    return {use.name: use.status for use in uses}


def work_items(
    uses: Iterable[Use], findings: Iterable[Finding], target: str
) -> dict[_Key, WorkItem]:
    """The work items of some CUDA code on one route, each with its first place."""
    items: dict[_Key, WorkItem] = {}
    for use in uses:
        name_key: _Key = ("name", use.name)
        if name_key not in items:
            items[name_key] = WorkItem(
                "name", use.name, use.status[target], use.path, use.span.line
            )
    for finding in findings:
        if finding.slug in NAME_HAZARDS:
            continue
        key: _Key = ("hazard", finding.slug, finding.path)
        status = finding.targets[target]
        previous = items.get(key)
        if previous is None or WORST_FIRST.index(status) < WORST_FIRST.index(previous.status):
            line = previous.line if previous else finding.span.line
            items[key] = WorkItem("hazard", finding.slug, status, finding.path, line)
    return items


def _percent(statuses: Iterable[Status]) -> int | None:
    """The mean credit as a percentage; None when there is nothing to judge."""
    credits = [CREDIT[status] for status in statuses]
    if not credits:
        return None
    return round(100 * sum(credits) / len(credits))


def _effort(items: Iterable[tuple[str, Status]], target: str) -> Effort:
    names = ROUTE_CATEGORIES.get(target, DEFAULT_CATEGORIES)
    counts = dict.fromkeys(names, 0)
    for kind, status in items:
        name = category(kind, status, target)
        if name is not None:
            counts[name] = counts.get(name, 0) + 1
    categories = {
        name: EffortCategory(items=count, hours=round(count * HOURS[name], 1))
        for name, count in counts.items()
    }
    return Effort(
        categories=categories, total_hours=round(sum(c.hours for c in categories.values()), 1)
    )


# --------------------------------------------------------------------------- one file, Python


def scores(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, int]:
    """Readiness per route of one file or of the Python section (100 when there is
    nothing in it to port; 0 on a route something in it blocks)."""
    statuses = _statuses(uses)
    result: dict[str, int] = {}
    for target in targets:
        items = _items(statuses, findings, str(target)).values()
        if any(blocks(status, str(target)) for _, status in items):
            result[str(target)] = 0
            continue
        percent = _percent(status for _, status in items)
        result[str(target)] = 100 if percent is None else percent
    return result


def project_scores(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, int | None]:
    """As `scores`, but None on every route when there is nothing to judge (a Python
    section with no GPU use): a score of 100 would claim a port that was never needed."""
    if not uses and not findings:
        return {str(t): None for t in targets}
    return dict(scores(uses, findings, targets))


def effort(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, Effort]:
    """Per route: items and hours per category, and the total hours."""
    statuses = _statuses(uses)
    return {str(t): _effort(_items(statuses, findings, str(t)).values(), str(t)) for t in targets}


# --------------------------------------------------------------------------- the project


@dataclass(frozen=True, slots=True)
class Placed:
    """A use with where it sits: in NVIDIA-only code that has an AMD path, and behind
    which build switch (if any)."""

    use: Use
    amd_alternative: bool = False
    optional: str = ""


@dataclass(frozen=True)
class ProjectScore:
    """Everything the Report states about the scores, built by score_project."""

    scores: dict[str, int | None]
    effort: dict[str, Effort]
    work_items: dict[str, WorkItems]
    routes: dict[str, RouteAssessment]
    optional: tuple[OptionalComponent, ...]
    by_directory: dict[str, dict[str, float]]  # route -> folder -> hours


def directory_of(path: str) -> str:
    """The folder a work item is charted under: its file's folder, at most two deep
    (`src/ggml-cuda`); "." for a file at the top."""
    parts = path.split("/")[:-1]
    return "/".join(parts[:2]) or "."


def _hours_by_directory(items: Iterable[WorkItem], target: str) -> dict[str, float]:
    """A route's hours by folder: a hazard where its file is, a name where it is first used."""
    hours: dict[str, float] = {}
    for item in items:
        spent = item_hours(item.kind, item.status, target)
        if spent:
            folder = directory_of(item.path)
            hours[folder] = hours.get(folder, 0.0) + spent
    return {folder: round(h, 2) for folder, h in sorted(hours.items(), key=lambda kv: -kv[1])}


def _counts(target: str, alternative: bool) -> bool:
    """Does code in NVIDIA-only branches that have an AMD path count on `target`? Not on
    HIP, which builds the AMD path; ZLUDA runs and SCALE compiles the NVIDIA branch."""
    return not (alternative and target == Target.HIP)


def _blocker(item: WorkItem, target: str) -> RouteBlocker:
    route = Target(target).name
    if item.kind == "name":
        reason = f"`{item.label}` is not implemented by {route}"
    else:
        reason = f"`{item.label}` code does not run on {route}"
    return RouteBlocker(item.kind, item.label, item.path, item.line, reason)


def _route_items(
    uses: Sequence[Placed], findings: Sequence[Finding], target: str, guards: set[str]
) -> dict[_Key, WorkItem]:
    """The items of the code every build compiles, plus the components in `guards`."""
    return work_items(
        (
            p.use
            for p in uses
            if (not p.optional or p.optional in guards) and _counts(target, p.amd_alternative)
        ),
        (
            f
            for f in findings
            if (not f.optional or f.optional in guards) and _counts(target, f.amd_alternative)
        ),
        target,
    )


def score_project(
    uses: Sequence[Placed],
    findings: Sequence[Finding],
    targets: Sequence[Target],
    not_applicable: Mapping[str, str],
) -> ProjectScore:
    """Scores, effort, work items, verdicts and optional components of a project."""
    result = ProjectScore({}, {}, {}, {}, (), {})
    nothing = not uses and not findings
    if not any(not p.optional for p in uses) and not any(not f.optional for f in findings):
        # Every CUDA construct sits behind one build switch or another: those switches
        # enable the CUDA code itself, which is what there is to port.
        uses = [Placed(p.use, p.amd_alternative) for p in uses]
        findings = [replace(f, optional="") for f in findings]
    base: dict[str, dict[_Key, WorkItem]] = {}
    firsts = _first_uses(uses)
    for target in map(str, targets):
        items = base[target] = _route_items(firsts, findings, target, set())
        coverage: int | None = None
        if not nothing:  # no items left: all of it already has an AMD path
            coverage = _percent(item.status for item in items.values()) if items else 100
        blockers = tuple(
            _blocker(item, target)
            for item in sorted(items.values(), key=lambda i: (i.kind != "name", i.path, i.line))
            if blocks(item.status, target)
        )
        estimate = _effort(((i.kind, i.status) for i in items.values()), target)
        result.effort[target] = estimate
        result.by_directory[target] = _hours_by_directory(items.values(), target)
        result.work_items[target] = _work_item_counts(items.values())
        if target in not_applicable:
            verdict, score, coverage = "not-applicable", None, None
        elif nothing:
            verdict, score = "nothing-to-score", None
        elif blockers:
            verdict, score = "blocked", 0
        else:
            needs = any(c.items for n, c in estimate.categories.items() if n != "rename-only")
            verdict, score = ("needs-work" if needs else "ready"), coverage
        result.scores[target] = score
        result.routes[target] = RouteAssessment(verdict, coverage, blockers)
    optional = _optional_components(uses, findings, targets, base)
    return replace(result, optional=optional)


def _first_uses(uses: Sequence[Placed]) -> list[Placed]:
    """The first use of each name in each placement (optional component, AMD path or
    not): what work_items keeps of them whatever the route's filter, found once instead
    of walking tens of thousands of uses per route."""
    seen: set[tuple[str, str, bool]] = set()
    firsts = []
    for placed in uses:
        key = (placed.use.name, placed.optional, placed.amd_alternative)
        if key not in seen:
            seen.add(key)
            firsts.append(placed)
    return firsts


def _work_item_counts(items: Iterable[WorkItem]) -> WorkItems:
    names = dict.fromkeys(WORST_FIRST, 0)
    hazards = dict.fromkeys(WORST_FIRST, 0)
    for item in items:
        (names if item.kind == "name" else hazards)[item.status] += 1
    return WorkItems(names=names, hazards=hazards)


def _optional_components(
    uses: Sequence[Placed],
    findings: Sequence[Finding],
    targets: Sequence[Target],
    base: Mapping[str, Mapping[_Key, WorkItem]],
) -> tuple[OptionalComponent, ...]:
    """Each build switch's component: what it adds to each route when enabled, i.e. its
    own work items that the code every build compiles (`base`, per route) does not have."""
    inside: dict[str, list[Placed]] = {}
    guarded: dict[str, list[Finding]] = {}
    for placed in uses:
        if placed.optional:
            inside.setdefault(placed.optional, []).append(placed)
    for finding in findings:
        if finding.optional:
            guarded.setdefault(finding.optional, []).append(finding)
    base_names = {
        item.label for items in base.values() for item in items.values() if item.kind == "name"
    }
    components = []
    for guard in sorted(inside.keys() | guarded.keys()):
        costs: dict[str, OptionalCost] = {}
        firsts = _first_uses(inside.get(guard, []))
        for target in map(str, targets):
            own = _route_items(firsts, guarded.get(guard, []), target, {guard})
            extra = [item for key, item in own.items() if key not in base[target]]
            hours = round(sum(item_hours(i.kind, i.status, target) for i in extra), 1)
            blockers = tuple(_blocker(i, target) for i in extra if blocks(i.status, target))
            costs[target] = OptionalCost(hours=hours, blockers=blockers)
        only_here = {p.use.name for p in inside.get(guard, [])} - base_names
        adds = any(cost.hours or cost.blockers for cost in costs.values())
        if not (only_here or guarded.get(guard) or adds):
            continue  # everything in it is needed anyway: enabling it costs nothing more
        paths = {p.use.path for p in inside.get(guard, [])} | {
            f.path for f in guarded.get(guard, [])
        }
        components.append(
            OptionalComponent(
                guard=guard,
                paths=tuple(sorted(paths)),
                names=tuple(sorted(only_here)),
                findings=len(guarded.get(guard, [])),
                if_enabled=costs,
            )
        )
    return tuple(components)
