"""Running the per-file scans: in parallel processes, through the scan cache, in order.

Owns: the process pool (fork: workers inherit the loaded rules and the FileScanner) fed in
bounded batches so memory stays flat (with N jobs: N-1 workers, and this process scans a
chunk itself whenever theirs are full), the per-file time budget, how results travel back
from the workers, and giving FileScans back in the candidates' order, so a parallel run
equals a serial one. What to read and what the cache holds is portcheck.cache's.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from portcheck.cache import REREAD, Read, ScanCache, cached_scan
from portcheck.discover import read_candidate
from portcheck.filescan import FileScan, FileScanner
from portcheck.model import Language, Skipped, Use
from portcheck.options import DEFAULT_FILE_TIMEOUT
from portcheck.ruleset import RuleSet
from portcheck.wire import encode_file_scan

MIN_FILES_FOR_POOL = 16
CHUNK_FILES = 8  # files per task sent to a worker...
CHUNK_BYTES = 256 * 1024  # ...or fewer when they are large
WINDOW_CHUNKS = 4  # chunks in flight per worker before the parent waits
CACHE_WRITE_BATCH = 512

_worker_scanner: FileScanner | None = None
_worker_timeout: float | None = None  # seconds per file (workers inherit it by fork)
_worker_caches = False  # whether the parent stores results (then workers encode them too)
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
    scanner: FileScanner, relpath: str, language: Language, data: bytes, seconds: float | None
) -> FileScan | Skipped:
    """The file's scan, or Skipped(relpath, "timeout") when it takes longer than `seconds`."""
    try:
        with time_limit(seconds):
            return scanner.scan(relpath, language, data)
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


def _scan_chunk(jobs: list[tuple[str, Language, bytes]]) -> list[Piped | Skipped]:
    """Runs in a worker process: scans a chunk of files (a file over its time budget
    comes back as a Skipped, which the parent does not cache)."""
    assert _worker_scanner is not None
    results: list[Piped | Skipped] = []
    for relpath, language, data in jobs:
        scanned = scan_within(_worker_scanner, relpath, language, data, _worker_timeout)
        piped = scanned if isinstance(scanned, Skipped) else _to_pipe(scanned, _worker_caches)
        results.append(piped)
    return results


def scan_candidates(
    reads: Iterable[Read],
    total: int,
    scanner: FileScanner,
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
    global _worker_scanner, _worker_timeout, _worker_caches
    _worker_scanner = scanner
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
            scanner.prepare()
            pool = _make_pool(workers - 1)
        if len(in_flight) >= WINDOW_CHUNKS * (workers - 1):
            # The workers have enough queued: this process scans the chunk itself (its
            # results need no round trip through pickle) instead of waiting for theirs.
            for (relpath, language, data), slot in zip(chunk, chunk_slots, strict=True):
                key = slot[1]
                slot[1] = scanned = scan_within(scanner, relpath, language, data, file_timeout)
                if cache is not None and key and not isinstance(scanned, Skipped):
                    fresh.append((key, _to_wire(scanned)))
            chunk, chunk_slots, chunk_bytes = [], [], 0
            return
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
                    result = _from_pipe(payload, scanner.rules)
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
                cached_scan(payload, candidate, scanner.rules, scanner.root) if payload else None
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
                    scanner.prepare()
                    prepared = True
                scanned = scan_within(
                    scanner, candidate.relpath, candidate.language, data, file_timeout
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
    # fork lets workers inherit the loaded rule set and scanner instead of rebuilding them.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return context.Pool(workers)
