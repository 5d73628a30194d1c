"""Report formatters: each renders a Report to a string. The CLI owns where it goes.

Each formatter's module is imported when that format is asked for (Jinja2 for HTML, rich
for the terminal), so writing one format does not load the others.

What every format says about a report (scores, effort, counts, verdict marks, blockers,
parse errors) is computed once, by portcheck.report.view. Here: whether there was
anything to score (the CLI asks it too, for --fail-under), and file names made safe
to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from importlib import import_module
from typing import TYPE_CHECKING, TypeVar

from portcheck.paths import display_path

if TYPE_CHECKING:
    from portcheck.model import (
        AmdPath,
        Dependency,
        Excerpt,
        FileSummary,
        Finding,
        Kernel,
        PyFinding,
        PyUse,
        Report,
    )

Formatter = Callable[["Report"], str]
_HasPath = TypeVar(
    "_HasPath",
    "FileSummary",
    "Finding",
    "Kernel",
    "AmdPath",
    "Excerpt",
    "Dependency",
    "PyUse",
    "PyFinding",
)

# format name -> (module, function)
_FORMATTERS = {
    "text": ("portcheck.report.text", "render_text"),
    "json": ("portcheck.report.json", "render_json"),
    "sarif": ("portcheck.report.sarif", "render_sarif"),
    "markdown": ("portcheck.report.markdown", "render_markdown"),
    "html": ("portcheck.report.html", "render_html"),
}
FORMATS = tuple(_FORMATTERS)
NOTHING_TO_SCORE = "nothing to score: no CUDA construct was found"
NOTHING_TO_SCORE_SENTENCE = "Nothing to score: no CUDA construct was found"


def formatter(name: str) -> Formatter:
    """The render function of format `name` (KeyError for an unknown one)."""
    module, function = _FORMATTERS[name]
    render: Formatter = getattr(import_module(module), function)
    return render


def nothing_to_score(report: Report) -> bool:
    """True when no chosen route that can serve the GPU has a score: the scan found no
    CUDA to judge."""
    judged = [t for t in report.targets if str(t) not in report.not_applicable]
    return bool(judged) and all(report.scores.get(str(t)) is None for t in judged)


def for_display(report: Report) -> Report:
    """The report with every file name (and skip reason) shown safely: control characters
    and undecodable bytes escaped (portcheck.paths), so a name cannot write terminal
    escapes or forge a CI log line. The same report when every name is printable (the
    usual case, checked cheaply)."""
    names = {report.root, *(f.path for f in report.files), *(k.path for k in report.kernels)}
    names.update(s.path + s.reason for s in report.skipped)
    names.update(f.path for f in report.findings)
    names.update(p.path + p.guard for p in report.amd_paths)
    if report.python is not None:
        section = report.python
        names.update(d.path for d in section.dependencies)
        names.update(u.path for u in section.uses)
        names.update(f.path for f in section.findings)
        for extension in section.extensions:
            names.update((extension.path, *extension.sources, *extension.missing))
    if all(name.isprintable() for name in names):
        return report
    return _escaped(report)


def _escaped(report: Report) -> Report:
    show = display_path

    def path_of(item: _HasPath) -> _HasPath:
        return replace(item, path=show(item.path))

    python = report.python
    if python is not None:
        python = replace(
            python,
            dependencies=tuple(map(path_of, python.dependencies)),
            uses=tuple(map(path_of, python.uses)),
            findings=tuple(map(path_of, python.findings)),
            extensions=tuple(
                replace(
                    e,
                    path=show(e.path),
                    sources=tuple(map(show, e.sources)),
                    missing=tuple(map(show, e.missing)),
                )
                for e in python.extensions
            ),
        )
    return replace(
        report,
        root=show(report.root),
        files=tuple(map(path_of, report.files)),
        uses=tuple(u._replace(path=show(u.path)) for u in report.uses),
        findings=tuple(map(path_of, report.findings)),
        kernels=tuple(map(path_of, report.kernels)),
        amd_paths=tuple(map(path_of, report.amd_paths)),
        excerpts=tuple(map(path_of, report.excerpts)),
        skipped=tuple(replace(s, path=show(s.path), reason=show(s.reason)) for s in report.skipped),
        python=python,
    )


__all__ = [
    "FORMATS",
    "NOTHING_TO_SCORE",
    "NOTHING_TO_SCORE_SENTENCE",
    "Formatter",
    "for_display",
    "formatter",
    "nothing_to_score",
]
