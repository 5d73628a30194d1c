"""The scan pipeline: discover -> read -> parse/extract -> classify -> score -> Report."""

from __future__ import annotations

import os
import re
import stat
import sys
import time
import types
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import Any

from portcheck import __version__
from portcheck.cache import (
    Read,
    ScanCache,
    default_cache_path,
    read_all_keyed,
    read_files,
    tree_key,
)
from portcheck.checks.apis import UNKNOWN_API
from portcheck.discover import MAX_FILE_BYTES, Candidate, discover, read_regular_file
from portcheck.excerpts import read_excerpts
from portcheck.extract import CUDA_SHAPE
from portcheck.filescan import FileScan, FileScanner, mark_warp_level
from portcheck.graph import Node, build_call_graph, kernels_reaching
from portcheck.model import (
    AmdPath,
    FileSummary,
    Finding,
    Kernel,
    Report,
    Skipped,
    Span,
    Target,
    Use,
)
from portcheck.options import (
    DEFAULT_FILE_TIMEOUT,
    FRONT_ENDS,
    ScanError,
    ScanOptions,
    parse_targets,
)
from portcheck.parse import count_lines, decode_source
from portcheck.paths import display_path
from portcheck.preproc import MacroDef
from portcheck.project import ProjectFacts, parameters_and_body
from portcheck.python.section import python_section, with_missing_sources
from portcheck.ruleset import RuleSet, default_rules
from portcheck.runner import (
    MIN_FILES_FOR_POOL,
    TIMEOUT_REASON,
    fewer_collections,
    scan_candidates,
)
from portcheck.score import NAME_HAZARDS, Placed, score_project, scores
from portcheck.wire import WireError, decode_report, encode_report

ProgressCallback = Callable[[int, int, str], None]  # (done, total, current path)

__all__ = ["FRONT_ENDS", "ScanError", "ScanOptions", "parse_targets", "scan", "scan_files"]


def scan(
    path: str | os.PathLike[str],
    options: ScanOptions | None = None,
    *,
    rules: RuleSet | None = None,
    progress: ProgressCallback | None = None,
    targets: str | Sequence[str] | None = None,
    exclude: Sequence[str] = (),
    ignore: Sequence[str] = (),
    max_file_bytes: int = MAX_FILE_BYTES,
    jobs: int | None = None,
    cache: bool = True,
    front_end: str = "auto",
    file_timeout: float | None = DEFAULT_FILE_TIMEOUT,
) -> Report:
    """Scan a CUDA file or source tree and return its Report.

    Configure it with `options` (a ScanOptions), or with the same settings as keywords:
    `front_end` "auto" runs libclang where it pays (functors passed to templates, header
    constants only a compiler computes), "deep" on every source file, "tree-sitter" never.
    A file not scanned within `file_timeout` seconds (None or 0: no limit) is listed in
    `skipped` with the reason "timeout" and the scan goes on.

    >>> report = scan("examples/heatflow")           # doctest: +SKIP
    >>> report.scores["hip"], len(report.uses)        # doctest: +SKIP
    """
    if options is None:
        options = ScanOptions.for_project(
            path,
            targets=targets,
            exclude=exclude,
            ignore=ignore,
            jobs=jobs,
            cache=cache,
            front_end=front_end,
            max_file_bytes=max_file_bytes,
            file_timeout=file_timeout,
        )
    report, _ = scan_files(path, options, rules=rules, progress=progress)
    return report


def scan_files(
    path: str | os.PathLike[str],
    options: ScanOptions,
    *,
    rules: RuleSet | None = None,
    progress: ProgressCallback | None = None,
    keep_files: bool = False,
) -> tuple[Report, dict[str, FileScan]]:
    """The Report, and with `keep_files` each file's FileScan by relative path (for a step
    that works on the same files next, such as translating them to compile). Without
    `keep_files` the dictionary is empty and a remembered report may answer."""
    started = time.perf_counter()
    root = Path(path)
    _check_root(root)
    base = root if root.is_dir() else root.parent
    loaded = rules if rules is not None else default_rules()
    # The rules as they stand in the chosen ROCm release (the newest: as loaded).
    release = loaded.rocm_release(options.target.rocm) if options.target.rocm else None
    release = release or loaded.newest_rocm()
    if release is not None:
        options = replace(options, target=replace(options.target, rocm=str(release)))
    scanner = FileScanner(
        loaded.at_rocm(release) if release is not None else loaded,
        options.ignore,
        options.front_end,
        os.path.abspath(base),
    )
    with fewer_collections():
        report, files = _scan_tree(root, options, scanner, progress, keep_files)
    root_uri = Path(base).resolve().as_uri().rstrip("/") + "/"
    return replace(report, seconds=time.perf_counter() - started, root_uri=root_uri), files


def _check_root(root: Path) -> None:
    """A PATH that can be scanned: a folder or a regular file (a FIFO or a device would
    block or never end). Raises ScanError with one line for the user."""
    shown = display_path(str(root))
    try:
        mode = root.stat().st_mode
    except FileNotFoundError:
        kind = "a broken symbolic link" if root.is_symlink() else "it does not exist"
        raise ScanError(f"cannot scan {shown}: {kind}") from None
    except OSError as exc:
        raise ScanError(f"cannot scan {shown}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        if not os.access(root, os.R_OK | os.X_OK):
            raise ScanError(f"cannot scan {shown}: permission denied")
    elif not stat.S_ISREG(mode):
        raise ScanError(f"cannot scan {shown}: {_file_kind(mode)}, not a source file or folder")
    elif not os.access(root, os.R_OK):
        raise ScanError(f"cannot scan {shown}: permission denied")


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a regular file"


def _scan_tree(
    root: Path,
    options: ScanOptions,
    scanner: FileScanner,
    progress: ProgressCallback | None,
    keep_files: bool,
) -> tuple[Report, dict[str, FileScan]]:
    candidates: list[Candidate] = []
    skipped: list[Skipped] = []
    for item in discover(root, options.exclude, options.max_file_bytes):
        if isinstance(item, Skipped):
            skipped.append(item)
        else:
            candidates.append(item)

    # Files are scanned in parallel processes (jobs, default: all cores) and remembered in
    # a content-hash cache. The whole report is remembered too, under a key of all the
    # inputs, and so is each file's stamp: a re-scan of an unchanged tree opens no file.
    # A cache folder that cannot be used means no cache (resources.cache_problem says why).
    cache_path = default_cache_path() if options.cache else None
    if cache_path is None:
        reads: Iterable[Read] = read_files(candidates)
        scans = _scan(reads, candidates, scanner, options, None, progress, skipped)
        return _assemble(root, options, scans, skipped), _by_path(scans, keep_files)
    scan_cache = ScanCache(cache_path)
    files: dict[str, FileScan] = {}
    try:
        slot = display_path(os.path.realpath(root))  # sqlite stores no lone surrogates
        known = scan_cache.file_states(slot)
        keyed, states = read_all_keyed(candidates, scanner, KEEP_READ_BYTES, known)
        if states != known:
            scan_cache.put_file_states(slot, states)
        key = tree_key(
            keyed,
            skipped,
            MEMO_VERSION,
            __version__,
            options.target.digest(),
            "excerpts" if options.excerpts else "",
            *map(str, options.targets),
        )
        remembered = None if keep_files else _memo_get(scan_cache, slot, key, root, scanner.rules)
        if remembered is None:
            # A commit that changed a few files: scan them here, without starting a pool.
            keys = [read.key for read in keyed if read.key]
            misses = len(keys) - len(scan_cache.present(keys))
            if misses < MIN_FILES_FOR_POOL:
                options = replace(options, jobs=1)
            scans = _scan(keyed, candidates, scanner, options, scan_cache, progress, skipped)
            report = _assemble(root, options, scans, skipped)
            files = _by_path(scans, keep_files)
            # A file that ran out of time may finish next time (or with a longer budget).
            if not any(item.reason == TIMEOUT_REASON for item in skipped):
                scan_cache.put_report(slot, key, _memo_dump(report))
        else:
            report = remembered
    finally:
        scan_cache.close()
    return replace(report, root=display_path(root)), files


def _by_path(scans: list[FileScan], keep: bool) -> dict[str, FileScan]:
    return {s.path: s for s in scans} if keep else {}


MEMO_VERSION = "report-56"  # bump when _assemble or the Report's fields change
KEEP_READ_BYTES = 128 * 1024 * 1024  # file contents kept between keying and scanning


def _scan(
    reads: Iterable[Read],
    candidates: Sequence[Candidate],
    scanner: FileScanner,
    options: ScanOptions,
    scan_cache: ScanCache | None,
    progress: ProgressCallback | None,
    skipped: list[Skipped],
) -> list[FileScan]:
    scans: list[FileScan] = []
    for result in scan_candidates(
        reads,
        len(candidates),
        scanner,
        jobs=options.jobs,
        cache=scan_cache,
        progress=progress,
        file_timeout=options.file_timeout,
    ):
        if isinstance(result, Skipped):
            skipped.append(result)
        else:
            scans.append(result)
    return scans


def _memo_dump(report: Report) -> bytes:
    """The report as the cache keeps it (portcheck.wire's JSON form)."""
    return encode_report(report)


def _memo_get(cache: ScanCache, slot: str, key: str, root: Path, rules: RuleSet) -> Report | None:
    """The remembered report of these exact inputs, or None. Whether a CUDAExtension's
    sources exist is not among the file keys, so it is checked again."""
    payload = cache.get_report(slot, key)
    if payload is None:
        return None
    try:
        report = decode_report(payload, rules)
    except WireError:  # a damaged or foreign entry only costs a re-scan
        return None
    if report.python is not None:
        for extension in report.python.extensions:
            fresh = with_missing_sources(root, replace(extension, missing=()))
            if fresh.missing != extension.missing:
                return None
    return report


def _assemble(
    root: Path,
    options: ScanOptions,
    scans: list[FileScan],
    skipped: list[Skipped],
) -> Report:
    targets = options.targets
    judge = options.target.judge  # verdicts that depend on the chosen ROCm release and GPU
    # A CUDA-shaped name that the project defines itself (a CUDA_CHECK macro, a
    # cudaHelper function) is the project's own code, not a CUDA API.
    own_names = set().union(*(s.definitions for s in scans)) if scans else set()
    # ...and so is a name one of its macros pastes (`ncclParam##name`): `ncclParamIbGidIndex`.
    pasted = _pasted_prefixes(scans)

    def own_name(name: str | None) -> bool:
        return name in own_names or (name is not None and name.startswith(pasted))

    # So is an include of a header that lives in the project (`#include "cuda_helpers.h"`).
    own_headers = {PurePosixPath(s.path).name for s in scans}

    def is_cuda(use: Use) -> bool:
        if use.rule is not None:
            return (
                use.name not in own_functions
                and (use.path, use.name) not in own_here
                and use.name not in of_built
            )
        if use.kind == "header":
            return PurePosixPath(use.name).name not in own_headers
        return not own_name(use.name)

    facts = ProjectFacts((s.path, s.preproc) for s in scans if s.language.is_source)
    # A library function the project defines itself is the project's code too (see
    # _own_library_functions): its calls are not CUDA API uses.
    own_functions, own_here = _own_library_functions(scans, facts)
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
    placed: list[Placed] = []  # every use kept, with where it sits (for the scores)
    hip = [t for t in targets if t is Target.HIP]
    others = [t for t in targets if t is not Target.HIP]
    # Questions a file's checks left for the project (a constant defined elsewhere), then
    # the definitions that answered them, reported where a port changes them.
    answers: dict[str, list[Finding]] = {}
    facts.ptx_functions = _ptx_functions(scans)
    facts.polling_files = frozenset(s.path for s in scans if s.polls)
    if any(p.lane_callees or p.launched for s in scans for p in s.pending):
        for s in scans:
            for fn in s.functions:
                facts.functions.setdefault(fn.name.rsplit("::", 1)[-1], []).append((s.path, fn))
        cuda_names = {u.name for s in scans for u in s.uses}
        facts.known_name = cuda_names.__contains__
        facts.mark_functions = _function_marker(root, scans)
    for file_scan in scans:
        for pending in file_scan.pending:
            found = facts.answer(pending)
            if found is not None:
                answers.setdefault(file_scan.path, []).append(found)
    lane_blind = set().union(*(s.lane_blind_names for s in scans)) if scans else set()
    by_path = {s.path: s for s in scans}
    for finding in facts.definition_findings(lane_blind | facts.blind_reads):
        own = by_path.get(finding.path)
        if own is not None and any(
            f.slug == finding.slug and f.span.line == finding.span.line for f in own.findings
        ):
            continue  # the file's check said it there already (a width set per platform)
        answers.setdefault(finding.path, []).append(finding)
    # A copy of a CUDA library in the tree is one item (use ROCm's counterpart), reported
    # once; its own uses and findings are the library's, not the project's work.
    vendored = _vendored_copies(scans)
    # A copy of a library that builds without CUDA (NVTX's header-only nvtx3/): the project's
    # calls into it compile against the copy on AMD too, so they are no CUDA work.
    built_here = {library for library, counterpart in vendored.values() if counterpart is None}
    of_built: set[str] = set()
    if built_here:
        copied = tuple(
            "/" + s.path
            for s in scans
            if (r := _vendored_root(s.path, vendored)) and vendored[r][1] is None
        )
        of_built = {
            u.name
            for s in scans
            for u in s.uses
            if u.family in built_here
            or (u.kind == "header" and any(c.endswith("/" + u.name) for c in copied))
        }
    copies: dict[str, list[FileScan]] = {}
    # `#define cudaMemcpy hipMemcpy` (ggml's vendors/hip.h): the project's own rename for
    # its AMD build, so the name's uses already have an AMD path and cost nothing on HIP.
    shimmed, shim_files = _renamed_for_hip(scans, facts)
    unmasked = _masks_dropped(scans, shim_files)
    # Helpers called only from NVIDIA-only code with an AMD path (a cp.async wrapper used
    # under `#if __CUDA_ARCH__ >= 800 ... #else`): an AMD build never runs them.
    nvidia_helpers = _nvidia_only_functions(scans, facts)
    # A CUDA backend file whose HIP twin sits beside it (`policy/cuda/scan.hpp` and
    # `policy/hip/scan.hpp`): NVIDIA-only code whose AMD path is that file.
    for path in _files_with_hip_twins(root, scans):
        nvidia_helpers.setdefault(path, []).append((0, 1 << 62))
    for file_scan in scans:
        if file_scan.facts_only and file_scan.path not in answers:
            continue
        path = file_scan.path
        root_of_copy = _vendored_root(path, vendored) if vendored else None
        if root_of_copy is not None:
            copies.setdefault(root_of_copy, []).append(file_scan)
            continue
        if path in shim_files:  # the AMD build's own header: nothing in it is CUDA work
            files.append(_summary(file_scan, 0, 0, dict.fromkeys(map(str, targets))))
            continue
        kept: list[Use] = []
        file_scored: list[Use] = []  # HIP's: not those in NVIDIA-only code with an AMD path
        helpers = nvidia_helpers.get(path)  # (start, end) of its NVIDIA-only helpers
        plain = facts.plain(path) and not helpers  # nothing to place

        def place_of(offset: int, path: str = path, helpers: Any = helpers) -> str | None:
            """facts.placement, with the file's NVIDIA-only helpers as NVIDIA code."""
            place = facts.placement(path, offset)
            if place is None and helpers and _within(helpers, offset):
                return "nvidia"
            return place

        if plain:
            kept = [use for use in file_scan.uses if is_cuda(use)]
            if shimmed:
                placed.extend(Placed(use, use.name in shimmed) for use in kept)
                file_scored = [use for use in kept if use.name not in shimmed]
            else:
                placed.extend(Placed(use) for use in kept)
                file_scored = kept
        else:
            for use in file_scan.uses:
                if not is_cuda(use):
                    continue
                place = place_of(use.span.start_byte)
                if place in ("amd", "other"):
                    continue  # the project's own AMD code, or another platform's
                kept.append(use)
                guard = facts.optional_guard(path, use.span.start_byte)
                renamed = use.name in shimmed
                placed.append(Placed(use, place == "nvidia" or renamed, guard))
                if place is None and not renamed:
                    file_scored.append(use)
        file_findings = []
        # An unknown-api finding sits at the first use of its name: it goes with the name
        # when another file of the project defines it (the file's check could not know).
        unknown_names = {u.span.start_byte: u.name for u in file_scan.uses if u.rule is None}
        used_at = (
            {u.span.start_byte: u.name for u in file_scan.uses}
            if shimmed or own_functions or own_here or of_built
            else {}
        )
        names_on: dict[int, set[str]] = {}  # line -> names used on it
        if unmasked:
            for u in file_scan.uses:
                names_on.setdefault(u.span.line, set()).add(u.name)
        for finding in [*file_scan.findings, *answers.get(path, ())]:
            if finding.slug in options.ignore:
                continue  # a hazard the user turned off, found by a check of another's
            if finding.slug == UNKNOWN_API and own_name(unknown_names.get(finding.span.start_byte)):
                continue
            name = used_at.get(finding.span.start_byte)
            if finding.slug in AT_THE_NAME and (
                name in own_functions or (path, name) in own_here or name in of_built
            ):
                continue  # a call of the project's own function of that name
            if finding.slug in AT_THE_NAME and name in shimmed:
                finding = replace(finding, amd_alternative=True)
            elif finding.slug == "lane-mask-width" and unmasked & names_on.get(
                finding.span.line, set()
            ):
                finding = replace(finding, amd_alternative=True)  # the AMD build drops it
            if not plain:
                place = place_of(finding.span.start_byte)
                if place in ("amd", "other"):
                    continue
                at = (path, finding.span.start_byte)
                if place == "nvidia" and (
                    at not in facts.compiler_branches or facts.nvidia_around(*at)
                ):
                    # (a device-pass test at the directive asks about the code AMD gets)
                    finding = replace(finding, amd_alternative=True)
                guard = facts.optional_guard(path, finding.span.start_byte)
                if guard:
                    finding = replace(finding, optional=guard)
            finding = judge(finding)
            file_findings.append(attributed(finding) if finding.function else finding)
        file_findings.sort(key=lambda f: (f.span.start_byte, f.id))
        uses.extend(kept)
        findings.extend(file_findings)
        # None on every route for a file with no CUDA (a Python file, a manifest): a CUDA
        # score of 100 there would claim a port that was never needed
        file_scores: dict[str, int | None] = dict.fromkeys(map(str, targets))
        if kept or file_findings:
            counted = [f for f in file_findings if not f.amd_alternative]
            file_scores.update(scores(file_scored, counted, hip))
            file_scores.update(scores(kept, file_findings, others))
        files.append(_summary(file_scan, len(kept), len(file_findings), file_scores))
    for root_of_copy, members in sorted(copies.items()):
        library, counterpart = vendored[root_of_copy]
        members.sort(key=lambda m: m.path)
        if counterpart is None:  # it builds on AMD as it is: nothing to port
            files.extend(_summary(m, 0, 0, dict.fromkeys(map(str, targets))) for m in members)
            continue
        used = sum(len(m.uses) for m in members)
        finding = judge(
            _vendored_finding(
                root_of_copy, library, counterpart, members[0].path, (len(members), used)
            )
        )
        findings.append(finding)
        for member in members:
            count = 1 if member is members[0] else 0
            files.append(_summary(member, 0, count, dict.fromkeys(map(str, targets))))
    if copies:
        files.sort(key=lambda f: f.path)
        findings.sort(key=lambda f: f.path)  # stable: each file's findings keep their order
    kernels = _kernels_with_needs(
        [k for s in scans if _vendored_root(s.path, vendored) is None for k in s.kernels], needs
    )
    not_applicable = options.target.not_applicable(targets)
    scored = score_project(placed, findings, targets, not_applicable)
    notebooks = {s.path: s.cells for s in scans if s.cells}

    def where(path: str, line: int) -> str:
        return Report.where_in(notebooks, path, line)

    return Report(
        python=python_section(root, scans, options.target, where),
        notebooks=notebooks,
        root=display_path(root),
        tool_version=__version__,
        targets=targets,
        files=tuple(files),
        uses=tuple(uses),
        findings=tuple(findings),
        skipped=tuple(sorted(skipped, key=lambda s: s.path)),
        kernels=kernels,
        scores=scored.scores,
        target=options.target.for_report(),
        not_applicable=not_applicable,
        effort=scored.effort,
        work_items=scored.work_items,
        routes=scored.routes,
        optional=scored.optional,
        effort_by_directory=scored.by_directory,
        alternative_names=frozenset(
            {p.use.name for p in placed if p.amd_alternative}
            - {p.use.name for p in placed if not p.amd_alternative}
        ),
        amd_paths=tuple(
            sorted(
                [
                    *facts.amd_paths(),
                    *(AmdPath(p, 1, n, SHIM_GUARD) for p, n in shim_files.items()),
                    *(
                        AmdPath(s.path, 1, s.lines, INCLUDED_GUARD)
                        for s in scans
                        if s.path not in shim_files and facts.included_only_in(s.path) == "amd"
                    ),
                ],
                key=lambda a: (a.path, a.start_line),
            )
        ),
        excerpts=read_excerpts(root, findings) if options.excerpts else (),
    )


# A folder of the tree named like a CUDA library: (the rules' family, ROCm's counterpart).
VENDORED_LIBRARIES = {
    "cub": ("cub", "hipCUB"),
    "thrust": ("thrust", "rocThrust"),
    "cutlass": ("cutlass", "composable_kernel or rocWMMA"),
    "cute": ("cutlass", "composable_kernel or rocWMMA"),
    "libcudacxx": ("libcudacxx", "libhipcxx"),
    # NVTX v3 is header-only and needs no CUDA: a copy builds for AMD as it is (its ranges
    # reach no AMD profiler; roctx's do). No ROCm counterpart to build against: None.
    "nvtx3": ("nvtx", None),
}


# A macro body's literal beginning of a pasted name: `ncclParam` in `int64_t ncclParam##name()`.
PASTED_PREFIX = re.compile(r"(?<![\w#])([A-Za-z_]\w*)\s*##")


def _pasted_prefixes(scans: Sequence[FileScan]) -> tuple[str, ...]:
    """The CUDA-shaped beginnings the project's macros paste names from (NCCL's
    `#define NCCL_PARAM(name, env, default) int64_t ncclParam##name() {…}` defines
    `ncclParamIbGidIndex`), when no name the rule set knows among the project's uses
    begins with one (`cuda##name` pastes CUDA's own names)."""
    found: set[str] = set()
    for scan in scans:
        for macro in scan.preproc.macros:
            if "##" not in macro.body:
                continue
            split = parameters_and_body(macro)
            parameters, body = split if split is not None else ([], macro.body)
            for match in PASTED_PREFIX.finditer(body):
                prefix = match.group(1)
                if prefix not in parameters and CUDA_SHAPE.fullmatch(prefix + "X"):
                    found.add(prefix)
    if not found:
        return ()
    known = {u.name for s in scans for u in s.uses if u.rule is not None}
    return tuple(sorted(p for p in found if not any(name.startswith(p) for name in known)))


def _vendored_copies(scans: Sequence[FileScan]) -> dict[str, tuple[str, str | None]]:
    """Copies of CUDA libraries kept in the tree (`3rdparty/cub/`): a folder named like the
    library holding a file that defines one of the library's own names (`#define
    CUB_ALIGN`, as the rules know them). -> {folder: (library, ROCm counterpart)}. None
    when nothing in the tree lies outside such folders (the scanned project is the library
    itself, whose port is the point)."""
    family_of = {u.name: u.family for scan in scans for u in scan.uses if u.rule is not None}
    roots: dict[str, tuple[str, str | None]] = {}
    for scan in scans:
        folders = PurePosixPath(scan.path).parts[:-1]
        for depth, folder in enumerate(folders):
            known = VENDORED_LIBRARIES.get(folder)
            if known is None:
                continue
            if any(family_of.get(name) == known[0] for name in scan.definitions):
                roots.setdefault("/".join(folders[: depth + 1]), known)
            break
    own_code = any(
        s.uses and s.language.is_source and _vendored_root(s.path, roots) is None for s in scans
    )
    return roots if own_code else {}


# The body of a macro that renames a CUDA name to ROCm's: one HIP/ROCm identifier.
HIP_RENAME = re.compile(r"(?:hip|HIP|__hip|roc|ROC|miopen|MIOPEN|rccl)\w*")


def _masks_dropped(scans: Sequence[FileScan], shims: dict[str, int]) -> frozenset[str]:
    """Warp functions a HIP compatibility header redefines without their lane mask (ggml's
    `#define __shfl_xor_sync(mask, var, laneMask, width) __shfl_xor(var, laneMask,
    width)`): in the AMD build the mask passed to them is never used."""
    dropped = set()
    for scan in scans:
        if scan.path not in shims or scan.preproc is None:
            continue
        for macro in scan.preproc.macros:
            match = MASK_PARAMETER.match(macro.body) if macro.function_like else None
            if (
                match
                and macro.name.endswith("_sync")
                and not re.search(rf"\b{re.escape(match.group(1))}\b", macro.body[match.end() :])
            ):
                dropped.add(macro.name)
    return frozenset(dropped)


MASK_PARAMETER = re.compile(r"\(\s*(\w+)\s*,[^)]*\)")  # a macro's parameters, the first kept


def _renamed_for_hip(
    scans: Sequence[FileScan], facts: ProjectFacts
) -> tuple[frozenset[str], dict[str, int]]:
    """CUDA names the project itself maps to HIP's (`#define cudaMemcpy hipMemcpy`,
    `#define CUBLAS_OP_N HIPBLAS_OP_N`): a definition only an AMD build can mean. So is a
    CUDA name the project defines inside an AMD branch (FBGEMM's `#ifdef USE_ROCM` ...
    `__float2bfloat16_rn(float f) {...}`): its AMD build supplies what HIP lacks. And the
    files that hold at least SHIM_RENAMES renames, with their line counts: headers written
    for the AMD build (ggml's vendors/hip.h), AMD code in full."""
    known = {u.name for scan in scans for u in scan.uses if u.rule is not None}
    names: set[str] = set()
    shims: dict[str, int] = {}
    for scan in scans:
        if scan.preproc is None:
            continue
        renames = {
            macro.name
            for macro in scan.preproc.macros
            if not macro.function_like
            and (macro.name in known or CUDA_SHAPE.fullmatch(macro.name))
            and HIP_RENAME.fullmatch(macro.body)
        }
        names |= renames
        names.update(
            alias
            for alias in scan.preproc.hip_aliases
            if alias in known or CUDA_SHAPE.fullmatch(alias)
        )
        if len(renames) >= SHIM_RENAMES and not facts.has_nvidia_code(scan.path):
            # LightGBM's cuda_rocm_interop.h renames in its `#if __HIP_PLATFORM_AMD__`
            # branch and has an `#else` for NVIDIA builds: its branches are placed as usual.
            shims[scan.path] = scan.lines
        names.update(
            name
            for name, offset in scan.api_definitions
            if facts.placement(scan.path, offset) == "amd"
        )
        names.update(
            macro.name
            for macro in scan.preproc.macros
            if macro.name in known and _redirects(macro) and facts.reached_for_amd(scan.path, macro)
        )
    return frozenset(names), shims


def _redirects(macro: MacroDef) -> bool:
    """Does a definition of a CUDA name expand to something else than that name (MAGMA's
    `#define cusparseCreateSolveAnalysisInfo(info) cusparseCreateCsrsm2Info(info)`, for CUDA
    11 and HIP, where the API itself is gone)? Then a build that reaches it calls that."""
    head = parameters_and_body(macro)
    body = macro.body if not macro.function_like else head[1] if head else ""
    return re.search(rf"\b{re.escape(macro.name)}\b", body) is None


# Families whose names a project overloads for its own types (pytorch_scatter's
# `__shfl_up_sync(warp_mask_t, at::Half, …)`, an `atomicAdd(double*, double)` polyfill):
# there a definition adds an overload and the CUDA one stays in use.
OVERLOADED_FAMILIES = frozenset(
    {"device", "cooperative_groups", "wmma", "cub", "thrust", "libcudacxx", "cutlass"}
)


def _own_library_functions(
    scans: Sequence[FileScan], facts: ProjectFacts
) -> tuple[frozenset[str], frozenset[tuple[str, str]]]:
    """Names of CUDA library functions the project defines itself, with a body, outside any
    platform branch: tiny-cuda-nn's `std::string cublasGetError(cublasStatus_t)` (cuBLAS's
    legacy API has a `cublasGetError()` too). A HIP build compiles the project's definition,
    so its calls need no port. Not a wrapper that calls the name it defines, nor a name of
    an OVERLOADED_FAMILIES family. A function in a namespace or class (`mylib::cudaFree`)
    leaves the global name CUDA's elsewhere, but is what its own file's calls find (the
    file is inside that namespace): (names, (path, name) pairs of such files)."""
    # Only names with a rule can be in question: the extractor lists those a file defines.
    named = {name for scan in scans for name, _ in scan.api_definitions}
    if not named:
        return frozenset(), frozenset()
    # A function HIP lacks that the project defines for CUDA's own scalar type (DRTK's
    # `math::saturate(float)`) is what every call of the name finds in a HIP build, in a
    # namespace or not, and whatever its family
    replaced = {name for scan in scans for name in scan.replaced_apis}
    definitions: dict[str, list[bool]] = {}  # name -> per definition: may it be own?
    scoped: set[tuple[str, str]] = set()
    for scan in scans:
        for fn in scan.functions:
            if fn.name not in named or fn.is_kernel:
                continue
            own = fn.name not in fn.calls and facts.placement(scan.path, fn.start) is None
            if fn.scoped and not (own and fn.name in replaced):
                if own:
                    scoped.add((scan.path, fn.name))
                continue
            definitions.setdefault(fn.name, []).append(own)
    candidates = {name for name, owns in definitions.items() if all(owns)}
    if not candidates and not scoped:
        return frozenset(), frozenset()

    def counts(use: Use) -> bool:
        return (
            use.rule is not None
            and use.kind == "function"
            and (use.rule.family not in OVERLOADED_FAMILIES or use.name in replaced)
        )

    names = frozenset(
        use.name for scan in scans for use in scan.uses if use.name in candidates and counts(use)
    )
    here = frozenset(
        (scan.path, use.name)
        for scan in scans
        for use in scan.uses
        if (scan.path, use.name) in scoped and counts(use)
    )
    return names, here


TWIN_WORD = re.compile(r"cuda", re.IGNORECASE)
NVIDIA_WORD = re.compile(r"nvidia", re.IGNORECASE)


class _CaseBlindTree:
    """Paths under `root` found whatever their case (`gpu/rocm/x.hip` finds `GPU/ROCm/x.hip`),
    each folder listed once."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.listed: dict[str, dict[str, str]] = {}
        self.folders: dict[str, str] = {}  # lower-cased folder -> its real path

    def names(self, folder: str) -> dict[str, str]:
        names = self.listed.get(folder)
        if names is None:
            try:
                found = os.listdir(self.root / folder if folder else self.root)
            except OSError:
                found = []
            names = self.listed[folder] = {name.lower(): name for name in found}
        return names

    def find(self, lowered: str) -> str | None:
        """The real relative path of the lower-cased `lowered`: a regular file reached
        through folders, none of them a link; else None."""
        folder, _, leaf = lowered.rpartition("/")
        real = self.folders.get(folder, "") if folder else ""
        if folder and real == "":
            for part in folder.split("/"):
                name = self.names(real).get(part)
                if name is None:
                    return None
                real = f"{real}/{name}" if real else name
            self.folders[folder] = real
        name = self.names(real).get(leaf)
        if name is None:
            return None  # the usual answer: one listing per folder, no other system call
        real = f"{real}/{name}" if real else name
        path = ""
        for part in real.split("/"):
            path = f"{path}/{part}" if path else part
            try:
                mode = os.lstat(self.root / path).st_mode
            except OSError:
                return None
            if stat.S_ISLNK(mode):
                return None
        return real if stat.S_ISREG(mode) else None


TWIN_SEPARATORS = (".", "_", "-")
INCLUDED_NAME = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)


def _files_with_hip_twins(root: Path, scans: Sequence[FileScan]) -> list[str]:
    """Source files of a CUDA backend whose AMD backend is a file of its own: the same path
    with `cuda` read as `hip` or `rocm` (any case, any source extension: RAJA's
    `policy/cuda/` beside `policy/hip/`, Kokkos' `Kokkos_Cuda_Team.hpp` beside
    `Kokkos_HIP_Team.hpp`), or with `.hip`/`_hip` added to its name (`kernels.cu` beside
    `kernels.hip.cu`). Not when the twin includes the CUDA file (a `.hip` that only
    includes the `.cu` compiles the CUDA code for AMD)."""
    sources = {
        PurePosixPath(s.path).with_suffix("").as_posix().lower(): s.path
        for s in scans
        if s.language.is_source
    }
    found: list[str] = []
    on_disk = _CaseBlindTree(root)
    for stem, path in sources.items():
        for word in ("hip", "rocm"):
            # `attention.cu` beside `attention.hip.cu` or `attention_hip.cu`, built instead
            twins = [stem + separator + word for separator in TWIN_SEPARATORS]
            renamed = stem
            if "cuda" in stem or "nvidia" in stem:
                # ELPA's `GPU/CUDA/ev_tridi_band_nvidia_gpu_real.cu` beside
                # `GPU/ROCm/ev_tridi_band_amd_gpu_real.hip`
                renamed = NVIDIA_WORD.sub("amd", TWIN_WORD.sub(word, stem))
                twins.append(renamed)
            twin = next((sources[t] for t in twins if t in sources), None)
            if twin is None and path.endswith((".cu", ".cuh")):
                # a `.hip` source, which portcheck does not scan: `kernels.cu` beside
                # `kernels.hip`
                twin = on_disk.find(stem + ".hip") or (
                    on_disk.find(renamed + ".hip") if renamed != stem else None
                )
            if twin is None or twin == path:
                continue
            try:
                with open(root / twin, "rb") as handle:
                    text = handle.read(1 << 20)
            except OSError:
                continue
            name = PurePosixPath(path).name
            if any(
                PurePosixPath(m.group(1).decode(errors="replace")).name == name
                for m in INCLUDED_NAME.finditer(text)
            ):
                continue
            found.append(path)
            break
    return found


def _nvidia_only_functions(
    scans: Sequence[FileScan], facts: ProjectFacts
) -> dict[str, list[tuple[int, int]]]:
    """The project's functions (not kernels) that only NVIDIA-only code with an AMD path
    calls, directly or through other such functions, by file: (start, end) of each. FBGEMM's
    `cutlass_get_smem_pointer` is called only under `#if __CUDA_ARCH__ >= 800`, whose
    `#else` is the AMD build's. A function with no call found, or one call in shared or
    AMD code, is not one; calls are matched by name over the whole project."""
    sources = [s for s in scans if s.language.is_source and s.functions]
    if not any(fn.sites for s in sources for fn in s.functions) or not any(
        not facts.plain(s.path) for s in sources
    ):
        return {}  # no NVIDIA-only code anywhere: no call can sit in it
    defined = {fn.name for s in sources for fn in s.functions if not fn.is_kernel}
    # callee -> its calls: (the caller's name, or "" for a kernel's; NVIDIA-only there?)
    calls: dict[str, list[tuple[str, bool]]] = {}
    for scan in sources:
        plain = facts.plain(scan.path)
        for fn in scan.functions:
            caller = "" if fn.is_kernel else fn.name
            placed: dict[str, list[bool]] = {}
            if not plain:
                for name, offset in fn.sites:
                    if name in defined:
                        nvidia = facts.placement(scan.path, offset) == "nvidia"
                        placed.setdefault(name, []).append(nvidia)
            for name in fn.calls:
                if name not in defined or name == fn.name:
                    continue  # not the project's, or an overload forwarding to another
                entries = calls.setdefault(name, [])
                # a call libclang found (a template's, a functor's) has no site: shared code
                for nvidia in placed.get(name) or [False]:
                    entries.append((caller, nvidia))
    only: set[str] = set()
    changed = True
    while changed:  # the smallest set closed under "every call is NVIDIA-only or from one"
        changed = False
        for name, entries in calls.items():
            if name not in only and all(nvidia or caller in only for caller, nvidia in entries):
                only.add(name)
                changed = True
    ranges: dict[str, list[tuple[int, int]]] = {}
    for scan in sources:
        for fn in scan.functions:
            if fn.name in only and not fn.is_kernel:
                ranges.setdefault(scan.path, []).append((fn.start, fn.end))
    return ranges


def _function_marker(root: Path, scans: Sequence[FileScan]) -> Callable[[str], None]:
    """What marks the functions of one scanned file with their warp-level code, reading
    the file again (once): asked only for files that define a function another file's
    width arithmetic calls. The functions of a file that cannot be read again, or reads
    differently, count as warp-level (nothing is dropped on a guess)."""
    base = root if root.is_dir() else root.parent
    by_path = {s.path: s for s in scans}
    done: set[str] = set()

    def mark(path: str) -> None:
        if path in done:
            return
        done.add(path)
        scan = by_path.get(path)
        if scan is None or not scan.functions:
            return
        raw = read_regular_file(base / path, MAX_FILE_BYTES)
        data = decode_source(raw)[0] if isinstance(raw, bytes) else None
        if data is None or count_lines(data) != scan.lines:
            for fn in scan.functions:
                fn.warp_level = True
            return
        mark_warp_level(data, scan.functions, {u.name for u in scan.uses})

    return mark


def _ptx_functions(scans: Sequence[FileScan]) -> dict[str, frozenset[str]]:
    """The project's functions whose bodies hold inline PTX, and those that call one of
    them directly (flashinfer's member `ldmatrix_m8n8x4`, which calls `mma::ldmatrix_m8n8x4`
    and its `asm`), by name (as calls are matched): name -> the files defining it."""
    found: dict[str, set[str]] = {}
    for scan in scans:
        for f in scan.findings:
            if f.slug == "inline-ptx" and f.function:
                found.setdefault(f.function.rsplit("::", 1)[-1], set()).add(scan.path)
    if not found:
        return {}
    direct = set(found)
    for scan in scans:
        for fn in scan.functions:
            if not fn.is_kernel and fn.calls & direct:
                found.setdefault(fn.name.rsplit("::", 1)[-1], set()).add(scan.path)
    return {name: frozenset(paths) for name, paths in found.items()}


def _within(ranges: list[tuple[int, int]], offset: int) -> bool:
    return any(start <= offset < end for start, end in ranges)


SHIM_RENAMES = 3  # renames that make a file a HIP compatibility header
# Hazards about a name itself (no HIP equivalent, unknown, its FP8 encoding): a project that
# spells the name as a HIP one for its AMD build has chosen what it is there.
AT_THE_NAME = NAME_HAZARDS | {"fp8-format"}
SHIM_GUARD = "(the whole file: it renames CUDA names to HIP's)"  # its AmdPath's guard
INCLUDED_GUARD = "(the whole file: included only in AMD paths)"


def _vendored_root(path: str, roots: dict[str, tuple[str, str | None]]) -> str | None:
    return next((root for root in roots if path.startswith(root + "/")), None)


def _vendored_finding(
    root: str, library: str, counterpart: str, first: str, counts: tuple[int, int]
) -> Finding:
    """One library-port finding for a library copy, at the start of its first file."""
    from portcheck.checks import catalogue, line_fingerprint_of_text

    spec = catalogue()["library-port"]
    files, used = counts
    name = {"cub": "CUB", "thrust": "Thrust", "cutlass": "CUTLASS/CuTe"}.get(library, library)
    return Finding(
        id=spec.id,
        slug=spec.slug,
        severity=spec.severity,
        path=first,
        span=Span(1, 1, 1, 1, 0, 0),
        message=f"`{root}/` is a copy of {name} kept in the tree ({files} file(s), {used} CUDA "
        f"use(s)): build against {counterpart} (ROCm) instead of porting the copy line by line",
        targets=spec.cuda_targets,
        help_url=spec.help_url,
        fix=f"Remove the copy and use {counterpart}; port only the project's own calls into it.",
        fingerprint=line_fingerprint_of_text(spec.slug, root, f"vendored {library}"),
    )


def _summary(
    scan: FileScan, uses: int, findings: int, scores: dict[str, int | None]
) -> FileSummary:
    """A file's line in the report (`scores` None on a route: nothing there to score)."""
    return FileSummary(
        path=scan.path,
        language=scan.language,
        lines=scan.lines,
        encoding=scan.encoding,
        uses=uses,
        findings=findings,
        parse_errors=scan.parse_errors,
        scores=scores,
        front_end=scan.front_end,
    )


def _kernels_with_needs(kernels: list[Kernel], needs: dict[Node, list[str]]) -> tuple[Kernel, ...]:
    """Kernels with the findings that reach them, most in need first."""
    ranked = [replace(k, findings=tuple(sorted(needs.get((k.path, k.name), ())))) for k in kernels]
    return tuple(sorted(ranked, key=lambda k: (-len(k.findings), k.path, k.span.line)))


class _CallableModule(types.ModuleType):
    """`from portcheck.scan import ScanOptions` binds this module as the package's `scan`
    attribute, over the function `portcheck.scan(...)` means; calling the module calls
    the function, so the library's one entry point works in any import order."""

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        return scan(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
