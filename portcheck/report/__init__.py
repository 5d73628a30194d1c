"""Report formatters: each renders a Report to a string. The CLI owns where it goes."""

from __future__ import annotations

from collections.abc import Callable

from portcheck.model import Report
from portcheck.report.json import render_json
from portcheck.report.markdown import render_markdown
from portcheck.report.sarif import render_sarif
from portcheck.report.text import render_text

Formatter = Callable[[Report], str]


def render_html(report: Report) -> str:
    """The HTML report (Jinja2 is imported only when it is asked for)."""
    from portcheck.report.html import render_html as render

    return render(report)


FORMATTERS: dict[str, Formatter] = {
    "text": render_text,
    "json": render_json,
    "sarif": render_sarif,
    "markdown": render_markdown,
    "html": render_html,
}

__all__ = [
    "FORMATTERS",
    "Formatter",
    "render_json",
    "render_markdown",
    "render_sarif",
    "render_text",
]
