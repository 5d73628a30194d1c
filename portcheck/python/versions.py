"""Version ranges of Python packages: which releases a requirement admits, and which of a
package's sourced ranges (rules/python/packages.yaml `versions`) that lands in.

A requirement (`flash-attn>=2.5,<2.6`, `bitsandbytes==0.41.1`, conda's `pytorch-cuda=12.1`)
and a rule's range (`>=0.49,<0.50`) are both read as one interval of release numbers;
pre-, post-, dev- and local parts (`2.3.1+cu121`) do not move a release across a range
boundary and are dropped. `!=` excludes a single release, which never changes which range
an interval meets, so it is ignored. pip installs the newest release a requirement admits,
so a requirement is judged by the newest range it meets.

Only the standard library: the real resolver (packaging) is not needed to place a version
in a handful of sourced ranges.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

Release = tuple[int, ...]

# One clause: operator and version (`>=2.5`, `==2.3.*`, `~=1.4.2`, conda's `=12.1`).
CLAUSE = re.compile(r"\s*(===|==|~=|!=|<=|>=|<|>|=)\s*([0-9][0-9A-Za-z.*+!_-]*)\s*")
RELEASE = re.compile(r"(?:\d+!)?(\d+(?:\.\d+)*)")


class VersionError(ValueError):
    """A version or range that cannot be read (the message says which)."""


def release(text: str, *, exact: bool = False) -> Release:
    """`2.3.1+cu121` -> (2, 3, 1); `0.0.28.post1` -> (0, 0, 28); trailing zeros dropped so
    that 2.3 == 2.3.0 (kept with `exact`: `~=2.0` and `2.0.*` count the parts written)."""
    match = RELEASE.match(text.strip().lstrip("vV"))
    if match is None:
        raise VersionError(f"not a version: {text!r}")
    parts = [int(p) for p in match.group(1).split(".")]
    while not exact and len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def _next(prefix: Release) -> Release:
    """The first release after every release that starts with `prefix` (2.3 -> 2.4)."""
    return (*prefix[:-1], prefix[-1] + 1)


@dataclass(frozen=True, slots=True)
class Bound:
    release: Release
    inclusive: bool


@dataclass(frozen=True, slots=True)
class Interval:
    """Releases from `low` to `high` (None: unbounded on that side)."""

    low: Bound | None = None
    high: Bound | None = None

    @property
    def empty(self) -> bool:
        if self.low is None or self.high is None:
            return False
        if self.low.release != self.high.release:
            return self.low.release > self.high.release
        return not (self.low.inclusive and self.high.inclusive)

    def meet(self, other: Interval) -> Interval:
        return Interval(_tighter(self.low, other.low, 1), _tighter(self.high, other.high, -1))

    def meets(self, other: Interval) -> bool:
        return not self.meet(other).empty

    def contains(self, version: Release) -> bool:
        point = Bound(version, True)
        return self.meets(Interval(point, point))

    @property
    def pinned(self) -> Release | None:
        """The one release an `==X` requirement names, else None."""
        if self.low is not None and self.high is not None and self.low == self.high:
            return self.low.release
        return None


EVERYTHING = Interval()


def _tighter(a: Bound | None, b: Bound | None, side: int) -> Bound | None:
    """The stricter of two lower (side 1) or upper (side -1) bounds."""
    if a is None:
        return b
    if b is None:
        return a
    if a.release != b.release:
        return a if (a.release > b.release) == (side == 1) else b
    return a if not a.inclusive else b


def interval(spec: str) -> Interval:
    """The releases a specifier admits: `>=2.5,<2.6`, `==2.3.1`, `==2.3.*`, `~=1.4.2`, `=12.1`
    (conda: 12.1.*), `2.3.1` alone (conda: exactly), or "" (everything)."""
    result = EVERYTHING
    for part in (p for p in re.split(r"[,\s]+(?=[<>=!~])|,", spec) if p.strip()):
        text = part.strip()
        if text[0].isdigit():
            text = "==" + text
        match = CLAUSE.fullmatch(text)
        if match is None:
            raise VersionError(f"not a version range: {spec!r}")
        result = result.meet(_clause(match.group(1), match.group(2)))
    return result


def _clause(operator: str, text: str) -> Interval:
    wildcard = text.endswith(".*")
    version = release(text[:-2] if wildcard else text)
    if operator == "=" or (operator == "==" and wildcard):
        written = release(text[:-2] if wildcard else text, exact=True)
        return Interval(Bound(version, True), Bound(_next(written), False))
    if operator in ("==", "==="):
        return Interval(Bound(version, True), Bound(version, True))
    if operator == "~=":
        written = release(text, exact=True)
        if len(written) < 2:
            raise VersionError(f"~= needs at least two release parts: {text!r}")
        return Interval(Bound(version, True), Bound(_next(written[:-1]), False))
    if operator == ">=":
        return Interval(low=Bound(version, True))
    if operator == ">":
        return Interval(low=Bound(version, False))
    if operator == "<=":
        return Interval(high=Bound(version, True))
    if operator == "<":
        return Interval(high=Bound(version, False))
    return EVERYTHING  # `!=`: one release less never changes which range is met


# The version part of a requirement as written: after the name and extras, before a marker.
REQUIREMENT_VERSION = re.compile(
    r"^\s*(?:[\w.-]+::)?[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?\s*(?P<spec>[^;@#]*)"
)


def requirement_interval(text: str) -> Interval:
    """The releases a requirement line admits (`torch>=2.3,<2.5 ; python_version>'3.8'`);
    everything when it has no readable version part."""
    match = REQUIREMENT_VERSION.match(text)
    spec = (match.group("spec") if match else "").strip().strip("()")
    if not spec:
        return EVERYTHING
    try:
        return interval(spec)
    except VersionError:
        return EVERYTHING


def show(version: Release) -> str:
    return ".".join(map(str, version))
