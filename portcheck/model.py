"""The source model: frozen value types passed between pipeline stages.

Nothing here does I/O. Every stage (discover, extract, classify, score, report)
takes and returns these types, so a stage can be tested or replaced alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import IntEnum, StrEnum
from typing import NamedTuple


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
        names: tuple[str, ...] = self.__slots__  # type: ignore[attr-defined]
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

    @property
    def is_source(self) -> bool:
        """True for languages whose code is parsed for CUDA uses."""
        return self in (Language.CUDA, Language.CPP, Language.C)

    @property
    def is_python(self) -> bool:
        """Python sources and dependency manifests (the Python section of a report)."""
        return self in PYTHON_LANGUAGES


PYTHON_LANGUAGES = frozenset(
    {Language.PYTHON, Language.REQUIREMENTS, Language.PYPROJECT, Language.SETUP_CFG, Language.CONDA}
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
    status: RouteVerdicts
    note: str
    source: str
    replacement: str | None = None

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "kind": self.kind,
            "match": self.match,
            "status": self.status.to_dict(),
            "replacement": self.replacement,
            "note": self.note,
            "source": self.source,
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
    hip_added: str | None = None  # ROCm releases, read from HIP's headers at release tags
    hip_deprecated: str | None = None
    hip_removed: str | None = None

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
    # In NVIDIA-only code whose conditional already has an AMD path: no score, no effort.
    amd_alternative: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            **_finding_fields(self),
            "function": self.function,
            "kernels": list(self.kernels),
            "fingerprint": self.fingerprint,
            "amd_alternative": self.amd_alternative,
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
    scores: Mapping[str, int]
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
class PythonSection:
    """What a scan found in Python code and dependency manifests, judged per Python route."""

    dependencies: tuple[Dependency, ...]
    uses: tuple[PyUse, ...]
    findings: tuple[PyFinding, ...]
    extensions: tuple[Extension, ...]
    scores: Mapping[str, int]
    effort: Mapping[str, Mapping[str, object]]
    files: int  # Python files and manifests read

    @property
    def unknown_packages(self) -> int:
        return len({d.name for d in self.dependencies if d.rule is None})

    def to_dict(self) -> dict[str, object]:
        return {
            "routes": [str(r) for r in ROUTES],
            "files": self.files,
            "scores": dict(self.scores),
            "effort": {r: dict(e) for r, e in self.effort.items()},
            "unknown_packages": self.unknown_packages,
            "dependencies": [d.to_dict() for d in self.dependencies],
            "usages": [u.to_dict() for u in self.uses],
            "findings": [f.to_dict() for f in self.findings],
            "extensions": [e.to_dict() for e in self.extensions],
        }


@dataclass(frozen=True, slots=True)
class Report:
    """Everything one scan found. `to_json()` gives the `portcheck.report/1` document."""

    root: str
    tool_version: str
    targets: tuple[Target, ...]
    files: tuple[FileSummary, ...]
    uses: tuple[Use, ...]
    findings: tuple[Finding, ...]
    skipped: tuple[Skipped, ...]
    kernels: tuple[Kernel, ...]
    scores: Mapping[str, int | None]  # None: nothing to score (no CUDA found)
    effort: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    compile_results: tuple[object, ...] = ()  # portcheck.compile.CompileResult, with --compile
    seconds: float = 0.0
    extra: Mapping[str, object] = field(default_factory=dict)
    python: PythonSection | None = None  # when the tree has Python code or manifests
    amd_paths: tuple[AmdPath, ...] = ()  # branches only an AMD build takes

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

    def to_dict(self) -> dict[str, object]:
        from portcheck.report.json import report_to_dict

        return report_to_dict(self)

    def to_json(self) -> str:
        """The `portcheck.report/1` document, as `portcheck scan --format json` writes it."""
        from portcheck.report.json import render_json

        return render_json(self)
