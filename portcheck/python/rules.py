"""The Python knowledge base: rules/python/{packages,apis}.yaml.

Both hold PyRules (a status per Python route, a note and the public source of the fact,
the known gaps of the ROCm build, and the routes that cannot serve a project using it at
all). A package may also have sourced version ranges (`versions`: flash-attn has a ROCm
backend from 2.6.2 on); `PythonRules.judged` gives the rule for the releases a
requirement admits.
Every file is validated on load: unknown keys, bad statuses, duplicates and entries
without a source are errors that name the file and entry. The Python hazards (ids PY…)
are in the one hazard catalogue, rules/hazards.yaml (portcheck.checks.spec).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from portcheck.checks.spec import catalogue_digest
from portcheck.model import ROUTES, PyRule, RouteVerdicts, Status
from portcheck.python.versions import (
    EVERYTHING,
    Interval,
    Release,
    VersionError,
    interval,
    requirement_interval,
)
from portcheck.resources import data_dir
from portcheck.ruleset import YamlSyntaxError, load_yaml

RULES_SCHEMA = "portcheck.python-rules/1"
RULE_KEYS = frozenset(
    {
        "name",
        "match",
        "status",
        "note",
        "source",
        "replacement",
        "versions",
        "gaps",
        "not_applicable",
    }
)
RANGE_KEYS = frozenset({"range", "rocm", "note", "source"})


class PythonRuleError(ValueError):
    """A file under rules/python is malformed; the message names the file and entry."""


def _verdicts(raw: Any, where: str) -> RouteVerdicts:
    if not isinstance(raw, dict) or set(raw) != {str(r) for r in ROUTES}:
        raise PythonRuleError(f"{where}: status needs exactly {[str(r) for r in ROUTES]}")
    try:
        return RouteVerdicts(**{str(r): Status(raw[str(r)]) for r in ROUTES})
    except ValueError as exc:
        raise PythonRuleError(f"{where}: {exc}") from None


def _load(name: str, schema: str) -> list[Any]:
    try:
        text = data_dir("rules").joinpath("python", name).read_text("utf-8")
        doc = load_yaml(text)
    except (OSError, YamlSyntaxError) as exc:
        raise PythonRuleError(f"python/{name}: cannot read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != schema:
        raise PythonRuleError(f"python/{name}: expected schema {schema}")
    entries = doc.get("entries")
    if not isinstance(entries, list):
        raise PythonRuleError(f"python/{name}: `entries` must be a list")
    return entries


@dataclass(frozen=True, slots=True)
class VersionRange:
    """What a package's releases in one range do on ROCm (a ROCm backend added in 2.6.2,
    wheels with ROCm builds from 0.49 on), with the source of that fact."""

    spec: str  # as written: `>=0.49,<0.50`
    interval: Interval
    rocm: Status
    note: str
    source: str


def _strings(raw: Any, key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise PythonRuleError(f"{where}: `{key}` must be a list of texts")
    return tuple(" ".join(v.split()) for v in value)


def _not_applicable(raw: Any, where: str) -> tuple[tuple[str, str], ...]:
    value = raw.get("not_applicable", {})
    routes = {str(r) for r in ROUTES}
    if not isinstance(value, dict) or not set(value) <= routes:
        raise PythonRuleError(f"{where}: `not_applicable` maps routes {sorted(routes)} to reasons")
    return tuple((str(route), " ".join(str(why).split())) for route, why in value.items())


def _version_ranges(raw: Any, status: RouteVerdicts, where: str) -> tuple[VersionRange, ...]:
    value = raw.get("versions", [])
    if not isinstance(value, list):
        raise PythonRuleError(f"{where}: `versions` must be a list of ranges")
    ranges = []
    for number, item in enumerate(value):
        at = f"{where}: versions[{number}]"
        if not isinstance(item, dict) or set(item) != RANGE_KEYS:
            raise PythonRuleError(f"{at}: needs exactly {sorted(RANGE_KEYS)}")
        try:
            span = interval(str(item["range"]))
            rocm = Status(str(item["rocm"]))
        except (VersionError, ValueError) as exc:
            raise PythonRuleError(f"{at}: {exc}") from None
        if span.empty or not str(item["source"]).strip():
            raise PythonRuleError(f"{at}: an empty range or no source")
        ranges.append(
            VersionRange(
                str(item["range"]),
                span,
                rocm,
                " ".join(str(item["note"]).split()),
                str(item["source"]),
            )
        )
    for a, b in ((a, b) for i, a in enumerate(ranges) for b in ranges[i + 1 :]):
        if a.interval.meets(b.interval):
            raise PythonRuleError(f"{where}: version ranges {a.spec!r} and {b.spec!r} overlap")
    newest = [r for r in ranges if r.interval.high is None]
    if newest and newest[0].rocm is not status.rocm:
        raise PythonRuleError(
            f"{where}: the open-ended range {newest[0].spec!r} must have the entry's ROCm status"
        )
    return tuple(ranges)


def parse_rules(entries: list[Any], kind: str, file: str) -> list[PyRule]:
    return [rule for rule, _ in parse_entries(entries, kind, file)]


def parse_entries(
    entries: list[Any], kind: str, file: str
) -> list[tuple[PyRule, tuple[VersionRange, ...]]]:
    """Each entry of a rules/python file, validated: its rule and its version ranges."""
    rules: list[tuple[PyRule, tuple[VersionRange, ...]]] = []
    seen: set[tuple[str, str]] = set()
    for index, raw in enumerate(entries):
        where = f"python/{file}: entry {index}"
        if not isinstance(raw, dict):
            raise PythonRuleError(f"{where}: must be a mapping")
        where += f" ({raw.get('name')})"
        unknown = set(raw) - RULE_KEYS
        missing = {"name", "status", "note", "source"} - set(raw)
        if unknown or missing:
            raise PythonRuleError(f"{where}: unknown {sorted(unknown)} / missing {sorted(missing)}")
        match = str(raw.get("match", "exact"))
        if match not in ("exact", "prefix"):
            raise PythonRuleError(f"{where}: match must be exact or prefix")
        name = str(raw["name"])
        if kind == "package":
            name = normalise_package(name)  # keeps a trailing `-` of a prefix (`nvidia-`)
        if (name, match) in seen:
            raise PythonRuleError(f"{where}: duplicate name")
        seen.add((name, match))
        if not str(raw["source"]).strip():
            raise PythonRuleError(f"{where}: empty source")
        status = _verdicts(raw["status"], where)
        rule = PyRule(
            name=name,
            kind=kind,
            match=match,
            status=status,
            note=" ".join(str(raw["note"]).split()),
            source=str(raw["source"]),
            replacement=str(raw["replacement"]) if raw.get("replacement") else None,
            gaps=_strings(raw, "gaps", where),
            not_applicable=_not_applicable(raw, where),
        )
        rules.append((rule, _version_ranges(raw, status, where)))
    return rules


def normalise_package(name: str) -> str:
    """PEP 503: `Cupy_CUDA12x` -> `cupy-cuda12x`."""
    out = []
    previous_separator = False
    for char in name.strip().lower():
        if char in "-_.":
            if not previous_separator:
                out.append("-")
            previous_separator = True
        else:
            out.append(char)
            previous_separator = False
    return "".join(out)


class PythonRules:
    """Package and API rules with their lookups."""

    def __init__(
        self,
        packages: list[PyRule],
        apis: list[PyRule],
        versions: dict[str, tuple[VersionRange, ...]] | None = None,
    ) -> None:
        self.versions = versions or {}  # package name -> its sourced ROCm version ranges
        self.packages = {r.name: r for r in packages if r.match == "exact"}
        self.package_prefixes = sorted(
            (r for r in packages if r.match == "prefix"), key=lambda r: -len(r.name)
        )
        self.apis = {r.name: r for r in apis}
        self.api_roots = {r.name.split(".")[0] for r in apis}

    def package(self, name: str) -> PyRule | None:
        """Exact name first, then the longest prefix rule (`nvidia-` for `nvidia-cublas-cu12`)."""
        key = normalise_package(name)
        rule = self.packages.get(key)
        if rule is not None:
            return rule
        for prefix in self.package_prefixes:
            if key.startswith(prefix.name):
                return prefix
        return None

    def judged(self, rule: PyRule, requirement: str) -> PyRule:
        """`rule` as it stands for the releases `requirement` admits: pip installs the
        newest of them, so the newest of the package's version ranges the requirement meets
        gives the ROCm status, and its note and source come first."""
        ranges = self.versions.get(rule.name)
        if not ranges:
            return rule
        admitted = requirement_interval(requirement)
        met = [r for r in ranges if r.interval.meets(admitted)]
        if not met:
            return rule
        newest = max(met, key=lambda r: _upper(r.interval.meet(admitted)))
        if newest.interval.high is None and admitted == EVERYTHING:
            return rule  # no version given: the entry is about the newest releases already
        older = [r for r in met if r is not newest and r.rocm is not newest.rocm]
        note = f"{rule.name} {newest.spec}: {newest.note}"
        if older:
            note += f" (older releases the requirement allows: {older[0].spec}, {older[0].rocm})"
        replacement = rule.replacement
        if newest.rocm is rule.status.rocm:
            note = f"{note} | {rule.note}"  # the entry's note is about these releases too
        else:
            # releases the requirement rules out do better: moving the pin is the fix
            better = [r for r in ranges if _RANK[r.rocm] > _RANK[newest.rocm]]
            if better:
                target = max(better, key=lambda r: _upper(r.interval))
                upgrade = f"{rule.name}{target.spec} ({target.rocm} on ROCm)"
                replacement = f"{upgrade}; {replacement}" if replacement else upgrade
        return replace(
            rule,
            status=replace(rule.status, rocm=newest.rocm),
            note=note,
            replacement=replacement,
            source=newest.source
            if newest.source == rule.source
            else f"{newest.source}; {rule.source}",
        )

    def api(self, dotted: str) -> PyRule | None:
        """The rule of the longest known prefix of a dotted name."""
        parts = dotted.split(".")
        if parts[0] not in self.api_roots:
            return None
        for end in range(len(parts), 0, -1):
            rule = self.apis.get(".".join(parts[:end]))
            if rule is not None:
                return rule
        return None


@lru_cache(maxsize=1)
def python_rules_digest() -> str:
    """A hash of the shipped Python rule files (packages, APIs, wheel indexes) and of the
    hazard catalogue, which holds the Python hazards (part of the scan cache's key)."""
    digest = hashlib.sha256()
    for name in ("packages.yaml", "apis.yaml", "wheels.yaml"):
        digest.update(data_dir("rules").joinpath("python", name).read_bytes())
    digest.update(catalogue_digest().encode())
    return digest.hexdigest()


# How much of a package works, for choosing the releases to move a pin to.
_RANK = {Status.UNSUPPORTED: 0, Status.UNKNOWN: 1, Status.PARTIAL: 2, Status.SUPPORTED: 3}


def _upper(span: Interval) -> tuple[int, Release, bool]:
    """Sort key of an interval's upper end (unbounded last)."""
    if span.high is None:
        return (1, (), True)
    return (0, span.high.release, span.high.inclusive)


@lru_cache(maxsize=1)
def python_rules() -> PythonRules:
    """The shipped Python rules, validated once per process."""
    packages = parse_entries(_load("packages.yaml", RULES_SCHEMA), "package", "packages.yaml")
    return PythonRules(
        [rule for rule, _ in packages],
        parse_rules(_load("apis.yaml", RULES_SCHEMA), "api", "apis.yaml"),
        {rule.name: ranges for rule, ranges in packages if ranges},
    )
