"""The fleet portfolio as one self-contained HTML page (the `portcheck.portfolio/1`
document of portcheck.fleet.portfolio, rendered; nothing else is read).

Uses the report's Jinja2 environment (autoescaping every `{{ }}`, strict undefined) and
its stylesheet and table script, inlined: the page loads nothing from the network, and
no repository name, source, reason or guard is marked safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from portcheck.model import Target
from portcheck.report.html import _environment, _tone
from portcheck.report.view import TARGET_TITLE

TEMPLATE = "portfolio.html.j2"


def render_portfolio_html(portfolio: Mapping[str, Any]) -> str:
    titles = {str(t): TARGET_TITLE[t] for t in Target}
    rows = [
        {**row, "tone": _tone(row["readiness"]), "route_title": titles.get(row["route"] or "", "")}
        for row in portfolio["repositories"]
    ]
    return (
        _environment()
        .get_template(TEMPLATE)
        .render(
            portfolio=portfolio,
            rows=rows,
            targets=portfolio["targets"],
            target_title=titles,
            totals=portfolio["totals"],
            routes=portfolio["routes"],
            blockers=portfolio["blockers"],
            amd_paths=portfolio["amd_paths"],
            failed=portfolio["failed"],
            run=portfolio["run"],
        )
    )
