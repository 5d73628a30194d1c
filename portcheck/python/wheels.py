"""Where the ROCm build of PyTorch comes from for a ROCm release (rules/python/wheels.yaml),
and what that means for a project's torch requirement.

PyTorch publishes its ROCm wheels on one index per ROCm release
(download.pytorch.org/whl/rocm6.4), each serving the torch releases built for it. A team
that targets ROCm 6.4 (`--rocm 6.4`) needs that index and a torch release it serves; a
project pinned to a torch release with no wheel for that ROCm has to move the pin or the
ROCm release, and the advice says which. AMD's own compatibility matrix (the PyTorch
versions it validates per ROCm release) is quoted beside it where the table has it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from portcheck.model import WheelAdvice
from portcheck.python.rules import PythonRuleError
from portcheck.python.versions import (
    EVERYTHING,
    Interval,
    VersionError,
    interval,
    release,
    requirement_interval,
    show,
)
from portcheck.resources import data_dir
from portcheck.ruleset import YamlSyntaxError, load_yaml

WHEELS_FILE = "wheels.yaml"
WHEELS_SCHEMA = "portcheck.python-wheels/1"


@dataclass(frozen=True, slots=True)
class TorchBuilds:
    """The ROCm indexes that serve a range of torch releases."""

    torch: str  # as written: `>=2.6,<2.7`
    interval: Interval
    rocm: tuple[str, ...]  # index names after "rocm": ("6.1", "6.2.4")
    source: str

    @property
    def minors(self) -> tuple[str, ...]:
        """The torch minor releases the range covers (`>=2.11,<2.14` -> 2.11, 2.12, 2.13;
        a range that ends at the next major, `>=1.13,<2.0`, covers its first minor only)."""
        if self.interval.low is None:
            return ()
        major, minor = (*self.interval.low.release, 0)[:2]
        high = self.interval.high.release if self.interval.high else (major, minor + 1)
        found = [f"{major}.{minor}"]
        while high[0] == major and (major, minor + 1) < high:
            minor += 1
            found.append(f"{major}.{minor}")
        return tuple(found)


@dataclass(frozen=True, slots=True)
class WheelTable:
    index_base: str
    pytorch: tuple[TorchBuilds, ...]
    amd_validated: dict[str, tuple[tuple[str, ...], str]]  # "6.3" -> (versions, source)


def _same_release(index: str, rocm: str) -> bool:
    """Does the index `6.2.4` serve ROCm `6.2` (or `6.2.1`)? Same major and minor."""
    return release(index, exact=True)[:2] == release(rocm, exact=True)[:2]


def _load() -> WheelTable:
    where = f"python/{WHEELS_FILE}"
    try:
        doc: Any = load_yaml(data_dir("rules").joinpath("python", WHEELS_FILE).read_text("utf-8"))
    except (OSError, YamlSyntaxError) as exc:
        raise PythonRuleError(f"{where}: cannot read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != WHEELS_SCHEMA:
        raise PythonRuleError(f"{where}: expected schema {WHEELS_SCHEMA}")
    builds = []
    for number, item in enumerate(doc.get("pytorch") or []):
        at = f"{where}: pytorch[{number}]"
        if not isinstance(item, dict) or set(item) != {"torch", "rocm", "source"}:
            raise PythonRuleError(f"{at}: needs exactly torch, rocm, source")
        try:
            span = interval(str(item["torch"]))
            indexes = tuple(str(r) for r in item["rocm"])
            for index in indexes:
                release(index)
        except (VersionError, TypeError) as exc:
            raise PythonRuleError(f"{at}: {exc}") from None
        builds.append(TorchBuilds(str(item["torch"]), span, indexes, str(item["source"])))
    validated: dict[str, tuple[tuple[str, ...], str]] = {}
    for number, item in enumerate(doc.get("amd_validated") or []):
        at = f"{where}: amd_validated[{number}]"
        if not isinstance(item, dict) or set(item) != {"rocm", "pytorch", "source"}:
            raise PythonRuleError(f"{at}: needs exactly rocm, pytorch, source")
        validated[str(item["rocm"])] = (tuple(str(v) for v in item["pytorch"]), str(item["source"]))
    return WheelTable(str(doc.get("index_base", "")), tuple(builds), validated)


@lru_cache(maxsize=1)
def wheel_table() -> WheelTable:
    """The shipped table, validated once per process."""
    return _load()


def _served(table: WheelTable) -> dict[str, tuple[tuple[str, ...], str]]:
    """Each index ("6.2.4") -> (the torch minors it serves, oldest first; their sources)."""
    minors: dict[str, list[str]] = {}
    sources: dict[str, list[str]] = {}
    for builds in table.pytorch:
        for index in builds.rocm:
            minors.setdefault(index, []).extend(builds.minors)
            sources.setdefault(index, []).append(builds.source)
    return {
        index: (tuple(dict.fromkeys(found)), "; ".join(dict.fromkeys(sources[index])))
        for index, found in minors.items()
    }


def advice(rocm: str, requirement: str) -> WheelAdvice:
    """Where ROCm PyTorch comes from for ROCm `rocm`, and whether the project's torch
    `requirement` (as written, "" for none) fits it."""
    table = wheel_table()
    target = release(rocm, exact=True)
    served = _served(table)
    admitted = requirement_interval(requirement) if requirement else EVERYTHING
    validated, validated_source = table.amd_validated.get(show(target[:2]), ((), ""))
    indexes = sorted((i for i in served if _same_release(i, rocm)), key=release)
    if not indexes:
        return _no_index(table, served, rocm, requirement, admitted, validated, validated_source)
    minors = tuple(dict.fromkeys(m for i in indexes for m in served[i][0]))
    fitting = [
        (release(m), i)
        for i in indexes
        for m in served[i][0]
        if admitted.meets(interval(f"=={m}.*"))
    ]
    sources = "; ".join(dict.fromkeys(served[i][1] for i in indexes))
    if validated_source:
        sources += f"; {validated_source}"
    if fitting:
        newest, index = max(fitting)
        url = f"{table.index_base}rocm{index}"
        note = f"ROCm {rocm}: torch {_listed(minors)} on {_urls(table, indexes)}"
        if requirement and admitted != EVERYTHING:
            note += f"; `{requirement}` fits"
        command = f'pip install "torch=={show(newest)}.*" --index-url {url}'
        return WheelAdvice(rocm, url, minors, requirement, command, note, validated, sources)
    url = f"{table.index_base}rocm{indexes[-1]}"
    note = f"ROCm {rocm}'s PyTorch wheels ({_urls(table, indexes)}) are torch {_listed(minors)}"
    note += f", which `{requirement}` does not allow"
    elsewhere = _indexes_for(served, admitted)
    if elsewhere:
        note += f"; that requirement has ROCm wheels on {', '.join(elsewhere)}"
    note += ": move the torch pin or the ROCm release"
    if validated:
        note += f" (AMD validates PyTorch {', '.join(validated)} with ROCm {rocm}: its own builds)"
    return WheelAdvice(rocm, url, minors, requirement, "", note, validated, sources)


def _no_index(
    table: WheelTable,
    served: dict[str, tuple[tuple[str, ...], str]],
    rocm: str,
    requirement: str,
    admitted: Interval,
    validated: tuple[str, ...],
    validated_source: str,
) -> WheelAdvice:
    """ROCm `rocm` has no PyTorch wheel index of its own: name the nearest older one."""
    target = release(rocm, exact=True)[:2]
    older = sorted((i for i in served if release(i, exact=True)[:2] < target), key=release)
    note = f"PyTorch publishes no wheel index for ROCm {rocm}"
    sources = [validated_source] if validated_source else []
    if older:
        nearest = older[-1]
        note += (
            f"; the nearest older one is {table.index_base}rocm{nearest} "
            f"(torch {_listed(served[nearest][0])})"
        )
        sources.insert(0, served[nearest][1])
    if validated:
        note += f"; AMD validates PyTorch {', '.join(validated)} with ROCm {rocm} (its own builds)"
    elsewhere = _indexes_for(served, admitted) if admitted != EVERYTHING else []
    if elsewhere:
        note += f"; `{requirement}` has ROCm wheels on {', '.join(elsewhere)}"
    return WheelAdvice(rocm, None, (), requirement, "", note, validated, "; ".join(sources))


def _indexes_for(served: dict[str, tuple[tuple[str, ...], str]], admitted: Interval) -> list[str]:
    """The ROCm indexes that serve some torch release the requirement admits, oldest first."""
    found = [
        index
        for index, (minors, _) in served.items()
        if any(admitted.meets(interval(f"=={m}.*")) for m in minors)
    ]
    return [f"rocm{i}" for i in sorted(found, key=release)]


def _urls(table: WheelTable, indexes: list[str]) -> str:
    return " and ".join(f"{table.index_base}rocm{i}" for i in indexes)


def _listed(minors: tuple[str, ...]) -> str:
    if len(minors) <= 2:
        return " and ".join(minors)
    return f"{minors[0]} to {minors[-1]}"


__all__ = ["TorchBuilds", "WheelTable", "advice", "show", "wheel_table"]
