"""The portfolio: what a whole fleet of repositories says, for the lead who decides.

Owns: the few figures kept per repository (`summarize`, from its `portcheck.report/1`
document: scores, effort, AMD paths and its work items with their hours, by the formula
of portcheck.score), and from those the `portcheck.portfolio/1` document
(`build_portfolio`): the repositories ranked by readiness on their most direct route and
by effort, the routes compared, the blockers that cost the fleet the most hours (each
counted on the route its repository would take), the repositories that already have AMD
paths, and every failure with its reason. `portfolio_csv` is the ranking as a table.
The HTML page is rendered by portcheck.report.portfolio from the same document.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from portcheck import __version__
from portcheck.model import ENVIRONMENT_CLASSES, Status, Target
from portcheck.score import HOURS, WORST_FIRST, category

SCHEMA = "portcheck.portfolio/1"
TOP_BLOCKERS = 10
MAX_GUARDS = 5
ROUTE_ORDER = {str(t): i for i, t in enumerate(Target)}
CSV_COLUMNS = (
    "rank",
    "name",
    "source",
    "status",
    "reason",
    "route",
    "readiness",
    "effort_hours",
    "hip",
    "zluda",
    "scale",
    "hip_hours",
    "zluda_hours",
    "scale_hours",
    "files",
    "lines",
    "findings",
    "amd_paths",
    "compile_units",
    "compile_failed",
    "commit",
    "seconds",
    "cpu_seconds",
    "report",
)
FORMULA_CHARACTERS = ("=", "+", "-", "@", "\t", "\r")
Row = dict[str, Any]  # plain data, as in the JSON document


def _item_hours(kind: str, status: Status, route: str) -> float:
    chosen = category(kind, status, Target(route))
    return HOURS[chosen] if chosen is not None else 0.0


def _worst(statuses: Iterable[Status]) -> Status:
    return min(statuses, key=WORST_FIRST.index)


def summarize(document: Mapping[str, Any]) -> dict[str, object]:
    """The figures the portfolio needs from one report, small enough to keep per
    repository between runs. Work items are those of portcheck.score (each distinct
    name; each hazard kind per file, worst verdict), with their hours per route; names
    and hazards supported on every route are left out (renames are not blockers)."""
    summary = document["summary"]
    routes = [str(t) for t in document.get("targets", [])]
    not_applicable = dict(summary.get("not_applicable") or {})
    scored = [r for r in routes if r not in not_applicable]
    names: dict[str, dict[str, Any]] = {}
    for use in document.get("usages", []):
        entry = names.get(use["name"])
        if entry is None:
            entry = names[use["name"]] = {
                "family": use.get("family", ""),
                "status": {r: Status(use["status"][r]) for r in routes},
                "occurrences": 0,
            }
        entry["occurrences"] += 1
    hazards: dict[str, dict[str, Any]] = {}
    for finding in document.get("findings", []):
        if finding.get("amd_alternative"):
            continue  # an AMD branch already covers it: no score, no effort
        entry = hazards.setdefault(
            finding["slug"], {"family": finding.get("id", ""), "files": {}, "occurrences": 0}
        )
        entry["occurrences"] += 1
        verdicts = {r: Status(finding["targets"][r]) for r in routes}
        before = entry["files"].get(finding["path"])
        if before is not None:
            verdicts = {r: _worst((verdicts[r], before[r])) for r in routes}
        entry["files"][finding["path"]] = verdicts
    items: list[dict[str, object]] = []
    for name, entry in names.items():
        if all(entry["status"][r] is Status.SUPPORTED for r in routes):
            continue
        items.append(
            {
                "kind": "api",
                "name": name,
                "family": entry["family"],
                "statuses": {r: str(entry["status"][r]) for r in routes},
                "hours": {r: _item_hours("name", entry["status"][r], r) for r in scored},
                "occurrences": entry["occurrences"],
            }
        )
    for slug, entry in hazards.items():
        per_file = list(entry["files"].values())
        statuses = {r: _worst(f[r] for f in per_file) for r in routes}
        if all(s is Status.SUPPORTED for s in statuses.values()):
            continue
        items.append(
            {
                "kind": "hazard",
                "name": slug,
                "family": entry["family"],
                "statuses": {r: str(s) for r, s in statuses.items()},
                "hours": {
                    r: round(sum(_item_hours("hazard", f[r], r) for f in per_file), 2)
                    for r in scored
                },
                "occurrences": entry["occurrences"],
            }
        )
    guards = []
    for path in document.get("amd_paths", []):
        if path.get("guard") and path["guard"] not in guards:
            guards.append(path["guard"])
    effort = summary.get("effort") or {}
    return {
        "targets": routes,
        "scores": dict(summary.get("scores") or {}),
        "effort": {r: float((effort.get(r) or {}).get("total_hours", 0.0)) for r in routes},
        "not_applicable": not_applicable,
        "files": summary.get("files_scanned", 0),
        "lines": summary.get("lines", 0),
        "uses": summary.get("uses", 0),
        "findings": summary.get("findings", 0),
        "kernels": summary.get("kernels", 0),
        "amd_paths": summary.get("amd_paths", 0),
        "amd_guards": guards[:MAX_GUARDS],
        "amd_alternative_findings": summary.get("amd_alternative_findings", 0),
        "items": items,
    }


def compile_summary(results: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Units built, failed, and failed for a reason in the code (not the environment)."""
    listed = list(results)
    failed = [r for r in listed if not r.get("ok")]
    return {
        "units": len({r["path"] for r in listed}),
        "results": len(listed),
        "built": len(listed) - len(failed),
        "failed": len(failed),
        "code_failures": sum(1 for r in failed if r.get("class") not in ENVIRONMENT_CLASSES),
    }


def recommended_route(summary: Mapping[str, Any]) -> str | None:
    """The most direct route: the best readiness, then the fewest hours, then the
    order of the routes (HIP first). None when nothing was scored (no CUDA)."""
    scores = summary.get("scores") or {}
    effort = summary.get("effort") or {}
    routes = [r for r, s in scores.items() if s is not None]
    if not routes:
        return None
    return min(routes, key=lambda r: (-scores[r], effort.get(r, 0.0), ROUTE_ORDER.get(r, 9)))


def _rank_key(record: Mapping[str, Any]) -> tuple[int, float, float, str]:
    summary = record.get("summary")
    if record.get("status") != "ok" or not summary:
        return (2, 0.0, 0.0, record["name"])
    route = recommended_route(summary)
    if route is None:
        return (1, 0.0, 0.0, record["name"])
    return (0, -float(summary["scores"][route]), float(summary["effort"][route]), record["name"])


def _repository_row(rank: int, record: Mapping[str, Any]) -> Row:
    summary = record.get("summary") or {}
    route = recommended_route(summary) if summary else None
    ok = record.get("status") == "ok"
    return {
        "rank": rank,
        "name": record["name"],
        "source": record["source"],
        "line": record.get("line"),
        "status": record.get("status"),
        "this_run": record.get("this_run", ""),
        "reason": record.get("reason", ""),
        "commit": record.get("commit", ""),
        "dirty": bool(record.get("dirty")),
        "report": record.get("report") if ok else None,
        "route": route,
        "readiness": summary["scores"][route] if route else None,
        "effort_hours": summary["effort"][route] if route else None,
        "scores": summary.get("scores", {}),
        "effort": summary.get("effort", {}),
        "not_applicable": summary.get("not_applicable", {}),
        "files": summary.get("files"),
        "lines": summary.get("lines"),
        "findings": summary.get("findings"),
        "amd_paths": summary.get("amd_paths"),
        "amd_guards": summary.get("amd_guards", []),
        "compile": record.get("compile"),
        "seconds": round(float(record.get("seconds") or 0.0), 2),
        "fetch_seconds": round(float(record.get("fetch_seconds") or 0.0), 2),
        "scan_seconds": round(float(record.get("scan_seconds") or 0.0), 2),
        "cpu_seconds": round(float(record.get("cpu_seconds") or 0.0), 2),
    }


def _blockers(rows: list[Row], records: Mapping[str, Mapping[str, Any]]) -> list[Row]:
    """Every API and hazard across the fleet, costliest first: its cost is the hours it
    takes in each repository on the route that repository would take."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        route = row["route"]
        summary = records[str(row["name"])].get("summary")
        if route is None or not summary:
            continue
        for item in summary["items"]:
            key = (item["kind"], item["name"])
            entry = merged.setdefault(
                key,
                {
                    "kind": item["kind"],
                    "name": item["name"],
                    "family": item["family"],
                    "hours": 0.0,
                    "hours_by_route": {},
                    "repositories": [],
                    "occurrences": 0,
                    "statuses": {},
                },
            )
            entry["hours"] += float(item["hours"].get(route, 0.0))
            for r, hours in item["hours"].items():
                entry["hours_by_route"][r] = entry["hours_by_route"].get(r, 0.0) + hours
            for r, status in item["statuses"].items():
                before = entry["statuses"].get(r)
                now = Status(status)
                entry["statuses"][r] = str(now if before is None else _worst((now, before)))
            entry["repositories"].append(row["name"])
            entry["occurrences"] += int(item["occurrences"])
    costly = [e for e in merged.values() if e["hours"] > 0]
    costly.sort(key=lambda e: (-e["hours"], -len(e["repositories"]), e["kind"], e["name"]))
    blockers = []
    for rank, entry in enumerate(costly[:TOP_BLOCKERS], start=1):
        blockers.append(
            {
                "rank": rank,
                **entry,
                "hours": round(entry["hours"], 2),
                "hours_by_route": {r: round(h, 2) for r, h in entry["hours_by_route"].items()},
                "repository_count": len(entry["repositories"]),
            }
        )
    return blockers


def _routes(rows: list[Row], targets: list[str]) -> dict[str, Row]:
    routes: dict[str, dict[str, object]] = {}
    for route in targets:
        scores = [
            int(row["scores"][route])
            for row in rows
            if row["status"] == "ok" and (row["scores"] or {}).get(route) is not None
        ]
        hours = sum(
            float(row["effort"].get(route, 0.0))
            for row in rows
            if row["status"] == "ok" and (row["scores"] or {}).get(route) is not None
        )
        routes[route] = {
            "recommended_for": sum(1 for row in rows if row["route"] == route),
            "scored": len(scores),
            "mean_readiness": round(sum(scores) / len(scores), 1) if scores else None,
            "hours": round(hours, 1),
        }
    return routes


def build_portfolio(records: Sequence[Mapping[str, Any]], run: Mapping[str, Any]) -> Row:
    """The `portcheck.portfolio/1` document of one run: `records` holds one entry per
    LIST repository (finished now, reused from the last run, failed or interrupted)."""
    by_name = {str(r["name"]): r for r in records}
    ordered = sorted(records, key=_rank_key)
    rows = [_repository_row(rank, r) for rank, r in enumerate(ordered, start=1)]
    targets: list[str] = []
    for record in ordered:
        for route in (record.get("summary") or {}).get("targets", []):
            if route not in targets:
                targets.append(route)
    targets.sort(key=lambda r: ROUTE_ORDER.get(r, 9))
    ok = [row for row in rows if row["status"] == "ok"]
    failed = [row for row in rows if row["status"] != "ok"]
    with_amd = [row for row in ok if row["amd_paths"]]
    return {
        "schema": SCHEMA,
        "tool": {"name": "portcheck", "version": __version__},
        "generated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run": dict(run),
        "targets": targets,
        "totals": {
            "repositories": len(rows),
            "ok": len(ok),
            "scanned": sum(1 for row in ok if row["this_run"] == "scanned"),
            "reused": sum(1 for row in ok if row["this_run"] == "reused"),
            "failed": len(failed),
            "no_cuda": sum(1 for row in ok if row["route"] is None),
            "with_amd_paths": len(with_amd),
            "effort_hours": round(sum(float(row["effort_hours"] or 0.0) for row in ok), 1),
        },
        "routes": _routes(rows, targets),
        "repositories": rows,
        "blockers": _blockers(rows, by_name),
        "amd_paths": [
            {"name": row["name"], "amd_paths": row["amd_paths"], "guards": row["amd_guards"]}
            for row in sorted(with_amd, key=lambda row: (-int(row["amd_paths"] or 0), row["name"]))
        ],
        "failed": [
            {"name": row["name"], "source": row["source"], "reason": row["reason"]}
            for row in failed
        ],
    }


def _cell(value: object) -> str:
    """A CSV cell a spreadsheet shows as text: a value that starts like a formula gets a
    leading apostrophe (a repository name is input from whoever wrote LIST)."""
    if value is None:
        return ""
    text = str(value)
    if text.startswith(FORMULA_CHARACTERS):
        return "'" + text
    return text


def portfolio_csv(portfolio: Mapping[str, Any]) -> str:
    """The ranking as CSV, one row per repository, in rank order."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in portfolio["repositories"]:
        scores, effort = row["scores"] or {}, row["effort"] or {}
        compiled = row["compile"] or {}
        values = {
            **row,
            "hip": scores.get("hip"),
            "zluda": scores.get("zluda"),
            "scale": scores.get("scale"),
            "hip_hours": effort.get("hip") if scores.get("hip") is not None else None,
            "zluda_hours": effort.get("zluda") if scores.get("zluda") is not None else None,
            "scale_hours": effort.get("scale") if scores.get("scale") is not None else None,
            "compile_units": compiled.get("units"),
            "compile_failed": compiled.get("failed"),
        }
        writer.writerow(
            [_cell(values.get(c)) if c not in ("rank",) else values[c] for c in CSV_COLUMNS]
        )
    return buffer.getvalue()
