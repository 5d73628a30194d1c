"""Running the per-file work: in parallel processes, and through a content-hash cache.

Owns: reading candidate files, looking each up in the scan cache (keyed by the file's
bytes, its path and language, the rule set's digest, the ignored hazards and this
module's version), scanning the misses in a process pool (fork: workers inherit the
loaded rules) in bounded batches so memory stays flat, and giving back FileScans in
the candidates' order, so a parallel run equals a serial one.

Across processes a Use travels without its ApiRule (the rule's name stands in) and the
parent re-attaches the rule with one dictionary lookup.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import pickle
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from portcheck.discover import Candidate, read_candidate
from portcheck.extract import Extractor, FileScan
from portcheck.model import Language, Skipped, Use
from portcheck.resources import cache_dir
from portcheck.ruleset import RuleSet

CACHE_VERSION = "scan-1"  # bump when extraction or checks change what they produce
BATCH_FILES = 256
MIN_FILES_FOR_POOL = 16

_worker_extractor: Extractor | None = None


WireUse = tuple[str, str, str, str, Any, bool, str | None]


def _to_wire(scan: FileScan) -> bytes:
    uses: list[WireUse] = [
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
    return pickle.dumps((replace(scan, uses=[]), uses), protocol=pickle.HIGHEST_PROTOCOL)


def _from_wire(payload: bytes, rules: RuleSet) -> FileScan:
    scan, uses = pickle.loads(payload)
    lookup = rules.lookup
    scan.uses = [
        Use(name, kind, family, path, span, device, lookup(rule) if rule else None)
        for name, kind, family, path, span, device, rule in uses
    ]
    return scan


def _scan_job(job: tuple[str, Language, bytes]) -> bytes:
    """Runs in a worker process (or in-process for small scans)."""
    assert _worker_extractor is not None
    relpath, language, data = job
    return _to_wire(_worker_extractor.scan_file(relpath, language, data))


class ScanCache:
    """Per-file scan results in one SQLite file under the cache folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db: sqlite3.Connection | None = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, timeout=5)
            self._db.execute("CREATE TABLE IF NOT EXISTS scans (key TEXT PRIMARY KEY, value BLOB)")
        except sqlite3.Error:
            self._db = None  # an unusable cache only costs speed

    def get(self, key: str) -> bytes | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT value FROM scans WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return None if row is None else bytes(row[0])

    def put_many(self, items: Sequence[tuple[str, bytes]]) -> None:
        if self._db is None or not items:
            return
        try:
            with self._db:
                self._db.executemany("INSERT OR REPLACE INTO scans VALUES (?, ?)", items)
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def default_cache_path() -> Path:
    return cache_dir() / "scan-cache.sqlite"


def _key(extractor: Extractor, relpath: str, language: Language, data: bytes) -> str:
    digest = hashlib.sha256()
    for part in (
        CACHE_VERSION,
        extractor.rules.digest,
        ",".join(sorted(extractor.ignore)),
        relpath,
        str(language),
    ):
        digest.update(part.encode() + b"\0")
    digest.update(data)
    return digest.hexdigest()


def scan_candidates(
    candidates: Sequence[Candidate],
    extractor: Extractor,
    *,
    jobs: int | None = None,
    cache: ScanCache | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> Iterator[FileScan | Skipped]:
    """FileScans (and Skipped for unreadable files) in the candidates' order."""
    global _worker_extractor
    _worker_extractor = extractor
    workers = max(1, jobs or os.cpu_count() or 1)
    pool: Any = None
    done = 0
    try:
        for start in range(0, len(candidates), BATCH_FILES):
            batch = candidates[start : start + BATCH_FILES]
            results: list[FileScan | Skipped | None] = [None] * len(batch)
            pending: list[tuple[int, str, tuple[str, Language, bytes]]] = []
            for index, candidate in enumerate(batch):
                data = read_candidate(candidate)
                if data is None or isinstance(data, Skipped):
                    results[index] = data
                    continue
                key = _key(extractor, candidate.relpath, candidate.language, data)
                payload = cache.get(key) if cache is not None else None
                if payload is not None:
                    results[index] = _from_wire(payload, extractor.rules)
                else:
                    pending.append((index, key, (candidate.relpath, candidate.language, data)))
            if workers > 1 and pool is None and len(candidates) >= MIN_FILES_FOR_POOL and pending:
                pool = _make_pool(workers)
            jobs_only = [job for _, _, job in pending]
            fresh = []
            if pool is not None:
                chunk = max(1, len(jobs_only) // (workers * 4))
                for (index, key, _), payload in zip(
                    pending, pool.map(_scan_job, jobs_only, chunksize=chunk), strict=True
                ):
                    results[index] = _from_wire(payload, extractor.rules)
                    fresh.append((key, payload))
            else:  # in-process: no round trip through pickle unless the cache wants it
                for index, key, (relpath, language, data) in pending:
                    scanned = extractor.scan_file(relpath, language, data)
                    results[index] = scanned
                    if cache is not None:
                        fresh.append((key, _to_wire(scanned)))
            if cache is not None:
                cache.put_many(fresh)
            for candidate, result in zip(batch, results, strict=True):
                done += 1
                if progress is not None:
                    progress(done, len(candidates), candidate.relpath)
                if result is not None:
                    yield result
    finally:
        if pool is not None:
            pool.close()
            pool.join()


def _make_pool(workers: int) -> Any:
    methods = multiprocessing.get_all_start_methods()
    # fork lets workers inherit the loaded rule set and extractor instead of rebuilding them.
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    return context.Pool(workers)
