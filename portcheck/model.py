"""The source model: frozen value types passed between pipeline stages.

Nothing here does I/O. Every stage (discover, extract, classify, score, report)
takes and returns these types, so a stage can be tested or replaced alone.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from json.encoder import encode_basestring_ascii
from typing import Any, NamedTuple


class Status(StrEnum):
    """Whether a CUDA construct works on one AMD route."""

    SUPPORTED = "supported"
    PARTIAL = "partial"  # works with changes or behavioural differences
    UNSUPPORTED = "unsupported"
    UNKNOWN = "unknown"


class Target(StrEnum):
    """The three routes from CUDA to AMD."""

    HIP = "hip"  # translate the source, build with hipcc
    ZLUDA = "zluda"  # run the unmodified CUDA binary
    SCALE = "scale"  # compile the CUDA source for AMD with SCALE's nvcc


TARGETS: tuple[Target, ...] = (Target.HIP, Target.ZLUDA, Target.SCALE)


class Severity(IntEnum):
    INFO = 1
    LOW = 2
    MEDIUM = 3
    HIGH = 4


class _FastPickle:
    """Pickle frozen slots dataclasses as (class, field values): the default route
    through dataclasses' __setstate__ costs several times more, and scans send many
    of these between processes and into the cache."""

    __slots__ = ()

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        names: tuple[str, ...] = self.__slots__
        return (self.__class__, tuple(getattr(self, name) for name in names))


class Language(StrEnum):
    CUDA = "cuda"
    CPP = "cpp"
    C = "c"
    CMAKE = "cmake"
    MAKE = "make"
    PYTHON = "python"
    # Python dependency manifests
    REQUIREMENTS = "requirements"  # requirements*.txt, constraints*.txt
    PYPROJECT = "pyproject"  # pyproject.toml
    SETUP_CFG = "setup-cfg"  # setup.cfg
    CONDA = "conda"  # environment.yml
    NOTEBOOK = "notebook"  # Jupyter .ipynb: its code cells are scanned as Python

    @property
    def is_source(self) -> bool:
        """True for languages whose code is parsed for CUDA uses."""
        return self in (Language.CUDA, Language.CPP, Language.C)

    @property
    def is_python(self) -> bool:
        """Python sources and dependency manifests (the Python section of a report)."""
        return self in PYTHON_LANGUAGES


PYTHON_LANGUAGES = frozenset(
    {
        Language.PYTHON,
        Language.REQUIREMENTS,
        Language.PYPROJECT,
        Language.SETUP_CFG,
        Language.CONDA,
        Language.NOTEBOOK,
    }
)


class Route(StrEnum):
    """The routes for Python code (the Python section of a report)."""

    ROCM = "rocm"  # ROCm builds of PyTorch and ROCm wheels of GPU packages (Linux)
    DIRECTML = "directml"  # torch-directml: Windows/WSL, any DirectX 12 GPU


ROUTES: tuple[Route, ...] = (Route.ROCM, Route.DIRECTML)

# Translation engines: portcheck's own, and HIPIFY's two tools run as subprocesses.
ENGINES = ("builtin", "hipify-perl", "hipify-clang")


class Span(NamedTuple):
    """A region of a file: 1-based lines and columns (columns count characters),
    plus the byte offsets into the UTF-8 text that was parsed.

    A named tuple rather than a frozen dataclass: a scan makes one per use (tens of
    thousands), and a frozen dataclass costs about three times as much to build and to
    unpickle."""

    line: int
    column: int
    end_line: int
    end_column: int
    start_byte: int
    end_byte: int


@dataclass(frozen=True, slots=True)
class Verdicts(_FastPickle):
    """One status per target."""

    hip: Status
    zluda: Status
    scale: Status

    def __getitem__(self, target: str) -> Status:
        value: Status = getattr(self, target)  # Target is a StrEnum: its value is the field name
        return value

    def to_dict(self) -> dict[str, str]:
        return {"hip": str(self.hip), "zluda": str(self.zluda), "scale": str(self.scale)}


UNKNOWN_VERDICTS = Verdicts(Status.UNKNOWN, Status.UNKNOWN, Status.UNKNOWN)


@dataclass(frozen=True, slots=True)
class RouteVerdicts(_FastPickle):
    """One status per Python route."""

    rocm: Status
    directml: Status

    def __getitem__(self, route: str) -> Status:
        value: Status = getattr(self, route)
        return value

    def to_dict(self) -> dict[str, str]:
        return {"rocm": str(self.rocm), "directml": str(self.directml)}


UNKNOWN_ROUTES = RouteVerdicts(Status.UNKNOWN, Status.UNKNOWN)


@dataclass(frozen=True, slots=True)
class PyRule(_FastPickle):
    """What a Python package or API does on each Python route, and the source of that."""

    name: str  # a normalised package name (`cupy-cuda12x`) or a dotted API (`torch.version.cuda`)
    kind: str  # "package" or "api"
    match: str  # "exact" or "prefix" (packages: `nvidia-` covers every NVIDIA runtime wheel)
    status: RouteVerdicts  # for a dependency: in the releases its requirement admits
    note: str
    source: str
    replacement: str | None = None
    gaps: tuple[str, ...] = ()  # what the ROCm build is known to lack, each with its source
    # (route, why) for each Python route that cannot serve a project using it at all
    # (a CUDA-only kernel library on DirectML): the route gets no score, only the reason.
    not_applicable: tuple[tuple[str, str], ...] = ()

    def blocks(self, route: str) -> str | None:
        """Why `route` cannot serve a project that uses this, or None."""
        return next((why for name, why in self.not_applicable if name == route), None)

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "match": self.match,
            "status": self.status.to_dict(),
            "replacement": self.replacement,
            "note": self.note,
            "source": self.source,
            "gaps": list(self.gaps),
        }


@dataclass(frozen=True, slots=True)
class Dependency(_FastPickle):
    """One requirement in a dependency manifest."""

    name: str  # normalised (PEP 503): lower case, runs of `-_.` as `-`
    spec: str  # as written (`cupy-cuda12x>=13`)
    path: str
    line: int
    manifest: Language
    rule: PyRule | None

    @property
    def status(self) -> RouteVerdicts:
        return self.rule.status if self.rule else UNKNOWN_ROUTES

    def to_dict(self) -> dict[str, object]:
        rule = self.rule
        return {
            "name": self.name,
            "spec": self.spec,
            "path": self.path,
            "line": self.line,
            "manifest": str(self.manifest),
            "status": self.status.to_dict(),
            "replacement": rule.replacement if rule else None,
            "note": rule.note if rule else "not in portcheck's package list",
            "source": rule.source if rule else None,
            "gaps": list(rule.gaps) if rule else [],
        }


@dataclass(frozen=True, slots=True)
class PyUse(_FastPickle):
    """One use of a GPU-related Python API (`torch.cuda.is_available`)."""

    name: str  # the dotted name, with import aliases resolved
    path: str
    span: Span
    rule: PyRule  # the rule of the longest known prefix

    @property
    def status(self) -> RouteVerdicts:
        return self.rule.status

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "api": self.rule.name,
            "path": self.path,
            "line": self.span.line,
            "column": self.span.column,
            "status": self.status.to_dict(),
            "note": self.rule.note,
            "source": self.rule.source,
        }


@dataclass(frozen=True, slots=True)
class PyFinding(_FastPickle):
    """A Python-level problem on a Python route (`torch.version.cuda` is None on ROCm)."""

    id: str
    slug: str
    severity: Severity
    path: str
    span: Span
    message: str
    targets: RouteVerdicts
    help_url: str = ""
    fix: str = ""
    fingerprint: str = ""

    def to_dict(self) -> dict[str, object]:
        return {**_finding_fields(self), "fingerprint": self.fingerprint}


@dataclass(frozen=True, slots=True)
class Extension(_FastPickle):
    """CUDA code a Python file builds or compiles at run time: a CUDAExtension or
    `cpp_extension.load` (its .cu sources), or a CuPy/`load_inline` kernel string."""

    kind: str  # "CUDAExtension", "load", "load_inline", "RawKernel", …
    path: str
    line: int
    sources: tuple[str, ...] = ()  # files it names, relative to the root when found
    missing: tuple[str, ...] = ()  # files it names that are not in the scanned tree
    scanned_lines: int = 0  # lines of an inline kernel string scanned as CUDA

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "path": self.path,
            "line": self.line,
            "sources": list(self.sources),
            "missing": list(self.missing),
            "scanned_lines": self.scanned_lines,
        }


# ApiRule's fields that an entry may leave out (in rules/*.yaml, JSON and the cache).
OPTIONAL_RULE_FIELDS = (
    "since",
    "deprecated",
    "removed",
    "notes",
    "hip_added",
    "hip_deprecated",
    "hip_removed",
)


@dataclass(frozen=True, slots=True)
class ApiRule:
    """What one CUDA name becomes on each route, and where that fact came from."""

    cuda: str
    family: str
    kind: str
    hip: str | None
    status: Verdicts
    source: Mapping[str, str]  # target -> provenance ("ROCm/HIPIFY@sha path" or "inferred: …")
    since: str | None = None
    deprecated: str | None = None
    removed: str | None = None
    notes: str | None = None
    # ROCm releases ("6.2.0") from HIPIFY's tables, checked against HIP's headers at
    # release tags; a name with no hip_added is in every release the rule set tells apart
    hip_added: str | None = None
    hip_deprecated: str | None = None
    hip_removed: str | None = None
    experimental: bool = False  # HIPIFY marks the HIP equivalent experimental
    # target -> where its status came from: "source", "derived:<rule>" or "default"
    # (tools/build_rules.py); None for a rule file that does not record it
    origin: Mapping[str, str] | None = None

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "cuda": self.cuda,
            "family": self.family,
            "kind": self.kind,
            "hip": self.hip,
            "status": self.status.to_dict(),
            "source": dict(self.source),
        }
        for key in OPTIONAL_RULE_FIELDS:
            value = getattr(self, key)
            if value:
                data[key] = value
        data["hip_versions"] = {
            "added": self.hip_added,
            "deprecated": self.hip_deprecated,
            "removed": self.hip_removed,
        }
        data["experimental"] = self.experimental
        if self.origin is not None:
            data["origin"] = dict(self.origin)
        return data


class Use(NamedTuple):
    """One occurrence of a CUDA construct in code.

    `rule` is None when the name looks like CUDA but the rule set does not know it;
    such uses have status `unknown` on every target. A named tuple, like Span: a scan
    makes tens of thousands, in the workers and again in the parent (see engine).
    """

    name: str
    kind: str
    family: str
    path: str
    span: Span
    in_device_code: bool
    rule: ApiRule | None

    @property
    def status(self) -> Verdicts:
        return self.rule.status if self.rule else UNKNOWN_VERDICTS

    @property
    def hip(self) -> str | None:
        return self.rule.hip if self.rule else None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "family": self.family,
            "path": self.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "in_device_code": self.in_device_code,
            "hip": self.hip,
            "status": self.status.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class Kernel(_FastPickle):
    """A `__global__` function definition."""

    name: str
    path: str
    span: Span
    findings: tuple[str, ...] = ()  # slugs of the findings in code this kernel reaches

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "path": self.path,
            "line": self.span.line,
            "findings": len(self.findings),
            "slugs": sorted(set(self.findings)),
        }


@dataclass(frozen=True, slots=True)
class Finding(_FastPickle):
    """A problem that renaming cannot fix (filled in by the hazard checks)."""

    id: str
    slug: str
    severity: Severity
    path: str
    span: Span
    message: str
    targets: Verdicts
    help_url: str = ""
    fix: str = ""
    function: str = ""  # the enclosing function, if any
    kernels: tuple[str, ...] = ()  # kernels that reach this code (call graph)
    # Stable across edits elsewhere in the file: hazard, file and the line's own text.
    fingerprint: str = ""
    # In NVIDIA-only code whose conditional already has an AMD path: no HIP score or effort.
    amd_alternative: bool = False
    # The build switch this code is compiled only with (`GGML_USE_NCCL`): an optional
    # component, costed apart from what every build needs; "" for mandatory code.
    optional: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            **_finding_fields(self),
            "function": self.function,
            "kernels": list(self.kernels),
            "fingerprint": self.fingerprint,
            "amd_alternative": self.amd_alternative,
            "optional": self.optional or None,
        }


@dataclass(frozen=True, slots=True)
class AmdPath(_FastPickle):
    """A preprocessor branch that only a build for AMD GPUs takes (the project's own port)."""

    path: str
    start_line: int
    end_line: int
    guard: str  # the directive that opens it, e.g. `#ifdef USE_ROCM`

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "guard": self.guard,
        }


def _finding_fields(finding: Finding | PyFinding) -> dict[str, object]:
    """The JSON fields CUDA and Python findings share."""
    return {
        "id": finding.id,
        "slug": finding.slug,
        "severity": finding.severity.name.lower(),
        "path": finding.path,
        "line": finding.span.line,
        "column": finding.span.column,
        "message": finding.message,
        "targets": finding.targets.to_dict(),
        "help_url": finding.help_url,
        "fix": finding.fix,
    }


@dataclass(frozen=True, slots=True)
class Skipped(_FastPickle):
    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class FileSummary:
    """One scanned file and what was found in it."""

    path: str
    language: Language
    lines: int
    encoding: str
    uses: int
    findings: int
    parse_errors: int
    scores: Mapping[str, int | None]  # None: nothing in the file to score (no CUDA)
    front_end: str = "tree-sitter"  # which front end decided this file's findings

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "language": str(self.language),
            "lines": self.lines,
            "encoding": self.encoding,
            "uses": self.uses,
            "findings": self.findings,
            "parse_errors": self.parse_errors,
            "front_end": self.front_end,
            "scores": dict(self.scores),
        }


@dataclass(frozen=True, slots=True)
class EffortCategory:
    """The work items of one kind (rename-only, review, rewrite) on one route, and their hours."""

    items: int
    hours: float

    def to_dict(self) -> dict[str, object]:
        return {"items": self.items, "hours": self.hours}


@dataclass(frozen=True, slots=True)
class Effort:
    """The effort estimate of one route (docs/scoring.md): items and hours per category, in
    the order rename-only, review, rewrite, and the total."""

    categories: Mapping[str, EffortCategory]
    total_hours: float

    def to_dict(self) -> dict[str, object]:
        return {
            "categories": {name: c.to_dict() for name, c in self.categories.items()},
            "total_hours": self.total_hours,
        }


@dataclass(frozen=True, slots=True)
class WorkItems:
    """What one route's score and effort were computed from (docs/scoring.md): the work
    items (each distinct CUDA name, each hazard kind per file) counted by their status on
    the route. Only what was scored: not what sits in NVIDIA-only code with an AMD path."""

    names: Mapping[Status, int]
    hazards: Mapping[Status, int]

    @property
    def total(self) -> int:
        return sum(self.names.values()) + sum(self.hazards.values())


@dataclass(frozen=True, slots=True)
class RouteBlocker:
    """A work item that stops a route outright (ZLUDA: a CUDA API or feature the unmodified
    binary needs that ZLUDA does not implement), with the place it is first used."""

    kind: str  # "name" or "hazard"
    name: str  # the CUDA name, or the hazard's slug
    path: str
    line: int
    reason: str

    def to_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "name": self.name,
            "path": self.path,
            "line": self.line,
            "reason": self.reason,
        }


# A route's verdict: what a lead needs before any number (docs/scoring.md).
VERDICT_NAMES = ("ready", "needs-work", "blocked", "not-applicable", "nothing-to-score")


@dataclass(frozen=True, slots=True)
class RouteAssessment:
    """What one route needs, as its own model says (docs/scoring.md): the verdict, the
    coverage (mean credit of the route's work items; the score unless blocked) and what
    blocks it. Optional components are not in it (see OptionalComponent)."""

    verdict: str  # one of VERDICT_NAMES
    coverage: int | None  # None: not applicable, or nothing to score
    blockers: tuple[RouteBlocker, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {
            "verdict": self.verdict,
            "coverage": self.coverage,
            "blockers": [b.to_dict() for b in self.blockers],
        }


@dataclass(frozen=True, slots=True)
class OptionalCost:
    """What enabling an optional component adds on one route."""

    hours: float
    blockers: tuple[RouteBlocker, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"hours": self.hours, "blockers": [b.to_dict() for b in self.blockers]}


@dataclass(frozen=True, slots=True)
class OptionalComponent:
    """Code compiled only when the build defines a switch (`#ifdef GGML_USE_NCCL`): not
    in the routes' scores, reported with what it costs if enabled."""

    guard: str  # the macro the build defines to enable it
    paths: tuple[str, ...]  # the files it has code in
    names: tuple[str, ...]  # CUDA names used only there
    findings: int
    if_enabled: Mapping[str, OptionalCost]  # per route

    def to_dict(self) -> dict[str, object]:
        return {
            "guard": self.guard,
            "paths": list(self.paths),
            "names": list(self.names),
            "findings": self.findings,
            "if_enabled": {route: cost.to_dict() for route, cost in self.if_enabled.items()},
        }


@dataclass(frozen=True, slots=True)
class WheelAdvice:
    """Where the ROCm build of PyTorch comes from for the ROCm release a report judges for
    (download.pytorch.org/whl/rocmX.Y), and what that means for the project's torch pin."""

    rocm: str  # the ROCm release judged for ("7.0")
    index_url: str | None  # the PyTorch wheel index of that release; None when it has none
    torch: tuple[str, ...]  # the torch releases that index serves ("2.10",)
    requirement: str  # the project's torch requirement as written ("" when it names none)
    command: str  # the install line that fits both, or "" when none does
    note: str  # what to change, in words
    amd_validated: tuple[str, ...] = ()  # PyTorch versions AMD's matrix lists for the release
    source: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "rocm": self.rocm,
            "index_url": self.index_url,
            "torch": list(self.torch),
            "requirement": self.requirement,
            "command": self.command,
            "note": self.note,
            "amd_validated": list(self.amd_validated),
            "source": self.source,
        }


def _same_entry(entry: dict[str, object]) -> dict[str, object]:
    return entry


@dataclass(frozen=True, slots=True)
class PythonSection:
    """What a scan found in Python code, notebooks and dependency manifests, judged per
    Python route."""

    dependencies: tuple[Dependency, ...]
    uses: tuple[PyUse, ...]
    findings: tuple[PyFinding, ...]
    extensions: tuple[Extension, ...]
    # None: nothing to judge on any Python route, or a route that cannot serve the project
    # at all (its reason is in `not_applicable`, and it has no effort estimate).
    scores: Mapping[str, int | None]
    effort: Mapping[str, Effort]
    files: int  # Python files, notebooks and manifests read
    kernels: tuple[Kernel, ...] = ()  # GPU kernels written in Python (`@triton.jit`)
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    rocm_wheels: WheelAdvice | None = None  # where ROCm PyTorch comes from, for the target

    @property
    def unknown_packages(self) -> int:
        return len({d.name for d in self.dependencies if d.rule is None})

    def to_dict(
        self, place: Callable[[dict[str, object]], dict[str, object]] = _same_entry
    ) -> dict[str, object]:
        """The `python` object of the JSON document; `place` adds a notebook entry's cell
        (Report.placed)."""
        return {
            "routes": [str(r) for r in ROUTES],
            "files": self.files,
            "scores": dict(self.scores),
            "not_applicable": dict(self.not_applicable),
            "effort": {route: e.to_dict() for route, e in self.effort.items()},
            "unknown_packages": self.unknown_packages,
            "rocm_wheels": self.rocm_wheels.to_dict() if self.rocm_wheels else None,
            "dependencies": [place(d.to_dict()) for d in self.dependencies],
            "usages": [place(u.to_dict()) for u in self.uses],
            "findings": [place(f.to_dict()) for f in self.findings],
            "extensions": [place(e.to_dict()) for e in self.extensions],
            "kernels": [place(k.to_dict()) for k in self.kernels],
        }


# -- compile results (portcheck.compile fills them in; `scan --compile` puts them in a Report)

COMPILE_SCHEMA = "portcheck.compile/1"
# Failures that say nothing about the code: the toolchain or the machine lacks something.
# `scan --compile` fails the run only for the other classes.
ENVIRONMENT_CLASSES = frozenset(
    {"missing-library", "missing-dependency", "unsupported-target", "rocm-version", "timeout"}
)


@dataclass(frozen=True)
class Toolchain:
    """The hipcc a compile run used."""

    hipcc: str
    version: str
    archs: frozenset[str]  # gfx targets its device libraries support
    rocm: tuple[int, ...] | None = None  # the ROCm release of its HIP headers, e.g. (5, 2)

    def to_dict(self) -> dict[str, object]:
        return {"path": self.hipcc, "version": self.version}


# Diagnostic and CompileResult are not frozen: portcheck.compile maps each diagnostic back
# to the CUDA line and classifies each failure in place, as it learns about them.
@dataclass
class Diagnostic:
    line: int
    column: int
    severity: str
    message: str
    path: str = ""  # the original CUDA file (relative), when the diagnostic maps to one
    source_line: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "severity": self.severity,
            "message": self.message,
            "source_line": self.source_line,
        }


@dataclass
class CompileResult:
    """One translation unit built for one gfx target."""

    path: str
    arch: str
    ok: bool
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)
    # "", untranslated-cuda, missing-library, missing-dependency, rocm-version, port-problem,
    # hip-api-difference, unsupported-target, timeout, other
    failure_class: str = ""
    explanation: str = ""
    finding_ids: list[str] = field(default_factory=list)
    cached: bool = False

    @property
    def code_failure(self) -> bool:
        """Failed for a reason in the code (not a missing library, an old ROCm, a target
        the toolchain lacks or a timeout)."""
        return not self.ok and self.failure_class not in ENVIRONMENT_CLASSES

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "arch": self.arch,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "class": self.failure_class,
            "explanation": self.explanation,
            "findings": self.finding_ids,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompileResult:
        """A result read back from the cache; TypeError/KeyError/ValueError if malformed."""
        return cls(
            path=str(data["path"]),
            arch=str(data["arch"]),
            ok=bool(data["ok"]),
            seconds=float(data["seconds"]),
            diagnostics=[Diagnostic(**d) for d in data["diagnostics"]],
            failure_class=str(data["class"]),
            explanation=str(data["explanation"]),
            finding_ids=[str(i) for i in data["findings"]],
            cached=True,
        )


@dataclass
class CompileReport:
    """A compile run: the toolchain, every unit's result, and what was not compiled."""

    toolchain: Toolchain
    results: list[CompileResult]
    skipped: list[Skipped] = field(default_factory=list)
    databases: list[str] = field(default_factory=list)  # compile_commands.json files used
    warnings: list[str] = field(default_factory=list)  # for the user, on stderr

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": COMPILE_SCHEMA,
            "hipcc": self.toolchain.to_dict(),
            "results": [r.to_dict() for r in self.results],
            "skipped": [s.to_dict() for s in self.skipped],
        }


@dataclass(frozen=True, slots=True)
class CellStart(_FastPickle):
    """Where one code cell of a notebook sits in the text portcheck scanned for it (its
    code cells joined, portcheck.python.notebooks): positions in a notebook are lines of
    that text, and a report turns them into a cell and a line within it."""

    cell: int  # 1-based, counting every cell of the notebook (markdown cells too)
    line: int  # the line of the scanned text that is the cell's first line
    raw_line: int = 0  # the .ipynb file's line holding that first line (0: not known)


def locate_in_cells(cells: Sequence[CellStart], line: int) -> tuple[int, int, int]:
    """(cell, line within the cell, line of the .ipynb file or 0) of a line of a
    notebook's scanned text."""
    index = bisect.bisect_right([c.line for c in cells], line) - 1
    if index < 0:
        return (0, line, 0)
    start = cells[index]
    within = line - start.line + 1
    return (start.cell, within, start.raw_line + within - 1 if start.raw_line else 0)


@dataclass(frozen=True, slots=True)
class Excerpt:
    """Consecutive lines of a scanned file around findings, as the reports that show code
    print them (portcheck.excerpts reads them). Not part of the JSON document."""

    path: str
    start_line: int  # the 1-based number of lines[0]
    lines: tuple[str, ...]

    def around(self, line: int, context: int) -> list[tuple[int, str]]:
        """(number, text) of the lines within `context` of `line` that this excerpt has."""
        first = max(self.start_line, line - context)
        last = min(self.start_line + len(self.lines) - 1, line + context)
        return [(n, self.lines[n - self.start_line]) for n in range(first, last + 1)]


@dataclass(frozen=True, slots=True)
class ReportTarget:
    """The ROCm release and AMD GPU a report judged for (portcheck.target makes it)."""

    rocm: str | None = None  # None: the newest release the rule set knows
    gpu: str | None = None  # the gfx target; None: any AMD GPU
    gpu_name: str = ""  # as messages name it: "MI300A (gfx942)"
    wavefront: int | None = None  # the width HIP code runs at on that GPU by default

    def to_dict(self) -> dict[str, object]:
        return {"rocm": self.rocm, "gpu": self.gpu, "wavefront": self.wavefront}

    def sentence(self) -> str:
        """The headline every format prints."""
        release = f"ROCm {self.rocm}" if self.rocm else "the newest ROCm"
        gpu = self.gpu_name or "any AMD GPU (wave64 and wave32)"
        wave = f", {self.wavefront}-wide wavefronts" if self.wavefront else ""
        return f"Target: {release} on {gpu}{wave}."


@dataclass(frozen=True, slots=True)
class Counts:
    """What a scan counted, as every report format states it (the JSON summary's first
    fields, in its order)."""

    files_scanned: int
    files_skipped: int
    lines: int
    uses: int
    distinct_names: int
    unknown_names: int  # distinct CUDA-looking names the rule set does not know
    findings: int
    files_with_parse_errors: int
    kernels: int
    amd_paths: int
    amd_alternative_findings: int  # in NVIDIA-only code that has an AMD path: not scored

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Report:
    """Everything one scan found. `to_json()` gives the `portcheck.report/1` document."""

    root: str  # as the user named it (a folder or a file)
    tool_version: str
    targets: tuple[Target, ...]
    files: tuple[FileSummary, ...]
    uses: tuple[Use, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    kernels: tuple[Kernel, ...]
    scores: Mapping[str, int | None]  # None: nothing to score (no CUDA found)
    effort: Mapping[str, Effort] = field(default_factory=dict)
    seconds: float = 0.0
    python: PythonSection | None = None  # when the tree has Python code or manifests
    amd_paths: tuple[AmdPath, ...] = ()  # branches only an AMD build takes
    # The folder every path is relative to, as an absolute file: URI ending in "/"; "" when
    # unknown. For SARIF's SRCROOT; not in the JSON document.
    root_uri: str = ""
    excerpts: tuple[Excerpt, ...] = ()  # the source around the findings (not in the JSON)
    work_items: Mapping[str, WorkItems] = field(default_factory=dict)  # (not in the JSON)
    # With --compile: each unit built for each gfx target, and the hipcc that built them.
    compile_results: tuple[CompileResult, ...] = ()
    toolchain: Toolchain | None = None
    # With --baseline: the positions in `findings` of those the baseline does not have.
    new_finding_indices: tuple[int, ...] | None = None
    target: ReportTarget = ReportTarget()
    # Routes that cannot serve the chosen GPU (score None), each with the reason.
    not_applicable: Mapping[str, str] = field(default_factory=dict)
    # Per route: its verdict, coverage and blockers (docs/scoring.md).
    routes: Mapping[str, RouteAssessment] = field(default_factory=dict)
    optional: tuple[OptionalComponent, ...] = ()  # components behind a build switch
    # Per route: effort hours by folder (score.directory_of), most first.
    effort_by_directory: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    # Names used only in NVIDIA-only code that has an AMD path: no work on HIP (not in the JSON).
    alternative_names: frozenset[str] = frozenset()
    # Each scanned notebook's code cells, where they sit in the text that was scanned:
    # positions in a notebook are lines of that text until a report shows them.
    notebooks: Mapping[str, tuple[CellStart, ...]] = field(default_factory=dict)

    def locate(self, path: str, line: int) -> tuple[int | None, int]:
        """(cell, line within it) of a position in a notebook; (None, line) elsewhere."""
        cells = self.notebooks.get(path)
        if not cells:
            return (None, line)
        cell, within, _ = locate_in_cells(cells, line)
        return (cell, within)

    def where(self, path: str, line: int) -> str:
        """`path:line`, or `nb.ipynb:cell 3:2` in a notebook, as every format shows it."""
        return Report.where_in(self.notebooks, path, line)

    @staticmethod
    def where_in(notebooks: Mapping[str, tuple[CellStart, ...]], path: str, line: int) -> str:
        cells = notebooks.get(path)
        if not cells:
            return f"{path}:{line}"
        cell, within, _ = locate_in_cells(cells, line)
        return f"{path}:cell {cell}:{within}"

    def placed(self, entry: dict[str, object]) -> dict[str, object]:
        """A JSON entry (with "path" and "line") as the document states it: in a notebook,
        `cell` (1-based, counting every cell) and `line` within that cell."""
        path, line = entry.get("path"), entry.get("line")
        cells = self.notebooks.get(path) if isinstance(path, str) else None
        if not cells or not isinstance(line, int):
            return entry
        cell, within, _ = locate_in_cells(cells, line)
        end = entry.get("end_line")
        if isinstance(end, int):
            entry["end_line"] = end - line + within
        entry["line"] = within
        entry["cell"] = cell
        return entry

    @property
    def lines(self) -> int:
        return sum(f.lines for f in self.files)

    @property
    def distinct_names(self) -> int:
        return len({u.name for u in self.uses})

    @property
    def unknown_names(self) -> int:
        """Distinct CUDA-looking names the rule set does not know."""
        return len({u.name for u in self.uses if u.rule is None})

    @property
    def parse_error_files(self) -> tuple[FileSummary, ...]:
        """The files whose parse had errors (their findings may be incomplete), by path."""
        return tuple(sorted((f for f in self.files if f.parse_errors), key=lambda f: f.path))

    @property
    def new_findings(self) -> tuple[Finding, ...] | None:
        """With --baseline: the findings the baseline does not have; else None."""
        if self.new_finding_indices is None:
            return None
        return tuple(self.findings[i] for i in self.new_finding_indices)

    def counts(self) -> Counts:
        return Counts(
            files_scanned=len(self.files),
            files_skipped=len(self.skipped),
            lines=self.lines,
            uses=len(self.uses),
            distinct_names=self.distinct_names,
            unknown_names=self.unknown_names,
            findings=len(self.findings),
            files_with_parse_errors=len(self.parse_error_files),
            kernels=len(self.kernels),
            amd_paths=len(self.amd_paths),
            amd_alternative_findings=sum(1 for f in self.findings if f.amd_alternative),
        )

    # -- the portcheck.report/1 document (the Interfaces contract in DESIGN.md)

    def document_head(self, counts: Counts | None = None) -> dict[str, object]:
        """The document's fields before its lists: schema, tool, root, targets, summary."""
        summary: dict[str, object] = {
            **(counts or self.counts()).to_dict(),
            "scores": dict(self.scores),
            "effort": {target: e.to_dict() for target, e in self.effort.items()},
            "seconds": round(self.seconds, 3),
            "not_applicable": dict(self.not_applicable),
            "routes": {route: r.to_dict() for route, r in self.routes.items()},
            "optional": [component.to_dict() for component in self.optional],
            "effort_by_directory": {
                route: dict(hours) for route, hours in self.effort_by_directory.items()
            },
        }
        if self.new_finding_indices is not None:
            summary["new_findings"] = len(self.new_finding_indices)
        return {
            "schema": REPORT_SCHEMA,
            "tool": {"name": "portcheck", "version": self.tool_version},
            "root": self.root,
            "targets": [str(t) for t in self.targets],
            "target": self.target.to_dict(),
            "summary": summary,
        }

    def document_lists(self) -> dict[str, Iterator[object]]:
        """The document's lists, each entry made as it is asked for."""
        lists: dict[str, Iterator[object]] = {
            "files": (f.to_dict() for f in self.files),
            "usages": (self.placed(u.to_dict()) for u in self.uses),
            "findings": self._finding_dicts(),
            "kernels": (self.placed(k.to_dict()) for k in self.kernels),
            "skipped": (s.to_dict() for s in self.skipped),
            "amd_paths": (p.to_dict() for p in self.amd_paths),
        }
        if self.compile_results:
            lists["compile"] = (r.to_dict() for r in self.compile_results)
        return lists

    def _finding_dicts(self) -> Iterator[dict[str, object]]:
        if self.new_finding_indices is None:
            yield from (self.placed(f.to_dict()) for f in self.findings)
            return
        new = set(self.new_finding_indices)
        for index, finding in enumerate(self.findings):
            yield {**self.placed(finding.to_dict()), "new": index in new}

    def document_tail(self) -> dict[str, object]:
        """The document's fields after its lists: the hipcc of --compile, the Python section."""
        tail: dict[str, object] = {}
        if self.compile_results:
            tail["hipcc"] = self.toolchain.to_dict() if self.toolchain else {}
        if self.python is not None:
            tail["python"] = self.python.to_dict(self.placed)
        return tail

    def to_dict(self) -> dict[str, object]:
        """The `portcheck.report/1` document as plain data."""
        document = self.document_head()
        document.update({key: list(items) for key, items in self.document_lists().items()})
        document.update(self.document_tail())
        return document

    def iter_json(self) -> Iterator[str]:
        """The document as text pieces, as `portcheck scan --format json` writes it: the
        head indented, list entries one per line. One list entry at a time, so that a
        report on a million lines is written without holding it all twice. ASCII: every
        other character is a JSON escape, so no path reaches a terminal or a log raw."""
        yield "{"
        first = True
        for key, value in self.document_head().items():
            text = json.dumps(value, indent=2).replace("\n", "\n  ")
            yield ("" if first else ",") + f"\n  {json.dumps(key)}: {text}"
            first = False
        for key, items in self.document_lists().items():
            yield f",\n  {json.dumps(key)}: ["
            encoded = (
                _encoded_uses(self.uses, self.placed if self.notebooks else None)
                if key == "usages"
                else map(_encode, items)
            )
            yield from _json_list_body(encoded)
        for key, value in self.document_tail().items():
            text = json.dumps(value) if key == "hipcc" else json.dumps(value, indent=2)
            yield f",\n  {json.dumps(key)}: " + text.replace("\n", "\n  ")
        yield "\n}\n"

    def to_json(self) -> str:
        """The `portcheck.report/1` document, as `portcheck scan --format json` writes it."""
        return "".join(self.iter_json())


REPORT_SCHEMA = "portcheck.report/1"
_encode = json.JSONEncoder().encode  # built once: json.dumps rebuilds it per call
_JSON_BATCH = 512  # list entries per piece of text


def _json_list_body(encoded: Iterable[str]) -> Iterator[str]:
    """The entries of a list, one per line, in batches; then the closing bracket."""
    empty = True
    batch: list[str] = []
    for item in encoded:
        batch.append(item)
        if len(batch) == _JSON_BATCH:
            yield ("\n    " if empty else ",\n    ") + ",\n    ".join(batch)
            empty = False
            batch.clear()
    if batch:
        yield ("\n    " if empty else ",\n    ") + ",\n    ".join(batch)
        empty = False
    yield "]" if empty else "\n  ]"


def _encoded_uses(
    uses: Iterable[Use], place: Callable[[dict[str, object]], dict[str, object]] | None = None
) -> Iterator[str]:
    """Each use as `_encode(use.to_dict())` would write it, built directly: a report has
    tens of thousands of uses, and most of each entry is shared with other uses (the
    name, kind, family and path; the hip name and statuses of one rule), so those parts
    are encoded once each. `place`: given when uses may sit in notebooks (Report.placed)."""
    tails: dict[int, str] = {}
    heads: dict[tuple[str, str, str, str], str] = {}
    string = encode_basestring_ascii
    for use in uses:
        name, kind, family, path, span, device, rule = use
        if place is not None and path.endswith(".ipynb"):
            yield _encode(place(use.to_dict()))
            continue
        tail = tails.get(id(rule))
        if tail is None:
            data = use.to_dict()
            tail = tails[id(rule)] = _encode({"hip": data["hip"], "status": data["status"]})[1:]
        key = (name, kind, family, path)
        head = heads.get(key)
        if head is None:
            head = heads[key] = (
                f'{{"name": {string(name)}, "kind": {string(kind)}, '
                f'"family": {string(family)}, "path": {string(path)}, '
            )
        line, column, end_line, end_column = span[:4]
        yield (
            f'{head}"line": {line}, "column": {column}, "end_line": {end_line}, '
            f'"end_column": {end_column}, "in_device_code": {"true" if device else "false"}, {tail}'
        )
