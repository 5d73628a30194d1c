"""What a fleet's Dask workers run: one task per repository (get its files, decide whether
anything changed, scan it), and one task per group of its compile units.

Owns: `audit_repository` and `compile_units`, plain functions over plain data (they
travel to any worker of a cluster by pickling), and the resume key. A scan or a compile
runs as a subprocess (`python -m portcheck scan … --format json -o FILE`): it may use a
process pool of its own inside a daemonic Dask worker, a crash stays in it, and it is
killed whole, with its children, on its time limit or when the fleet is interrupted
(the driver sets a Dask Event, which every task polls while it waits). Failures are
returned as a reason, never raised: one repository's trouble does not stop the rest.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from portcheck import __version__
from portcheck.fleet.checkout import CheckoutError, Git, State, files_digest
from portcheck.fleet.portfolio import summarize
from portcheck.fleet.process import Finished, run_bounded
from portcheck.fleet.sources import Entry

KEY_FORMAT = "portcheck.fleet-key/1"
STOP_POLL_SECONDS = 1.0


@dataclass(frozen=True, slots=True)
class Settings:
    """What every repository of a run is scanned (and compiled) with.

    `scan_args` and `compile_args` are command-line options for `portcheck scan` and
    `portcheck compile` (already validated by the driver) that shape the report; `archs`
    is the --offload-arch list, empty without --compile. `jobs`: the scan's and
    compile's -j inside one task (None: the worker machine's CPUs); `cache`: whether they
    use portcheck's caches (it changes no result, so neither is in the key). `work`: the
    folder clones go to (on the worker); `registry`: where running process groups are
    noted; `stop_event`: the name of the Dask Event that says the fleet was interrupted."""

    scan_args: tuple[str, ...] = ()
    archs: str = ""
    compile_args: tuple[str, ...] = ()
    jobs: int | None = None
    cache: bool = True
    repo_timeout: float = 3600.0
    clone_timeout: float = 600.0
    work: str = ""
    registry: str | None = None
    stop_event: str | None = None

    def fingerprint(self) -> dict[str, object]:
        """The settings that change a repository's report (not where or how fast)."""
        return {
            "scan": list(self.scan_args),
            "archs": self.archs,
            "compile": list(self.compile_args) if self.archs else [],
        }


@dataclass(frozen=True, slots=True)
class RepoJob:
    entry: Entry
    settings: Settings
    previous_key: str | None = None  # the key of the last finished run of this entry


@dataclass(slots=True)
class RepoOutcome:
    """What a repository task found. `status`: "scanned", "unchanged" (the key is the one
    of the previous run: nothing was cloned or scanned) or "failed" (with `reason`).
    `report`: the portcheck.report/1 text; `summary`: its figures for the portfolio
    (worked out here, so that the driver does not parse every report); `units`: the
    sources to compile."""

    name: str
    status: str
    key: str = ""
    commit: str = ""
    dirty: bool = False
    folder: str = ""
    report: str = ""
    summary: dict[str, object] = field(default_factory=dict)
    units: list[str] = field(default_factory=list)
    reason: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    fetch_seconds: float = 0.0  # asking the remote and cloning (or reading a folder's state)
    scan_seconds: float = 0.0
    host: str = ""


@dataclass(frozen=True, slots=True)
class CompileJob:
    entry: Entry
    settings: Settings
    folder: str
    commit: str
    units: tuple[str, ...]
    index: int


@dataclass(slots=True)
class CompileOutcome:
    """One group's results (`portcheck.compile/1` result entries), the hipcc that built
    them, or `problem` (no hipcc on the worker, a crash) when there are none."""

    name: str
    index: int
    results: list[dict[str, object]] = field(default_factory=list)
    hipcc: dict[str, object] | None = None
    problem: str = ""
    seconds: float = 0.0
    cpu_seconds: float = 0.0


@lru_cache(maxsize=1)
def tool_fingerprint() -> dict[str, str]:
    """What makes this portcheck's reports what they are: its version, the rule set's
    digest and a digest of every other data file it ships (hazards, GPUs, Python rules)."""
    from portcheck.resources import data_dir
    from portcheck.ruleset import default_rules

    digest = hashlib.sha256()
    pending = [data_dir("rules")]
    files = []
    while pending:
        folder = pending.pop()
        for item in folder.iterdir():
            if item.is_dir():
                pending.append(item)
            elif item.is_file():
                files.append(item)
    for item in sorted(files, key=lambda f: str(f)):
        digest.update(item.name.encode() + b"\0" + hashlib.sha256(item.read_bytes()).digest())
    return {"version": __version__, "rules": default_rules().digest, "data": digest.hexdigest()}


def resume_key(state: State, settings: Settings) -> str:
    """The key a finished repository is remembered by: its files' state, portcheck's
    version and data, and the settings. Same key, same report: it is not redone."""
    document = {
        "format": KEY_FORMAT,
        "state": state.identity(),
        "tool": tool_fingerprint(),
        "settings": settings.fingerprint(),
    }
    return hashlib.sha256(json.dumps(document, sort_keys=True).encode()).hexdigest()[:32]


def _stopper(name: str | None) -> Callable[[], bool] | None:
    """A callable that says whether the fleet was interrupted: the Dask Event `name`,
    asked at most once a second (each ask is a message to the scheduler)."""
    if name is None:
        return None
    from distributed import Event

    event = Event(name)
    last = [0.0, False]

    def stop() -> bool:
        now = time.monotonic()
        if not last[1] and now - float(last[0]) >= STOP_POLL_SECONDS:
            last[0] = now
            with contextlib.suppress(Exception):  # a scheduler gone away: keep working
                last[1] = bool(event.is_set())
        return bool(last[1])

    return stop


def clone_folder(settings: Settings, entry: Entry) -> Path:
    return Path(settings.work) / entry.name


def audit_repository(job: RepoJob) -> RepoOutcome:
    """Get the repository's files (a clone, or the local folder as it is), compute its
    key, and scan it unless the key is the previous run's."""
    entry, settings = job.entry, job.settings
    started = time.monotonic()
    outcome = RepoOutcome(entry.name, "failed", host=socket.gethostname())
    stop = _stopper(settings.stop_event)
    git = Git(settings.clone_timeout, stop, settings.registry)
    try:
        folder, state = _locate(entry, settings, git, job.previous_key, outcome)
        outcome.fetch_seconds = time.monotonic() - started
        if folder is not None:
            _scan(folder, settings, stop, outcome)
            outcome.commit, outcome.dirty = state.commit, bool(state.dirty)
            outcome.scan_seconds = time.monotonic() - started - outcome.fetch_seconds
    except CheckoutError as exc:
        outcome.status, outcome.reason = "failed", str(exc)
    except OSError as exc:
        outcome.status, outcome.reason = "failed", f"{exc.strerror or exc}: {exc.filename or ''}"
    outcome.seconds = time.monotonic() - started
    outcome.cpu_seconds += git.cpu_seconds
    return outcome


def _locate(
    entry: Entry, settings: Settings, git: Git, previous: str | None, outcome: RepoOutcome
) -> tuple[Path | None, State]:
    """The folder to scan and its state; (None, state) when the key is the previous
    run's (outcome set to "unchanged")."""
    if entry.kind == "local":
        folder = Path(entry.location)
        if not folder.exists():
            raise CheckoutError(f"no such file or folder: {entry.location}")
        if not os.access(folder, os.R_OK):
            raise CheckoutError(f"cannot read {entry.location}")
        base = folder if folder.is_dir() else folder.parent
        state = git.local_state(base) if folder.is_dir() else State(files=files_digest(folder))
        outcome.key = resume_key(state, settings)
        outcome.commit, outcome.dirty = state.commit, bool(state.dirty)
        if outcome.key == previous:
            outcome.status = "unchanged"
            return None, state
        return folder, state
    if entry.kind != "git":
        raise CheckoutError(entry.problem or "not a path or git URL")
    commit = git.remote_commit(entry)
    if commit is not None:
        known = State(commit=commit)
        if resume_key(known, settings) == previous:
            outcome.status, outcome.key, outcome.commit = "unchanged", previous or "", commit
            return None, known
    folder = clone_folder(settings, entry)
    head = git.clone(entry, folder, commit)
    state = State(commit=head)
    outcome.key = resume_key(state, settings)
    if outcome.key == previous:  # a short id that resolved to the commit of last time
        outcome.status, outcome.commit = "unchanged", head
        return None, state
    return folder, state


def _python() -> list[str]:
    return [sys.executable, "-m", "portcheck"]


def _jobs(settings: Settings) -> list[str]:
    """How hard and how: -j, and --no-cache when the caches are off."""
    jobs = ["--jobs", str(settings.jobs)] if settings.jobs else []
    return jobs if settings.cache else [*jobs, "--no-cache"]


def _scan(
    folder: Path, settings: Settings, stop: Callable[[], bool] | None, outcome: RepoOutcome
) -> None:
    with tempfile.TemporaryDirectory(prefix="portcheck-fleet-") as scratch:
        output = Path(scratch) / "report.json"
        command = [
            *_python(),
            "scan",
            str(folder.resolve()),
            "--format",
            "json",
            "-o",
            str(output),
            *settings.scan_args,
            *_jobs(settings),
        ]
        finished = run_bounded(
            command, timeout=settings.repo_timeout, stop=stop, registry=settings.registry
        )
        outcome.cpu_seconds += finished.cpu_seconds
        problem = _problem("scan", finished, settings.repo_timeout)
        if problem:
            outcome.status, outcome.reason = "failed", problem
            return
        try:
            outcome.report = output.read_text("utf-8")
            document = json.loads(outcome.report)
            files = document["files"]
            outcome.summary = summarize(document)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            outcome.status, outcome.reason = "failed", f"scan wrote no usable report ({exc})"
            return
    outcome.status = "scanned"
    outcome.folder = str(folder)
    if settings.archs:
        from portcheck.compile import COMPILED_SUFFIXES

        outcome.units = [
            str(f["path"]) for f in files if str(f["path"]).lower().endswith(COMPILED_SUFFIXES)
        ]


def _problem(what: str, finished: Finished, limit: float) -> str:
    """Why a scan or compile did not give a report ("" when it did)."""
    if finished.stopped:
        return "interrupted"
    if finished.timed_out:
        return f"{what} timed out after {limit:g} s (killed with its children)"
    if finished.returncode not in (0, 1):
        said = finished.message() or "no message"
        return f"{what} exited with code {finished.returncode}: {said}"
    return ""


def compile_units(job: CompileJob) -> CompileOutcome:
    """Compile one group of a repository's units with `portcheck compile --unit …` (the
    clone is made again on a worker that does not have it)."""
    from portcheck.model import CompileResult

    settings = job.settings
    started = time.monotonic()
    outcome = CompileOutcome(job.entry.name, job.index)
    stop = _stopper(settings.stop_event)
    try:
        folder = Path(job.folder)
        if job.entry.kind == "git":
            git = Git(settings.clone_timeout, stop, settings.registry)
            folder = clone_folder(settings, job.entry)
            git.clone(job.entry, folder, job.commit)
        with tempfile.TemporaryDirectory(prefix="portcheck-fleet-") as scratch:
            output = Path(scratch) / "compile.json"
            command = [
                *_python(),
                "compile",
                str(folder.resolve()),
                "--offload-arch",
                settings.archs,
                "--format",
                "json",
                "-o",
                str(output),
                *settings.compile_args,
                *_jobs(settings),
            ]
            for unit in job.units:
                command += ["--unit", unit]
            finished = run_bounded(
                command, timeout=settings.repo_timeout, stop=stop, registry=settings.registry
            )
            outcome.cpu_seconds = finished.cpu_seconds
            if finished.timed_out:
                outcome.results = [
                    CompileResult(
                        unit,
                        arch,
                        False,
                        finished.seconds,
                        failure_class="timeout",
                        explanation=f"the fleet's time limit ({settings.repo_timeout:g} s) "
                        "for this group of units ran out",
                    ).to_dict()
                    for unit in job.units
                    for arch in settings.archs.split(",")
                ]
            elif finished.returncode == 3:
                outcome.problem = f"no hipcc on {socket.gethostname()}: {finished.message()}"
            else:
                outcome.problem = _problem("compile", finished, settings.repo_timeout)
                if not outcome.problem:
                    document = json.loads(output.read_text("utf-8"))
                    outcome.results = list(document["results"])
                    outcome.hipcc = dict(document["hipcc"])
    except CheckoutError as exc:
        outcome.problem = str(exc)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        outcome.problem = f"compile wrote no usable result ({exc})"
    outcome.seconds = time.monotonic() - started
    return outcome
