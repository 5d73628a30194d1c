#!/usr/bin/env python3
"""Score a CUDA->HIP engine against HIPIFY's own lit tests (tests/unit_tests).

HIPIFY's lit tests are CUDA files annotated with FileCheck directives: a
``// CHECK: <line>`` comment states a line that hipify-clang must produce. They make
a public oracle for any CUDA->HIP translator. This script:

1. extracts the test files from a HIPIFY checkout or bare mirror (``git archive``)
   into a temporary directory; nothing is written into this repository;
2. translates each test (a file with a ``// RUN:`` line) with the chosen engine(s):
   portcheck's built-in engine through the library, or hipify-perl through
   ``portcheck.translate.hipify.run_hipify``;
3. checks the expectations the way FileCheck does, in spirit:

   * the translated text gets the same treatment as HIPIFY's ``run_test.sh``
     (everything after ``//`` on a line is cut), and portcheck's own
     ``/* portcheck: ... */`` marker comments are removed first;
   * runs of blanks are collapsed in both the output and the pattern, and a pattern
     matches when it occurs in a line (``{{regex}}`` pieces are honoured);
   * ``CHECK:`` patterns must match in order, each after the previous match. A miss
     is counted and the cursor stays put, so one miss does not sink the rest of the
     file (FileCheck would stop at the first miss). So that an early pattern cannot
     match a later block's line, a block of N directives must match before the next
     block that starts at least N code lines further on (see ``block_fences``);
   * ``CHECK-NEXT:`` (and ``-SAME``/``-DAG``) are scored like ``CHECK:``: the
     "on the very next line" condition is not enforced;
   * ``CHECK-NOT:`` patterns are scored separately: they pass when the pattern does
     not occur between the surrounding positive matches;

4. splits out expectations that depend on hipify-clang options named on the RUN
   line, because no option is passed to the engine under test:

   * ``--roc``, ``--miopen`` and ``--use-hip-data-types`` change library mappings
     (rocBLAS instead of hipBLAS, ...): the whole file goes to the "option" table;
   * ``--hip-kernel-execution-syntax`` turns ``k<<<...>>>(...)`` into
     ``hipLaunchKernelGGL(...)``: only the expectations containing
     ``hipLaunchKernelGGL`` go to the "option" table;
   * ``--amap``, ``--experimental``, ``--skip-excluded-preprocessor-conditional-blocks``
     and ``--default-preprocessor`` are treated as neutral (recorded in the JSON);

5. prints, per test family, the files, the expectations, how many the engine met,
   and the same for the expectations that need a change (those an engine that
   changes nothing, the "no-op" baseline, fails); then the most frequent failing
   expectations and the HIP names expected by failing lines that the engine never
   produced anywhere in the file.

Usage::

    python benchmarks/hipify_oracle.py --hipify /path/to/HIPIFY[.git] \
        [--engine builtin|hipify-perl ...] [--json out.json]

``--engine`` may be repeated to print the engines side by side. Version-specific
tests (``*_12000.cu``, ``*_before_11000.cu``, ...) are all included: there is no
CUDA installation to choose between them.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

TESTS_DIR = "tests/unit_tests"
TEST_SUFFIXES = {".cu", ".cuh", ".cpp", ".cc", ".cxx", ".h", ".hpp"}
ENGINE_CHOICES = ("builtin", "hipify-perl")
MAPPING_OPTIONS = {"roc", "miopen", "use-hip-data-types"}  # change whole-file mappings
LAUNCH_OPTION = "hip-kernel-execution-syntax"
LAUNCH_CALL = "hipLaunchKernelGGL"

DIRECTIVE = re.compile(r"\bCHECK(-NEXT|-NOT|-SAME|-DAG|-EMPTY|-LABEL)?:(.*)$")
RUN_LINE = re.compile(r"//\s*RUN:(.*)$")
MARKER_COMMENT = re.compile(r"\s*/\*\s*portcheck:.*?\*/")
LINE_COMMENT = re.compile(r"//.+")  # HIPIFY's run_test.sh: sed -Ee 's|//.+|// |g'
BLANKS = re.compile(r"[ \t]+")
REGEX_PIECE = re.compile(r"\{\{(.*?)\}\}")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

LIBRARY_FAMILIES = {  # file-name prefix (lower case) -> family, longest first
    "cublaslt": "cuBLASLt",
    "cublas": "cuBLAS",
    "cudnn": "cuDNN",
    "curand": "cuRAND",
    "cusolver": "cuSOLVER",
    "cusparse": "cuSPARSE",
    "cufft": "cuFFT",
    "cub_": "CUB",
}
DIRECTORY_FAMILIES = {
    "device": "device functions",
    "casts": "device functions",
    "headers": "headers",
    "samples": "samples",
    "kernel_launch": "kernel launch",
    "options": "kernel launch",
    "namespace": "kernel launch",
    "pp": "preprocessor",
    "graph": "runtime",
    "compilation_database": "other",
}


# --------------------------------------------------------------------------- tests


@dataclass
class Directive:
    kind: str  # CHECK, CHECK-NEXT, CHECK-NOT, ...
    pattern: str  # as written, stripped
    line: int  # 1-based line of the directive in the test file
    source: str = ""  # the CUDA line it most likely describes (heuristic)


@dataclass
class TestFile:
    relpath: str  # relative to tests/unit_tests
    path: Path
    family: str
    options: list[str]
    directives: list[Directive] = field(default_factory=list)

    @property
    def mapping_options(self) -> list[str]:
        return sorted(MAPPING_OPTIONS.intersection(self.options))


def family_of(relpath: str) -> str:
    parts = relpath.split("/")
    name = parts[-1].lower()
    if parts[0] == "synthetic" and len(parts) == 2:
        if name.startswith("runtime_"):
            return "runtime"
        if name.startswith("driver_"):
            return "driver"
        return "other"
    if parts[0] in ("libraries", "synthetic"):
        if parts[0] == "libraries" and len(parts) > 2:
            library = parts[1]
            return {"CAFFE2": "cuDNN (Caffe2)", "cuComplex": "cuComplex"}.get(
                library, _library_family(library.lower()) or library
            )
        return _library_family(name) or "other libraries"
    return DIRECTORY_FAMILIES.get(parts[0], "other")


def _library_family(name: str) -> str | None:
    for prefix, family in LIBRARY_FAMILIES.items():
        if name.startswith(prefix):
            return family
    return None


def run_options(text: str) -> list[str] | None:
    """hipify-clang options of the RUN line (without dashes), or None without a RUN line."""
    for line in text.splitlines():
        match = RUN_LINE.search(line)
        if match:
            body = match.group(1)
            body = body.split("%clang_args", 1)[0]
            words = body.replace('"', " ").split()
            return [w.lstrip("-") for w in words if w.startswith("-") and len(w) > 1]
    return None


def _code_line(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith(("//", "/*", "*"))


def _directive_match(line: str) -> re.Match[str] | None:
    match = DIRECTIVE.search(line)
    return match if match and "//" in line[: match.start()] else None


def parse_directives(text: str) -> list[Directive]:
    """The CHECK directives of a test, each paired with the CUDA line it probably
    describes: HIPIFY's tests put a block of N directives before N code lines."""
    lines = text.splitlines()
    found: list[Directive] = []
    block: list[Directive] = []
    pending_code: list[str] = []
    for number, line in enumerate(lines, start=1):
        match = _directive_match(line)
        if match:
            kind = "CHECK" + (match.group(1) or "")
            directive = Directive(kind, match.group(2).strip(), number)
            found.append(directive)
            if kind != "CHECK-NOT":
                if pending_code:  # a new block starts
                    block, pending_code = [], []
                block.append(directive)
            continue
        if _code_line(line) and block:
            pending_code.append(line.strip())
            index = len(pending_code) - 1
            if index < len(block):
                block[index].source = line.strip()
            else:
                block, pending_code = [], []
    return found


def extract_tests(hipify: Path, revision: str, scratch: Path) -> tuple[list[TestFile], str]:
    """Copy tests/unit_tests out of a HIPIFY work tree or bare mirror into `scratch`."""
    commit = "unknown"
    git_dir = hipify if (hipify / "HEAD").is_file() else hipify / ".git"
    if git_dir.exists():
        commit = _git(git_dir, "rev-parse", f"{revision}^{{commit}}").decode().strip()
        archive = _git(git_dir, "archive", "--format=tar", commit, TESTS_DIR)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(scratch, filter="data")
        root = scratch / TESTS_DIR
    else:
        root = hipify / TESTS_DIR
    if not root.is_dir():
        raise SystemExit(f"no {TESTS_DIR} under {hipify}")
    tests = []
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix.lower() not in TEST_SUFFIXES:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        options = run_options(text)
        if options is None:
            continue  # helper headers included by tests (lit excludes them too)
        relpath = path.relative_to(root).as_posix()
        test = TestFile(relpath, path, family_of(relpath), options, parse_directives(text))
        tests.append(test)
    return tests, commit


def _git(git_dir: Path, *args: str) -> bytes:
    done = subprocess.run(["git", f"--git-dir={git_dir}", *args], capture_output=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.decode().strip()}")
    return done.stdout


# ------------------------------------------------------------------------- engines


class BuiltinEngine:
    name = "builtin"

    def __init__(self, rocm: str | None = None) -> None:
        from portcheck.discover import classify_name
        from portcheck.filescan import FileScanner
        from portcheck.ruleset import default_rules
        from portcheck.translate.spelling import Spelling

        self._classify = classify_name
        rules = default_rules()
        self._scanner = FileScanner(rules.at_rocm(rocm) if rocm else rules)
        self._spelling = Spelling.for_release(rules.rocm_release(rocm) if rocm else None)

    def translate(self, path: Path) -> bytes:
        from portcheck.model import Language
        from portcheck.translate import translate_source

        language, _ = self._classify(path.name)
        if language is None or not language.is_source:
            language = Language.CUDA
        raw = path.read_bytes()
        return translate_source(
            self._scanner, path.name, language, raw, spelling=self._spelling
        ).text


class HipifyPerlEngine:
    name = "hipify-perl"

    def __init__(self) -> None:
        from portcheck.translate.hipify import find_tool

        if find_tool("hipify-perl") is None:
            raise SystemExit("hipify-perl is not on PATH or in $ROCM_PATH/bin")

    def translate(self, path: Path) -> bytes:
        from portcheck.translate.hipify import run_hipify

        return run_hipify("hipify-perl", path)


class NoOpEngine:
    """The baseline: the test file unchanged."""

    name = "no-op"

    def translate(self, path: Path) -> bytes:
        return path.read_bytes()


def make_engine(name: str, rocm: str | None = None) -> BuiltinEngine | HipifyPerlEngine:
    return BuiltinEngine(rocm) if name == "builtin" else HipifyPerlEngine()


# ------------------------------------------------------------------------ matching


def normalise(text: str) -> str:
    return BLANKS.sub(" ", text).strip()


def output_lines(text: bytes) -> list[str]:
    """The translated text as FileCheck sees it in HIPIFY's run_test.sh."""
    lines = []
    for line in text.decode("utf-8", errors="replace").splitlines():
        line = MARKER_COMMENT.sub("", line)
        line = LINE_COMMENT.sub("// ", line)
        lines.append(BLANKS.sub(" ", line))
    return lines


def block_fences(text: bytes, lines: list[str], directives: list[Directive]) -> list[int] | None:
    """Per directive, the output line its match must come before.

    HIPIFY's tests put a block of N directives before the N code lines they describe,
    so a block's matches must come before the next block (with a positive directive)
    that starts after at least N code lines (header tests, which list every CHECK at
    the top, get no fence). The
    engines keep comments, so the directive comments are found again in the output;
    when their number differs, there are no fences (plain FileCheck order)."""
    raw = text.decode("utf-8", errors="replace").splitlines()
    comments = [n for n, line in enumerate(raw) if _directive_match(line)]
    if len(comments) != len(directives):
        return None
    code_before = [0]  # code_before[n]: code lines among lines[:n]
    for line in lines:
        code_before.append(code_before[-1] + _code_line(line))
    blocks: list[list[int]] = []  # directive indexes per block
    for k, number in enumerate(comments):
        if k == 0 or code_before[number] > code_before[comments[k - 1]]:
            blocks.append([])
        blocks[-1].append(k)
    fences = [len(lines)] * len(directives)
    for b, block in enumerate(blocks):
        start = comments[block[0]]
        needed = max(1, sum(directives[k].kind != "CHECK-NOT" for k in block))
        for later in blocks[b + 1 :]:
            if all(directives[k].kind == "CHECK-NOT" for k in later):
                continue  # CHECK-NOT lines between includes are no block of their own
            later_start = comments[later[0]]
            if code_before[later_start] - code_before[start] >= needed:
                for k in block:
                    fences[k] = later_start
                break
    return fences


def compile_pattern(pattern: str) -> re.Pattern[str]:
    pieces = []
    for index, piece in enumerate(REGEX_PIECE.split(normalise(pattern))):
        pieces.append(f"(?:{piece})" if index % 2 else re.escape(piece))
    return re.compile("".join(pieces))


@dataclass
class CheckResult:
    file: str
    family: str
    line: int
    kind: str
    pattern: str
    source: str
    bucket: str  # "default" or "option:<name>"
    matched: bool
    noop_matched: bool


def check_file(test: TestFile, text: bytes, noop_text: bytes) -> list[CheckResult]:
    matched = match_directives(test.directives, text)
    baseline = match_directives(test.directives, noop_text)
    results = []
    for directive, ok, base in zip(test.directives, matched, baseline, strict=True):
        if directive.kind in ("CHECK-EMPTY", "CHECK-LABEL"):
            continue
        bucket = "default"
        if test.mapping_options:
            bucket = "option:" + "+".join(test.mapping_options)
        elif LAUNCH_OPTION in test.options and LAUNCH_CALL in directive.pattern:
            bucket = "option:" + LAUNCH_OPTION
        results.append(
            CheckResult(
                test.relpath,
                test.family,
                directive.line,
                directive.kind,
                normalise(directive.pattern),
                directive.source,
                bucket,
                ok,
                base,
            )
        )
    return results


def match_directives(directives: list[Directive], text: bytes) -> list[bool]:
    """One verdict per directive. Positive ones match in order from a cursor (line,
    column) that advances on each match, and before their block's fence; CHECK-NOT
    ones pass when absent between the surrounding positive matches."""
    lines = output_lines(text)
    fences = block_fences(text, lines, directives) or [len(lines)] * len(directives)
    verdicts = [False] * len(directives)
    cursor = (0, 0)
    pending_not: list[tuple[int, re.Pattern[str]]] = []
    for index, directive in enumerate(directives):
        pattern = compile_pattern(directive.pattern)
        if directive.kind == "CHECK-NOT":
            pending_not.append((index, pattern))
            continue
        if directive.kind in ("CHECK-EMPTY", "CHECK-LABEL"):
            continue
        found = _search(pattern, lines, cursor, fences[index])
        if found is None:
            continue
        verdicts[index] = True
        for not_index, not_pattern in pending_not:
            verdicts[not_index] = not _occurs(not_pattern, lines, cursor, found[0])
        pending_not = []
        cursor = (found[0][0], found[1])
    for not_index, not_pattern in pending_not:
        verdicts[not_index] = not _occurs(not_pattern, lines, cursor, (len(lines), 0))
    return verdicts


def _search(
    pattern: re.Pattern[str], lines: list[str], cursor: tuple[int, int], fence: int
) -> tuple[tuple[int, int], int] | None:
    """((line, start column), end column) of the first match at or after `cursor`
    and before line `fence`."""
    line, column = cursor
    for number in range(line, min(fence, len(lines))):
        match = pattern.search(lines[number], column if number == line else 0)
        if match:
            return (number, match.start()), match.end()
    return None


def _occurs(
    pattern: re.Pattern[str], lines: list[str], start: tuple[int, int], end: tuple[int, int]
) -> bool:
    for number in range(start[0], min(end[0] + 1, len(lines))):
        text = lines[number]
        low = start[1] if number == start[0] else 0
        high = end[1] if number == end[0] else len(text)
        if pattern.search(text[low:high]):
            return True
    return False


# ------------------------------------------------------------------------- running


@dataclass
class EngineRun:
    engine: str
    checks: list[CheckResult] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    missing_names: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0


def run_engine(
    engine_name: str, tests: list[TestFile], jobs: int, rocm: str | None = None
) -> EngineRun:
    from portcheck.translate.hipify import EngineError

    engine = make_engine(engine_name, rocm)
    noop = NoOpEngine()
    run = EngineRun(engine_name)
    started = time.monotonic()

    def translate(test: TestFile) -> bytes | str:
        try:
            return engine.translate(test.path)
        except EngineError as exc:
            return str(exc)

    if engine_name == "builtin":
        outputs = [translate(t) for t in tests]  # in-process; the parse is CPU-bound
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            outputs = list(pool.map(translate, tests))
    for test, output in zip(tests, outputs, strict=True):
        original = noop.translate(test.path)
        if isinstance(output, str):
            run.errors[test.relpath] = output
            output = original  # an engine failure scores like an unchanged file
        results = check_file(test, output, original)
        run.checks.extend(results)
        produced = set(IDENTIFIER.findall("\n".join(output_lines(output))))  # code only
        for result in results:
            if result.bucket == "default" and not result.matched and result.kind != "CHECK-NOT":
                for cuda, hip in renamed_names(result.source, result.pattern):
                    if hip not in produced:
                        run.missing_names[f"{cuda} -> {hip}"] += 1
    run.seconds = time.monotonic() - started
    return run


def renamed_names(source: str, expected: str) -> list[tuple[str, str]]:
    """Identifier pairs that differ between a CUDA line and its expected HIP line,
    aligned by position among the identifiers of each line."""
    import difflib

    if expected.startswith("#") or source.startswith("#"):
        return []  # directives: header names are no API names, and header tests list
        # every CHECK at the top, where the pairing with a CUDA line goes astray
    before, after = IDENTIFIER.findall(source), IDENTIFIER.findall(expected)
    if not before:
        return []
    pairs = []
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "replace" and a1 - a0 == b1 - b0:
            pairs.extend(zip(before[a0:a1], after[b0:b1], strict=True))
        elif tag in ("replace", "insert"):
            cuda = " ".join(before[a0:a1]) or "(inserted)"
            pairs.extend((cuda, hip) for hip in after[b0:b1])
    return pairs


# ------------------------------------------------------------------------ reporting


def _pct(part: int, whole: int) -> str:
    return f"{100.0 * part / whole:5.1f}" if whole else "    -"


def summarise(runs: list[EngineRun], bucket_filter: str) -> list[dict[str, object]]:
    """Rows per family (+ total) for the checks in one bucket group."""

    def keep(check: CheckResult) -> bool:
        in_default = check.bucket == "default"
        return in_default if bucket_filter == "default" else not in_default

    first = [c for c in runs[0].checks if keep(c)]
    families = sorted({c.family for c in first})
    rows = []
    for family in [*families, "TOTAL"]:
        row: dict[str, object] = {"family": family}
        selected = [c for c in first if family in ("TOTAL", c.family)]
        positive = [c for c in selected if c.kind != "CHECK-NOT"]
        row["files"] = len({c.file for c in selected})
        row["checks"] = len(positive)
        row["noop_matched"] = sum(c.noop_matched for c in positive)
        row["need_change"] = sum(not c.noop_matched for c in positive)
        row["check_not"] = len(selected) - len(positive)
        for run in runs:
            mine = [c for c in run.checks if keep(c) and family in ("TOTAL", c.family)]
            pos = [c for c in mine if c.kind != "CHECK-NOT"]
            row[run.engine] = {
                "matched": sum(c.matched for c in pos),
                "changed_matched": sum(c.matched and not c.noop_matched for c in pos),
                "check_not_passed": sum(c.matched for c in mine if c.kind == "CHECK-NOT"),
            }
        rows.append(row)
    return rows


def format_table(rows: list[dict[str, object]], engines: list[str], markdown: bool) -> str:
    header = ["family", "files", "CHECKs", "no-op %", "need change"]
    for engine in engines:
        header += [f"{engine} matched", f"{engine} %", f"{engine} % of changes"]
    header += ["CHECK-NOT " + "/".join(engines)]
    table = [header]
    for row in rows:
        checks, need = int(row["checks"]), int(row["need_change"])  # type: ignore[call-overload]
        cells = [
            str(row["family"]),
            str(row["files"]),
            str(checks),
            _pct(int(row["noop_matched"]), checks).strip(),  # type: ignore[call-overload]
            str(need),
        ]
        nots = []
        for engine in engines:
            numbers = row[engine]
            assert isinstance(numbers, dict)
            cells += [
                str(numbers["matched"]),
                _pct(numbers["matched"], checks).strip(),
                _pct(numbers["changed_matched"], need).strip(),
            ]
            nots.append(str(numbers["check_not_passed"]))
        cells.append(f"{'/'.join(nots)} of {row['check_not']}" if row["check_not"] else "-")
        table.append(cells)
    if markdown:
        lines = ["| " + " | ".join(header) + " |"]
        lines.append("|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|")
        for cells in table[1:]:
            bold = cells[0] == "TOTAL"
            lines.append("| " + " | ".join(f"**{c}**" if bold else c for c in cells) + " |")
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    out = []
    for number, cells in enumerate(table):
        out.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(cells, widths, strict=True))
            )
        )
        if number == 0:
            out.append("-" * len(out[0]))
    return "\n".join(out)


def top_failures(run: EngineRun, limit: int) -> list[tuple[str, int]]:
    failed = Counter(
        c.pattern
        for c in run.checks
        if c.bucket == "default" and c.kind != "CHECK-NOT" and not c.matched
    )
    return failed.most_common(limit)


def option_buckets(run: EngineRun) -> dict[str, dict[str, int]]:
    buckets: dict[str, dict[str, int]] = {}
    for check in run.checks:
        if check.bucket == "default" or check.kind == "CHECK-NOT":
            continue
        entry = buckets.setdefault(check.bucket, {"files": 0, "checks": 0, "matched": 0})
        entry["checks"] += 1
        entry["matched"] += check.matched
    for bucket, entry in buckets.items():
        entry["files"] = len({c.file for c in run.checks if c.bucket == bucket})
    return dict(sorted(buckets.items()))


def print_report(
    runs: list[EngineRun], tests: list[TestFile], commit: str, limit: int, markdown: bool
) -> None:
    engines = [r.engine for r in runs]
    print(f"HIPIFY {commit}: {len(tests)} test files; engines: {', '.join(engines)}")
    for run in runs:
        print(f"  {run.engine}: {run.seconds:.1f} s, {len(run.errors)} engine errors")
        for path, error in sorted(run.errors.items()):
            print(f"    {path}: {error}")
    print("\nExpectations that need no hipify-clang option:\n")
    print(format_table(summarise(runs, "default"), engines, markdown))
    print("\nExpectations that depend on a RUN-line option (not passed to the engines):\n")
    print(format_table(summarise(runs, "option"), engines, markdown))
    for run in runs:
        print(f"\n{run.engine}: options bucket by option")
        for bucket, entry in option_buckets(run).items():
            share = _pct(entry["matched"], entry["checks"]).strip()
            print(
                f"  {bucket:<45} files {entry['files']:>3}  "
                f"checks {entry['checks']:>5}  matched {entry['matched']:>5} ({share} %)"
            )
    for run in runs:
        print(f"\n{run.engine}: the {limit} most frequent failing expectations (default bucket)")
        for pattern, count in top_failures(run, limit):
            print(f"  {count:>4}  {pattern}")
        print(f"\n{run.engine}: the {limit} expected HIP names most often never produced")
        for pair, count in run.missing_names.most_common(limit):
            print(f"  {count:>4}  {pair}")


# Expectations that encode a HIPIFY convention portcheck does not follow on purpose:
# - a library header on its flat path (`hipblas.h`): ROCm 5.2 moved it to `hipblas/` and
#   ROCm 6.0 removed the old path, so portcheck writes `hipblas/hipblas.h`;
# - hipDNN, a retired library: portcheck maps cuDNN to MIOpen (the --miopen tests);
# - a CUDA name inside a string literal: portcheck never edits strings or comments.
FLAT_LIBRARY_HEADER = re.compile(
    r'#include\s*[<"](?:hipblas|hipsparse|hiprand|hipfft|hipsolver|hipblaslt|rccl)\w*\.h[>"]'
)
HIPDNN = re.compile(r"hipdnn|HIPDNN|hipDNN")
STRING_LITERAL = re.compile(r'"(?:\\.|[^"\\])*"')


def deliberate_difference(check: CheckResult) -> str | None:
    """The convention a directive encodes that portcheck rejects on purpose, or None."""
    if FLAT_LIBRARY_HEADER.search(check.pattern):
        return "flat library header"
    if HIPDNN.search(check.pattern):
        return "hipDNN"
    pattern, source = normalise(check.pattern), normalise(check.source)
    if pattern.startswith("#"):
        return None  # a quoted include is a header name, not a string
    unquoted = STRING_LITERAL.sub('""', pattern)
    if '"' in pattern and pattern != source and unquoted == STRING_LITERAL.sub('""', source):
        return "string literal"
    return None


def default_mode(test: TestFile) -> bool:
    """A test run the way hipify is run by default: no RUN-line option that changes the
    output (--roc, --miopen, --use-hip-data-types, --hip-kernel-execution-syntax)."""
    return not test.mapping_options and LAUNCH_OPTION not in test.options


def default_mode_summary(run: EngineRun, tests: list[TestFile]) -> dict[str, object]:
    """Directives matched and files passed in full, over the default-mode tests (every
    directive of such a file, CHECK-NOT included, must pass for the file to count)."""
    files = {t.relpath for t in tests if default_mode(t)}
    by_file: dict[str, list[CheckResult]] = {}
    for check in run.checks:
        if check.file in files:
            by_file.setdefault(check.file, []).append(check)
    positive = [c for checks in by_file.values() for c in checks if c.kind != "CHECK-NOT"]
    kept = [c for c in positive if deliberate_difference(c) is None]
    kept_files = {
        f: [c for c in checks if deliberate_difference(c) is None] for f, checks in by_file.items()
    }
    return {
        "without_deliberate_differences": {
            "directives": len(kept),
            "matched": sum(c.matched for c in kept),
            "files_fully_passed": sum(all(c.matched for c in v) for v in kept_files.values()),
            "excluded": dict(
                Counter(
                    reason for c in positive if (reason := deliberate_difference(c)) is not None
                )
            ),
        },
        "files": len(files),
        "files_with_directives": len(by_file),
        "directives": len(positive),
        "matched": sum(c.matched for c in positive),
        "files_fully_passed": sum(all(c.matched for c in checks) for checks in by_file.values()),
        "failing_files": sorted(
            (f, sum(not c.matched for c in checks))
            for f, checks in by_file.items()
            if not all(c.matched for c in checks)
        ),
    }


def print_default_mode(runs: list[EngineRun], tests: list[TestFile], markdown: bool) -> None:
    print("\nDefault-mode tests (no output-changing RUN-line option):\n")
    if markdown:
        print("| engine | files | directives matched | % | files fully passed |")
        print("|---|---:|---:|---:|---:|")
    for run in runs:
        summary = default_mode_summary(run, tests)
        matched, total = int(summary["matched"]), int(summary["directives"])  # type: ignore[call-overload]
        cells = [
            run.engine,
            str(summary["files_with_directives"]),
            f"{matched} / {total}",
            _pct(matched, total).strip(),
            str(summary["files_fully_passed"]),
        ]
        print("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells))
    print("\nThe same, without the directives that encode a convention portcheck rejects:\n")
    for run in runs:
        other = default_mode_summary(run, tests)["without_deliberate_differences"]
        assert isinstance(other, dict)
        matched, total = int(other["matched"]), int(other["directives"])
        cells = [
            run.engine,
            f"{matched} / {total}",
            _pct(matched, total).strip(),
            str(other["files_fully_passed"]),
            "excluded: " + ", ".join(f"{k} {v}" for k, v in sorted(other["excluded"].items())),
        ]
        print("| " + " | ".join(cells) + " |" if markdown else "  ".join(cells))
    for run in runs:
        failing = default_mode_summary(run, tests)["failing_files"]
        print(f"\n{run.engine}: default-mode files not fully passed (file, misses)")
        for name, misses in failing:  # type: ignore[union-attr]
            print(f"  {misses:>4}  {name}")


def write_json(
    path: Path, runs: list[EngineRun], tests: list[TestFile], commit: str, limit: int
) -> None:
    engines = [r.engine for r in runs]
    document = {
        "schema": "portcheck.hipify_oracle/1",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "hipify_commit": commit,
        "portcheck_commit": _portcheck_commit(),
        "engines": engines,
        "tests": [{"file": t.relpath, "family": t.family, "options": t.options} for t in tests],
        "default": summarise(runs, "default"),
        "option": summarise(runs, "option"),
        "default_mode": {run.engine: default_mode_summary(run, tests) for run in runs},
        "runs": {
            run.engine: {
                "seconds": round(run.seconds, 2),
                "errors": run.errors,
                "option_buckets": option_buckets(run),
                "top_failures": [{"pattern": p, "count": n} for p, n in top_failures(run, limit)],
                "missing_names": [
                    {"rename": p, "count": n} for p, n in run.missing_names.most_common(limit)
                ],
                "checks": [asdict(c) for c in run.checks],
            }
            for run in runs
        },
    }
    path.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")


def _portcheck_commit() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, check=False
    )
    commit = done.stdout.decode().strip() or "unknown"
    dirty = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--", "rules", "portcheck"],
        capture_output=True,
        check=False,
    ).stdout.strip()
    return commit + (" (rules/ or portcheck/ modified)" if dirty else "")


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hipify", type=Path, required=True, help="HIPIFY work tree or git dir")
    parser.add_argument("--rev", default="HEAD", help="HIPIFY revision to read (git only)")
    parser.add_argument(
        "--engine",
        action="append",
        choices=ENGINE_CHOICES,
        help="engine to score; repeat for a side-by-side table (default: builtin)",
    )
    parser.add_argument("--json", type=Path, help="write the numbers and every check here")
    parser.add_argument("--top", type=int, default=20, help="how many failures to list")
    parser.add_argument("--jobs", type=int, default=2, help="parallel hipify-perl processes")
    parser.add_argument("--markdown", action="store_true", help="print tables as Markdown")
    parser.add_argument("--only", help="only test files whose path contains this text")
    parser.add_argument(
        "--rocm",
        help="the ROCm release the built-in engine writes for (HIPIFY 014177bc targets 6.x)",
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    engines = args.engine or ["builtin"]

    with tempfile.TemporaryDirectory(prefix="hipify-oracle-") as scratch:
        tests, commit = extract_tests(args.hipify.resolve(), args.rev, Path(scratch))
        if args.only:
            tests = [t for t in tests if args.only in t.relpath]
        runs = [run_engine(engine, tests, args.jobs, args.rocm) for engine in engines]
    print_report(runs, tests, commit, args.top, args.markdown)
    print_default_mode(runs, tests, args.markdown)
    if args.json:
        write_json(args.json, runs, tests, commit, args.top)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
