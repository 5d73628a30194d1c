"""Running the per-file work: in parallel processes, and through a content-hash cache.

Owns: reading candidate files, looking each up in the scan cache (keyed by the file's
bytes, its path and language, the rule set's digest, the ignored hazards and this
module's version), scanning the misses in a process pool (fork: workers inherit the
loaded rules) in bounded batches so memory stays flat, and giving back FileScans in
the candidates' order, so a parallel run equals a serial one.

Results travel from the workers, and are stored, in portcheck.wire's plain JSON form:
a use without its ApiRule (the rule's name stands in; the parent re-attaches it with one
dictionary lookup). A stored entry that does not decode, or not to a scan of the file
asked for, is a miss: the file is scanned again.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import os
import pickle
import signal
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from portcheck.discover import Candidate, read_candidate
from portcheck.extract import Extractor, FileScan
from portcheck.model import Language, Skipped, Use
from portcheck.python.rules import python_rules_digest
from portcheck.resources import usable_cache_dir
from portcheck.ruleset import RuleSet
from portcheck.wire import WireError, decode_file_scan, encode_file_scan

CACHE_VERSION = "scan-9"  # bump when extraction or checks change what they produce
MIN_FILES_FOR_POOL = 16
CHUNK_FILES = 8  # files per task sent to a worker...
CHUNK_BYTES = 256 * 1024  # ...or fewer when they are large
WINDOW_CHUNKS = 4  # chunks in flight per worker before the parent waits
CACHE_WRITE_BATCH = 512

_worker_extractor: Extractor | None = None
_worker_timeout: float | None = None  # seconds per file (workers inherit it by fork)
_worker_caches = False  # whether the parent stores results (then workers encode them too)
DEFAULT_FILE_TIMEOUT = 60.0
TIMEOUT_REASON = "timeout"


class FileTimeout(Exception):
    """A file took longer than its budget."""


def _on_alarm(signum: int, frame: object) -> None:
    raise FileTimeout


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise FileTimeout in this block after `seconds` (SIGALRM: the main thread of a
    process only; elsewhere, or with no limit, the block runs unbounded). The previous
    handler and timer are restored afterwards."""
    if (
        not seconds
        or not hasattr(signal, "setitimer")
        or threading.current_thread() is not threading.main_thread()
    ):
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:  # someone else's timer was running: give it back what remains (roughly)
            signal.setitimer(signal.ITIMER_REAL, outer)


def scan_within(
    extractor: Extractor, relpath: str, language: Language, data: bytes, seconds: float | None
) -> FileScan | Skipped:
    """scan_file, or Skipped(relpath, "timeout") when it takes longer than `seconds`."""
    try:
        with time_limit(seconds):
            return extractor.scan_file(relpath, language, data)
    except FileTimeout:
        return Skipped(relpath, TIMEOUT_REASON)


# Young-generation collections every 20,000 allocations instead of 700: a scan allocates
# millions of short-lived objects (syntax nodes, tuples) and no reference cycles worth
# finding early. Measured on cuda-samples: ~15 % less CPU for a serial scan, ~5 % less
# wall time for a parallel one (A/B of alternating runs).
GC_THRESHOLD = (20_000, 50, 100)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often while scanning, and freeze what exists now (the rules,
    the lookup tables) so that no collection walks it again; worker processes forked
    inside inherit both. The previous settings are restored afterwards."""
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLD)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()


def _to_wire(scan: FileScan) -> bytes:
    return encode_file_scan(scan)


# Between the pool's processes a scan travels pickled (the workers are this program's own
# forks; nothing else writes that pipe), with each use's rule replaced by its name: decoding
# the checked JSON form in the parent cost ~0.4 s of a 3 s cuda-samples scan. The JSON form
# is made in the worker only when the cache will store it.
Piped = tuple[bytes, bytes | None]


def _to_pipe(scan: FileScan, for_cache: bool) -> Piped:
    uses = [
        (
            u.name,
            u.kind,
            u.family,
            u.path,
            u.span,
            u.in_device_code,
            u.rule.cuda if u.rule else None,
        )
        for u in scan.uses
    ]
    fast = pickle.dumps((replace(scan, uses=[]), uses), protocol=pickle.HIGHEST_PROTOCOL)
    return fast, encode_file_scan(scan) if for_cache else None


def _from_pipe(piped: Piped, rules: RuleSet) -> FileScan:
    scan, rows = pickle.loads(piped[0])
    rule_of = {name: rules.lookup(name) for name in {row[6] for row in rows} if name}
    get = rule_of.get
    scan.uses = [
        Use(name, kind, family, path, span, device, get(rule) if rule else None)
        for name, kind, family, path, span, device, rule in rows
    ]
    return scan


def _from_cache(
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


def _scan_chunk(jobs: list[tuple[str, Language, bytes]]) -> list[Piped | Skipped]:
    """Runs in a worker process: scans a chunk of files (a file over its time budget
    comes back as a Skipped, which the parent does not cache)."""
    assert _worker_extractor is not None
    results: list[Piped | Skipped] = []
    for relpath, language, data in jobs:
        scanned = scan_within(_worker_extractor, relpath, language, data, _worker_timeout)
        piped = scanned if isinstance(scanned, Skipped) else _to_pipe(scanned, _worker_caches)
        results.append(piped)
    return results


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


def _key_context(extractor: Extractor) -> str:
    """What every file's cache key depends on besides its path, language and bytes: this
    module's version, the rule sets and the ignored hazards."""
    parts = (
        CACHE_VERSION,
        extractor.rules.digest,
        python_rules_digest(),
        *sorted(extractor.ignore),
        f"front-end:{extractor.front_end}",
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
    extractor: Extractor,
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
    context = _key_context(extractor)
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


def scan_candidates(
    reads: Iterable[Read],
    total: int,
    extractor: Extractor,
    *,
    jobs: int | None = None,
    cache: ScanCache | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
) -> Iterator[FileScan | Skipped]:
    """FileScans (and Skipped for unreadable files) in the order of `reads` (`total` of
    them). A read with a key is looked up in the cache, and what is scanned is stored.
    A file not scanned within `file_timeout` seconds is Skipped ("timeout"), not stored.

    With a pool, chunks of files are submitted as soon as they are read and at most
    WINDOW_CHUNKS per worker are in flight, so the workers never wait for the parent and
    memory stays bounded however large the tree is; results are yielded in order.
    """
    global _worker_extractor, _worker_timeout, _worker_caches
    _worker_extractor = extractor
    _worker_timeout = file_timeout
    _worker_caches = cache is not None
    workers = max(1, jobs or os.cpu_count() or 1)
    use_pool = workers > 1 and total >= MIN_FILES_FOR_POOL
    pool: Any = None
    done = 0
    # One slot per candidate, in order: [candidate, result or _Pending].
    slots: deque[list[Any]] = deque()
    chunk: list[tuple[str, Language, bytes]] = []
    chunk_slots: list[list[Any]] = []
    chunk_bytes = 0
    in_flight: deque[Any] = deque()  # submitted chunks not yet consumed, oldest first
    fresh: list[tuple[str, bytes]] = []
    prepared = False

    def flush() -> None:
        nonlocal chunk, chunk_slots, chunk_bytes, pool
        if not chunk:
            return
        if pool is None:
            extractor.prepare()
            pool = _make_pool(workers)
        future = pool.apply_async(_scan_chunk, (chunk,))
        in_flight.append(future)
        for position, slot in enumerate(chunk_slots):
            slot[1] = _Pending(future, position, slot[1], last=position == len(chunk) - 1)
        chunk, chunk_slots, chunk_bytes = [], [], 0

    def drain(limit: int) -> Iterator[FileScan | Skipped]:
        """Yield finished results from the front; wait while more than `limit` chunks fly."""
        nonlocal done
        while slots:
            candidate, state = slots[0]
            if isinstance(state, _Pending):
                if len(in_flight) <= limit and not state.future.ready():
                    break
                payload = state.future.get()[state.position]
                result: FileScan | Skipped | None
                if isinstance(payload, Skipped):  # over its time budget: never cached
                    result = payload
                else:
                    result = _from_pipe(payload, extractor.rules)
                    if state.key and payload[1] is not None:
                        fresh.append((state.key, payload[1]))
                if state.last:
                    in_flight.popleft()
            elif isinstance(state, str):
                break  # read, waiting for its chunk to be submitted
            else:
                result = state
            slots.popleft()
            done += 1
            if progress is not None:
                progress(done, total, candidate.relpath)
            if result is not None:
                yield result
        if cache is not None and len(fresh) >= CACHE_WRITE_BATCH:
            cache.put_many(fresh)
            fresh.clear()

    try:
        for read in reads:
            candidate, data, key = read.candidate, read.data, read.key
            payload = cache.get(key) if cache is not None and key else None
            cached = (
                _from_cache(payload, candidate, extractor.rules, extractor.root)
                if payload
                else None
            )
            if cached is not None:
                slots.append([candidate, cached])
                yield from drain(WINDOW_CHUNKS * workers)
                continue
            if data is REREAD:  # its bytes were not kept (or not read at all): read them now
                data = read_candidate(candidate, facts=True)
            if data is None or isinstance(data, Skipped):
                slots.append([candidate, data])
            elif use_pool:
                slot = [candidate, key]  # the key stands in until the chunk is submitted
                slots.append(slot)
                chunk.append((candidate.relpath, candidate.language, data))
                chunk_slots.append(slot)
                chunk_bytes += len(data)
                if len(chunk) >= CHUNK_FILES or chunk_bytes >= CHUNK_BYTES:
                    flush()
            else:  # in-process: no round trip through pickle unless the cache wants it
                if not prepared:  # the lookup tables and queries: not in the first file's time
                    extractor.prepare()
                    prepared = True
                scanned = scan_within(
                    extractor, candidate.relpath, candidate.language, data, file_timeout
                )
                slots.append([candidate, scanned])
                if cache is not None and key and not isinstance(scanned, Skipped):
                    fresh.append((key, _to_wire(scanned)))
            yield from drain(WINDOW_CHUNKS * workers)
        flush()
        yield from drain(-1)
        if cache is not None:
            cache.put_many(fresh)
    finally:
        if pool is not None:
            pool.close()
            pool.join()


class _Pending:
    """A file whose result is the `position`-th payload of a submitted chunk."""

    __slots__ = ("future", "key", "last", "position")

    def __init__(self, future: Any, position: int, key: str, *, last: bool) -> None:
        self.future = future
        self.position = position
        self.key = key
        self.last = last


def _make_pool(workers: int) -> Any:
    import multiprocessing  # only for a pool: a cached or small scan never starts one

    methods = multiprocessing.get_all_start_methods()
    # fork lets workers inherit the loaded rule set and extractor instead of rebuilding them.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return context.Pool(workers)
