"""The scan cache: per-file results keyed by content, each tree's file stamps, its last report.

Owns: one SQLite file under the cache folder (`ScanCache`), the key of a file's scan (its
bytes, path and language, the rule sets' digests, the ignored hazards, the front end and
CACHE_VERSION), reading the candidates with their keys (`Read`, `read_all_keyed`: a file
whose stamp is unchanged is not opened), and the key of a whole tree's inputs (`tree_key`).

Entries are portcheck.wire's checked JSON: nothing stored can run code. A stored entry that
does not decode, or not to a scan of the file asked for, is a miss (`cached_scan`); the file
is scanned again. A cache that cannot be used only costs speed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from portcheck.discover import Candidate, read_candidate
from portcheck.filescan import FileScan, FileScanner
from portcheck.model import Language, Skipped
from portcheck.python.rules import python_rules_digest
from portcheck.resources import usable_cache_dir
from portcheck.ruleset import RuleSet
from portcheck.wire import WireError, decode_file_scan

CACHE_VERSION = "scan-113"  # bump when extraction or checks change what they produce


class ScanCache:
    """Per-file scan results in one SQLite file under the cache folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        try:
            self._db = self._open(path)
        except sqlite3.Error as exc:
            # Not a database (damaged, or something else under our name): start afresh.
            # Anything else (locked, unreadable) leaves it alone: no cache only costs speed.
            if type(exc) is sqlite3.DatabaseError:
                with contextlib.suppress(OSError, sqlite3.Error):
                    path.unlink()
                    self._db = self._open(path)

    @staticmethod
    def _open(path: Path) -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=5)
        try:
            db.execute("CREATE TABLE IF NOT EXISTS scans (key TEXT PRIMARY KEY, value BLOB)")
            # What the last scan of each tree recorded of its files (read_all_keyed).
            db.execute(
                "CREATE TABLE IF NOT EXISTS files (tree TEXT, relpath TEXT, stamp TEXT,"
                " context TEXT, recorded INTEGER, state TEXT, PRIMARY KEY (tree, relpath))"
            )
            # The last report of each scanned tree, with the key of all its inputs.
            db.execute(
                "CREATE TABLE IF NOT EXISTS reports (slot TEXT PRIMARY KEY, key TEXT, value BLOB)"
            )
        except sqlite3.Error:
            db.close()
            raise
        return db

    def _rows(self, sql: str, params: Sequence[object]) -> list[Any]:
        """The rows a query gives; none when the cache is unusable (it only costs speed)."""
        if self._db is None:
            return []
        try:
            return self._db.execute(sql, params).fetchall()
        except sqlite3.Error:
            return []

    def _write(self, change: Callable[[sqlite3.Connection], object]) -> None:
        """Apply `change` in one transaction; a failure leaves the cache as it was."""
        if self._db is None:
            return
        try:
            with self._db:
                change(self._db)
        except sqlite3.Error:
            pass

    def get(self, key: str) -> bytes | None:
        rows = self._rows("SELECT value FROM scans WHERE key = ?", (key,))
        return _blob(rows)

    def present(self, keys: Sequence[str]) -> set[str]:
        """Which of these keys have a stored result (without reading the results)."""
        found: set[str] = set()
        for start in range(0, len(keys), 500):  # SQLite's limit on bound parameters
            batch = keys[start : start + 500]
            marks = ",".join("?" * len(batch))
            found.update(
                row[0] for row in self._rows(f"SELECT key FROM scans WHERE key IN ({marks})", batch)
            )
        return found

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if items:
            self._write(
                lambda db: db.executemany("INSERT OR REPLACE INTO scans VALUES (?, ?)", items)
            )

    def file_states(self, tree: str) -> dict[str, FileState]:
        """relpath -> (stamp, context, recorded, state) recorded for `tree`."""
        rows = self._rows(
            "SELECT relpath, stamp, context, recorded, state FROM files WHERE tree = ?", (tree,)
        )
        # A damaged row (wrong types) is not trusted: that file is read and hashed again.
        return {
            row[0]: (row[1], row[2], row[3], row[4])
            for row in rows
            if tuple(map(type, row)) == _FILE_STATE_TYPES
        }

    def put_file_states(self, tree: str, states: dict[str, FileState]) -> None:
        """Record the files of `tree` as they are now (replacing what was recorded)."""

        def replace_all(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM files WHERE tree = ?", (tree,))
            db.executemany(
                "INSERT INTO files VALUES (?, ?, ?, ?, ?, ?)",
                [(tree, relpath, *state) for relpath, state in states.items()],
            )

        self._write(replace_all)

    def get_report(self, slot: str, key: str) -> bytes | None:
        """The report stored for tree `slot`, if it was made from inputs with this key."""
        rows = self._rows("SELECT value FROM reports WHERE slot = ? AND key = ?", (slot, key))
        return _blob(rows)

    def put_report(self, slot: str, key: str, value: bytes) -> None:
        """Remember the report of tree `slot` (replacing the previous one: one per tree)."""
        self._write(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO reports VALUES (?, ?, ?)", (slot, key, value)
            )
        )

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


_FILE_STATE_TYPES = (str, str, str, int, str)


def _blob(rows: list[Any]) -> bytes | None:
    """The stored value of a one-row answer; None unless it is bytes (a planted integer
    would otherwise become a buffer of that many zero bytes)."""
    if not rows or not isinstance(rows[0][0], bytes):
        return None
    value: bytes = rows[0][0]
    return value


def default_cache_path() -> Path | None:
    """The scan cache's file, or None when the cache folder cannot be used."""
    folder = usable_cache_dir()
    return None if folder is None else folder / "scan-cache.sqlite"


def _key_context(scanner: FileScanner) -> str:
    """What every file's cache key depends on besides its path, language and bytes: this
    module's version, the rule sets and the ignored hazards."""
    parts = (
        CACHE_VERSION,
        scanner.rules.digest,
        python_rules_digest(),
        *sorted(scanner.ignore),
        f"front-end:{scanner.front_end}",
    )
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _key(context: str, relpath: str, language: Language, data: bytes) -> str:
    digest = hashlib.sha256(f"{context}\0{relpath}\0{language}\0".encode())
    digest.update(data)
    return digest.hexdigest()


class Read:
    """One candidate after reading: its bytes (or why not: a Skipped, or None for a C/C++
    file with no CUDA in it) and its cache key ("" when there is no cache). `data` is
    REREAD when the bytes were dropped to bound memory, or never read because the file's
    stamp was unchanged, and must be read if the file has to be scanned."""

    __slots__ = ("candidate", "data", "key")

    def __init__(self, candidate: Candidate, data: bytes | Skipped | None, key: str) -> None:
        self.candidate = candidate
        self.data = data
        self.key = key

    @property
    def state(self) -> str:
        """What the read found, as recorded for the next scan and hashed into the tree's
        key: `key:<file key>`, `skip:<reason>` or `none` (no CUDA in it)."""
        if self.key:
            return f"key:{self.key}"
        if isinstance(self.data, Skipped):
            return f"skip:{self.data.reason}"
        return "none"

    @classmethod
    def of_state(cls, candidate: Candidate, state: str) -> Read:
        """The read a recorded state stands for, without opening the file."""
        if state.startswith("key:"):
            return cls(candidate, REREAD, state.removeprefix("key:"))
        if state.startswith("skip:"):
            return cls(candidate, Skipped(candidate.relpath, state.removeprefix("skip:")), "")
        return cls(candidate, None, "")


REREAD = Skipped("", "")  # a sentinel: read the file when its turn comes


def _read(candidate: Candidate, context: str | None) -> Read:
    """Read a candidate and, with a key context, compute its cache key."""
    data = read_candidate(candidate, facts=True)
    key = (
        _key(context, candidate.relpath, candidate.language, data)
        if context is not None and isinstance(data, bytes)
        else ""
    )
    return Read(candidate, data, key)


def read_files(candidates: Iterable[Candidate]) -> Iterator[Read]:
    """Each candidate read, without keys (for a scan without the cache)."""
    return (_read(candidate, None) for candidate in candidates)


# A file modified less than this long before its state was recorded is read again next
# time: a file system's timestamps can be that coarse, so an edit made in the same tick as
# the recording would leave the stamp unchanged (git's "racy" entries).
RACY_NS = 2_000_000_000

FileState = tuple[str, str, int, str]  # (stamp, context, recorded at (ns), Read.state)


def read_all_keyed(
    candidates: Sequence[Candidate],
    scanner: FileScanner,
    keep_bytes: int,
    known: dict[str, FileState] | None = None,
) -> tuple[list[Read], dict[str, FileState]]:
    """Every candidate keyed up front (the tree's memo key needs all the keys), and the
    state of each file to record for the next scan.

    A file whose stamp (size, times, inode) is what `known` recorded, with the same rules
    and options, and which was not modified just before that recording, is not read: its
    recorded state is used, and its bytes are read later only if it has to be scanned
    (REREAD). Other files are read and hashed. The first `keep_bytes` of contents read
    are kept for the scan that may follow; later files' bytes are dropped (REREAD), so
    memory stays bounded on a huge tree."""
    known = known or {}
    context = _key_context(scanner)
    now = time.time_ns()
    reads: list[Read] = []
    states: dict[str, FileState] = {}
    kept = 0
    for candidate in candidates:
        stamp = ":".join(map(str, candidate.stamp))
        where = f"{context}:{candidate.language}"
        entry = known.get(candidate.relpath)
        if (
            entry is not None
            and entry[:2] == (stamp, where)
            and candidate.stamp[1] + RACY_NS < entry[2]
        ):
            read = Read.of_state(candidate, entry[3])
            states[candidate.relpath] = entry
        else:
            read = _read(candidate, context)
            states[candidate.relpath] = (stamp, where, now, read.state)
            if isinstance(read.data, bytes):
                kept += len(read.data)
                if kept > keep_bytes:
                    read.data = REREAD
        reads.append(read)
    return reads, states


def tree_key(reads: Sequence[Read], skipped: Sequence[Skipped], *parts: str) -> str:
    """One key for a whole scan's inputs: every file's state (its key covers its bytes,
    path, language, the rules and options), the files discovery skipped, and `parts`
    (targets, version)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode() + b"\0")
    for read in reads:
        digest.update(f"{read.candidate.relpath}\0{read.state}\0".encode())
    for item in skipped:
        digest.update(f"{item.path}\0{item.reason}\0".encode())
    return digest.hexdigest()


def cached_scan(
    payload: bytes, candidate: Candidate, rules: RuleSet, root: str | None = None
) -> FileScan | None:
    """A cached scan of this candidate, or None when the entry is damaged, foreign or of
    another file: then the file is scanned again (a cache only costs speed)."""
    try:
        scan = decode_file_scan(payload, rules)
    except WireError:
        return None
    if scan.path != candidate.relpath or scan.language is not candidate.language:
        return None
    if scan.clang_inputs and not _dependencies_unchanged(root, scan.clang_inputs):
        return None  # a header libclang read for it has changed since
    return scan


def _dependencies_unchanged(root: str | None, inputs: tuple[tuple[str, str], ...]) -> bool:
    """Do the project headers libclang read for a cached scan still hold what they did?"""
    if root is None:
        return False
    for relpath, digest in inputs:
        try:
            with open(os.path.join(root, relpath), "rb") as handle:
                if hashlib.sha256(handle.read()).hexdigest() != digest:
                    return False
        except OSError:
            return False
    return True
