"""Readiness scores: how much of the CUDA a project uses works on each route.

The formula (docs/scoring.md): for one target, every distinct CUDA name used
earns a credit by its status on that target; the readiness is the mean credit
as a percentage, rounded. Distinct names, not call sites, because the porting
work is per API: the hundredth call to an unsupported function costs little
once the first is solved. Nothing used means nothing to port: 100.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from portcheck.model import Status, Target, Use

CREDIT: dict[Status, float] = {
    Status.SUPPORTED: 1.0,
    Status.PARTIAL: 0.5,  # works with changes: half the way there
    Status.UNKNOWN: 0.5,  # no source tells either way: neither counted as working nor as broken
    Status.UNSUPPORTED: 0.0,
}


def readiness(uses: Iterable[Use], target: Target) -> int:
    statuses = {use.name: use.status[target] for use in uses}
    if not statuses:
        return 100
    total = sum(CREDIT[status] for status in statuses.values())
    return round(100 * total / len(statuses))


def scores(uses: Sequence[Use], targets: Sequence[Target]) -> dict[str, int]:
    return {str(target): readiness(uses, target) for target in targets}
