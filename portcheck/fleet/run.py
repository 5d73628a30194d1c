"""Running a fleet: the driver that hands repositories to Dask and writes what comes back.

Owns: the Dask client (a LocalCluster of worker processes sized to the machine, or the
scheduler `--scheduler` names), submitting one task per repository and, with --compile,
one per group of its units; writing each repository's report and its record (the resume
key and the figures of the portfolio) as soon as it is done, through the one atomic
writer, so an interrupted run loses nothing finished; the portfolio at the end; and the
clean-up on Ctrl-C or SIGTERM: the stop Event for the tasks, cancelled futures, the
client and local cluster closed, and any process group a worker left behind killed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
import signal
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from portcheck.fleet.portfolio import build_portfolio, compile_summary, portfolio_csv
from portcheck.fleet.process import kill_registered
from portcheck.fleet.sources import Entry, read_list
from portcheck.fleet.tasks import (
    CompileJob,
    CompileOutcome,
    RepoJob,
    RepoOutcome,
    Settings,
    audit_repository,
    compile_units,
)
from portcheck.resources import write_atomically

RECORD_SCHEMA = "portcheck.fleet-record/1"
STATE_FOLDER = ".fleet"
WORK_FOLDER = ".work"
UNITS_PER_GROUP = 2  # at least this many units per compile task: each task translates the tree
STOP_WAIT_SECONDS = 6.0  # for tasks to see the stop and kill their subprocesses
CONNECT_TIMEOUT = "30s"


class FleetError(Exception):
    """The fleet cannot start (no repositories, an output that is a file, no scheduler).
    The message is one line for the user."""


@dataclass(frozen=True, slots=True)
class FleetOptions:
    output: Path
    settings: Settings
    scheduler: str | None = None
    workers: int | None = None  # of the local cluster; None: one per CPU
    work: Path | None = None  # clones; None: OUTPUT/.work
    redo: bool = False  # ignore the previous run's results


@dataclass(slots=True)
class FleetResult:
    portfolio: dict[str, object]
    interrupted: bool = False
    counts: Counter[str] = field(default_factory=Counter)


# (done, total, counts by outcome, one line about the repository just finished)
Progress = Callable[[int, int, Mapping[str, int], str], None]


def available_cpus() -> int:
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return os.cpu_count() or 1


def run_fleet(
    list_path: str | os.PathLike[str],
    options: FleetOptions,
    progress: Progress | None = None,
) -> FleetResult:
    """Audit every repository LIST names; write OUTPUT/NAME.json per repository and the
    portfolio at OUTPUT's top. A repository finished in an earlier run with the same key
    is not redone. KeyboardInterrupt (Ctrl-C, or SIGTERM through the CLI) stops every
    task and subprocess and returns with `interrupted` set, after writing the portfolio
    of what was finished."""
    if options.scheduler is not None:
        _check_address(options.scheduler)
    entries = read_list(list_path)
    if not entries:
        raise FleetError(f"{list_path}: names no repository (one path or git URL per line)")
    output = options.output
    if output.exists() and not output.is_dir():
        raise FleetError(f"{output}: exists and is not a folder")
    output.mkdir(parents=True, exist_ok=True)
    records_folder = output / STATE_FOLDER / "records"
    records_folder.mkdir(parents=True, exist_ok=True)
    work = (options.work or output / WORK_FOLDER).resolve()
    registry = work / ".running"
    previous = {} if options.redo else _previous_records(records_folder, output)
    driver = _Driver(entries, options, output, records_folder, previous, progress)
    started, cpu_start = time.monotonic(), _children_cpu()
    stop_name = f"portcheck-fleet-stop-{uuid.uuid4().hex}"
    settings = replace(
        options.settings, work=str(work), registry=str(registry), stop_event=stop_name
    )
    interrupted = False
    driver.record_invalid()
    try:
        if any(entry.kind != "invalid" for entry in entries):  # else no cluster is needed
            with _client(options) as (client, workers, local):
                if local and settings.jobs is None:
                    settings = replace(settings, jobs=max(1, available_cpus() // workers))
                driver.settings = settings
                driver.workers = workers
                try:
                    driver.run(client)
                except KeyboardInterrupt:
                    interrupted = True
                    _stop(client, stop_name, driver.futures, registry)
    except KeyboardInterrupt:  # while the cluster started or closed
        interrupted = True
    finally:
        kill_registered(registry)  # what a worker on this machine left behind, if any
    run = {
        "scheduler": options.scheduler or "local",
        "workers": driver.workers,
        "seconds": round(time.monotonic() - started, 2),
        "driver_and_local_children_cpu_seconds": round(_children_cpu() - cpu_start, 2),
        "task_cpu_seconds": round(driver.task_cpu, 2),
        "interrupted": interrupted,
    }
    portfolio = build_portfolio(driver.portfolio_records(interrupted), run)
    write_atomically(output / "portfolio.json", json.dumps(portfolio, indent=2) + "\n")
    write_atomically(output / "portfolio.csv", portfolio_csv(portfolio))
    from portcheck.report.portfolio import render_portfolio_html

    write_atomically(output / "portfolio.html", render_portfolio_html(portfolio))
    return FleetResult(portfolio, interrupted, driver.counts)


def _children_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime + children.ru_utime + children.ru_stime


def _check_address(address: str) -> None:
    """A scheduler address Dask can dial (`tcp://host:8786`, `host:8786`), or FleetError:
    a client made for a bad one would hang on its way out."""
    from distributed.comm import parse_address
    from distributed.comm.registry import backends

    try:
        scheme, location = parse_address(address)
    except ValueError as exc:
        raise FleetError(f"--scheduler {address!r}: {exc}") from None
    if scheme not in backends or not location:
        known = ", ".join(f"{name}://" for name in sorted(backends))
        raise FleetError(f"--scheduler {address!r}: not a Dask scheduler address ({known})")


@contextlib.contextmanager
def _client(options: FleetOptions) -> Iterator[tuple[Any, int, bool]]:
    """A Dask client: to `options.scheduler`, or to a LocalCluster of worker processes
    (one thread each) started here and closed on the way out, whatever happens."""
    import dask
    from distributed import Client, LocalCluster

    dask.config.set({"distributed.comm.timeouts.connect": CONNECT_TIMEOUT})
    if options.scheduler is not None:
        try:
            client = Client(options.scheduler, timeout=CONNECT_TIMEOUT, set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            raise FleetError(
                f"cannot reach the Dask scheduler {options.scheduler}: {exc}"
            ) from None
        try:
            threads = sum(client.nthreads().values())
            yield client, max(1, threads), False
        finally:
            client.close()
        return
    workers = options.workers or available_cpus()
    # The workers must not see the terminal's Ctrl-C: the driver stops them in order
    # (a worker killed by SIGINT would orphan the scan it runs). An ignored signal stays
    # ignored in the processes spawned meanwhile.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=":0",  # any free port: 8787 may be another cluster's
            memory_limit=0,
            # A worker still heartbeating while Ctrl-C closes the scheduler logs the closed
            # stream at ERROR with a traceback: tasks' own failures come back through their
            # futures, so the workers' log is not the user's.
            silence_logs=logging.CRITICAL,
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    try:
        client = Client(cluster, set_as_default=False)
        try:
            yield client, workers, True
        finally:
            with _quiet():
                client.close()
    finally:
        with _quiet():
            cluster.close()


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Closing a cluster whose tasks were cancelled logs what it drops: not for the user."""
    logger = logging.getLogger("distributed")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    except Exception:  # a close that fails leaves nothing of ours running
        pass
    finally:
        logger.setLevel(level)


def _stop(client: Any, stop_name: str, futures: Mapping[Any, object], registry: Path) -> None:
    """Tell every task to stop (they kill their subprocesses), cancel what is queued,
    and give the running ones a moment to finish killing."""
    from distributed import Event

    with contextlib.suppress(Exception):
        Event(stop_name, client=client).set()
    with contextlib.suppress(Exception):
        client.cancel(list(futures), force=True)
    deadline = time.monotonic() + STOP_WAIT_SECONDS
    while time.monotonic() < deadline:
        if not registry.is_dir() or not any(registry.iterdir()):
            break
        time.sleep(0.1)


def _previous_records(folder: Path, output: Path) -> dict[str, dict[str, Any]]:
    """The last finished run of each repository, kept only when its report is there."""
    records: dict[str, dict[str, Any]] = {}
    for path in folder.glob("*.json"):
        try:
            record = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(record, dict) or record.get("schema") != RECORD_SCHEMA:
            continue
        if record.get("status") == "ok" and (output / str(record.get("report"))).is_file():
            records[str(record["name"])] = record
    return records


class _Driver:
    """One run's bookkeeping: futures in flight, repositories waiting for their compile
    groups, and the records written so far."""

    def __init__(
        self,
        entries: list[Entry],
        options: FleetOptions,
        output: Path,
        records_folder: Path,
        previous: dict[str, dict[str, Any]],
        progress: Progress | None,
    ) -> None:
        self.entries = entries
        self.options = options
        self.output = output
        self.records_folder = records_folder
        self.previous = previous
        self.progress = progress
        self.settings = options.settings
        self.workers = 1
        self.futures: dict[Any, tuple[str, Entry]] = {}
        self.records: dict[str, dict[str, Any]] = {}
        self.waiting: dict[str, dict[str, Any]] = {}  # name -> scan outcome, compile groups
        self.counts: Counter[str] = Counter()
        self.task_cpu = 0.0

    # -- the loop

    def record_invalid(self) -> None:
        """The lines of LIST that name no repository are failures, with the reason."""
        for entry in self.entries:
            if entry.kind == "invalid":
                reason = f"LIST line {entry.line}: {entry.problem}"
                self._finish(entry, self._failure(entry, reason))

    def run(self, client: Any) -> None:
        """Submit every repository and collect what comes back, until all are done."""
        from distributed import as_completed

        flow = as_completed(loop=client.loop)
        for entry in self.entries:
            if entry.kind == "invalid":
                continue
            before = self.previous.get(entry.name)
            job = RepoJob(entry, self.settings, before.get("key") if before else None)
            future = client.submit(
                audit_repository, job, key=f"repo-{entry.name}-{uuid.uuid4().hex[:8]}"
            )
            self.futures[future] = ("repo", entry)
            flow.add(future)
        for future in flow:
            kind, entry = self.futures.pop(future)
            try:
                value = future.result()
            except Exception as exc:  # a lost worker, a task that raised
                self._lost(entry, kind, exc)
                continue
            if kind == "repo":
                self._repository_done(client, flow, entry, value)
            else:
                self._group_done(entry, value)

    def _lost(self, entry: Entry, kind: str, exc: BaseException) -> None:
        reason = f"the Dask task failed: {type(exc).__name__}: {str(exc)[:200]}"
        if kind == "repo":
            self._finish(entry, self._failure(entry, reason))
        else:
            self._group_done(entry, CompileOutcome(entry.name, -1, problem=reason))

    def _repository_done(self, client: Any, flow: Any, entry: Entry, outcome: RepoOutcome) -> None:
        self.task_cpu += outcome.cpu_seconds
        if outcome.status == "unchanged":
            record = dict(self.previous[entry.name])
            record.update(this_run="reused", source=entry.source, line=entry.line)
            self._finish(entry, record, write=False)
            return
        if outcome.status != "scanned":
            record = self._failure(entry, outcome.reason, outcome)
            with contextlib.suppress(OSError):
                (self.output / f"{entry.name}.json").unlink()  # a report of another commit
            self._finish(entry, record)
            return
        units = sorted(outcome.units)
        if not self.settings.archs or not units:
            self._write_report(entry, outcome, outcome.report, None)
            return
        groups = _groups(units, self.workers)
        self.waiting[entry.name] = {"outcome": outcome, "left": len(groups), "parts": []}
        for index, group in enumerate(groups):
            job = CompileJob(entry, self.settings, outcome.folder, outcome.commit, group, index)
            future = client.submit(
                compile_units,
                job,
                key=f"compile-{entry.name}-{index}-{uuid.uuid4().hex[:8]}",
                priority=10,  # finish a started repository before starting another
            )
            self.futures[future] = ("compile", entry)
            flow.add(future)

    def _group_done(self, entry: Entry, outcome: CompileOutcome) -> None:
        waiting = self.waiting[entry.name]
        waiting["parts"].append(outcome)
        waiting["left"] -= 1
        self.task_cpu += outcome.cpu_seconds
        if waiting["left"] > 0:
            return
        del self.waiting[entry.name]
        scan: RepoOutcome = waiting["outcome"]
        parts: list[CompileOutcome] = sorted(waiting["parts"], key=lambda p: p.index)
        results = sorted(
            (r for p in parts for r in p.results), key=lambda r: (str(r["path"]), str(r["arch"]))
        )
        hipcc = next((p.hipcc for p in parts if p.hipcc is not None), None)
        problems = sorted({p.problem for p in parts if p.problem})
        scan.seconds += sum(p.seconds for p in parts)
        scan.cpu_seconds += sum(p.cpu_seconds for p in parts)
        text = _with_compile(scan.report, results, hipcc) if results else scan.report
        compiled = {"results": results, "problems": problems, "groups": len(parts)}
        self._write_report(entry, scan, text, compiled)

    # -- records

    def _write_report(
        self,
        entry: Entry,
        outcome: RepoOutcome,
        text: str,
        compiled: dict[str, Any] | None,
    ) -> None:
        report = f"{entry.name}.json"
        write_atomically(self.output / report, text)
        record = self._record(entry, outcome)
        record.update(status="ok", this_run="scanned", report=report, summary=outcome.summary)
        if compiled is not None:
            record["compile"] = {
                **compile_summary(compiled["results"]),
                "problems": compiled["problems"],
                "groups": compiled["groups"],
            }
        self._finish(entry, record)

    def _record(self, entry: Entry, outcome: RepoOutcome | None) -> dict[str, Any]:
        return {
            "schema": RECORD_SCHEMA,
            "name": entry.name,
            "source": entry.source,
            "line": entry.line,
            "kind": entry.kind,
            "status": "failed",
            "this_run": "failed",
            "reason": "",
            "key": outcome.key if outcome else "",
            "commit": outcome.commit if outcome else "",
            "dirty": outcome.dirty if outcome else False,
            "report": None,
            "summary": None,
            "compile": None,
            "seconds": round(outcome.seconds, 3) if outcome else 0.0,
            "fetch_seconds": round(outcome.fetch_seconds, 3) if outcome else 0.0,
            "scan_seconds": round(outcome.scan_seconds, 3) if outcome else 0.0,
            "cpu_seconds": round(outcome.cpu_seconds, 3) if outcome else 0.0,
            "host": outcome.host if outcome else "",
            "finished": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }

    def _failure(
        self, entry: Entry, reason: str, outcome: RepoOutcome | None = None
    ) -> dict[str, Any]:
        record = self._record(entry, outcome)
        record["reason"] = reason
        return record

    def _finish(self, entry: Entry, record: dict[str, Any], write: bool = True) -> None:
        self.records[entry.name] = record
        if write:
            write_atomically(
                self.records_folder / f"{entry.name}.json", json.dumps(record, indent=1) + "\n"
            )
        outcome = str(record["this_run"])
        self.counts[outcome] += 1
        if self.progress is not None:
            self.progress(len(self.records), len(self.entries), self.counts, _line(record))

    def portfolio_records(self, interrupted: bool) -> list[dict[str, Any]]:
        """One record per LIST entry: those not finished were interrupted."""
        records = []
        for entry in self.entries:
            record = self.records.get(entry.name)
            if record is None:
                reason = "not finished: the run was interrupted" if interrupted else "not run"
                record = self._failure(entry, reason)
                record["this_run"] = "interrupted"
            records.append(record)
        return records


def _groups(units: list[str], workers: int) -> list[tuple[str, ...]]:
    """Split a repository's units into at most one group per worker thread, each of at
    least UNITS_PER_GROUP units (every group translates the whole tree once)."""
    count = max(1, min(workers, math.ceil(len(units) / UNITS_PER_GROUP)))
    size = math.ceil(len(units) / count)
    return [tuple(units[i : i + size]) for i in range(0, len(units), size)]


def _with_compile(text: str, results: list[dict[str, Any]], hipcc: dict[str, Any] | None) -> str:
    """The scan's report with the compile results in it, as `scan --compile` writes them
    (the `compile` list after `amd_paths`, then `hipcc`), in the same layout."""
    document = json.loads(text)
    merged: dict[str, Any] = {}
    for key, value in document.items():
        if key in ("compile", "hipcc"):
            continue
        merged[key] = value
        if key == "amd_paths":
            merged["compile"] = results
            merged["hipcc"] = hipcc or {}
    if "compile" not in merged:
        merged["compile"] = results
        merged["hipcc"] = hipcc or {}
    return _layout(merged)


def _layout(document: Mapping[str, Any]) -> str:
    """portcheck's JSON report layout: the head indented, list entries one per line."""
    pieces = ["{"]
    for index, (key, value) in enumerate(document.items()):
        if isinstance(value, list):
            body = ",\n    ".join(json.dumps(item) for item in value)
            text = f"[\n    {body}\n  ]" if value else "[]"
        elif key == "hipcc":
            text = json.dumps(value)
        else:
            text = json.dumps(value, indent=2).replace("\n", "\n  ")
        pieces.append(("," if index else "") + f"\n  {json.dumps(key)}: {text}")
    pieces.append("\n}\n")
    return "".join(pieces)


def _line(record: Mapping[str, Any]) -> str:
    """One line about a finished repository, for the log."""
    name = record["name"]
    if record["status"] != "ok":
        return f"{name}: failed: {record['reason']}"
    summary = record.get("summary") or {}
    from portcheck.fleet.portfolio import recommended_route

    route = recommended_route(summary)
    verb = "reused" if record.get("this_run") == "reused" else "scanned"
    if route is None:
        return f"{name}: {verb}, no CUDA to score"
    score = summary["scores"][route]
    hours = summary["effort"][route]
    return f"{name}: {verb}, {route} {score}/100, ~{hours:g} h"
