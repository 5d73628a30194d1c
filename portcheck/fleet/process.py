"""Running a fleet's subprocesses (git, a repository's scan, a group of compile units) so
that none outlives its welcome.

Owns: `run_bounded`, which starts a command in a process group of its own, waits for it
under a time limit while asking a `stop` callable (the fleet's interrupt) every half
second, and kills the whole group (SIGTERM, then SIGKILL after a grace period) on a
timeout, a stop or any exception; it reports wall time and the CPU time of the command
and the children it waited for. And the registry of running groups: while a command
runs, a file named after this host and its pid says so, so that whoever runs the fleet
can kill what a worker that died left behind (`kill_registered`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

KILL_GRACE_SECONDS = 2.0
POLL_SECONDS = 0.5
OUTPUT_LIMIT = 64 * 1024  # of stdout and of stderr kept for messages


@dataclass(frozen=True, slots=True)
class Finished:
    """What became of a command: its exit code (None when it was killed), its output
    (the first OUTPUT_LIMIT bytes of each, as text), wall and CPU seconds, and whether a
    time limit or a stop ended it."""

    returncode: int | None
    stdout: str
    stderr: str
    seconds: float
    cpu_seconds: float
    timed_out: bool = False
    stopped: bool = False

    def message(self) -> str:
        """What a failing command said, in one line: its first `fatal:` or `error:` line
        (git, portcheck's `Error:`), else the last line of stderr (a traceback's
        exception), else of stdout."""
        for text in (self.stderr, self.stdout):
            lines = [line.strip() for line in text.splitlines() if line.strip()]
            for line in lines:
                if line.lower().startswith(("fatal:", "error:")):
                    return line[:300]
            if lines:
                return lines[-1][:300]
        return ""


def run_bounded(
    command: Sequence[str],
    *,
    timeout: float,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
    stop: Callable[[], bool] | None = None,
    registry: str | os.PathLike[str] | None = None,
) -> Finished:
    """Run `command` in a new session (its own process group) with no standard input;
    give up after `timeout` seconds or as soon as `stop()` is true, killing the group.
    Any exception (KeyboardInterrupt included) kills the group before it propagates."""
    start = time.monotonic()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=err,
            start_new_session=True,
        )
        marker = _register(registry, process.pid)
        status: int | None = None
        cpu = 0.0
        timed_out = stopped = False
        try:
            delay = 0.02
            while True:
                pid, raw_status, usage = os.wait4(process.pid, os.WNOHANG)
                if pid == process.pid:
                    status = os.waitstatus_to_exitcode(raw_status)
                    cpu = usage.ru_utime + usage.ru_stime
                    process.returncode = status  # reaped here: Popen must not wait again
                    break
                if time.monotonic() - start > timeout:
                    timed_out = True
                    break
                if stop is not None and stop():
                    stopped = True
                    break
                time.sleep(delay)
                delay = min(POLL_SECONDS, delay * 2)
        finally:
            if status is None:
                cpu = _kill_and_reap(process)
            else:
                _kill_group(process.pid, signal.SIGKILL)  # a straggler the command left
            if marker is not None:
                with contextlib.suppress(OSError):
                    marker.unlink()
        return Finished(
            returncode=status,
            stdout=_read_back(out),
            stderr=_read_back(err),
            seconds=time.monotonic() - start,
            cpu_seconds=cpu,
            timed_out=timed_out,
            stopped=stopped,
        )


def _read_back(handle: object) -> str:
    handle.seek(0)  # type: ignore[attr-defined]  # a TemporaryFile: seek and read exist
    data: bytes = handle.read(OUTPUT_LIMIT)  # type: ignore[attr-defined]  # as above
    return data.decode("utf-8", "replace")


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _kill_and_reap(process: subprocess.Popen) -> float:
    """SIGTERM to the group (clang and git remove their temporaries), SIGKILL after the
    grace period; returns the CPU seconds of the reaped command."""
    _kill_group(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    while time.monotonic() < deadline:
        pid, raw_status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid == process.pid:
            process.returncode = os.waitstatus_to_exitcode(raw_status)
            _kill_group(process.pid, signal.SIGKILL)
            return usage.ru_utime + usage.ru_stime
        time.sleep(0.05)
    _kill_group(process.pid, signal.SIGKILL)
    _, raw_status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(raw_status)
    return usage.ru_utime + usage.ru_stime


# -- the registry of running process groups ----------------------------------------------


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat):
    with the pid, it names one process even after the pid is reused."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text.rsplit(")", 1)[-1].split()[19]


def _register(registry: str | os.PathLike[str] | None, pid: int) -> Path | None:
    if registry is None:
        return None
    folder = Path(registry)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        marker = folder / f"{socket.gethostname()}-{pid}"
        marker.write_text(_start_time(pid) or "")
    except OSError:
        return None  # a registry we cannot write only weakens the clean-up after a crash
    return marker


def kill_registered(registry: str | os.PathLike[str]) -> int:
    """Kill the process groups this host's workers registered and did not unregister (a
    worker killed in the middle of a command); returns how many were still running."""
    folder = Path(registry)
    if not folder.is_dir():
        return 0
    prefix = f"{socket.gethostname()}-"
    killed = 0
    for marker in folder.iterdir():
        if not marker.name.startswith(prefix):
            continue
        try:
            pid = int(marker.name[len(prefix) :])
            started = marker.read_text()
        except (ValueError, OSError):
            continue
        if started and _start_time(pid) == started:
            _kill_group(pid, signal.SIGKILL)
            killed += 1
        with contextlib.suppress(OSError):
            marker.unlink()
    return killed
