"""Where a fleet repository's files come from, and what state they are in.

Owns: asking a remote which commit a ref names (`git ls-remote`), shallow clones into
the work folder (`git clone --depth 1 --branch REF`, or init + fetch of one commit), kept
between runs and replaced when the commit moves, one clone at a time per folder (a file
lock); and the state of a local folder, which is read and never written: the commit of
its git checkout with a marker of uncommitted changes, or a digest of its files' sizes
and times when it is not a checkout. Every git command runs under a time limit.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from portcheck.fleet.process import Finished, run_bounded
from portcheck.fleet.sources import FULL_COMMIT, Entry

# git must never wait for a password or a host key: a fleet runs unattended.
GIT_ENVIRONMENT = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "SSH_ASKPASS": "true",
    "GIT_SSH_COMMAND": "ssh -o BatchMode=yes",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
}


class CheckoutError(Exception):
    """The repository's files could not be had; the message is the reason, one line."""


@dataclass(frozen=True, slots=True)
class State:
    """What a repository's files are: `commit` (a git checkout) and `dirty` (a digest of
    the uncommitted changes, "" when there are none), or `files` (a digest of a plain
    folder's names, sizes and times)."""

    commit: str = ""
    dirty: str = ""
    files: str = ""

    def identity(self) -> str:
        if self.commit:
            return f"git:{self.commit}" + (f"+dirty:{self.dirty}" if self.dirty else "")
        return f"files:{self.files}"


class Git:
    """git commands for one repository job: each bounded by `timeout` and `stop`."""

    def __init__(
        self,
        timeout: float,
        stop: Callable[[], bool] | None = None,
        registry: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.stop = stop
        self.registry = registry
        self.cpu_seconds = 0.0  # of every git command run so far

    def run(self, *args: str, cwd: str | os.PathLike[str] | None = None) -> Finished:
        finished = run_bounded(
            ["git", *args],
            timeout=self.timeout,
            cwd=cwd,
            env={**os.environ, **GIT_ENVIRONMENT},
            stop=self.stop,
            registry=self.registry,
        )
        self.cpu_seconds += finished.cpu_seconds
        return finished

    def must(self, what: str, *args: str, cwd: str | os.PathLike[str] | None = None) -> str:
        finished = self.run(*args, cwd=cwd)
        if finished.stopped:
            raise CheckoutError("interrupted")
        if finished.timed_out:
            raise CheckoutError(f"{what} took longer than {self.timeout:g} s (git killed)")
        if finished.returncode != 0:
            said = finished.message() or f"exit code {finished.returncode}"
            raise CheckoutError(f"{what} failed: {said}")
        return finished.stdout

    def remote_commit(self, entry: Entry) -> str | None:
        """The commit `entry` names now, asked of the remote without cloning; None when
        the remote cannot say (a short commit id): the clone will tell."""
        if entry.pinned_commit:
            return entry.pinned_commit
        ref = entry.ref or "HEAD"
        listing = self.must("git ls-remote", "ls-remote", entry.location, ref)
        found: dict[str, str] = {}
        for line in listing.splitlines():
            commit, _, name = line.partition("\t")
            found[name] = commit
        for name in (
            ref if ref == "HEAD" else f"refs/heads/{ref}",
            f"refs/tags/{ref}^{{}}",  # an annotated tag, peeled to its commit
            f"refs/tags/{ref}",
            ref,
        ):
            if name in found:
                return found[name]
        if entry.ref and all(c in "0123456789abcdef" for c in entry.ref.lower()):
            return None
        raise CheckoutError(f"no branch or tag {ref!r} in {entry.location}")

    def clone(self, entry: Entry, folder: Path, commit: str | None) -> str:
        """Make `folder` a shallow checkout of `entry` at `commit` (or the ref); returns
        the commit checked out. A folder already at that commit is kept as it is."""
        with _locked(folder):
            if commit is not None and folder.is_dir() and self.head(folder) == commit:
                return commit
            if folder.exists():
                shutil.rmtree(folder)
            folder.parent.mkdir(parents=True, exist_ok=True)
            partial = folder.with_name(folder.name + ".partial")
            if partial.exists():
                shutil.rmtree(partial)
            try:
                self._clone_into(entry, partial, commit)
                head = self.head(partial)
                if head is None:
                    raise CheckoutError("the clone has no commit checked out")
                partial.rename(folder)
            finally:
                if partial.exists():
                    shutil.rmtree(partial, ignore_errors=True)
            return head

    def _clone_into(self, entry: Entry, target: Path, commit: str | None) -> None:
        ref = entry.ref
        url = entry.location
        if ref is not None and FULL_COMMIT.match(ref):
            self.must("git init", "init", "--quiet", str(target))
            self.must("git fetch", "fetch", "--quiet", "--depth", "1", "--", url, ref, cwd=target)
            self.must("git checkout", "checkout", "--quiet", "--detach", "FETCH_HEAD", cwd=target)
        elif ref is not None and commit is None:
            # A short commit id no branch or tag matches: only the full history has it.
            self.must("git clone", "clone", "--quiet", "--no-checkout", "--", url, str(target))
            self.must("git checkout", "checkout", "--quiet", "--detach", ref, cwd=target)
        else:
            branch = ["--branch", ref] if ref else []
            self.must(
                "git clone",
                "clone",
                "--quiet",
                "--depth",
                "1",
                "--no-tags",
                *branch,
                "--",
                url,
                str(target),
            )

    def head(self, folder: Path) -> str | None:
        finished = self.run("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=folder)
        commit = finished.stdout.strip()
        return commit if finished.returncode == 0 and FULL_COMMIT.match(commit) else None

    def local_state(self, folder: Path) -> State:
        """The state of a local folder, read without writing anything (no index
        refresh): its checkout's commit and uncommitted changes under it, or a digest of
        its files when it is not in a git checkout."""
        inside = self.run("rev-parse", "--is-inside-work-tree", cwd=folder)
        if inside.returncode != 0 or inside.stdout.strip() != "true":
            return State(files=files_digest(folder))
        commit = self.head(folder)
        if commit is None:  # a fresh `git init` without a commit
            return State(files=files_digest(folder))
        changes = self.must(
            "git status",
            "--no-optional-locks",
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            "--",
            ".",
            cwd=folder,
        )
        if not changes:
            return State(commit=commit)
        digest = hashlib.sha256(changes.encode("utf-8", "surrogateescape"))
        for record in changes.split("\0"):
            name = record[3:]
            if not name:
                continue
            with contextlib.suppress(OSError):
                info = (folder / name).lstat()
                digest.update(f"{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode())
        return State(commit=commit, dirty=digest.hexdigest()[:16])


def files_digest(folder: Path) -> str:
    """A digest of the relative names, sizes and modification times of every file under
    `folder` (links not followed, .git folders left out): it changes when a file does."""
    digest = hashlib.sha256()
    if folder.is_file():
        info = folder.stat()
        digest.update(f"{folder.name}\0{info.st_size}\0{info.st_mtime_ns}".encode())
        return digest.hexdigest()[:32]
    for current, folders, files in os.walk(folder):
        folders[:] = sorted(d for d in folders if d != ".git")
        relative = os.path.relpath(current, folder)
        for name in sorted(files):
            with contextlib.suppress(OSError):
                info = os.lstat(os.path.join(current, name))
                digest.update(
                    f"{relative}/{name}\0{info.st_size}\0{info.st_mtime_ns}\0".encode(
                        "utf-8", "surrogateescape"
                    )
                )
    return digest.hexdigest()[:32]


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """One clone of a folder at a time on this machine (a repository's scan and its
    compile groups may ask for it at once)."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    lock = folder.with_name(folder.name + ".lock")
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
