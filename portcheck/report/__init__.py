"""Report formatters: each renders a Report to a string. The CLI owns where it goes.

Each formatter's module is imported when that format is asked for (Jinja2 for HTML, rich
for the terminal), so writing one format does not load the others."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from portcheck.model import Report

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


def formatter(name: str) -> Formatter:
    """The render function of format `name` (KeyError for an unknown one)."""
    module, function = _FORMATTERS[name]
    render: Formatter = getattr(import_module(module), function)
    return render


__all__ = ["FORMATS", "Formatter", "formatter"]
