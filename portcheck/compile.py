"""Compile translated HIP for real AMD targets with hipcc, and explain each failure.

Owns: finding hipcc ($PORTCHECK_HIPCC, then a newer ROCm under $ROCM_PATH, then
/opt/rocm, then PATH) and which gfx targets its device libraries support; the flags each
unit is built with (a compile_commands.json, else the command line, else -std=c++17);
which sources are units (a source another file #includes is not); compiling each unit for
each target in parallel, each hipcc in a process group of its own that a timeout or an
interrupt kills whole; a JSON cache keyed by the compiler, flags, environment and content,
whose entries list every header the compiler read (its -MD output) and are re-checked on
lookup; parsing clang's diagnostics, mapping each back to the original CUDA line through
the translation's line map; and sorting each failure into a class a user can act on
(untranslated CUDA, a missing ROCm library, an API newer than the installed ROCm, a
genuine port problem tied to a hazard finding, or other).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from portcheck.discover import discover, read_candidate
from portcheck.extract import CUDA_HEADER_SHAPE
from portcheck.filescan import FileScan, FileScanner
from portcheck.model import (
    COMPILE_SCHEMA,
    CompileReport,
    CompileResult,
    Diagnostic,
    Finding,
    Skipped,
    Status,
    Toolchain,
)
from portcheck.resources import cache_dir, data_dir, write_atomically
from portcheck.rocm import RocmRelease
from portcheck.ruleset import default_rules, load_yaml
from portcheck.translate.builtin import ProjectFiles, Translation, translate_source
from portcheck.translate.hipify import ENGINES, EngineError, find_tool, run_hipify
from portcheck.translate.spelling import Spelling

SCHEMA = COMPILE_SCHEMA
# Bump when the cache entry's layout, diagnostics mapping or classification changes.
CACHE_FORMAT = "portcheck.compile-cache/4"
TIMEOUT_SECONDS = 300.0  # per unit and target; a big unit builds in well under a minute
KILL_GRACE_SECONDS = 2.0  # SIGTERM first (clang removes its temporaries), then SIGKILL
DEFAULT_STD = "c++17"  # nvcc's default dialect since CUDA 11 with GCC >= 11; hipcc's is C++14
HIPCC_VARIABLE = "PORTCHECK_HIPCC"  # an explicit hipcc, tried before any other
# Environment that changes what hipcc produces (besides every HIPCC_* / HIP_CLANG_* one).
RESULT_ENVIRONMENT = (
    "HIP_PLATFORM",
    "HIP_PATH",
    "ROCM_PATH",
    "HIP_CLANG_PATH",
    "HIP_DEVICE_LIB_PATH",
    "DEVICE_LIB_PATH",
    "HIP_ROCCLR_HOME",
    "HIP_RUNTIME",
    "HIP_COMPILER",
    "HIP_LIB_PATH",
    "HIP_INCLUDE_PATH",
    "HSA_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "CCC_OVERRIDE_OPTIONS",
)
RESULT_ENVIRONMENT_PREFIXES = ("HIPCC_", "HIP_CLANG_")
COMPILED_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx", ".c")
INCLUDE_DIRECTIVE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
STD_VALUE = re.compile(r"(?:c|gnu)\+\+(?:\d\d|[0-2][xyzabc])")
DEFINE_VALUE = re.compile(r"[A-Za-z_]\w*(?:\([\w\s,.]*\))?(?:=.*)?", re.DOTALL)
# nvcc spellings of the flags kept from a compile database -> the clang spelling.
KEPT_OPTIONS = {
    "-D": "-D",
    "--define-macro": "-D",
    "-U": "-U",
    "--undefine-macro": "-U",
    "-I": "-I",
    "--include-path": "-I",
    "-isystem": "-isystem",
    "--system-include": "-isystem",
    "-include": "-include",
    "--pre-include": "-include",
    "-std": "-std",
    "--std": "-std",
}
# CUDA's half-precision switches have HIP twins that hip_fp16.h honours.
CUDA_MACROS_TO_HIP = {
    "__CUDA_NO_HALF_OPERATORS__": "__HIP_NO_HALF_OPERATORS__",
    "__CUDA_NO_HALF_CONVERSIONS__": "__HIP_NO_HALF_CONVERSIONS__",
}
# A folder of the CUDA toolkit (outside the project): its headers must not shadow HIP's.
CUDA_TOOLKIT_FOLDER = re.compile(r"^(?:cuda(?:-[\d.]+)?|nvidia|nvhpc|cccl)$", re.IGNORECASE)
DIAGNOSTIC = re.compile(
    r"^(?P<file>[^\n:]+):(?P<line>\d+):(?P<column>\d+): "
    r"(?P<severity>fatal error|error|warning|note): (?P<message>.*)$",
    re.MULTILINE,
)
MISSING_HEADER = re.compile(r"'(?P<header>[^']+)' file not found")
CUDA_NAME_IN_MESSAGE = re.compile(
    r"'((?:cuda|cu|CU|cublas|cufft|curand|cusparse|cusolver|cudnn|nccl|nvtx)\w*)'"
)
ARCH_PATTERN = re.compile(r"^gfx[0-9a-f]{3,4}(?::[a-z+-]+)*$")

# Headers of ROCm libraries -> (library, what a user installs). Debian 12 packages HIP,
# hipRAND, hipSPARSE and rocPRIM; the others come from AMD's ROCm repositories.
LIBRARY_PACKAGES: dict[str, tuple[str, str]] = {
    "hipblas": (
        "hipBLAS",
        "hipblas-dev from AMD's ROCm apt repository (not packaged in Debian 12)",
    ),
    "hipblaslt": ("hipBLASLt", "hipblaslt-dev from AMD's ROCm apt repository"),
    "hipfft": ("hipFFT", "hipfft-dev from AMD's ROCm apt repository (not packaged in Debian 12)"),
    "hipcub": ("hipCUB", "hipcub-dev from AMD's ROCm apt repository (not packaged in Debian 12)"),
    "thrust": (
        "rocThrust",
        "rocthrust-dev from AMD's ROCm apt repository (not packaged in Debian 12)",
    ),
    "miopen": (
        "MIOpen",
        "miopen-hip-dev from AMD's ROCm apt repository (not packaged in Debian 12)",
    ),
    "rccl": ("RCCL", "rccl-dev from AMD's ROCm apt repository (not packaged in Debian 12)"),
    "hipsolver": ("hipSOLVER", "hipsolver-dev from AMD's ROCm apt repository"),
    "rocwmma": ("rocWMMA", "rocwmma-dev from AMD's ROCm apt repository"),
    "roctracer": ("roctx", "roctracer-dev from AMD's ROCm apt repository"),
    "hiprand": ("hipRAND", "Debian: apt-get install libhiprand-dev"),
    "rocrand": ("rocRAND", "Debian: apt-get install librocrand-dev"),
    "hipsparse": ("hipSPARSE", "Debian: apt-get install libhipsparse-dev"),
    "rocprim": ("rocPRIM", "Debian: apt-get install librocprim-dev"),
}
LIBCUDACXX_PACKAGE = (
    "libhipcxx",
    "libhipcxx from github.com/ROCm/libhipcxx (an early-access preview, not in a ROCm release)",
)
HIP_NAME_IN_MESSAGE = re.compile(r"'((?:hip|__hip|hipblas|hiprand|hipfft|hipsparse|hipcub)\w*)'")
QUOTED_NAME = re.compile(r"'(\w+)'")


@lru_cache(maxsize=1)
def _hip_names() -> frozenset[str]:
    """Every HIP name the rule set maps to (`__shfl_down_sync`, `hipMallocAsync`, …)."""
    return frozenset(rule.hip for rule in default_rules() if rule.hip)


HIP_API_DIFFERENCES = ("undeclared", "no matching function", "no member named", "unknown type")
# A failure on a line with one of these hazards is explained by it.
HAZARD_HINTS = {
    "invalid instruction": "inline-ptx",
    "_sync'": "lane-mask-width",
}


class CompileError(Exception):
    """The compile step cannot run (bad target list, bad flags); the message is for users."""


class NoToolchainError(CompileError):
    """hipcc (or the chosen translation engine) is not installed."""


class _Stopped(Exception):
    """The run is being stopped (an interrupt): a unit's result must not be recorded."""


# -- the toolchain --------------------------------------------------------------------


def _hipcc_candidates() -> list[str]:
    candidates = []
    for root in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if root:
            candidates.append(str(Path(root) / "bin" / "hipcc"))
    found = shutil.which("hipcc")
    if found:
        candidates.append(found)
    return [c for c in candidates if Path(c).is_file() and os.access(c, os.X_OK)]


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["HIP_PLATFORM"] = "amd"  # nvcc is installed too; without this hipcc may pick it
    return env


def _result_environment() -> dict[str, str]:
    """The variables that change what hipcc produces, as hipcc will see them."""
    env = _environment()
    return {
        name: value
        for name, value in sorted(env.items())
        if name in RESULT_ENVIRONMENT or name.startswith(RESULT_ENVIRONMENT_PREFIXES)
    }


def _device_library_archs(hipcc: str) -> frozenset[str]:
    """The gfx targets whose device libraries are installed (oclc_isa_version_*.bc)."""
    roots = [
        Path(hipcc).resolve().parent.parent,
        Path("/usr/lib/x86_64-linux-gnu"),
        Path("/usr/lib"),
        Path("/opt/rocm"),
    ]
    archs: set[str] = set()
    for root in roots:
        for bitcode in ("amdgcn/bitcode", "lib/llvm/lib/clang", "amdgcn"):
            folder = root / bitcode
            if folder.is_dir():
                for path in folder.rglob("oclc_isa_version_*.bc"):
                    archs.add("gfx" + path.stem.rsplit("_", 1)[1])
    return frozenset(archs)


def available_cpus() -> int:
    """CPUs this process may run on (a container's or taskset's limit, not the machine's)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def find_toolchain(hipcc: str | None = None) -> Toolchain:
    """The hipcc to use (`hipcc`, else $PORTCHECK_HIPCC, else the first installed one);
    NoToolchainError with install advice when there is none."""
    explicit = hipcc or os.environ.get(HIPCC_VARIABLE)
    if explicit:
        if not (Path(explicit).is_file() and os.access(explicit, os.X_OK)):
            raise NoToolchainError(f"hipcc was not found at {explicit} (${HIPCC_VARIABLE})")
        return _probe_toolchain(explicit)
    candidates = _hipcc_candidates()
    if not candidates:
        raise NoToolchainError(
            "hipcc was not found ($ROCM_PATH/bin, /opt/rocm/bin or PATH). On Debian 12: "
            "apt-get install -y hipcc"
        )
    return _probe_toolchain(candidates[0])


@lru_cache(maxsize=8)
def _probe_toolchain(hipcc: str) -> Toolchain:
    try:
        done = subprocess.run(
            [hipcc, "--version"], capture_output=True, text=True, timeout=60, env=_environment()
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NoToolchainError(f"cannot run {hipcc}: {exc}") from None
    match = re.search(r"HIP version:\s*(\S+)", done.stdout)
    clang = re.search(r"clang version\s*(\S+)", done.stdout)
    version = (match.group(1) if match else "unknown") + (
        f" (clang {clang.group(1)})" if clang else ""
    )
    rocm = _version_tuple(match.group(1)) if match else None
    return Toolchain(hipcc, version, _device_library_archs(hipcc), rocm[:2] if rocm else None)


def _version_tuple(text: str) -> tuple[int, ...] | None:
    found = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
    if found is None:
        return None
    return tuple(int(part) for part in found.groups() if part is not None)


def parse_archs(text: str | Sequence[str], toolchain: Toolchain) -> tuple[list[str], list[str]]:
    """Split a target list into (buildable, lacking in this toolchain); bad names raise."""
    names = text.split(",") if isinstance(text, str) else list(text)
    buildable: list[str] = []
    lacking: list[str] = []
    for arch in (a.strip() for a in names if a.strip()):
        if not ARCH_PATTERN.match(arch):
            raise CompileError(f"{arch!r} is not an AMD GPU target (expected e.g. gfx90a, gfx1030)")
        base = arch.split(":", 1)[0]
        (buildable if not toolchain.archs or base in toolchain.archs else lacking).append(arch)
    if not buildable and not lacking:
        raise CompileError("no --offload-arch given (e.g. --offload-arch gfx90a,gfx1030)")
    return buildable, lacking


# -- what ROCm release added a name (rules/compile/rocm_versions.yaml) ---------------------


@dataclass(frozen=True)
class RocmNames:
    added: dict[str, tuple[int, ...]]  # HIP name or header -> the ROCm release that added it
    digest: str  # of the data file: cached classifications depend on it


@lru_cache(maxsize=1)
def rocm_names() -> RocmNames:
    """The shipped table of HIP names and headers by the ROCm release that added them."""
    text = data_dir("rules").joinpath("compile", "rocm_versions.yaml").read_text("utf-8")
    doc = load_yaml(text)
    where = "rules/compile/rocm_versions.yaml"
    if not isinstance(doc, dict) or not isinstance(doc.get("entries"), list):
        raise CompileError(f"{where}: expected a mapping with an 'entries' list")
    sources = doc.get("sources") or {}
    added: dict[str, tuple[int, ...]] = {}
    for number, entry in enumerate(doc["entries"], start=1):
        if not isinstance(entry, dict):
            raise CompileError(f"{where}: entry {number} is not a mapping")
        unknown = set(entry) - {"name", "added", "kind", "cuda", "source", "note"}
        missing = {"name", "added", "source"} - set(entry)
        version = _version_tuple(str(entry.get("added", "")))
        if unknown or missing or version is None or entry["source"] not in sources:
            problem = (
                f"unknown keys {sorted(unknown)}"
                if unknown
                else f"missing {sorted(missing)}"
                if missing
                else f"bad version {entry['added']!r}"
                if version is None
                else f"unknown source {entry['source']!r}"
            )
            raise CompileError(f"{where}: entry {number} ({entry.get('name')}): {problem}")
        if entry["name"] in added:
            raise CompileError(f"{where}: entry {number}: duplicate name {entry['name']!r}")
        added[str(entry["name"])] = version
    return RocmNames(added, hashlib.sha256(text.encode()).hexdigest()[:16])


def _newer_than(name: str, toolchain: Toolchain) -> str | None:
    """The ROCm release that added `name`, when it is newer than the toolchain's."""
    if toolchain.rocm is None:
        return None
    version = rocm_names().added.get(name)
    if version is None or version[:2] <= toolchain.rocm:
        return None
    return ".".join(map(str, version))


# -- build inputs: compile_commands.json and the command line ---------------------------


@dataclass(frozen=True)
class BuildFlags:
    """What a unit is built with, from its compile_commands.json entry or the command line.
    Paths are absolute; `includes` keeps the order and option (-I, -isystem, -include)."""

    std: str | None = None
    defines: tuple[str, ...] = ()  # "-DNAME=VALUE", "-UNAME"
    includes: tuple[tuple[str, str], ...] = ()

    def include_dirs(self) -> list[Path]:
        return [Path(value) for option, value in self.includes if option != "-include"]


def _split_list(option: str, value: str, nvcc: bool) -> list[str]:
    # nvcc takes comma-separated lists for these options (-DA,B defines both).
    if nvcc and option in ("-D", "-U", "-I", "-isystem", "-include"):
        return [part for part in value.split(",") if part]
    return [value]


def _kept_options(arguments: Sequence[str]) -> Iterable[tuple[str, str]]:
    """(clang option, value) for each -std/-D/-U/-I/-isystem/-include in an nvcc or
    clang command line, in either spelling (`-DX`, `-D X`, `--define-macro=X`)."""
    spellings = sorted(KEPT_OPTIONS, key=len, reverse=True)
    nvcc = bool(arguments) and Path(arguments[0]).name.startswith("nvcc")
    index = 1
    while index < len(arguments):
        argument = arguments[index]
        index += 1
        for spelled in spellings:
            option = KEPT_OPTIONS[spelled]
            if argument == spelled:
                if index >= len(arguments):
                    break
                value = arguments[index]
                index += 1
            elif argument.startswith(spelled + "="):
                value = argument[len(spelled) + 1 :]
            elif spelled in ("-D", "-U", "-I", "-isystem") and argument.startswith(spelled):
                value = argument[len(spelled) :]
            else:
                continue
            for part in _split_list(option, value, nvcc):
                yield option, part
            break


def _is_cuda_toolkit_folder(folder: str) -> bool:
    path = Path(folder)
    return (
        any(CUDA_TOOLKIT_FOLDER.match(part) for part in path.parts)
        or (path / "cuda_runtime.h").is_file()
    )


def flags_from_command(arguments: Sequence[str], directory: str, project: Path) -> BuildFlags:
    """The flags of one compile database entry that decide what the code means (-std, -D,
    -U, -I, -isystem, -include); CUDA-only ones are translated or dropped: the CUDA
    toolkit's include folders, CUDA headers pre-included (-> their HIP header), and CUDA's
    half-precision switches (-> HIP's)."""
    std: str | None = None
    defines: list[str] = []
    includes: list[tuple[str, str]] = []
    project = project.resolve()
    for option, value in _kept_options(arguments):
        if option == "-std":
            std = value
        elif option in ("-D", "-U"):
            name, _, rest = value.partition("=")
            name = CUDA_MACROS_TO_HIP.get(name, name)
            defines.append(f"{option}{name}" + (f"={rest}" if "=" in value else ""))
        elif option == "-include":
            candidate = os.path.normpath(os.path.join(directory, value))
            if os.path.isfile(candidate):
                includes.append((option, candidate))
            elif CUDA_HEADER_SHAPE.fullmatch(value):
                rule = default_rules().lookup(value)
                if rule is not None and rule.hip:
                    includes.append((option, rule.hip))
            else:
                includes.append((option, value))  # found through the include path
        else:
            folder = os.path.normpath(os.path.join(directory, value))
            inside = Path(folder) == project or project in Path(folder).parents
            if not inside and _is_cuda_toolkit_folder(folder):
                continue
            includes.append((option, folder))
    return BuildFlags(std, tuple(defines), tuple(includes))


def find_compile_databases(root: Path) -> list[Path]:
    """compile_commands.json files under `root` (a build folder's, or one at the top),
    shallowest first; hidden folders are not searched."""
    found: list[Path] = []
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith("."))
        if "compile_commands.json" in files:
            found.append(Path(folder) / "compile_commands.json")
    return sorted(found, key=lambda p: (len(p.parts), str(p)))


def load_compile_database(path: Path, project: Path) -> dict[Path, BuildFlags]:
    """Resolved source path -> its flags; the first entry for a file wins. ValueError (with
    the reason) when the file is not a compile database."""
    try:
        entries = json.loads(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot read it: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
    if not isinstance(entries, list):
        raise ValueError("not a list of compile commands")
    flags: dict[Path, BuildFlags] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            continue
        directory = str(entry.get("directory") or path.parent)
        arguments = entry.get("arguments")
        if not (isinstance(arguments, list) and all(isinstance(a, str) for a in arguments)):
            try:
                arguments = shlex.split(str(entry.get("command", "")))
            except ValueError:
                continue
        source = Path(directory, entry["file"]).resolve()
        flags.setdefault(source, flags_from_command(arguments, directory, project))
    return flags


@dataclass(frozen=True)
class CompileInputs:
    """How to build the units: a compile database (`build_dir`, else one found under the
    tree) for the files it lists, else these command-line flags."""

    build_dir: str | os.PathLike[str] | None = None
    std: str | None = None
    defines: tuple[str, ...] = ()
    include_dirs: tuple[str | os.PathLike[str], ...] = ()

    def command_line_flags(self) -> BuildFlags:
        std = self.std
        if std is not None:
            std = std.removeprefix("--std=").removeprefix("-std=")
            if not STD_VALUE.fullmatch(std):
                raise CompileError(f"--std {self.std!r} is not a C++ standard (e.g. c++17)")
        defines = []
        for define in self.defines:
            if not DEFINE_VALUE.fullmatch(define):
                raise CompileError(f"-D {define!r} is not NAME or NAME=VALUE")
            defines.append(f"-D{define}")
        return BuildFlags(std, tuple(defines), ())


def _databases(
    inputs: CompileInputs, base: Path, report: CompileReport, *, search: bool = True
) -> dict[Path, BuildFlags]:
    """The compile databases' flags; `search` False looks only in `base` itself (a single
    file's folder may be someone's home directory)."""
    if inputs.build_dir is not None:
        chosen = Path(inputs.build_dir)
        path = chosen / "compile_commands.json" if chosen.is_dir() else chosen
        if not path.is_file():
            raise CompileError(f"-p {chosen}: there is no compile_commands.json in it")
        paths = [path]
    elif search:
        paths = find_compile_databases(base)
    else:
        paths = [p for p in [base / "compile_commands.json"] if p.is_file()]
    merged: dict[Path, BuildFlags] = {}
    for path in paths:
        try:
            flags = load_compile_database(path, base)
        except ValueError as exc:
            if inputs.build_dir is not None:
                raise CompileError(f"-p {path}: {exc}") from None
            report.warnings.append(f"{path}: ignored: {exc}")
            continue
        report.databases.append(str(path))
        for source, entry in flags.items():
            merged.setdefault(source, entry)
    return merged


def project_include_dirs(root: Path) -> list[Path]:
    """Include folders a build would use when no compile database names them: CMake
    include_directories / target_include_directories, plus folders named include/."""
    dirs: list[Path] = []
    for cmake in root.rglob("CMakeLists.txt"):
        try:
            text = cmake.read_text(errors="replace")
        except OSError:
            continue
        for match in re.finditer(r"(?:target_)?include_directories\s*\(([^)]*)\)", text):
            for word in match.group(1).split():
                if word.upper() in ("PRIVATE", "PUBLIC", "INTERFACE", "SYSTEM", "BEFORE", "AFTER"):
                    continue
                word = word.replace("${CMAKE_CURRENT_SOURCE_DIR}", str(cmake.parent))
                candidate = cmake.parent / word
                if "$" not in word and candidate.is_dir():
                    dirs.append(candidate)
    dirs.extend(p for p in root.rglob("include") if p.is_dir())
    unique: list[Path] = []
    seen: set[Path] = set()
    for folder in dirs:
        if folder.resolve() not in seen:
            seen.add(folder.resolve())
            unique.append(folder)
    return unique


def _included_sources(
    units: Sequence[_Unit], search: Sequence[Path], base: Path
) -> dict[Path, str]:
    """Resolved path of each source file another file #includes -> the first includer."""
    by_path = {u.source: u for u in units}
    included: dict[Path, str] = {}
    for unit in units:
        for match in INCLUDE_DIRECTIVE.finditer(unit.raw):
            name = match.group(2).decode("utf-8", "replace").strip()
            if not name.lower().endswith(COMPILED_SUFFIXES):
                continue
            folders = ([unit.source.parent] if match.group(1) == b'"' else []) + [*search, base]
            for folder in folders:
                target = (folder / name).resolve()
                if target in by_path and target != unit.source:
                    included.setdefault(target, unit.relpath)
                    break
    return included


# -- running hipcc ----------------------------------------------------------------------


def _signal_groups(processes: Iterable[subprocess.Popen], signum: int) -> None:
    for process in processes:
        # Each hipcc leads its own session, so its group id is its pid; the group outlives
        # the leader while any clang child is alive.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signum)


def _kill_groups(processes: Sequence[subprocess.Popen]) -> None:
    """SIGTERM each process group (clang deletes its temporary files), then SIGKILL
    whatever is left of them, children included."""
    _signal_groups(processes, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_SECONDS
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(deadline - time.monotonic(), 0.01))
    _signal_groups(processes, signal.SIGKILL)


class _Runner:
    """The hipcc processes of one compile run: each in a new session (so a timeout or an
    interrupt kills hipcc and every clang it started, and Ctrl-C in the terminal does not
    reach them before portcheck has decided what to do), all killed by `stop`."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self._live: set[subprocess.Popen] = set()
        self._lock = threading.Lock()
        self._stopping = False

    def run(self, command: list[str], cwd: Path, env: dict[str, str]) -> tuple[int | None, str]:
        """(exit status, output); status None when it timed out and was killed."""
        with self._lock:
            if self._stopping:
                raise _Stopped
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
            self._live.add(process)
        try:
            try:
                output, _ = process.communicate(timeout=self.timeout)
                status: int | None = process.returncode
            except subprocess.TimeoutExpired:
                _kill_groups([process])
                output, status = self._drain(process), None
        finally:
            with self._lock:
                self._live.discard(process)
        if self._stopping:
            raise _Stopped
        return status, output

    @staticmethod
    def _drain(process: subprocess.Popen) -> str:
        try:
            output, _ = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # a grandchild left the group and holds the pipe
            process.kill()
            for stream in (process.stdout, process.stderr):
                if stream is not None:
                    stream.close()
            process.wait()
            return ""
        return output or ""

    def stop(self) -> None:
        """Kill every running hipcc with its children; later `run` calls raise _Stopped."""
        with self._lock:
            self._stopping = True
            live = list(self._live)
        _kill_groups(live)


# -- the cache ----------------------------------------------------------------------------


def _cache_dir() -> Path:
    return cache_dir() / "compile"


class _Inputs:
    """Digests of the files compilers read, each computed once per run. Files of the
    scratch tree are named `<tree>/relpath`, so that entries outlive the scratch folder."""

    def __init__(self, scratch: Path) -> None:
        self.scratch = str(scratch)
        self._digests: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def stable(self, path: str) -> str:
        if path.startswith(self.scratch + os.sep):
            return "<tree>/" + path[len(self.scratch) + 1 :]
        return path

    def digest(self, stable: str) -> str | None:
        with self._lock:
            if stable in self._digests:
                return self._digests[stable]
        path = stable
        if stable.startswith("<tree>/"):
            path = os.path.join(self.scratch, stable[len("<tree>/") :])
        try:
            with open(path, "rb") as fh:
                value: str | None = hashlib.file_digest(fh, "sha256").hexdigest()
        except OSError:
            value = None
        with self._lock:
            self._digests[stable] = value
        return value

    def read_dependencies(self, deps_file: Path, cwd: Path, unit: Path) -> list[list[str]] | None:
        """[stable path, digest] of every file the compiler read besides the unit, from
        its make-style -MD output; None when there is none (then nothing is cached)."""
        try:
            text = deps_file.read_text("utf-8", "surrogateescape")
        except OSError:
            return None
        words = re.findall(r"(?:\\.|[^\s\\])+", text.replace("\\\n", " "))
        if not words or not words[0].endswith(":"):
            return None
        inputs = []
        for word in words[1:]:
            path = os.path.join(cwd, re.sub(r"\\(.)", r"\1", word))
            if path == str(unit):
                continue
            stable = self.stable(path)
            digest = self.digest(stable)
            if digest is None:
                return None
            inputs.append([stable, digest])
        return inputs


def _cache_lookup(key: str, inputs: _Inputs) -> CompileResult | None:
    """The recorded result, if its entry is intact, is for this key, and no file the
    compiler read has changed since. Anything else is a miss."""
    try:
        entry = json.loads((_cache_dir() / f"{key}.json").read_bytes())
        if entry["format"] != CACHE_FORMAT or entry["key"] != key:
            return None
        for stable, digest in entry["inputs"]:
            if not isinstance(stable, str) or inputs.digest(stable) != digest:
                return None
        return CompileResult.from_dict(entry["result"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def _cache_store(key: str, dependencies: list[list[str]], result: CompileResult) -> None:
    entry = {"format": CACHE_FORMAT, "key": key, "inputs": dependencies, "result": result.to_dict()}
    with contextlib.suppress(OSError):  # a read-only cache only costs a rebuild
        write_atomically(
            _cache_dir() / f"{key}.json", json.dumps(entry).encode(), make_parents=True
        )


# -- classifying failures -----------------------------------------------------------------


def _rocm_version_error(diagnostic: Diagnostic, toolchain: Toolchain) -> tuple[str, str] | None:
    """(name, ROCm release) when the error is about a name or header that a newer ROCm
    than the toolchain's has."""
    header = MISSING_HEADER.search(diagnostic.message)
    names = [header.group("header")] if header else QUOTED_NAME.findall(diagnostic.message)
    for name in names:
        release = _newer_than(name, toolchain)
        if release is not None:
            return name, release
    return None


def _classify(
    result: CompileResult, findings_by_path: dict[str, list[Finding]], toolchain: Toolchain
) -> None:
    """Sort a failed build into a class a user can act on; the first matching rule wins."""
    errors = [d for d in result.diagnostics if d.severity in ("error", "fatal error")]
    if result.ok or not errors:
        return
    # Names a newer ROCm has: the toolchain's fault as long as nothing else failed.
    newer = {
        id(d): found for d in errors if (found := _rocm_version_error(d, toolchain)) is not None
    }
    too_old = "; ".join(
        sorted({f"{name} needs ROCm {release}" for name, release in newer.values()})
    )
    by_line: dict[tuple[str, int], list[Finding]] = {}
    for path_findings in findings_by_path.values():
        for finding in path_findings:
            by_line.setdefault((finding.path, finding.span.line), []).append(finding)
    # clang's typo correction (`did you mean 'hipDeviceGetLimit'?`) makes a second error
    # of the same line: a consequence of the missing name, not a problem of its own.
    newer_on_line = {(d.path, d.line): newer[id(d)] for d in errors if id(d) in newer}
    for d in errors:
        if id(d) not in newer and (d.path, d.line) in newer_on_line:
            newer[id(d)] = newer_on_line[(d.path, d.line)]
    if len(newer) == len(errors):
        result.failure_class = "rocm-version"
        rocm = ".".join(map(str, toolchain.rocm or ()))
        result.explanation = f"{too_old} (the installed toolchain is ROCm {rocm})"
        # A hazard on the same line is still worth knowing for the newer ROCm.
        related = {f.id for d in errors for f in by_line.get((d.path, d.line), [])}
        result.finding_ids = sorted(related)
        return
    errors = [d for d in errors if id(d) not in newer]
    _classify_code_errors(result, errors, by_line, toolchain)
    if too_old:
        result.explanation += f" (also: {too_old})"


def _include_roots(toolchain: Toolchain) -> list[Path]:
    """Where the toolchain's ROCm headers live (hipcc's prefix, $ROCM_PATH, /opt/rocm)."""
    roots = [Path(toolchain.hipcc).resolve().parent.parent / "include"]
    for prefix in (os.environ.get("ROCM_PATH"), "/opt/rocm"):
        if prefix:
            roots.append(Path(prefix) / "include")
    return [root for root in dict.fromkeys(roots) if root.is_dir()]


def _installed_elsewhere(name: str, toolchain: Toolchain) -> str | None:
    """`hiprand.h` when ROCm has it as `hiprand/hiprand.h`: the spelling it has."""
    base = name.rsplit("/", 1)[-1]
    top = base.removesuffix(".h").removesuffix(".hpp").split("_", 1)[0].lower()
    for root in _include_roots(toolchain):
        for candidate in (f"{top}/{base}", base):
            if candidate != name and (root / candidate).is_file():
                return candidate
    return None


def _missing_header(
    result: CompileResult, name: str, here: list[Finding], toolchain: Toolchain
) -> None:
    """Class a `'name' file not found`. A ROCm library that is not installed is
    missing-library, unless the line carries a hazard finding (installing rocWMMA does not
    port `nvcuda::wmma`): then it is a port problem with the install hint. A library header
    that is installed under another path is a translation to fix. A CUDA header with no
    HIP counterpart (rules: hip null, unsupported: cooperative_groups/reduce.h) is a port
    problem; one that has a counterpart and was left is untranslated CUDA."""
    top = name.split("/", 1)[0].removesuffix(".h").removesuffix(".hpp").lower()
    library = LIBRARY_PACKAGES.get(top) or LIBRARY_PACKAGES.get(top.split("_", 1)[0])
    rule = default_rules().lookup(name)
    if library is None and rule is None and name.startswith("cuda/"):
        # libcu++ (`cuda/barrier`, `cuda/std/atomic`): HIP's counterpart keeps the paths
        # (rules: the `cuda/` folder, libhipcxx) but is installed on its own.
        library = LIBCUDACXX_PACKAGE
    if library is not None:
        spelled = _installed_elsewhere(name, toolchain)
        if spelled is not None:
            result.failure_class = "untranslated-cuda"
            result.explanation = f"{name} is installed as {spelled} in this ROCm: include that"
            return
        install = f"the {library[0]} headers are not installed ({name}); install {library[1]}"
        if here:
            result.failure_class = "port-problem"
            result.finding_ids = sorted({f.id for f in here})
            found = "; ".join(sorted({f"{f.id} {f.slug}" for f in here}))
            result.explanation = f"{found} (and {install})"
            return
        result.failure_class = "missing-library"
        result.explanation = install
        return
    if rule is not None and rule.hip is None and rule.status.hip is Status.UNSUPPORTED:
        result.failure_class = "port-problem"
        result.finding_ids = sorted({f.id for f in here})
        why = f": {rule.notes.split(' | ')[0]}" if rule.notes else ""
        result.explanation = (
            f"{name} has no HIP counterpart{why}; the code that uses it needs a manual port"
        )
        return
    if rule is not None:
        result.failure_class = "untranslated-cuda"
        result.explanation = f"a CUDA header is still included: {name}"
        return
    if CUDA_HEADER_SHAPE.fullmatch(name):
        # A CUDA header the rules know no HIP counterpart of (cuDLA's cudla.h): no rename
        # would fix it, the code that uses it needs porting by hand.
        result.failure_class = "port-problem"
        result.finding_ids = sorted({f.id for f in here})
        result.explanation = (
            f"{name} is a CUDA header with no known HIP counterpart; "
            "the code that uses it needs a manual port"
        )
        return
    result.failure_class = "missing-dependency"
    result.explanation = f"a header that is neither CUDA nor ROCm is missing: {name}"


UNDECLARED = ("undeclared", "unknown type", "no template named", "was not declared")
CUDA_BUILTIN_VARIABLES = frozenset({"threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize"})


def _cuda_name_left(result: CompileResult, message: str) -> bool:
    """An undeclared name that is CUDA's: left untranslated (`cudaFoo`, `__grid_constant__`,
    a built-in variable without the HIP runtime header), or, when HIP has no equivalent
    (rules: hip null, unsupported), a port problem."""
    if not any(text in message for text in UNDECLARED):
        return False
    for name in QUOTED_NAME.findall(message):
        if name in CUDA_BUILTIN_VARIABLES:
            result.failure_class = "untranslated-cuda"
            result.explanation = f"{name} is undeclared: the HIP runtime header is not included"
            return True
        rule = default_rules().lookup(name)
        if rule is not None and rule.hip == name:
            continue  # the same name in HIP (`__fadd_rd`): this ROCm lacks it, see below
        if rule is not None and rule.hip is None and rule.status.hip is Status.UNSUPPORTED:
            result.failure_class = "port-problem"
            result.explanation = f"{name} has no HIP equivalent; the code needs a manual port"
            return True
        if rule is not None or CUDA_NAME_IN_MESSAGE.fullmatch(f"'{name}'"):
            result.failure_class = "untranslated-cuda"
            result.explanation = f"CUDA name left untranslated: {name}"
            return True
    return False


def _classify_code_errors(
    result: CompileResult,
    errors: list[Diagnostic],
    by_line: dict[tuple[str, int], list[Finding]],
    toolchain: Toolchain,
) -> None:
    for diagnostic in errors:
        header = MISSING_HEADER.search(diagnostic.message)
        if header:
            here = by_line.get((diagnostic.path, diagnostic.line), [])
            _missing_header(result, header.group("header"), here, toolchain)
            return
    # A hazard finding on the failing line (in the unit or a header it includes) explains it.
    for diagnostic in errors:
        here = by_line.get((diagnostic.path, diagnostic.line), [])
        hinted = [slug for text, slug in HAZARD_HINTS.items() if text in diagnostic.message]
        explained = [f for f in here if not hinted or f.slug in hinted] or here
        if explained:
            result.failure_class = "port-problem"
            result.finding_ids = sorted({f.id for f in explained})
            # what the finding says, not only its id: `PC014 unsupported-api: `__grid_constant__`
            # has no HIP equivalent`
            result.explanation = "; ".join(
                sorted({f"{f.id} {f.slug}: {f.message}" for f in explained})
            )
            return
    for diagnostic in errors:
        if _cuda_name_left(result, diagnostic.message):
            return
    for diagnostic in errors:
        quoted = QUOTED_NAME.search(diagnostic.message)
        hip_name = HIP_NAME_IN_MESSAGE.search(diagnostic.message) or (
            quoted if quoted and quoted.group(1) in _hip_names() else None
        )
        if hip_name and any(text in diagnostic.message for text in HIP_API_DIFFERENCES):
            result.failure_class = "hip-api-difference"
            result.explanation = (
                f"{hip_name.group(1)} is missing in this ROCm or differs from its CUDA "
                f"counterpart: {diagnostic.message}"
            )
            return
    result.failure_class = "other"
    result.explanation = errors[0].message


# -- translation units --------------------------------------------------------------------


@dataclass
class _Unit:
    relpath: str
    source: Path  # the original file, resolved
    raw: bytes  # its bytes
    translated: Path  # the file hipcc compiles
    translation: Translation | None
    original_text: list[str]
    translated_text: list[str] = field(default_factory=list)
    flags: BuildFlags | None = None  # from the compile database; None: the command line's
    _line_map: dict[int, int] | None = None

    def original_line(self, line: int) -> int:
        """The CUDA line a line of the compiled file came from. The built-in engine keeps
        an exact map; for an external engine's output the two texts are aligned."""
        if self.translation is not None:
            return self.translation.original_line(line)
        if self._line_map is None:
            self._line_map = _align_lines(self.translated_text, self.original_text)
        return self._line_map.get(line, line)


def _align_lines(translated: list[str], original: list[str]) -> dict[int, int]:
    """1-based translated line -> original line, from difflib's alignment. Within a changed
    block lines pair up in order; lines an engine added are taken to come first."""
    import difflib

    mapping: dict[int, int] = {}
    matcher = difflib.SequenceMatcher(a=translated, b=original, autojunk=False)
    for _tag, i1, i2, j1, j2 in matcher.get_opcodes():
        grown = (i2 - i1) - (j2 - j1)  # lines the engine added in this block (hipify's include)
        for offset in range(i2 - i1):
            source = j1 + offset - max(grown, 0)
            mapping[i1 + offset + 1] = min(max(source, j1), max(j2 - 1, j1)) + 1
    return mapping


def _map_diagnostics(
    output: str, units_by_path: dict[str, _Unit], cwd: Path | None = None
) -> list[Diagnostic]:
    diagnostics = []
    for match in DIAGNOSTIC.finditer(output):
        severity = match.group("severity")
        if severity == "note":
            continue
        file = str((cwd or Path.cwd()).joinpath(match.group("file")).resolve())
        line = int(match.group("line"))
        unit = units_by_path.get(file)
        diagnostic = Diagnostic(
            line,
            int(match.group("column")),
            severity,
            match.group("message"),
            path=match.group("file"),
        )
        if unit is not None:
            original = unit.original_line(line)
            diagnostic.line = original
            diagnostic.path = unit.relpath
            # The text of a line only from the project's own files: a header of an
            # include folder outside the tree is named, never quoted into the report.
            if 0 < original <= len(unit.original_text) and not os.path.isabs(unit.relpath):
                diagnostic.source_line = unit.original_text[original - 1].strip()
        diagnostics.append(diagnostic)
    return diagnostics


# -- compiling ------------------------------------------------------------------------


@dataclass
class _Context:
    """What every unit's compile shares within one run."""

    toolchain: Toolchain
    base: Path  # the project folder (PATH, or the folder of a single file)
    scratch: Path  # the translated tree
    command_line: BuildFlags  # --std, -D from the command line
    extra_dirs: list[Path]  # -I from the command line, then the project's include folders
    findings_by_path: dict[str, list[Finding]]
    units_by_path: dict[str, _Unit]
    external: dict[Path, Path]  # an include folder outside the project -> its translation
    runner: _Runner
    inputs: _Inputs
    cache: bool
    key_parts: dict[str, object]  # the run-wide part of every cache key

    def mirrored(self, path: Path) -> Path | None:
        """The translated copy's path for a path inside the project or inside an include
        folder outside it that was translated too."""
        resolved = path.resolve()
        try:
            return self.scratch / resolved.relative_to(self.base.resolve())
        except ValueError:
            pass
        for folder, copy in self.external.items():
            try:
                return copy / resolved.relative_to(folder)
            except ValueError:
                continue
        return None

    def flags_for(self, unit: _Unit) -> list[str]:
        """-std, macros, then include folders: the translated copy of each project folder
        before the original (for headers discovery does not list: .inc, .def, …)."""
        chosen = unit.flags or self.command_line
        std = (unit.flags.std if unit.flags else None) or self.command_line.std or DEFAULT_STD
        flags = [f"-std={std}", *chosen.defines]
        originals: list[str] = []
        for option, value in chosen.includes:
            if option == "-include":
                copy = self.mirrored(Path(value)) if os.path.isabs(value) else None
                flags += [option, str(copy if copy is not None and copy.is_file() else value)]
                continue
            copy = self.mirrored(Path(value))
            if copy is not None:
                flags += [option, str(copy)]
            originals += [option, value]
        flags.append(f"-I{self.scratch}")
        for folder in self.extra_dirs:
            copy = self.mirrored(folder)
            flags.append(f"-I{copy if copy is not None else folder}")
        flags += originals
        flags += [f"-I{folder.resolve()}" for folder in (self.base, *self.extra_dirs)]
        return flags

    def key(self, unit: _Unit, arch: str, flags: list[str]) -> str:
        scratch = str(self.scratch)
        described = json.dumps(
            {
                **self.key_parts,
                "arch": arch,
                "flags": [flag.replace(scratch, "<tree>") for flag in flags],
                "unit": unit.relpath,
            },
            sort_keys=True,
        ).encode()
        digest = hashlib.sha256(described)
        for data in (unit.translated.read_bytes(), unit.raw):
            digest.update(len(data).to_bytes(8, "little") + data)
        return digest.hexdigest()[:32]


def _compile_one(context: _Context, unit: _Unit, arch: str) -> CompileResult:
    flags = context.flags_for(unit)
    key = context.key(unit, arch, flags)
    if context.cache:
        cached = _cache_lookup(key, context.inputs)
        if cached is not None:
            return cached
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="portcheck-hipcc-") as work:
        deps_file = Path(work) / "unit.d"
        command = [
            context.toolchain.hipcc,
            "-x",
            "hip",
            f"--offload-arch={arch}",
            *flags,
            "-c",
            str(unit.translated),
            "-o",
            str(Path(work) / "unit.o"),
            "-MD",
            "-MF",
            str(deps_file),
        ]
        # clang's temporaries go to the unit's own folder, removed even when it is killed.
        env = {**_environment(), "TMPDIR": work}
        status, output = context.runner.run(command, unit.translated.parent, env)
        dependencies = (
            context.inputs.read_dependencies(deps_file, unit.translated.parent, unit.translated)
            if status is not None
            else None
        )
    seconds = time.perf_counter() - started
    if status is None:  # timed out: never cached, a re-run tries again
        return CompileResult(
            unit.relpath,
            arch,
            False,
            seconds,
            [
                Diagnostic(
                    0,
                    0,
                    "error",
                    f"hipcc timed out after {context.runner.timeout:g} s",
                    unit.relpath,
                )
            ],
            failure_class="timeout",
            explanation=f"hipcc did not finish within {context.runner.timeout:g} s and was "
            "stopped with its child processes (raise --timeout for a unit this large)",
        )
    ok = status == 0
    result = CompileResult(
        unit.relpath,
        arch,
        ok,
        seconds,
        _map_diagnostics(output, context.units_by_path, unit.translated.parent),
    )
    if not ok and not any(d.severity.endswith("error") for d in result.diagnostics):
        last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["failed"]
        result.diagnostics.append(Diagnostic(0, 0, "error", last[0], path=unit.relpath))
    _classify(result, context.findings_by_path, context.toolchain)
    # Installing the library is the fix for a missing one: do not remember that failure.
    # Without the compiler's list of what it read, an entry could not be re-checked.
    if context.cache and dependencies is not None and result.failure_class != "missing-library":
        _cache_store(key, dependencies, result)
    return result


def _translate_tree(
    root: Path,
    out: Path,
    engine: str,
    exclude: Sequence[str],
    report: CompileReport,
    scans: Mapping[str, FileScan],
    spelling: Spelling,
    also_found: Sequence[str] = (),
) -> tuple[list[_Unit], dict[str, list[Finding]], list[str]]:
    """Translate every CUDA source under `root` into `out` (plain C/C++ files are copied so
    that includes resolve); returns the units, their hazard findings and every file name.
    A file in `scans` (a scan's results, by relative path) is not scanned again.
    `also_found`: files the includes can reach outside `root` (relative to their include
    folder), so an include of one of them is the project's, not a CUDA header."""
    scanner = FileScanner(default_rules())
    units: list[_Unit] = []
    findings_by_path: dict[str, list[Finding]] = {}
    names: list[str] = []
    found = list(discover(root, exclude))
    project_files = ProjectFiles.of(
        [*(item.relpath for item in found if not isinstance(item, Skipped)), *also_found]
    )
    for item in found:
        if isinstance(item, Skipped):
            report.skipped.append(item)
            continue
        raw = read_candidate(item)
        if isinstance(raw, Skipped):
            report.skipped.append(raw)
            continue
        if raw is None and item.language.is_source:
            # A plain C/C++ header (no CUDA in it) still has to be found by includes.
            plain = out / item.relpath
            plain.parent.mkdir(parents=True, exist_ok=True)
            plain.write_bytes(item.path.read_bytes())
            names.append(item.relpath)
            continue
        if raw is None or not item.language.is_source:
            continue
        translation: Translation | None = None
        if engine == "builtin":
            translation = translate_source(
                scanner,
                item.relpath,
                item.language,
                raw,
                scan=scans.get(item.relpath),
                spelling=spelling,
                project_files=project_files,
            )
            text = translation.text
            findings_by_path[item.relpath] = translation.findings
        elif engine == "none":
            text = raw
        else:
            # Hazards come from the CUDA source, whichever engine translates it.
            scanned = scans.get(item.relpath) or scanner.scan(item.relpath, item.language, raw)
            findings_by_path[item.relpath] = scanned.findings
            try:
                text = run_hipify(engine, item.path)
            except EngineError:
                text = raw  # compiled untranslated: the failure shows what was left
        target = out / item.relpath
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text)
        names.append(item.relpath)
        original = raw.decode("utf-8", "replace").splitlines()
        translated_lines = (
            [] if translation is not None else text.decode("utf-8", "replace").splitlines()
        )
        units.append(
            _Unit(
                item.relpath,
                item.path.resolve(),
                raw,
                target,
                translation,
                original,
                translated_lines,
            )
        )
    return units, findings_by_path, names


EXTERNAL_FOLDER = ".portcheck-include"  # in the scratch tree: translated outside folders
MAX_EXTERNAL_FILES = 2000  # an include folder larger than this is a library: not translated
SYSTEM_FOLDERS = (Path("/usr"), Path("/opt/rocm"), Path("/opt/nvidia"), Path("/opt/cuda"))


def _outside_include_folders(search: Sequence[Path], base: Path) -> list[Path]:
    """Include folders outside the project that a translation must cover: the project's
    own helpers kept elsewhere (`-I ../common`, cuda-samples' Common/). Not the CUDA
    toolkit, not system or ROCm folders, not folders too large to be one project's."""
    chosen: list[Path] = []
    root = base.resolve()
    for folder in search:
        resolved = folder.resolve()
        if not resolved.is_dir() or resolved == root or root in resolved.parents:
            continue
        if resolved in chosen or any(p in resolved.parents for p in chosen):
            continue
        if _is_cuda_toolkit_folder(str(resolved)):
            continue
        if any(resolved == s or s in resolved.parents for s in SYSTEM_FOLDERS):
            continue
        count = 0
        for _, _, files in os.walk(resolved):
            count += len(files)
            if count > MAX_EXTERNAL_FILES:
                break
        if count <= MAX_EXTERNAL_FILES:
            chosen.append(resolved)
    return chosen


def _files_under(folders: Sequence[Path]) -> list[str]:
    """Every file under the folders, relative to its folder, with "/"."""
    found = []
    for folder in folders:
        for parent, _, files in os.walk(folder):
            relative = Path(parent).relative_to(folder).as_posix()
            found += [name if relative == "." else f"{relative}/{name}" for name in files]
    return found


def _translate_include_folders(
    folders: Sequence[Path],
    out: Path,
    engine: str,
    spelling: Spelling,
    also_found: Sequence[str],
) -> tuple[dict[Path, Path], list[_Unit]]:
    """Translate the CUDA headers of include folders outside the project (`-I
    ../Common`) into the scratch tree, so the project's includes find HIP there; each
    folder -> its copy, and the translated files (their diagnostics name the original)."""
    external: dict[Path, Path] = {}
    units: list[_Unit] = []
    for number, folder in enumerate(folders):
        copy = out / EXTERNAL_FOLDER / str(number)
        scratch_report = CompileReport(Toolchain("", "", frozenset(), None), [])
        translated, _, _ = _translate_tree(
            folder, copy, engine, (), scratch_report, {}, spelling, also_found
        )
        for unit in translated:
            unit.relpath = str(unit.source)
        units += translated
        external[folder] = copy
    return external, units


def _spelling_for(rocm: str | None, toolchain: Toolchain) -> Spelling:
    """The release to translate for: the one asked for, else the toolchain's own."""
    if rocm is not None:
        try:
            return Spelling.for_release(default_rules().rocm_release(rocm))
        except ValueError as exc:
            raise CompileError(f"--rocm {rocm!r}: {exc}") from None
    if toolchain.rocm is None:
        return Spelling()
    return Spelling(RocmRelease(*toolchain.rocm[:2]))


def compile_tree(
    path: str | os.PathLike[str],
    archs: str | Sequence[str],
    *,
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    std: str | None = None,
    defines: Sequence[str] = (),
    build_dir: str | os.PathLike[str] | None = None,
    jobs: int | None = None,
    timeout: float = TIMEOUT_SECONDS,
    cache: bool = True,
    exclude: Sequence[str] = (),
    engine: str = "builtin",
    hipcc: str | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    scans: Mapping[str, FileScan] | None = None,
    only: Iterable[str] | None = None,
    rocm: str | None = None,
) -> CompileReport:
    """Translate the CUDA under `path` (in a scratch tree) and compile every translation
    unit (.cu, and .cpp/.c files that use CUDA, except those another file #includes) for
    every target.

    Each unit is built with its flags from `build_dir`'s compile_commands.json (or one
    found under `path`), else with `std`, `defines` (NAME or NAME=VALUE) and the default
    -std=c++17; `include_dirs` are searched too. Each hipcc run gets `timeout` seconds.
    `engine` picks the translation: "builtin", "hipify-perl", "hipify-clang", or "none"
    for sources that are HIP already. An interrupt (KeyboardInterrupt) kills every
    running hipcc with its children before it propagates. `scans`: the files' FileScans
    from a scan of the same tree (by relative path), so `scan --compile` scans each once.
    `only`: compile just these units (relative paths; the whole tree is still translated
    so that includes resolve), so that a fleet can spread one tree's units over workers.
    `rocm`: the ROCm release the built-in translation is written for (`_sync` warp
    builtins, library header paths, hipBLAS names); default: the installed hipcc's, so
    what is built is what that compiler can build."""
    if engine not in (*ENGINES, "none"):
        raise CompileError(f"unknown engine {engine!r}")
    if engine not in ("builtin", "none") and find_tool(engine) is None:
        raise CompileError(f"{engine} was not found on PATH or in $ROCM_PATH/bin")
    if timeout <= 0:
        raise CompileError("--timeout must be a positive number of seconds")
    inputs = CompileInputs(build_dir, std, tuple(defines), tuple(include_dirs))
    command_line = inputs.command_line_flags()
    toolchain = find_toolchain(hipcc)
    buildable, lacking = parse_archs(archs, toolchain)
    spelling = _spelling_for(rocm, toolchain)
    root = Path(path)
    if not root.exists():
        raise CompileError(f"path does not exist: {root}")
    base = root if root.is_dir() else root.parent
    report = CompileReport(toolchain, [])
    databases = _databases(inputs, base, report, search=root.is_dir())
    with tempfile.TemporaryDirectory(prefix="portcheck-compile-") as scratch:
        out = Path(scratch)
        extra_dirs = [*map(Path, include_dirs), *project_include_dirs(base)]
        search = [
            *extra_dirs,
            *{folder for flags in databases.values() for folder in flags.include_dirs()},
        ]
        outside = _outside_include_folders(search, base)
        outside_files = _files_under(outside)
        units, findings_by_path, names = _translate_tree(
            root, out, engine, exclude, report, scans or {}, spelling, outside_files
        )
        for unit in units:
            unit.flags = databases.get(unit.source)
        external, external_units = _translate_include_folders(
            outside, out, engine, spelling, [*names, *outside_files]
        )
        included = _included_sources(units, search, base)
        chosen = None if only is None else set(only)
        compiled = []
        for unit in units:
            if chosen is not None and unit.relpath not in chosen:
                continue
            if not unit.relpath.lower().endswith(COMPILED_SUFFIXES):
                continue  # headers are translated so that includes resolve to HIP
            if unit.source in included and unit.flags is None:
                report.skipped.append(
                    Skipped(
                        unit.relpath,
                        f"included by {included[unit.source]}: compiled as part of it",
                    )
                )
                continue
            compiled.append(unit)
        hipcc_file = Path(toolchain.hipcc).resolve()
        stat = hipcc_file.stat()
        context = _Context(
            toolchain=toolchain,
            base=base,
            scratch=out,
            command_line=command_line,
            extra_dirs=extra_dirs,
            findings_by_path=findings_by_path,
            units_by_path={str(u.translated.resolve()): u for u in (*units, *external_units)},
            external=external,
            runner=_Runner(timeout),
            inputs=_Inputs(out),
            cache=cache,
            key_parts={
                "format": CACHE_FORMAT,
                "hipcc": [str(hipcc_file), stat.st_size, stat.st_mtime_ns, toolchain.version],
                "environment": _result_environment(),
                "rules": [default_rules().digest, rocm_names().digest],
                # A header added to the tree may shadow one a unit read before.
                "headers": sorted(n for n in names if not n.lower().endswith(COMPILED_SUFFIXES)),
            },
        )
        for unit in compiled:
            for arch in lacking:
                report.results.append(
                    CompileResult(
                        unit.relpath,
                        arch,
                        False,
                        0.0,
                        failure_class="unsupported-target",
                        explanation=f"the installed toolchain ({toolchain.version}) cannot build "
                        f"{arch}: it has no device library for it",
                    )
                )
        tasks = [(unit, arch) for unit in compiled for arch in buildable]
        workers = max(1, min(jobs or available_cpus(), available_cpus(), len(tasks) or 1))
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
        try:
            futures = {
                pool.submit(_compile_one, context, unit, arch): (unit, arch) for unit, arch in tasks
            }
            for done, future in enumerate(concurrent.futures.as_completed(futures)):
                unit, arch = futures[future]
                if progress is not None:
                    progress(done + 1, len(futures), f"{unit.relpath} [{arch}]")
                report.results.append(future.result())
        except BaseException:
            # Ctrl-C, SIGTERM turned into KeyboardInterrupt, or a bug: no hipcc survives us,
            # and nothing half-done is cached (the workers see the stop and record nothing).
            context.runner.stop()
            pool.shutdown(wait=True, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
    report.results.sort(key=lambda r: (r.path, r.arch))
    return report
