"""Compile translated HIP for real AMD targets with hipcc, and explain each failure.

Owns: finding hipcc (a newer ROCm under $ROCM_PATH first, then /opt/rocm, then
PATH) and which gfx targets its device libraries support; compiling each translation
unit for each target in parallel with a timeout; a cache keyed by content, flags and
toolchain so an unchanged re-run is instant; parsing clang's diagnostics, mapping each
back to the original CUDA line through the translation's line map; and sorting each
failure into a class a user can act on (untranslated CUDA, a missing ROCm library,
a genuine port problem tied to a hazard finding, or other).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from portcheck.discover import discover, read_candidate
from portcheck.extract import CUDA_HEADER_SHAPE, Extractor
from portcheck.model import Finding, Skipped
from portcheck.resources import cache_dir, write_bytes_atomically
from portcheck.ruleset import default_rules
from portcheck.translate.builtin import Translation, translate_source
from portcheck.translate.hipify import ENGINES, EngineError, find_tool, run_hipify

SCHEMA = "portcheck.compile/1"
CACHE_VERSION = "compile-2"  # bump when diagnostics mapping or classification changes
TIMEOUT_SECONDS = 300
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
    """The compile step cannot run (no hipcc, bad target list); the message is for users."""


@dataclass(frozen=True)
class Toolchain:
    hipcc: str
    version: str
    archs: frozenset[str]  # gfx targets its device libraries support

    def to_dict(self) -> dict[str, object]:
        return {"path": self.hipcc, "version": self.version}


@dataclass
class Diagnostic:
    line: int
    column: int
    severity: str
    message: str
    path: str = ""  # the original CUDA file (relative), when the diagnostic maps to one
    source_line: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "severity": self.severity,
            "message": self.message,
            "source_line": self.source_line,
        }


@dataclass
class CompileResult:
    path: str
    arch: str
    ok: bool
    seconds: float
    diagnostics: list[Diagnostic] = field(default_factory=list)
    failure_class: str = (
        ""  # "", untranslated-cuda, missing-library, port-problem, unsupported-target, other
    )
    explanation: str = ""
    finding_ids: list[str] = field(default_factory=list)
    cached: bool = False

    def to_dict(self) -> dict[str, object]:
        return {
            "path": self.path,
            "arch": self.arch,
            "ok": self.ok,
            "seconds": round(self.seconds, 3),
            "diagnostics": [d.to_dict() for d in self.diagnostics],
            "class": self.failure_class,
            "explanation": self.explanation,
            "findings": self.finding_ids,
            "cached": self.cached,
        }

    @classmethod
    def from_dict(cls, data: dict) -> CompileResult:
        return cls(
            path=data["path"],
            arch=data["arch"],
            ok=data["ok"],
            seconds=data["seconds"],
            diagnostics=[Diagnostic(**d) for d in data["diagnostics"]],
            failure_class=data["class"],
            explanation=data["explanation"],
            finding_ids=data["findings"],
            cached=True,
        )


@dataclass
class CompileReport:
    toolchain: Toolchain
    results: list[CompileResult]
    skipped: list[Skipped] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "schema": SCHEMA,
            "hipcc": self.toolchain.to_dict(),
            "results": [r.to_dict() for r in self.results],
            "skipped": [s.to_dict() for s in self.skipped],
        }


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


@lru_cache(maxsize=1)
def find_toolchain() -> Toolchain:
    """The hipcc to use; CompileError with install advice when there is none."""
    candidates = _hipcc_candidates()
    if not candidates:
        raise CompileError(
            "hipcc was not found ($ROCM_PATH/bin, /opt/rocm/bin or PATH). On Debian 12: "
            "apt-get install -y hipcc"
        )
    hipcc = candidates[0]
    try:
        done = subprocess.run(
            [hipcc, "--version"], capture_output=True, text=True, timeout=60, env=_environment()
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileError(f"cannot run {hipcc}: {exc}") from None
    match = re.search(r"HIP version:\s*(\S+)", done.stdout)
    clang = re.search(r"clang version\s*(\S+)", done.stdout)
    version = (match.group(1) if match else "unknown") + (
        f" (clang {clang.group(1)})" if clang else ""
    )
    return Toolchain(hipcc, version, _device_library_archs(hipcc))


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


# -- include paths --------------------------------------------------------------------


def project_include_dirs(root: Path) -> list[Path]:
    """Include folders a build would use: compile_commands.json entries and CMake
    include_directories / target_include_directories, plus folders named include/."""
    dirs: list[Path] = []
    commands = root / "compile_commands.json"
    if commands.is_file():
        try:
            for entry in json.loads(commands.read_text()):
                text = entry.get("command") or " ".join(entry.get("arguments", []))
                for match in re.finditer(r"-I\s*(\S+)", text):
                    folder = Path(entry.get("directory", root)) / match.group(1)
                    dirs.append(folder)
        except (ValueError, OSError, AttributeError):
            pass
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
    for folder in dirs:
        if folder.resolve() not in {u.resolve() for u in unique}:
            unique.append(folder)
    return unique


# -- compiling ------------------------------------------------------------------------


def _cache_dir() -> Path:
    return cache_dir() / "compile"


def _classify(result: CompileResult, findings_by_path: dict[str, list[Finding]]) -> None:
    """Sort a failed build into a class a user can act on; the first matching rule wins."""
    errors = [d for d in result.diagnostics if d.severity in ("error", "fatal error")]
    if result.ok or not errors:
        return
    for diagnostic in errors:
        header = MISSING_HEADER.search(diagnostic.message)
        if header:
            name = header.group("header")
            top = name.split("/", 1)[0].removesuffix(".h").removesuffix(".hpp").lower()
            library = LIBRARY_PACKAGES.get(top)
            if library is not None:
                result.failure_class = "missing-library"
                result.explanation = (
                    f"the {library[0]} headers are not installed ({name}); install {library[1]}"
                )
                return
            if CUDA_HEADER_SHAPE.fullmatch(name):
                result.failure_class = "untranslated-cuda"
                result.explanation = f"a CUDA header is still included: {name}"
                return
            result.failure_class = "missing-dependency"
            result.explanation = f"a header that is neither CUDA nor ROCm is missing: {name}"
            return
    # A hazard finding on the failing line (in the unit or a header it includes) explains it.
    by_line: dict[tuple[str, int], list[Finding]] = {}
    for path_findings in findings_by_path.values():
        for finding in path_findings:
            by_line.setdefault((finding.path, finding.span.line), []).append(finding)
    for diagnostic in errors:
        here = by_line.get((diagnostic.path, diagnostic.line), [])
        hinted = [slug for text, slug in HAZARD_HINTS.items() if text in diagnostic.message]
        explained = [f for f in here if not hinted or f.slug in hinted] or here
        if explained:
            result.failure_class = "port-problem"
            result.finding_ids = sorted({f.id for f in explained})
            result.explanation = "; ".join(sorted({f"{f.id} {f.slug}" for f in explained}))
            return
    for diagnostic in errors:
        name = CUDA_NAME_IN_MESSAGE.search(diagnostic.message)
        if name and ("undeclared" in diagnostic.message or "unknown type" in diagnostic.message):
            result.failure_class = "untranslated-cuda"
            result.explanation = f"CUDA name left untranslated: {name.group(1)}"
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


@dataclass
class _Unit:
    relpath: str
    translated: Path  # the file hipcc compiles
    translation: Translation | None
    original_text: list[str]
    translated_text: list[str] = field(default_factory=list)
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


def _map_diagnostics(output: str, units_by_path: dict[str, _Unit]) -> list[Diagnostic]:
    diagnostics = []
    for match in DIAGNOSTIC.finditer(output):
        severity = match.group("severity")
        if severity == "note":
            continue
        file = str(Path(match.group("file")).resolve())
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
            if 0 < original <= len(unit.original_text):
                diagnostic.source_line = unit.original_text[original - 1].strip()
        diagnostics.append(diagnostic)
    return diagnostics


def _compile_one(
    findings_by_path: dict[str, list[Finding]],
    toolchain: Toolchain,
    unit: _Unit,
    arch: str,
    flags: list[str],
    tree_digest: str,
    units_by_path: dict[str, _Unit],
    scratch: str,
) -> CompileResult:
    # The scratch folder's name changes every run; the key must not.
    stable_flags = [flag.replace(scratch, "<tree>") for flag in flags]
    key_source = json.dumps(
        [
            CACHE_VERSION,
            toolchain.hipcc,
            toolchain.version,
            arch,
            stable_flags,
            tree_digest,
            unit.relpath,
        ]
    ).encode()
    key = hashlib.sha256(key_source + unit.translated.read_bytes()).hexdigest()[:32]
    cache_file = _cache_dir() / f"{key}.json"
    try:
        return CompileResult.from_dict(json.loads(cache_file.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="portcheck-hipcc-") as scratch:
        command = [
            toolchain.hipcc,
            "-x",
            "hip",
            f"--offload-arch={arch}",
            "-c",
            str(unit.translated),
            "-o",
            str(Path(scratch) / "unit.o"),
            *flags,
        ]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                env=_environment(),
                timeout=TIMEOUT_SECONDS,
                cwd=unit.translated.parent,
            )
            output, ok = done.stdout + done.stderr, done.returncode == 0
        except subprocess.TimeoutExpired:
            output, ok = (
                f"{unit.relpath}:1:1: error: hipcc timed out after {TIMEOUT_SECONDS} s",
                False,
            )
    result = CompileResult(
        unit.relpath,
        arch,
        ok,
        time.perf_counter() - started,
        _map_diagnostics(output, units_by_path),
    )
    if not ok and not any(d.severity.endswith("error") for d in result.diagnostics):
        last = [line for line in output.strip().splitlines() if line.strip()][-1:] or ["failed"]
        result.diagnostics.append(Diagnostic(0, 0, "error", last[0], path=unit.relpath))
    _classify(result, findings_by_path)
    if result.failure_class == "missing-library":
        return result  # installing the library is the fix: do not remember this failure
    with contextlib.suppress(OSError):  # a read-only cache only costs a rebuild
        write_bytes_atomically(cache_file, json.dumps(result.to_dict()).encode())
    return result


def compile_tree(
    path: str | os.PathLike[str],
    archs: str | Sequence[str],
    *,
    include_dirs: Sequence[str | os.PathLike[str]] = (),
    jobs: int | None = None,
    exclude: Sequence[str] = (),
    engine: str = "builtin",
    progress: Callable[[int, int, str], None] | None = None,
) -> CompileReport:
    """Translate the CUDA under `path` (in a scratch tree) and compile every translation
    unit (.cu, and .cpp/.c files that use CUDA) for every target.

    `engine` picks the translation: "builtin", "hipify-perl", "hipify-clang", or "none"
    for sources that are HIP already."""
    if engine not in (*ENGINES, "none"):
        raise CompileError(f"unknown engine {engine!r}")
    if engine not in ("builtin", "none") and find_tool(engine) is None:
        raise CompileError(f"{engine} was not found on PATH or in $ROCM_PATH/bin")
    toolchain = find_toolchain()
    buildable, lacking = parse_archs(archs, toolchain)
    root = Path(path)
    if not root.exists():
        raise CompileError(f"path does not exist: {root}")
    base = root if root.is_dir() else root.parent
    extractor = Extractor(default_rules())
    report = CompileReport(toolchain, [])
    with tempfile.TemporaryDirectory(prefix="portcheck-compile-") as scratch:
        out = Path(scratch)
        units: list[_Unit] = []
        findings_by_path: dict[str, list[Finding]] = {}
        digest = hashlib.sha256()
        for item in discover(root, exclude):
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
                continue
            if raw is None or not item.language.is_source:
                continue
            translation: Translation | None = None
            if engine == "builtin":
                translation = translate_source(extractor, item.relpath, item.language, raw)
                text = translation.text
                findings_by_path[item.relpath] = translation.findings
            elif engine == "none":
                text = raw
            else:
                # Hazards come from the CUDA source, whichever engine translates it.
                findings_by_path[item.relpath] = extractor.scan_file(
                    item.relpath, item.language, raw
                ).findings
                try:
                    text = run_hipify(engine, item.path)
                except EngineError:
                    text = raw  # compiled untranslated: the failure shows what was left
            target = out / item.relpath
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(text)
            digest.update(item.relpath.encode() + text)
            original = raw.decode("utf-8", "replace").splitlines()
            translated_lines = (
                [] if translation is not None else text.decode("utf-8", "replace").splitlines()
            )
            units.append(_Unit(item.relpath, target, translation, original, translated_lines))
        # Headers are translated too, so that includes resolve to HIP; only sources compile.
        compiled = [
            u
            for u in units
            if Path(u.relpath).suffix.lower() in (".cu", ".cpp", ".cc", ".cxx", ".c")
        ]
        units_by_path = {str(u.translated.resolve()): u for u in units}
        flags = [f"-I{out}"]
        for folder in (*project_include_dirs(base), *map(Path, include_dirs)):
            folder = Path(folder)
            try:
                mirrored = out / folder.resolve().relative_to(base.resolve())
            except ValueError:
                mirrored = folder  # outside the project: use as is
            flags.append(f"-I{mirrored}")
        # Then the original folders, for headers discovery does not list (.inc, .def, …);
        # the translated copies above win because they come first.
        flags += [
            f"-I{Path(folder).resolve()}"
            for folder in (base, *project_include_dirs(base), *map(Path, include_dirs))
        ]
        tasks = [(unit, arch) for unit in compiled for arch in buildable]
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
        workers = jobs or os.cpu_count() or 1
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {
                pool.submit(
                    _compile_one,
                    findings_by_path,
                    toolchain,
                    unit,
                    arch,
                    flags,
                    digest.hexdigest(),
                    units_by_path,
                    str(out),
                ): (unit, arch)
                for unit, arch in tasks
            }
            for done, future in enumerate(concurrent.futures.as_completed(futures)):
                unit, arch = futures[future]
                if progress is not None:
                    progress(done + 1, len(futures), f"{unit.relpath} [{arch}]")
                report.results.append(future.result())
    report.results.sort(key=lambda r: (r.path, r.arch))
    return report
