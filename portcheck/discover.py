"""Find the files of a tree that portcheck should read.

Owns: walking the tree (honouring .gitignore files and --exclude globs), choosing
CUDA sources, C/C++ files that use CUDA and build files, reading their bytes, and
saying why any candidate was skipped. It never writes anything.
"""

from __future__ import annotations

import os
import re
import stat
import warnings
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from portcheck.model import Language, Skipped
from portcheck.paths import display_path

if TYPE_CHECKING:
    import pathspec

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_IGNORE_FILE_BYTES = 1024 * 1024  # a .gitignore larger than this is not read
BINARY_SNIFF_BYTES = 8192

CUDA_SUFFIXES = {".cu": Language.CUDA, ".cuh": Language.CUDA}
CPP_SUFFIXES = {
    ".cpp": Language.CPP,
    ".cc": Language.CPP,
    ".cxx": Language.CPP,
    ".c++": Language.CPP,
    ".hpp": Language.CPP,
    ".hh": Language.CPP,
    ".hxx": Language.CPP,
    ".h++": Language.CPP,
    ".inl": Language.CPP,
    ".ipp": Language.CPP,
    ".tpp": Language.CPP,
    ".h": Language.CPP,  # headers are parsed as C++: a superset good enough for finding names
    ".c": Language.C,
}
BUILD_NAMES = {
    "cmakelists.txt": Language.CMAKE,
    "makefile": Language.MAKE,
    "gnumakefile": Language.MAKE,
    "setup.py": Language.PYTHON,
}
BUILD_SUFFIXES = {".cmake": Language.CMAKE, ".mk": Language.MAKE}
ALWAYS_PRUNED = {".git", ".hg", ".svn"}

# A C/C++ file is read as CUDA code when it includes a CUDA header, names a runtime/driver/
# library API or type, defines or launches a kernel, or tests CUDA macros. Several simple
# patterns that each start with a literal are three times faster than one alternation, and
# a pattern that starts with an alternation is searched at every byte: 15x slower
# (measured on cuda-samples' 522 C/C++ files); (pattern, needs a word boundary before it).
CUDA_MARKERS: tuple[tuple[re.Pattern[bytes], bool], ...] = (
    (
        re.compile(
            rb"#\s*include\s*[<\"](?:cuda|cu(?:blas|rand|fft|sparse|solver|dnn|Complex|_fp16|_bf16)"
            rb"|nvrtc|nvToolsExt|nvtx3|nccl|thrust/|cub/|cooperative_groups|mma\.h|cupti"
            rb"|npp|nvjpeg|nvml\.h|cufile\.h|cutlass/|cute/|cudla\.h"
            # the toolkit's generic-named headers (a header that only needs `uchar4`)
            rb"|(?:vector|driver|texture|surface|builtin)_types\.h|device_functions\.h"
            rb"|device_launch_parameters\.h|math_constants\.h|channel_descriptor\.h)"
        ),
        False,
    ),
    (re.compile(rb"cuda[A-Z]"), True),
    (re.compile(rb"cu[A-Z]\w*\s*\("), True),
    (re.compile(rb"CU(?:device|context|module|function|stream|event|result|deviceptr)\b"), True),
    (re.compile(rb"cu(?:blas|sparse|solver|rand|fft|dnn)[A-Z_]"), True),
    (re.compile(rb"(?:nccl|nvrtc)[A-Z_]"), True),
    (re.compile(rb"(?:npp[is]?|nvjpeg|nvml)[A-Z]\w*\s*\("), True),
    (re.compile(rb"__(?:global|device|host|CUDACC|CUDA_ARCH)__"), False),
    # the toolkit's half, bf16 and fp8 types and conversions, in a header that gets them
    # through another file's include (`__nv_bfloat16`, `__nv_cvt_float_to_fp8`, `__NV_E4M3`)
    (re.compile(rb"__nv_(?:bfloat16|half|fp8|fp6|fp4|cvt_)|__NV_(?:E4M3|E5M2|SATFINITE)\b"), True),
    (re.compile(rb"<<<"), False),
    # device code whose qualifiers all come from the project's macros (`DINLINE int
    # lane() { return threadIdx.x % 32; }`): the built-in variables and warp intrinsics
    (re.compile(rb"threadIdx\.[xyz]\b"), True),
    (re.compile(rb"blockIdx\.[xyz]\b"), True),
    (re.compile(rb"__syncthreads\s*\("), True),
    (re.compile(rb"__shfl(?:_up|_down|_xor)?_sync\s*\("), True),
    (re.compile(rb"__ballot_sync\s*\("), True),
)


# A conditional that tests for an AMD build (`#ifdef USE_ROCM`, `#if defined(__HIPCC__)`,
# `#ifdef AER_THRUST_ROCM`): the file holds a platform split, and its other branches are the
# NVIDIA code a port had to change, even when they spell no CUDA name (`#define _WS 32`,
# `typedef unsigned int bitmask_t;`).
AMD_TEST = re.compile(
    rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif)\b[^\n]*?(?<![A-Za-z0-9])_*(?:HIP|ROCM)", re.MULTILINE
)


def looks_like_cuda(data: bytes) -> bool:
    """Does the file use CUDA, or split on an AMD build (AMD_TEST)?"""
    for pattern, needs_boundary in CUDA_MARKERS:
        for match in pattern.finditer(data):
            before = data[match.start() - 1 : match.start()]
            if not needs_boundary or not (before.isalnum() or before == b"_"):
                return True
    return (b"HIP" in data or b"ROCM" in data) and AMD_TEST.search(data) is not None


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file chosen for scanning by its name; `read_candidate` gets its bytes."""

    path: Path  # on disk (a name that is not UTF-8 holds surrogates: os.fsdecode)
    relpath: str  # relative to the root, with "/", as display_path shows it
    language: Language
    needs_cuda_check: bool  # a C/C++ file: scanned only if it turns out to use CUDA
    # size, modification and change times (ns) and inode when discovered: a re-scan may
    # trust what it recorded of a file whose stamp is unchanged (see engine.read_all_keyed)
    stamp: tuple[int, int, int, int] = (0, 0, 0, 0)


MANIFEST_NAMES = {
    "pyproject.toml": Language.PYPROJECT,
    "setup.cfg": Language.SETUP_CFG,
}
# requirements.txt, requirements-dev.txt, dev-requirements.in, constraints.txt, requirements/*.txt
REQUIREMENTS_NAME = re.compile(r"(?:.*[-_.])?(?:requirements|constraints)(?:[-_.].*)?\.(?:txt|in)")
CONDA_NAME = re.compile(r"environment(?:[-_.].*)?\.ya?ml|conda(?:[-_.].*)?\.ya?ml")
# A .py file or a notebook is read when it mentions a GPU framework or CUDA at all.
PYTHON_MARKER = re.compile(
    rb"cuda|torch|cupy|numba|nvidia|tensorrt|triton|cudnn|nvtx|jax|CUDAExtension", re.I
)


def classify_name(name: str, parent: str = "") -> tuple[Language | None, bool]:
    """Language of a file by its name (and its folder's), and whether it needs a content
    check (C/C++: does it use CUDA? Python: does it touch a GPU framework?)."""
    lower = name.lower()
    if lower in BUILD_NAMES:
        return BUILD_NAMES[lower], False
    if lower in MANIFEST_NAMES:
        return MANIFEST_NAMES[lower], False
    if REQUIREMENTS_NAME.fullmatch(lower) or (
        parent.lower() == "requirements" and lower.endswith((".txt", ".in"))
    ):
        return Language.REQUIREMENTS, False
    if CONDA_NAME.fullmatch(lower):
        return Language.CONDA, False
    suffix = os.path.splitext(lower)[1]
    if suffix == ".py":
        return Language.PYTHON, True
    if suffix == ".ipynb":
        return Language.NOTEBOOK, True
    if suffix in CUDA_SUFFIXES:
        return CUDA_SUFFIXES[suffix], False
    if suffix in BUILD_SUFFIXES:
        return BUILD_SUFFIXES[suffix], False
    if suffix in CPP_SUFFIXES:
        return CPP_SUFFIXES[suffix], True
    return None, False


class BadPattern(ValueError):
    """An --exclude glob that is not a valid gitignore pattern; the message says which."""


def check_excludes(excludes: Sequence[str]) -> None:
    """Raise BadPattern naming the first --exclude glob that cannot be compiled."""
    for pattern in excludes:
        if _pattern_error(pattern) is not None:
            raise BadPattern(f"bad --exclude pattern {pattern!r}: {_pattern_error(pattern)}")


def _pattern_error(pattern: str) -> str | None:
    try:
        _gitignore_spec([pattern])
    except (ValueError, re.error) as exc:
        return str(exc)
    return None


class _IgnoreRules:
    """The .gitignore files met on the way down, with --exclude globs on top."""

    def __init__(self, excludes: Sequence[str]) -> None:
        check_excludes(excludes)
        self._excludes = _gitignore_spec(excludes) if excludes else None
        self._specs: dict[str, pathspec.GitIgnoreSpec] = {}

    def load_dir(self, reldir: str, absdir: str, root_real: str) -> Iterator[str]:
        """Read reldir/.gitignore if present; yields why it (or a line of it) was not
        used. Only a regular file in the tree is read: a FIFO or a link to a device named
        .gitignore would block the scan or never end."""
        path = os.path.join(absdir, ".gitignore")
        if os.path.islink(path) and _outside(os.path.realpath(path), root_real):
            yield "symlink to a file outside the scanned tree; not used as .gitignore"
            return
        data = read_regular_file(path, MAX_IGNORE_FILE_BYTES)
        if data is None:
            return
        if isinstance(data, str):
            yield f"{data}; not used as .gitignore"
            return
        lines = data.decode("utf-8", "replace").splitlines()
        try:
            self._specs[reldir] = _gitignore_spec(lines)
            return
        except (ValueError, re.error):
            pass
        # Some line is not a valid pattern: use the others, and say which ones were not.
        good = []
        for number, line in enumerate(lines, 1):
            error = _pattern_error(line)
            if error is None:
                good.append(line)
            else:
                yield f"line {number}: bad pattern {display_path(line)!r} ignored ({error})"
        self._specs[reldir] = _gitignore_spec(good)

    def ignored(self, relpath: str, is_dir: bool) -> bool:
        probe = relpath + "/" if is_dir else relpath
        if self._excludes is not None and self._excludes.match_file(probe):
            return True
        verdict = False
        # Deeper .gitignore files override shallower ones, as in git.
        for reldir, spec in self._specs.items():
            if reldir and not relpath.startswith(reldir + "/"):
                continue
            local = relpath[len(reldir) + 1 :] if reldir else relpath
            result = spec.check_file(local + "/" if is_dir else local)
            if result.include is not None:
                verdict = result.include
        return verdict


def _gitignore_spec(lines: Iterable[str]) -> pathspec.GitIgnoreSpec:
    import pathspec  # only when there is a .gitignore or an --exclude (~15 ms to import)

    with warnings.catch_warnings():  # re's FutureWarnings about odd sets are not for users
        warnings.simplefilter("ignore")
        return pathspec.GitIgnoreSpec.from_lines(lines)


FILE_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a named pipe"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_regular(mode: int) -> str:
    """Why a file of this mode is not read: `not a regular file (a named pipe)`."""
    kind = next((name for test, name in FILE_KINDS if test(mode)), "special")
    return f"not a regular file ({kind})"


def read_regular_file(path: str | Path, limit: int) -> bytes | str | None:
    """The bytes of a regular file (at most `limit`); a reason (str) when it is not a
    regular file, is too large or cannot be read; None when it does not exist.

    Opened without blocking (a FIFO swapped in after a stat would otherwise wait for a
    writer) and checked again on the open descriptor, so what is read is what was
    checked."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return not_regular(st.st_mode)
        if st.st_size > limit:
            return f"larger than {limit // (1024 * 1024)} MiB ({st.st_size} bytes)"
        os.set_blocking(fd, True)
        chunks = []
        remaining = limit + 1  # a file that grew past the limit since the stat is cut off
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            return f"larger than {limit // (1024 * 1024)} MiB (it grew while being read)"
        return data
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    finally:
        os.close(fd)


def _rel(root: str, path: str) -> str:
    rel = os.path.relpath(path, root)
    return "" if rel == "." else rel.replace(os.sep, "/")


def _looks_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF_BYTES]


def discover(
    root: str | os.PathLike[str],
    excludes: Sequence[str] = (),
    max_bytes: int = MAX_FILE_BYTES,
) -> Iterator[Candidate | Skipped]:
    """Yield every file to scan under `root` (or `root` itself), and every skipped one.

    Files are yielded in a stable (sorted) order so that reports are reproducible.
    Names are handled as the file system gives them (bytes carried as surrogates) and
    reported through display_path. A link to a directory is not walked: its target is
    scanned where it really is, if inside the tree (once), and never if outside.
    Raises BadPattern for an invalid --exclude glob.
    """
    root_path = Path(root)
    if root_path.is_file():
        yield from _consider_file(str(root_path.parent), str(root_path), max_bytes, named=True)
        return
    if not root_path.is_dir():  # a FIFO or a device given as PATH: nothing to read
        try:
            reason = not_regular(os.stat(root_path).st_mode)
        except OSError as exc:
            reason = f"cannot stat: {exc.strerror or exc}"
        yield Skipped(display_path(root_path.name) or ".", reason)
        return

    root_real = os.path.realpath(root_path)
    rules = _IgnoreRules(excludes)
    seen_dirs: set[tuple[int, int]] = set()
    stack = [str(root_path)]
    while stack:
        absdir = stack.pop()
        reldir = _rel(str(root_path), absdir)
        shown = display_path(reldir)
        try:
            st = os.stat(absdir)
        except OSError as exc:
            yield Skipped(shown or ".", f"cannot open directory: {exc.strerror or exc}")
            continue
        if (st.st_dev, st.st_ino) in seen_dirs:  # a bind mount or hard link: no symlinks here
            yield Skipped(shown, "directory already scanned (duplicate link)")
            continue
        seen_dirs.add((st.st_dev, st.st_ino))
        ignore_file = f"{shown}/.gitignore" if shown else ".gitignore"
        for reason in rules.load_dir(reldir, absdir, root_real):
            yield Skipped(ignore_file, reason)
        try:
            with os.scandir(absdir) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            yield Skipped(shown or ".", f"cannot list directory: {exc.strerror or exc}")
            continue

        subdirs: list[str] = []
        for entry in entries:
            relpath = f"{reldir}/{entry.name}" if reldir else entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                if entry.name in ALWAYS_PRUNED or rules.ignored(relpath, is_dir=True):
                    continue
                if entry.is_symlink():
                    yield Skipped(display_path(relpath), _directory_link(entry.path, root_real))
                    continue
                subdirs.append(entry.path)
                continue
            if rules.ignored(relpath, is_dir=False):
                continue
            if entry.is_symlink() and _outside(os.path.realpath(entry.path), root_real):
                if classify_name(entry.name, os.path.basename(absdir))[0] is not None:
                    yield Skipped(
                        display_path(relpath), "symlink to a file outside the scanned tree"
                    )
                continue
            yield from _consider_file(str(root_path), entry.path, max_bytes, False, relpath)
        # Depth-first in sorted order: push in reverse so the first name pops first.
        stack.extend(reversed(subdirs))


def _outside(target: str, root_real: str) -> bool:
    return os.path.commonpath([root_real, target]) != root_real


def _directory_link(path: str, root_real: str) -> str:
    """Why a link to a directory is not walked. Its target, if inside the tree, is
    walked under its real name (unless ignored): the files are read once, and a link
    met before its target (`alias -> src`) no longer hides the real folder."""
    target = os.path.realpath(path)
    if _outside(target, root_real):
        return "symlink to a directory outside the scanned tree"
    where = os.path.relpath(target, root_real).replace(os.sep, "/")
    if not _outside(os.path.realpath(os.path.dirname(path)), target):  # `src/loop -> ..`
        return "symlink loop (to an enclosing directory)"
    return f"symlink to a directory in the tree, scanned as {display_path(where)}"


def _consider_file(
    root: str, path: str, max_bytes: int, named: bool, relpath: str = ""
) -> Iterator[Candidate | Skipped]:
    # The walk knows each file's relative path; os.path.relpath costs more than the stat.
    relpath = relpath or _rel(root, path) or os.path.basename(path)
    shown = display_path(relpath)
    language, needs_check = classify_name(
        os.path.basename(path), os.path.basename(os.path.dirname(path))
    )
    if language is None:
        if not named:
            return
        language, needs_check = Language.CUDA, False  # the user named this file: read it as CUDA
    try:
        st = os.stat(path)
    except FileNotFoundError:
        yield Skipped(shown, "broken symlink")
        return
    except OSError as exc:
        yield Skipped(shown, f"cannot stat: {exc.strerror or exc}")
        return
    if not stat.S_ISREG(st.st_mode):
        yield Skipped(shown, not_regular(st.st_mode))
        return
    if st.st_size > max_bytes:
        yield Skipped(shown, f"larger than {max_bytes // (1024 * 1024)} MiB ({st.st_size} bytes)")
        return
    stamp = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)
    yield Candidate(Path(path), shown, language, needs_check and not named, stamp)


# A C/C++ header without CUDA in it can still define what CUDA code elsewhere uses: a
# warp width, a mask, a device-qualifier macro, a platform macro (portcheck.project).
FACT_HEADER_SUFFIXES = (".h", ".hpp", ".hh", ".hxx", ".inl", ".inc", ".ipp", ".tcc")
PROJECT_FACT_MARKER = re.compile(
    rb"#\s*(?:define|if)|\bconstexpr\b|\bconst\b|\benum\b"
    # a type of its own named like a CUDA library's (`struct cuBool_config`)
    rb"|\b(?:struct|class|union|using)\s+(?:cu[A-Z_]|CU[a-z_]|cuda|nv[A-Z]|__nv_)"
)


def read_candidate(candidate: Candidate, facts: bool = False) -> bytes | Skipped | None:
    """The file's bytes; a Skipped with the reason; or None for a C/C++ file
    that turned out to have no CUDA in it (not worth a skip line). With `facts`, a header
    without CUDA that defines macros or constants is read too (for the project's facts)."""
    # Discovery saw a regular file; what is opened now is checked again (it may have been
    # replaced by a FIFO or a link to a device since), and read no further than it was big.
    data = read_regular_file(candidate.path, max(candidate.stamp[0], MAX_FILE_BYTES))
    if data is None:
        return Skipped(candidate.relpath, "unreadable: No such file or directory")
    if isinstance(data, str):
        return Skipped(candidate.relpath, data)
    if _looks_binary(data):
        return Skipped(candidate.relpath, "binary file (contains NUL bytes)")
    if candidate.needs_cuda_check:
        if candidate.language in (Language.PYTHON, Language.NOTEBOOK):
            if PYTHON_MARKER.search(data) is None:
                return None
        elif not looks_like_cuda(data):
            if facts and candidate.relpath.lower().endswith(FACT_HEADER_SUFFIXES):
                return data if PROJECT_FACT_MARKER.search(data) else None
            return None
    return data
