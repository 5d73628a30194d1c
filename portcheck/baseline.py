"""Baselines: a previous JSON report, so CI fails only on findings that are new.

Findings are matched by fingerprint (hazard, file, and the text of the line, so
edits elsewhere in the file do not make old findings look new), as multisets: two
identical findings where the baseline had one means one is new."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from portcheck.model import REPORT_SCHEMA, Report


class BaselineError(ValueError):
    pass


def load_baseline(path: str | Path) -> Counter[str]:
    try:
        doc = json.loads(Path(path).read_text("utf-8"))
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise BaselineError(f"baseline {path} is not JSON (use `scan --format json`)") from None
    if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
        raise BaselineError(
            f"baseline {path} is not a {REPORT_SCHEMA} report (use `scan --format json`)"
        )
    return Counter(str(f.get("fingerprint", "")) for f in doc.get("findings", []))


def new_finding_indices(report: Report, baseline: Counter[str]) -> tuple[int, ...]:
    """The positions in `report.findings` of the findings the baseline does not have (what
    `Report.new_finding_indices` holds)."""
    remaining = Counter(baseline)
    new = []
    for index, finding in enumerate(report.findings):
        if remaining[finding.fingerprint] > 0:
            remaining[finding.fingerprint] -= 1
        else:
            new.append(index)
    return tuple(new)
