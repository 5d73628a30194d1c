"""The `portcheck.report/1` JSON document (see the Interfaces contract in DESIGN.md).

The document is the Report's own plain-data form, so it lives with the Report
(`Report.to_dict`, `Report.iter_json` in portcheck.model): a library user gets it without
the formatters, and the figures in its summary are the ones every other format states
(`Report.counts`, as portcheck.report.view shows them).

`iter_json` streams it piece by piece, one list entry at a time, so that a report on a
million lines is written without holding the whole document in memory twice. The text is
ASCII: every other character is a JSON escape. Paths keep every character (even a control
character or an undecodable byte, as `\\u001b` or `\\udcff`), and none reaches a terminal
or a log raw."""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from importlib import resources
from typing import Any

from portcheck.model import REPORT_SCHEMA, Report

SCHEMA = REPORT_SCHEMA
SCHEMA_FILE = "report.schema.json"  # the JSON Schema of the document, shipped in the package


@lru_cache(maxsize=1)
def json_schema() -> dict[str, Any]:
    """The published JSON Schema (draft 2020-12) of the `portcheck.report/1` document, as
    shipped inside the package (`portcheck/report/report.schema.json`)."""
    text = resources.files("portcheck.report").joinpath(SCHEMA_FILE).read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


def report_to_dict(report: Report) -> dict[str, object]:
    return report.to_dict()


def iter_json(report: Report) -> Iterator[str]:
    """The document as text pieces: the head indented, list entries one per line."""
    return report.iter_json()


def render_json(report: Report) -> str:
    return report.to_json()
