"""The scan pipeline: discover -> read -> parse/extract -> classify -> score -> Report."""

from __future__ import annotations

import os
import pickle
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

from portcheck import __version__
from portcheck.checks import resolve_ignores
from portcheck.discover import MAX_FILE_BYTES, BadPattern, Candidate, check_excludes, discover
from portcheck.engine import (
    DEFAULT_FILE_TIMEOUT,
    MIN_FILES_FOR_POOL,
    TIMEOUT_REASON,
    Read,
    ScanCache,
    default_cache_path,
    fewer_collections,
    read_all_keyed,
    read_files,
    scan_candidates,
    tree_key,
    uses_from_wire,
    uses_to_wire,
)
from portcheck.extract import Extractor, FileScan
from portcheck.graph import Node, build_call_graph, kernels_reaching
from portcheck.model import (
    ROUTES,
    TARGETS,
    Dependency,
    Extension,
    FileSummary,
    Finding,
    Kernel,
    PythonSection,
    PyUse,
    Report,
    RouteVerdicts,
    Skipped,
    Status,
    Target,
    Use,
)
from portcheck.paths import display_path
from portcheck.ruleset import RuleSet, default_rules
from portcheck.score import effort, scores

ProgressCallback = Callable[[int, int, str], None]  # (done, total, current path)


class ScanError(Exception):
    """The scan cannot start (missing path, bad option). The message is for the user."""


def parse_targets(targets: str | Sequence[str] | None) -> tuple[Target, ...]:
    """`"hip,zluda"` or `["hip"]` -> targets; raises ScanError naming a bad one."""
    if targets is None:
        return TARGETS
    names = targets.split(",") if isinstance(targets, str) else list(targets)
    chosen: list[Target] = []
    for name in (n.strip().lower() for n in names):
        if not name:
            continue
        try:
            target = Target(name)
        except ValueError:
            valid = ", ".join(t.value for t in TARGETS)
            raise ScanError(f"unknown target {name!r} (choose from {valid})") from None
        if target not in chosen:
            chosen.append(target)
    if not chosen:
        raise ScanError("no target given")
    return tuple(chosen)


def scan(
    path: str | os.PathLike[str],
    *,
    targets: str | Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    rules: RuleSet | None = None,
    ignore: Sequence[str] = (),
    max_file_bytes: int = MAX_FILE_BYTES,
    jobs: int | None = None,
    cache: bool = True,
    progress: ProgressCallback | None = None,
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
) -> Report:
    """Scan a CUDA file or source tree and return its Report.

    A file not scanned within `file_timeout` seconds (None or 0: no limit) is listed in
    `skipped` with the reason "timeout" and the scan goes on.

    >>> report = scan("examples/heatflow")           # doctest: +SKIP
    >>> report.scores["hip"], len(report.uses)        # doctest: +SKIP
    """
    started = time.perf_counter()
    root = Path(path)
    if not root.exists():
        raise ScanError(f"path does not exist: {display_path(root)}")
    chosen = parse_targets(targets)
    try:
        ignored = resolve_ignores(ignore)
    except ValueError as exc:
        raise ScanError(str(exc)) from None
    try:
        check_excludes(exclude)
    except BadPattern as exc:
        raise ScanError(str(exc)) from None
    extractor = Extractor(rules if rules is not None else default_rules(), ignored)
    with fewer_collections():
        report = _scan_tree(
            root,
            chosen,
            extractor,
            exclude,
            max_file_bytes,
            jobs,
            cache,
            progress,
            file_timeout=file_timeout,
        )
    return replace(report, seconds=time.perf_counter() - started)


def _scan_tree(
    root: Path,
    chosen: tuple[Target, ...],
    extractor: Extractor,
    exclude: Sequence[str],
    max_file_bytes: int,
    jobs: int | None,
    cache: bool,
    progress: ProgressCallback | None,
    *,
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
) -> Report:
    candidates: list[Candidate] = []
    skipped: list[Skipped] = []
    for item in discover(root, exclude, max_file_bytes):
        if isinstance(item, Skipped):
            skipped.append(item)
        else:
            candidates.append(item)

    # Files are scanned in parallel processes (jobs, default: all cores) and remembered in
    # a content-hash cache. The whole report is remembered too, under a key of all the
    # inputs, and so is each file's stamp: a re-scan of an unchanged tree opens no file.
    if not cache:
        reads: Iterable[Read] = read_files(candidates)
        scans = _scan(reads, candidates, extractor, jobs, None, progress, skipped, file_timeout)
        return _assemble(root, chosen, scans, skipped)
    scan_cache = ScanCache(default_cache_path())
    try:
        slot = display_path(os.path.realpath(root))  # sqlite stores no lone surrogates
        known = scan_cache.file_states(slot)
        keyed, states = read_all_keyed(candidates, extractor, KEEP_READ_BYTES, known)
        if states != known:
            scan_cache.put_file_states(slot, states)
        key = tree_key(keyed, skipped, MEMO_VERSION, __version__, *map(str, chosen))
        remembered = _memo_get(scan_cache, slot, key, root, extractor.rules)
        if remembered is None:
            # A commit that changed a few files: scan them here, without starting a pool.
            keys = [read.key for read in keyed if read.key]
            misses = len(keys) - len(scan_cache.present(keys))
            if misses < MIN_FILES_FOR_POOL:
                jobs = 1
            scans = _scan(
                keyed, candidates, extractor, jobs, scan_cache, progress, skipped, file_timeout
            )
            report = _assemble(root, chosen, scans, skipped)
            # A file that ran out of time may finish next time (or with a longer budget).
            if not any(item.reason == TIMEOUT_REASON for item in skipped):
                scan_cache.put_report(slot, key, _memo_dump(report))
        else:
            report = remembered
    finally:
        scan_cache.close()
    return replace(report, root=display_path(root))


MEMO_VERSION = "report-6"  # bump when _assemble or the Report's fields change
KEEP_READ_BYTES = 128 * 1024 * 1024  # file contents kept between keying and scanning


def _scan(
    reads: Iterable[Read],
    candidates: Sequence[Candidate],
    extractor: Extractor,
    jobs: int | None,
    scan_cache: ScanCache | None,
    progress: ProgressCallback | None,
    skipped: list[Skipped],
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
) -> list[FileScan]:
    scans: list[FileScan] = []
    for result in scan_candidates(
        reads,
        len(candidates),
        extractor,
        jobs=jobs,
        cache=scan_cache,
        progress=progress,
        file_timeout=file_timeout,
    ):
        if isinstance(result, Skipped):
            skipped.append(result)
        else:
            scans.append(result)
    return scans


MEMO_CHUNK_USES = 50_000


def _memo_dump(report: Report) -> bytes:
    """The report, its uses pickled in chunks: one pickle of half a million uses keeps a
    memo entry per object, and the first cached scan of a million generated lines peaked
    at 840 MiB; in chunks, 700 MiB (480 MiB with --no-cache, which keeps nothing)."""
    uses = report.uses
    chunks = [
        pickle.dumps(uses_to_wire(uses[i : i + MEMO_CHUNK_USES]), protocol=pickle.HIGHEST_PROTOCOL)
        for i in range(0, len(uses), MEMO_CHUNK_USES)
    ]
    return pickle.dumps((replace(report, uses=()), chunks), protocol=pickle.HIGHEST_PROTOCOL)


def _memo_get(cache: ScanCache, slot: str, key: str, root: Path, rules: RuleSet) -> Report | None:
    """The remembered report of these exact inputs, or None. Whether a CUDAExtension's
    sources exist is not among the file keys, so it is checked again."""
    payload = cache.get_report(slot, key)
    if payload is None:
        return None
    try:
        report, chunks = pickle.loads(payload)
        uses = [use for chunk in chunks for use in uses_from_wire(pickle.loads(chunk), rules)]
    except Exception:  # a damaged or foreign entry only costs a re-scan
        return None
    if not isinstance(report, Report):
        return None
    if report.python is not None:
        for extension in report.python.extensions:
            fresh = _with_missing_sources(root, replace(extension, missing=()))
            if fresh.missing != extension.missing:
                return None
    return replace(report, uses=tuple(uses))


def _with_missing_sources(root: Path, extension: Extension) -> Extension:
    """Mark the sources an extension names that are not in the tree (generated at build
    time, or a path that is wrong): their CUDA could not be scanned."""
    base = root if root.is_dir() else root.parent
    missing = tuple(s for s in extension.sources if not (base / s).is_file())
    return replace(extension, missing=missing) if missing else extension


def _assemble(
    root: Path,
    targets: tuple[Target, ...],
    scans: list[FileScan],
    skipped: list[Skipped],
) -> Report:
    # A CUDA-shaped name that the project defines itself (a CUDA_CHECK macro, a
    # cudaHelper function) is the project's own code, not a CUDA API.
    own_names = set().union(*(s.definitions for s in scans)) if scans else set()
    # So is an include of a header that lives in the project (`#include "cuda_helpers.h"`).
    own_headers = {PurePosixPath(s.path).name for s in scans}

    def is_cuda(use: Use) -> bool:
        if use.rule is not None:
            return True
        if use.kind == "header":
            return PurePosixPath(use.name).name not in own_headers
        return use.name not in own_names

    reach = kernels_reaching(build_call_graph((s.path, fn) for s in scans for fn in s.functions))
    names: dict[frozenset[Node], tuple[str, ...]] = {}  # the kernels' names, as findings show them
    needs: dict[Node, list[str]] = {}  # kernel -> slugs of the findings it reaches

    def attributed(finding: Finding) -> Finding:
        kernels = reach.get((finding.path, finding.function))
        if not kernels:
            return finding
        for kernel in kernels:
            needs.setdefault(kernel, []).append(finding.slug)
        shown = names.get(kernels)
        if shown is None:
            shown = names[kernels] = tuple(sorted({name for _, name in kernels}))
        return replace(finding, kernels=shown)

    files: list[FileSummary] = []
    uses: list[Use] = []
    findings: list[Finding] = []
    for file_scan in scans:
        kept = [u for u in file_scan.uses if is_cuda(u)]
        file_findings = [attributed(f) if f.function else f for f in file_scan.findings]
        uses.extend(kept)
        findings.extend(file_findings)
        files.append(
            FileSummary(
                path=file_scan.path,
                language=file_scan.language,
                lines=file_scan.lines,
                encoding=file_scan.encoding,
                uses=len(kept),
                findings=len(file_findings),
                parse_errors=file_scan.parse_errors,
                scores=scores(kept, file_findings, targets),
            )
        )
    kernels = _kernels_with_needs([k for s in scans for k in s.kernels], needs)
    return Report(
        python=_python_section(root, scans),
        root=display_path(root),
        tool_version=__version__,
        targets=targets,
        files=tuple(files),
        uses=tuple(uses),
        findings=tuple(findings),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        kernels=kernels,
        scores=scores(uses, findings, targets),
        effort=effort(uses, findings, targets),
    )


@dataclass(frozen=True, slots=True)
class _Swap:
    """A dependency as a work item: an unsupported package with a named ROCm replacement
    is a swap to review (partial), not a rewrite (docs/scoring.md)."""

    name: str
    status: RouteVerdicts

    @classmethod
    def of(cls, dependency: Dependency) -> _Swap:
        status = dependency.status
        rule = dependency.rule
        if rule is not None and rule.replacement and status.rocm is Status.UNSUPPORTED:
            status = RouteVerdicts(Status.PARTIAL, status.directml)
        return cls(dependency.name, status)


def _python_section(root: Path, scans: list[FileScan]) -> PythonSection | None:
    """The Python part of the report; None when the tree has no Python at all."""
    python = [s for s in scans if s.language.is_python]
    if not python:
        return None
    dependencies = [d for s in python for d in s.dependencies]
    uses = [u for s in python for u in s.py_uses]
    findings = [f for s in python for f in s.py_findings]
    # Unknown packages are listed but not scored: most are CPU-only libraries that no
    # source judges either way (docs/scoring.md).
    judged: list[PyUse | _Swap] = [
        *uses,
        *(_Swap.of(d) for d in dependencies if d.rule is not None),
    ]
    return PythonSection(
        dependencies=tuple(dependencies),
        uses=tuple(uses),
        findings=tuple(findings),
        extensions=tuple(_with_missing_sources(root, e) for s in python for e in s.extensions),
        scores=scores(judged, findings, ROUTES),
        effort=effort(judged, findings, ROUTES),
        files=len(python),
    )


def _kernels_with_needs(kernels: list[Kernel], needs: dict[Node, list[str]]) -> tuple[Kernel, ...]:
    """Kernels with the findings that reach them, most in need first."""
    ranked = [replace(k, findings=tuple(sorted(needs.get((k.path, k.name), ())))) for k in kernels]
    return tuple(sorted(ranked, key=lambda k: (-len(k.findings), k.path, k.span.line)))
