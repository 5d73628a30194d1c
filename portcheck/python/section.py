"""The Python section of a report, assembled from the files' scans and the target.

Owns what the Python routes say about the whole project:
- the findings as the target judges them (a 32-wide warp count is right on RDNA, TF32
  in `tl.dot` on MI300; portcheck.target);
- the routes that cannot serve the project at all: a CUDA extension, a Triton kernel or a
  CUDA-only kernel library on DirectML. Such a route gets no score and no effort, only
  the reason (`not_applicable`), because hours to port something that cannot run there
  would be a false promise;
- scores and effort over the work items (docs/scoring.md); None when nothing GPU-related
  was found to judge;
- where ROCm PyTorch comes from for the target ROCm release, and whether the project's
  torch requirement fits (portcheck.python.wheels); PY007's fix says the same;
- the Triton kernels, each with the hazards in its body.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from portcheck.checks import catalogue
from portcheck.filescan import FileScan
from portcheck.model import (
    ROUTES,
    Dependency,
    Extension,
    Kernel,
    PyFinding,
    PythonSection,
    PyUse,
    RouteVerdicts,
    Status,
    WheelAdvice,
)
from portcheck.python.versions import EVERYTHING, requirement_interval
from portcheck.python.wheels import advice
from portcheck.score import effort, project_scores
from portcheck.target import TargetProfile

TORCH_PACKAGES = ("torch", "torchvision", "torchaudio")
WHEEL_INDEX_SLUG = "cuda-wheel-index"
MAX_REASONS = 3  # blockers named in a route's not-applicable reason


@dataclass(frozen=True, slots=True)
class _Swap:
    """A judged name as a work item. A dependency: an unsupported package with a named ROCm
    replacement is a swap to review (partial), not a rewrite (docs/scoring.md)."""

    name: str
    status: RouteVerdicts

    @classmethod
    def of(cls, dependency: Dependency) -> _Swap:
        status = dependency.status
        rule = dependency.rule
        if rule is not None and rule.replacement and status.rocm is Status.UNSUPPORTED:
            status = RouteVerdicts(Status.PARTIAL, status.directml)
        return cls(dependency.name, status)


def with_missing_sources(root: Path, extension: Extension) -> Extension:
    """Mark the sources an extension names that are not in the tree (generated at build
    time, or a path that is wrong): their CUDA could not be scanned."""
    base = root if root.is_dir() else root.parent
    missing = tuple(s for s in extension.sources if not (base / s).is_file())
    return replace(extension, missing=missing) if missing else extension


def python_section(
    root: Path,
    scans: list[FileScan],
    target: TargetProfile,
    where: Callable[[str, int], str],
) -> PythonSection | None:
    """The Python part of the report; None when the tree has no Python at all. `where`
    shows a position as the report does (`nb.ipynb:cell 3:2`)."""
    python = [s for s in scans if s.language.is_python]
    if not python:
        return None
    own = own_modules(s.path for s in python)
    # The project's own package is not a dependency of itself (`unsloth[amd]` in unsloth's
    # extras), and `from unsloth import …` inside unsloth is not a use of a GPU library.
    dependencies = [
        d for s in python for d in s.dependencies if d.name.replace("-", "_") not in own
    ]
    uses = [u for s in python for u in s.py_uses if u.name.split(".")[0] not in own]
    wheels = _wheel_advice(target, dependencies, uses)
    # Nor is a finding about such a line (`unsloth[huggingface]` judged by the package
    # table's entry for unsloth, 87 times in unsloth's own pyproject.toml).
    own_lines = {(d.path, d.line) for s in python for d in s.dependencies} - {
        (d.path, d.line) for d in dependencies
    }
    findings = [
        _with_wheel_fix(target.judge_python(f), wheels)
        for s in python
        for f in s.py_findings
        if not (f.slug == "cuda-only-package" and (f.path, f.span.line) in own_lines)
    ]
    not_applicable = _not_applicable(dependencies, uses, findings, where)
    # Unknown packages are listed but not scored: most are CPU-only libraries that no
    # source judges either way (docs/scoring.md).
    # One work item per API entry that judged a use (every `transformers.*` name is the
    # `transformers` item), one per known package.
    judged: list[_Swap] = [
        *(_Swap(u.rule.name, u.status) for u in uses),
        *(_Swap.of(d) for d in dependencies if d.rule is not None),
    ]
    scores = project_scores(judged, findings, ROUTES)
    estimates = effort(judged, findings, ROUTES)
    for route in not_applicable:
        scores[route] = None
        estimates.pop(route, None)
    return PythonSection(
        dependencies=tuple(dependencies),
        uses=tuple(uses),
        findings=tuple(findings),
        extensions=tuple(with_missing_sources(root, e) for s in python for e in s.extensions),
        scores=scores,
        effort=estimates,
        files=len(python),
        kernels=_kernels_with_findings([k for s in python for k in s.py_kernels], findings),
        not_applicable=not_applicable,
        rocm_wheels=wheels,
    )


def own_modules(paths: Iterable[str]) -> frozenset[str]:
    """The top-level module names the project's own Python files make importable: the
    first folder of each file (or the folder under `src/`), and top-level modules."""
    names = set()
    for path in paths:
        parts = path.split("/")
        if parts[0] == "src" and len(parts) > 2:
            parts = parts[1:]
        if len(parts) > 1:
            names.add(parts[0])
        elif parts[0].endswith(".py"):
            names.add(parts[0][: -len(".py")])
    return frozenset(names)


def _not_applicable(
    dependencies: Iterable[Dependency],
    uses: Iterable[PyUse],
    findings: Iterable[PyFinding],
    where: Callable[[str, int], str],
) -> dict[str, str]:
    """Each Python route that something in the project rules out, with the first few
    reasons (what, where and why)."""
    specs = catalogue()
    blockers: dict[str, dict[str, str]] = {str(r): {} for r in ROUTES}  # route -> why -> where
    for finding in findings:
        spec = specs.get(finding.slug)
        for route in blockers:
            why = spec.blocks(route) if spec is not None else None
            if why:
                blockers[route].setdefault(why.rstrip("."), where(finding.path, finding.span.line))
    for dependency in dependencies:
        for route in blockers:
            why = dependency.rule.blocks(route) if dependency.rule else None
            if why:
                blockers[route].setdefault(why.rstrip("."), where(dependency.path, dependency.line))
    for use in uses:
        for route in blockers:
            why = use.rule.blocks(route)
            if why:
                blockers[route].setdefault(why.rstrip("."), where(use.path, use.span.line))
    reasons = {}
    for route, found in blockers.items():
        if not found:
            continue
        listed = [f"{why} ({at})" for why, at in list(found.items())[:MAX_REASONS]]
        more = f"; and {len(found) - MAX_REASONS} more" if len(found) > MAX_REASONS else ""
        reasons[route] = "; ".join(listed) + more
    return reasons


def _wheel_advice(
    target: TargetProfile, dependencies: list[Dependency], uses: list[PyUse]
) -> WheelAdvice | None:
    """Where ROCm PyTorch comes from for the target, for a project that uses PyTorch."""
    torch = [d for d in dependencies if d.name in TORCH_PACKAGES]
    if not torch and not any(u.name.split(".")[0] == "torch" for u in uses):
        return None
    if target.rocm is None:
        return None
    # `torch @ https://…/xpu/torch-2.6.0+xpu….whl` names a wheel, not a version range
    named = [d for d in torch if d.name == "torch" and "://" not in d.spec]
    # The most precise requirement decides: an exact pin, else a range, else the bare name.
    exact = [d for d in named if requirement_interval(d.spec).pinned is not None]
    ranged = [d for d in named if requirement_interval(d.spec) != EVERYTHING]
    chosen = exact or ranged or named
    return advice(target.rocm, chosen[0].spec if chosen else "")


def _with_wheel_fix(finding: PyFinding, wheels: WheelAdvice | None) -> PyFinding:
    """A CUDA wheel pin's fix names the ROCm index of the target release."""
    if finding.slug != WHEEL_INDEX_SLUG or wheels is None:
        return finding
    fix = wheels.command or wheels.note
    return replace(finding, fix=f"{fix} (ROCm {wheels.rocm}; --rocm picks another release)")


def _kernels_with_findings(kernels: list[Kernel], findings: list[PyFinding]) -> tuple[Kernel, ...]:
    """Each kernel with the slugs of the findings in its body, most in need first."""
    ranked = []
    for kernel in kernels:
        inside = [
            f.slug
            for f in findings
            if f.path == kernel.path
            and kernel.span.start_byte <= f.span.start_byte < kernel.span.end_byte
        ]
        ranked.append(replace(kernel, findings=tuple(sorted(inside))))
    return tuple(sorted(ranked, key=lambda k: (-len(k.findings), k.path, k.span.line)))
