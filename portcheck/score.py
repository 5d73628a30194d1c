"""Readiness scores and effort estimates per route (formula: docs/scoring.md).

Work items are what a porting engineer deals with one at a time:
- each distinct CUDA name the code uses, judged by its status on the target;
- each hazard kind in each file (`warp-size-assumption` in reduce.cu), judged by the
  hazard's verdict on the target; the worst verdict wins when a file has several.

Readiness is the mean credit of the work items, as a percentage. Effort sorts the
same items into rename-only, review and rewrite, at a stated cost per item.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from portcheck.model import Effort, EffortCategory, Status, Target, WorkItems


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
# or hazard needs a rewrite with its own test (~4 hours).
HOURS = {"rename-only": 0.05, "review": 0.5, "rewrite": 4.0}


def _statuses(uses: Iterable[Judged]) -> dict[str, _Verdicts]:
    """Every use of a name has the same status: one entry per distinct name."""
    return {use.name: use.status for use in uses}


def _items(
    statuses: Mapping[str, _Verdicts], findings: Iterable[Hazard], target: str
) -> dict[tuple[str, ...], tuple[str, Status]]:
    items: dict[tuple[str, ...], tuple[str, Status]] = {
        ("name", name): ("name", status[target]) for name, status in statuses.items()
    }
    for finding in findings:
        key = ("hazard", finding.slug, finding.path)
        status = finding.targets[target]
        previous = items.get(key)
        if previous is None or WORST_FIRST.index(status) < WORST_FIRST.index(previous[1]):
            items[key] = ("hazard", status)
    return items


def work_items(
    uses: Iterable[Judged], findings: Iterable[Hazard], target: str
) -> dict[tuple[str, ...], tuple[str, Status]]:
    """(item key) -> (kind of item, status on target)."""
    return _items(_statuses(uses), findings, target)


def _percent(items: Mapping[tuple[str, ...], tuple[str, Status]]) -> int | None:
    """The mean credit as a percentage; None when there is nothing to judge."""
    if not items:
        return None
    return round(100 * sum(CREDIT[status] for _, status in items.values()) / len(items))


def readiness(uses: Iterable[Judged], findings: Iterable[Hazard], target: str) -> int | None:
    return _percent(work_items(uses, findings, target))


def project_scores(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, int | None]:
    """Readiness per target; None for every target when nothing was found to judge (no
    CUDA): a score of 100 would let `--fail-under` pass on a tree without CUDA."""
    statuses = _statuses(uses)  # once for all targets
    return {str(t): _percent(_items(statuses, findings, t)) for t in targets}


def scores(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, int]:
    """Readiness per target of one file or of the Python section: 100 when there is
    nothing in it to port."""
    return {t: 100 if s is None else s for t, s in project_scores(uses, findings, targets).items()}


def work_item_counts(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, WorkItems]:
    """Per target: the work items the score is the mean credit of, counted by status."""
    result: dict[str, WorkItems] = {}
    statuses = _statuses(uses)
    for target in targets:
        names = dict.fromkeys(WORST_FIRST, 0)
        hazards = dict.fromkeys(WORST_FIRST, 0)
        for kind, status in _items(statuses, findings, target).values():
            (names if kind == "name" else hazards)[status] += 1
        result[str(target)] = WorkItems(names=names, hazards=hazards)
    return result


def category(kind: str, status: Status, target: str) -> str | None:
    """The effort category of one work item on one target (None: no work)."""
    if status is Status.UNSUPPORTED:
        return "rewrite"
    if status in (Status.PARTIAL, Status.UNKNOWN):
        return "review"
    # A supported name still has to be renamed for HIP; ZLUDA and SCALE take it as it is.
    return "rename-only" if kind == "name" and target is Target.HIP else None


def effort(
    uses: Sequence[Judged], findings: Sequence[Hazard], targets: Sequence[str]
) -> dict[str, Effort]:
    """Per target: items and hours per category, and the total hours."""
    result: dict[str, Effort] = {}
    statuses = _statuses(uses)
    for target in targets:
        counts = dict.fromkeys(HOURS, 0)
        for kind, status in _items(statuses, findings, target).values():
            name = category(kind, status, target)
            if name is not None:
                counts[name] += 1
        categories = {
            name: EffortCategory(items=count, hours=round(count * HOURS[name], 1))
            for name, count in counts.items()
        }
        total = round(sum(c.hours for c in categories.values()), 1)
        result[str(target)] = Effort(categories=categories, total_hours=total)
    return result
