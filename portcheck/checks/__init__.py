"""Hazard checks: the problems renaming cannot fix.

Owns the hazard catalogue (rules/hazards.yaml), the registry of checks and the
context a check reports through. One hazard = one small function registered with
`@hazard("slug")` that calls `ctx.report(start, end, ...)`; the framework fills in
the id, severity, per-target verdict, help link and fix hint from the catalogue,
and applies inline suppressions (`// portcheck: ignore[slug]`).
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from portcheck.model import (
    TARGETS,
    Finding,
    Language,
    PyFinding,
    Severity,
    Span,
    Status,
    Use,
    Verdicts,
)
from portcheck.resources import data_dir
from portcheck.ruleset import YamlSyntaxError, load_yaml

CATALOGUE_SCHEMA = "portcheck.hazards/1"
HELP_BASE = "docs/rules"
SPEC_KEYS = frozenset(
    {
        "id",
        "slug",
        "severity",
        "since",
        "summary",
        "targets",
        "target_notes",
        "why",
        "example",
        "instead",
        "fix",
        "example_file",
    }
)
SUPPRESSION = re.compile(rb"portcheck:\s*ignore(?:\[([^\]]*)\])?")
# `#define WARP_SIZE 32`, `#define FULL_MASK 0xffffffffu`: integer-valued object-like macros.
INTEGER_MACRO = re.compile(
    rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+\(?[ \t]*(0[xX][0-9a-fA-F]+|\d+)[uUlL]*"
    rb"[ \t]*\)?[ \t]*(?://.*)?$",
    re.MULTILINE,
)


class CatalogueError(ValueError):
    """rules/hazards.yaml is malformed; the message names the entry and key."""


@dataclass(frozen=True, slots=True)
class HazardSpec:
    id: str
    slug: str
    severity: Severity
    since: str
    summary: str
    targets: Verdicts
    target_notes: Mapping[str, str]
    why: str
    example: str
    instead: str
    fix: str
    example_file: str = "example.cu"

    @property
    def help_url(self) -> str:
        return f"{HELP_BASE}/{self.slug}.md"


def _spec(raw: Any, index: int) -> HazardSpec:
    where = f"hazards.yaml: entry {index} ({raw.get('slug') if isinstance(raw, dict) else raw!r})"
    if not isinstance(raw, dict):
        raise CatalogueError(f"{where}: must be a mapping")
    unknown = set(raw) - SPEC_KEYS
    missing = SPEC_KEYS - {"example_file"} - set(raw)
    if unknown or missing:
        raise CatalogueError(f"{where}: unknown {sorted(unknown)} / missing {sorted(missing)} keys")
    try:
        severity = Severity[str(raw["severity"]).upper()]
        targets = Verdicts(**{str(t): Status(raw["targets"][str(t)]) for t in TARGETS})
    except (KeyError, ValueError) as exc:
        raise CatalogueError(f"{where}: bad severity or targets ({exc})") from None
    return HazardSpec(
        id=str(raw["id"]),
        slug=str(raw["slug"]),
        severity=severity,
        since=str(raw["since"]),
        summary=str(raw["summary"]),
        targets=targets,
        target_notes={str(k): str(v) for k, v in raw["target_notes"].items()},
        why=str(raw["why"]).strip(),
        example=str(raw["example"]),
        instead=str(raw["instead"]),
        fix=str(raw["fix"]),
        example_file=str(raw.get("example_file", "example.cu")),
    )


@lru_cache(maxsize=1)
def catalogue() -> dict[str, HazardSpec]:
    """The hazard catalogue by slug, validated once per process."""
    try:
        text = data_dir("rules").joinpath("hazards.yaml").read_text("utf-8")
        doc = load_yaml(text)
    except YamlSyntaxError as exc:
        raise CatalogueError(f"hazards.yaml: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or doc.get("schema") != CATALOGUE_SCHEMA:
        raise CatalogueError(f"hazards.yaml: expected schema {CATALOGUE_SCHEMA}")
    specs = [_spec(raw, i) for i, raw in enumerate(doc.get("hazards") or [])]
    by_slug: dict[str, HazardSpec] = {}
    ids: set[str] = set(doc.get("retired") or [])
    for spec in specs:
        if spec.slug in by_slug or spec.id in ids:
            raise CatalogueError(f"hazards.yaml: duplicate slug or id ({spec.slug}, {spec.id})")
        by_slug[spec.slug] = spec
        ids.add(spec.id)
    return by_slug


def resolve_ignores(values: Iterable[str]) -> frozenset[str]:
    """`--ignore` values (ids like PC001 or slugs) -> slugs; raises ValueError on unknown."""
    from portcheck.python.rules import python_rules

    specs: dict[str, Any] = {**catalogue(), **python_rules().hazards}
    by_id = {spec.id.lower(): slug for slug, spec in specs.items()}
    slugs = set()
    for value in values:
        for item in (v.strip() for v in value.split(",")):
            if not item:
                continue
            if item in specs:
                slugs.add(item)
            elif item.lower() in by_id:
                slugs.add(by_id[item.lower()])
            else:
                raise ValueError(
                    f"unknown hazard {item!r} (use an id such as PC001 or PY001, or a slug)"
                )
    return frozenset(slugs)


def line_fingerprint(slug: str, path: str, data: bytes, offset: int) -> str:
    """Stable across edits elsewhere in the file: hazard, file and the line's own text
    (whitespace-normalised)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    line = data[line_start : line_end if line_end != -1 else len(data)]
    digest = hashlib.sha256(f"{slug}\0{path}\0".encode() + b" ".join(line.split()))
    return digest.hexdigest()[:20]


METHOD_MARK = "."  # in FunctionInfo.calls: ".sync" is a call of a method named sync


@dataclass
class FunctionInfo:
    """A function definition in a file, for the call graph. `calls` holds the names it
    calls; a method call (`group.sync()`) is METHOD_MARK + name."""

    name: str
    start: int
    end: int
    is_kernel: bool
    is_device: bool
    calls: set[str] = field(default_factory=set)


def nesting(functions: list[FunctionInfo]) -> list[int]:
    """For functions sorted by start: the index of the innermost function around each
    (a method of a class defined in a function), or -1."""
    outer: list[int] = []
    open_: list[int] = []
    for i, fn in enumerate(functions):
        while open_ and functions[open_[-1]].end <= fn.start:
            open_.pop()
        outer.append(open_[-1] if open_ else -1)
        open_.append(i)
    return outer


def innermost_function(
    functions: list[FunctionInfo], starts: list[int], outer: list[int], offset: int
) -> int:
    """Index of the innermost function (sorted by start; `starts`, `outer` = nesting())
    around `offset`, or -1. The last function starting before it, or one around that."""
    i = bisect.bisect_right(starts, offset) - 1
    while i >= 0 and not functions[i].start <= offset < functions[i].end:
        i = outer[i]
    return i


@dataclass
class Context:
    """What a check sees of one file, and where it reports."""

    path: str
    language: Language
    data: bytes
    root: Any  # tree_sitter.Node, or None for build files
    uses: list[Use]
    span: Callable[[int, int], Span]
    in_device: Callable[[int], bool]
    functions: list[FunctionInfo] = field(default_factory=list)
    device_ranges: list[tuple[int, int]] = field(default_factory=list)  # merged, sorted
    findings: list[Finding] = field(default_factory=list)
    _device_nodes: dict[str, list[Any]] | None = None
    _current: HazardSpec | None = None
    _seen: set[tuple[str, int]] = field(default_factory=set)
    _macros: dict[str, int] | None = None
    _function_index: tuple[list[int], list[int]] | None = None

    def report(
        self,
        start: int,
        end: int,
        message: str | None = None,
        fix: str | None = None,
        targets: Verdicts | None = None,
        once_per_line: bool = True,
        slug: str | None = None,
    ) -> None:
        """Report the current check's hazard (or the catalogue's `slug`) at start..end."""
        spec = catalogue()[slug] if slug is not None else self._current
        assert spec is not None, "report() called outside a registered check"
        span = self.span(start, end)
        if once_per_line:
            key = (spec.slug, span.line)
            if key in self._seen:
                return
            self._seen.add(key)
        self.findings.append(
            Finding(
                id=spec.id,
                slug=spec.slug,
                severity=spec.severity,
                path=self.path,
                span=span,
                message=message or spec.summary,
                targets=targets or spec.targets,
                help_url=spec.help_url,
                fix=fix or spec.fix,
                function=self.function_at(start),
                fingerprint=line_fingerprint(spec.slug, self.path, self.data, start),
            )
        )

    @property
    def macro_constants(self) -> dict[str, int]:
        """Integer-valued object-like macros defined in this file."""
        if self._macros is None:
            self._macros = (
                {m.group(1).decode(): int(m.group(2), 0) for m in INTEGER_MACRO.finditer(self.data)}
                if b"define" in self.data
                else {}
            )
        return self._macros

    def device_nodes(self, name: str) -> list[Any]:
        """Syntax nodes of one kind (see DEVICE_PATTERNS) inside device code. One query runs
        once per file, restricted to the device functions' byte ranges."""
        if self._device_nodes is None:
            from portcheck.checks.syntax import device_captures

            self._device_nodes = device_captures(self.root, self.device_ranges)
        return self._device_nodes.get(name, [])

    def function_at(self, offset: int) -> str:
        if self._function_index is None:  # once per file, not once per finding
            self._function_index = ([f.start for f in self.functions], nesting(self.functions))
        starts, outer = self._function_index
        i = innermost_function(self.functions, starts, outer, offset)
        return self.functions[i].name if i >= 0 else ""

    def uses_named(self, names: Iterable[str] | Callable[[Use], bool]) -> list[Use]:
        if callable(names):
            return [u for u in self.uses if names(u)]
        wanted = set(names)
        return [u for u in self.uses if u.name in wanted]


Check = Callable[[Context], None]
REGISTRY: dict[str, Check] = {}


def hazard(slug: str) -> Callable[[Check], Check]:
    """Register a check for the catalogue entry `slug`."""

    def register(check: Check) -> Check:
        if slug in REGISTRY:
            raise ValueError(f"two checks registered for {slug!r}")
        REGISTRY[slug] = check
        return check

    return register


def suppressions_in(data: bytes) -> dict[int, frozenset[str] | None]:
    """line -> slugs ignored there (None = all), from `portcheck: ignore[...]` comments.
    A suppression covers its own line and the next one."""
    found: dict[int, frozenset[str] | None] = {}
    if b"portcheck:" not in data:
        return found
    line, counted = 1, 0
    for match in SUPPRESSION.finditer(data):  # lines counted once through, not per match
        line += data.count(b"\n", counted, match.start())
        counted = match.start()
        slugs = (
            frozenset(s.strip() for s in match.group(1).decode().split(",") if s.strip())
            if match.group(1) is not None
            else None
        )
        for target_line in (line, line + 1):
            previous = found.get(target_line, frozenset())
            if slugs is None or previous is None:
                found[target_line] = None
            else:
                found[target_line] = previous | slugs
    return found


def suppressed(
    finding: Finding | PyFinding, suppressions: Mapping[int, frozenset[str] | None]
) -> bool:
    if finding.span.line not in suppressions:
        return False
    slugs = suppressions[finding.span.line]
    return slugs is None or finding.slug in slugs or finding.id in slugs


_all_registered = False  # every check module imported (some may be imported earlier alone)


def run_checks(ctx: Context, ignore: frozenset[str] = frozenset()) -> list[Finding]:
    """Run every registered check on one file; returns its unsuppressed findings."""
    global _all_registered
    if not _all_registered:
        from portcheck.checks import apis, build, device, warp  # noqa: F401  (registers checks)

        _all_registered = True

    specs = catalogue()
    for slug, check in REGISTRY.items():
        if slug in ignore:
            continue
        ctx._current = specs[slug]
        check(ctx)
    ctx._current = None
    suppressions = suppressions_in(ctx.data)
    kept = [f for f in ctx.findings if not suppressed(f, suppressions)]
    kept.sort(key=lambda f: (f.span.start_byte, f.id))
    return kept
