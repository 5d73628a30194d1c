"""Report formatters: each renders a Report to a string. The CLI owns where it goes.

Each formatter's module is imported when that format is asked for (Jinja2 for HTML, rich
for the terminal), so writing one format does not load the others.

The helpers here are what every format must say the same way: which files had parse
errors, whether there was anything to score, and file names made safe to show."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from importlib import import_module
from typing import TYPE_CHECKING

from portcheck.paths import display_path

if TYPE_CHECKING:
    from portcheck.model import FileSummary, Report

Formatter = Callable[["Report"], str]

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


def parse_error_files(report: Report) -> list[FileSummary]:
    """The files whose parse had errors (their findings may be incomplete), by path."""
    return sorted((f for f in report.files if f.parse_errors), key=lambda f: f.path)


def amd_path_sentence(report: Report) -> str:
    """How much of the project already builds for AMD, said the same way in every format."""
    paths = report.amd_paths
    alternatives = sum(1 for f in report.findings if f.amd_alternative)
    if not paths and not alternatives:
        return "Existing AMD paths: none found (no branch built only for AMD GPUs)."
    files = len({p.path for p in paths})
    lines = sum(p.end_line - p.start_line + 1 for p in paths)
    return (
        f"Existing AMD paths: {len(paths)} branch(es) in {files} file(s) ({lines:,} lines) "
        f"already build for AMD GPUs; {alternatives} finding(s) in NVIDIA-only code that has "
        "an AMD path are listed but cost no score or effort."
    )


def nothing_to_score(report: Report) -> bool:
    """True when no chosen route has a score: the scan found no CUDA to judge."""
    return all(report.scores.get(str(t)) is None for t in report.targets)


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

    def path_of(item):  # type: ignore[no-untyped-def]
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
    "amd_path_sentence",
    "for_display",
    "formatter",
    "nothing_to_score",
    "parse_error_files",
]
