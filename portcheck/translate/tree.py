"""The input tree as translation sees it, walked without ever following a symlink.

Owns: listing what is under PATH (lstat only; sorted; .git, .hg and .svn left out), telling
which files to translate (the same choice as the scan: CUDA sources and C/C++ files that use
CUDA, not .gitignored, not oversized) and which to copy, and judging every symlink: one that
stays inside PATH is kept as a relative link in the output; one that leads out of PATH is
skipped with a reason and its target is never opened. A folder reached through a link is
never walked: the real folder is walked under its own path.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from portcheck.discover import (
    ALWAYS_PRUNED,
    BINARY_SNIFF_BYTES,
    MAX_FILE_BYTES,
    Candidate,
    _IgnoreRules,  # the scan's .gitignore reading, so both choose the same files
    classify_name,
    looks_like_cuda,
)
from portcheck.model import Skipped

__all__ = ["TreeFile", "TreeLink", "open_input", "read_source", "walk"]


@dataclass(frozen=True)
class TreeFile:
    """A regular file of the tree; `candidate` is set when it is to be translated."""

    path: Path
    relpath: str  # relative to PATH, with "/"
    mode: int
    candidate: Candidate | None


@dataclass(frozen=True)
class TreeLink:
    """A symlink that stays inside PATH, and its target relative to the link's folder."""

    relpath: str
    target: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.relpath, "target": self.target}


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([folder, path]) == folder


def _judge_link(root_real: str, reldir: str, path: str, relpath: str) -> TreeLink | Skipped:
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Skipped(relpath, "symlink loop; not followed")
        # A dangling link is judged by where it points, like any other.
    target = os.path.realpath(path)
    if not _inside(target, root_real):
        kind = "a folder" if os.path.isdir(target) else "a file"
        return Skipped(relpath, f"symlink to {kind} outside the tree; not followed")
    # The walk never enters a link, so the link's folder is a real one.
    return TreeLink(relpath, os.path.relpath(target, os.path.join(root_real, reldir)))


def _is_regular(path: str) -> bool:
    """True for a regular file; False for a link (never followed), a pipe, or nothing."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def walk(root: Path, exclude: Sequence[str] = ()) -> Iterator[TreeFile | TreeLink | Skipped]:
    """Every file, link and skipped entry under `root`, depth first in sorted order
    (a folder's files before its subfolders). Files matching `exclude` are left out."""
    import pathspec

    excluded = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
    gitignore = _IgnoreRules(())
    root_real = os.path.realpath(root)
    stack: list[tuple[str, bool]] = [("", False)]  # (relative folder, inside an ignored folder)
    while stack:
        reldir, ignored_folder = stack.pop()
        absdir = os.path.join(root, reldir) if reldir else str(root)
        if not ignored_folder and _is_regular(os.path.join(absdir, ".gitignore")):
            for reason in gitignore.load_dir(reldir, absdir, root_real):
                yield Skipped(f"{reldir}/.gitignore" if reldir else ".gitignore", reason)
        try:
            with os.scandir(absdir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Skipped(reldir or ".", f"cannot list folder: {exc.strerror or exc}")
            continue
        subfolders: list[tuple[str, bool]] = []
        for entry in entries:
            relpath = f"{reldir}/{entry.name}" if reldir else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                yield Skipped(relpath, f"cannot stat: {exc.strerror or exc}")
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if excluded is not None and excluded.match_file(relpath + "/" if is_dir else relpath):
                continue
            if is_dir:
                if entry.name not in ALWAYS_PRUNED:
                    ignored = ignored_folder or gitignore.ignored(relpath, is_dir=True)
                    subfolders.append((relpath, ignored))
            elif stat.S_ISLNK(st.st_mode):
                yield _judge_link(root_real, reldir, entry.path, relpath)
            elif not stat.S_ISREG(st.st_mode):
                yield Skipped(relpath, "not a regular file (a device, socket or pipe)")
            else:
                ignored = ignored_folder or gitignore.ignored(relpath, is_dir=False)
                yield from _file(Path(entry.path), relpath, st, ignored)
        stack.extend(reversed(subfolders))


def _file(
    path: Path, relpath: str, st: os.stat_result, ignored: bool
) -> Iterator[TreeFile | Skipped]:
    language, needs_check = classify_name(path.name, path.parent.name)
    if ignored or language is None or not language.is_source:
        yield TreeFile(path, relpath, st.st_mode, None)
        return
    if st.st_size > MAX_FILE_BYTES:
        size = f"{MAX_FILE_BYTES // (1024 * 1024)} MiB ({st.st_size} bytes)"
        yield Skipped(relpath, f"larger than {size}; copied unchanged")
        yield TreeFile(path, relpath, st.st_mode, None)
        return
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    yield TreeFile(
        path, relpath, st.st_mode, Candidate(path, relpath, language, needs_check, stamp)
    )


def open_input(path: Path) -> BinaryIO:
    """Open a file of the tree for reading, refusing one that became a symlink (or a
    pipe, which would block) since the walk saw it."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_BINARY", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


def read_source(candidate: Candidate) -> bytes | Skipped | None:
    """A candidate's bytes, as the scan's `read_candidate` gives them (a Skipped with the
    reason; None for a C/C++ file without CUDA), but never through a symlink."""
    try:
        with open_input(candidate.path) as fh:
            data = fh.read()
    except OSError as exc:
        return Skipped(candidate.relpath, f"unreadable: {exc.strerror or exc}")
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        return Skipped(candidate.relpath, "binary file (contains NUL bytes)")
    if candidate.needs_cuda_check and not looks_like_cuda(data):
        return None
    return data
