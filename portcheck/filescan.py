"""The per-file pipeline: read -> parse -> extract -> classify -> check, giving a FileScan.

Owns: what one file contributes to a report (`FileScan`) and the one driver that makes it
(`FileScanner.scan`). Each stage is one call here:
- read: decode the bytes (UTF-8, else latin-1; the encoding is recorded);
- parse: tree-sitter always; libclang as well where it pays (the front end is chosen per
  file, see `_wants_clang`) — its resolved functions, device code and constants refine
  tree-sitter's, and the file records which front end decided;
- extract: `portcheck.extract.Extractor` finds the candidate CUDA names, includes,
  launches, asm, kernels and functions in the tree;
- classify: each candidate becomes a `Use` with its rule, family and device-ness, unless
  scoping says it is the project's own name (a local `j0`, a declaration libclang resolved);
- check: the registered hazards (`portcheck.checks`) run over the facts; findings that
  need the whole project (constants defined elsewhere) wait as `pending`.
Python files and manifests go to `portcheck.python.code`, build files to the checks only.
The scanner is built once per scan and used in every worker process.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from portcheck.checks import Context, FunctionInfo, merged_ranges, registered_checks, run_checks
from portcheck.checks.apis import device_polls
from portcheck.checks.warp import (
    DECLARED_TYPE,
    NOT_CALLEES,
    TEMPLATE_TYPE,
    flattens_block,
    logical_32_code,
    own_groups,
    reads_hardware_width,
    split_divisors,
    warp_level_code,
)
from portcheck.constexpr_if import constexpr_branches
from portcheck.discover import looks_like_cuda
from portcheck.extract import (
    C_LIBRARY_NAMES,
    CUDA_SHAPE,
    MACRO_DEFINITION,
    Extraction,
    Extractor,
    function_extent,
    guess_family,
)
from portcheck.model import (
    CellStart,
    Dependency,
    Extension,
    Finding,
    Kernel,
    Language,
    PyFinding,
    PyUse,
    Use,
)
from portcheck.parse import count_lines, decode_source, parse_cuda
from portcheck.parse.text import LineIndex
from portcheck.parse.treesitter import structure_captures
from portcheck.preproc import (
    EMPTY_FACTS,
    PreprocFacts,
    amd_alternative_spans,
    blanked,
    device_pass_spans,
    evaluate,
    mask_comments_and_strings,
    one_arm_spans,
    preprocessor_facts,
)
from portcheck.project import DEVICE_SPECIFIER_NAME, Pending
from portcheck.ruleset import RuleSet

if TYPE_CHECKING:
    from tree_sitter import Node

    from portcheck.parse.clang import ClangFacts


@dataclass(slots=True)
class FileScan:
    """What one file contributes to a report."""

    path: str
    language: Language
    lines: int
    encoding: str
    uses: list[Use] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    definitions: set[str] = field(default_factory=set)  # CUDA-looking names it defines itself
    # (name, byte offset) where it defines a name the rule set knows as CUDA's
    api_definitions: tuple[tuple[str, int], ...] = ()
    parse_errors: int = 0
    findings: list[Finding] = field(default_factory=list)
    functions: list[FunctionInfo] = field(default_factory=list)
    # Python files and manifests (portcheck.python)
    dependencies: list[Dependency] = field(default_factory=list)
    py_uses: list[PyUse] = field(default_factory=list)
    py_findings: list[PyFinding] = field(default_factory=list)
    extensions: list[Extension] = field(default_factory=list)
    py_kernels: list[Kernel] = field(default_factory=list)  # GPU kernels in Python (Triton)
    # Facts answered with the whole project (portcheck.project): conditional branches,
    # macros and constants, and findings that wait on them.
    preproc: PreprocFacts = EMPTY_FACTS
    pending: list[Pending] = field(default_factory=list)
    front_end: str = "tree-sitter"
    facts_only: bool = False  # no CUDA in it: not reported, its facts serve the others
    # Project files libclang read for it (relpath, sha256): a change to one is a cache miss.
    clang_inputs: tuple[tuple[str, str], ...] = ()
    # A notebook: where each code cell sits in the text that was scanned for it.
    cells: tuple[CellStart, ...] = ()
    # Names of constants read only as a split the warp checks found lane-blind here
    # (`threadIdx.x / C10_WARP_SIZE` in shared-memory arithmetic)
    lane_blind_names: set[str] = field(default_factory=set)
    # CUDA functions HIP lacks that the file defines for a plain scalar (Extraction.replaced)
    replaced_apis: set[str] = field(default_factory=set)
    # Device code in it waits on memory in a loop (a flag another GPU or the host sets):
    # see checks.apis.device_polls.
    polls: bool = False


def _meets(data: bytes, errors: Sequence[Node]) -> Callable[[int, int], bool]:
    """Whether one of the parse `errors` touches a span: overlaps it, or is separated from
    it by white space only (`template <typename T>` on the line before `#if
    defined(USE_ROCM)`). A bisection over the errors sorted by start, so that thousands of
    conditionals and errors in one file cost n log n, not n^2."""
    ordered = sorted((e.start_byte, e.end_byte) for e in errors)
    starts = [start for start, _ in ordered]
    reach = list(itertools.accumulate((end for _, end in ordered), max))

    def meets(start: int, end: int) -> bool:
        while start > 0 and data[start - 1] in WHITE_SPACE:
            start -= 1
        while end < len(data) and data[end] in WHITE_SPACE:
            end += 1
        i = bisect.bisect_right(starts, end)  # the errors that begin by the span's end
        return i > 0 and reach[i - 1] >= start

    return meets


WHITE_SPACE = frozenset(b" \t\r\n\f\v")


def _missing(root: Node) -> list[Node]:
    """The tokens the parser inserted to recover (MISSING nodes), found through the
    subtrees that hold an error only."""
    found: list[Node] = []
    pending = [root]
    while pending and len(found) < MAX_MISSING:
        node = pending.pop()
        if node.is_missing:
            found.append(node)
        elif node.has_error:
            pending.extend(node.children)
    return found


MAX_MISSING = 64


# A declaration's head that starts with names before its decl-specifiers or its type and
# declarator: `DEVICE_INLINE T f(`, `HOSTDEVICE inline Scalar2 f(`, `friend accelerator_inline
# GpuComplex operator+(`. Valid C++ has no such run of plain names, so they are macros.
SPECIFIER_HEAD = re.compile(
    rb"^[ \t]*(?:(?:template\s*<[^;{}()]*>|static|inline|friend|constexpr|extern|virtual"
    rb"|explicit|__host__|__device__|__forceinline__|__inline__)\s+)*"
    rb"((?:[A-Za-z_]\w*(?:\(\s*\))?\s+){1,3}?)"
    rb"(?=(?:inline|static|constexpr|void|bool|char|short|int|long|float|double|unsigned|signed"
    rb"|auto|explicit|virtual|friend|__host__|__device__|__global__|__forceinline__|__inline__)\b"
    rb"|(?!const\b|volatile\b)[A-Za-z_][\w:]*(?:<[^;{}()]*>)?[\s*&]+"
    rb"(?:[A-Za-z_][\w:]*|operator\S*?)\s*\()",
    re.M,
)
LAMBDA_SPECIFIER = re.compile(rb"\]\s*([A-Za-z_]\w*)\s*(?=\()")  # `[=] RAJA_DEVICE (int i)`
WORD = re.compile(rb"[A-Za-z_]\w*")
SPECIFIER_WORD = re.compile(rb"([A-Za-z_]\w*)(?:\(\s*\))?")
CPP_WORDS = frozenset(
    b"""alignas alignof and asm auto bool break case catch char char8_t char16_t char32_t
    class const constexpr consteval constinit const_cast continue co_await co_return co_yield
    decltype default delete do double dynamic_cast else enum explicit export extern false float
    for friend goto if inline int long mutable namespace new noexcept not nullptr operator or
    private protected public register reinterpret_cast requires return short signed sizeof
    static static_assert static_cast struct switch template this thread_local throw true try
    typedef typeid typename union unsigned using virtual void volatile wchar_t while concept
    defined __host__ __device__ __global__ __forceinline__ __inline__ __noinline__ __shared__
    __constant__ __managed__ __restrict__ __launch_bounds__ __attribute__ __declspec""".split()
)

# A function definition's name, parameters and opening brace, after its return type
FUNCTION_HEAD = re.compile(rb"[\w*&>]\s+(\w+)\s*\([^;{}()]*\)\s*(?:const\s*)?\{")


# A parameter's name in a function's head: the word before `,`, `)` or a default.
PARAMETER_NAME = re.compile(rb"([A-Za-z_]\w*)\s*(?:=[^,()]*)?\s*[,)]")


def mark_warp_level(data: bytes, functions: list[FunctionInfo], cuda_names: set[str]) -> None:
    """Mark the functions of a file (its text `data`) whose own bodies hold warp-level
    code, and the names each calls that are its parameters or the file's template types:
    for the project's answer to callers elsewhere that ask whether what they call depends
    on the lane count (checks.warp._lane_blind, ProjectFacts.lane_blind). Run only when
    a question needs the file."""
    if not functions:
        return
    masked = mask_comments_and_strings(data)
    defined = {fn.name for fn in functions}
    template_types = (
        {m.group(1).decode() for m in TEMPLATE_TYPE.finditer(data)}
        if b"template" in data
        else set()
    ) | {m.group(m.lastindex or 1).decode() for m in DECLARED_TYPE.finditer(data)}
    for fn in functions:
        fn.warp_level = warp_level_code(masked[fn.start : fn.end])
        fn.logical32 = fn.warp_level and logical_32_code(masked[fn.start : fn.end])
        fn.reads_width = reads_hardware_width(masked[fn.start : fn.end])
        if fn.is_kernel:
            fn.split_by = split_divisors(masked, fn.start, fn.end)
            fn.own_groups = own_groups(masked[fn.start : fn.end])
            fn.flat_block = flattens_block(masked[fn.start : fn.end])
        # Names called that are neither CUDA's, nor casts, nor this file's functions: a
        # parameter called as a functor, a template type's construction, or another file's.
        unknown = fn.calls - cuda_names - defined - NOT_CALLEES
        if fn.warp_level or not unknown:
            continue
        brace = masked.find(b"{", fn.start, fn.end)
        head = masked[fn.start : brace if brace >= 0 else fn.end]
        named = {m.decode() for m in PARAMETER_NAME.findall(head)} | template_types
        fn.opaque_calls = unknown & named


# The first letters of the CUDA-shaped names a plain header might declare (CUDA_SHAPE).
CUDA_SHAPED_START = re.compile(
    rb"\b(?:cu[A-Z_]|CU[a-z_]|cuda|nv[A-Z]|NV[A-Z]|npp|Npp|nccl|NCCL|__nv_)"
)


def _declared_names(data: bytes) -> set[str]:
    """The CUDA-shaped names a header that is not CUDA declares itself: the project's
    own, however NVIDIA-like they look (a header without CUDA in it defines none of
    NVIDIA's)."""
    names: set[str] = set()
    if CUDA_SHAPED_START.search(data) is None:
        return names
    # its types and aliases (`struct cuBool_config {`, `using cuMat = …`) and macros
    for match in [*DECLARED_TYPE.finditer(data), *MACRO_DEFINITION.finditer(data)]:
        word = match.group(match.lastindex or 1).decode("ascii", "replace")
        if CUDA_SHAPE.fullmatch(word):
            names.add(word)
    return names


class FileScanner:
    """Scans files with one rule set and one configuration. Build once, call `scan` per
    file.

    `ignore`: hazard slugs not to check. `front_end`: "auto" (libclang where it pays),
    "deep" (libclang on every source file) or "tree-sitter" (never). `root`: the scanned
    folder, where libclang finds project headers (without it libclang is not used)."""

    def __init__(
        self,
        rules: RuleSet,
        ignore: frozenset[str] = frozenset(),
        front_end: str = "auto",
        root: str | None = None,
    ) -> None:
        self.rules = rules
        self.ignore = ignore
        self.front_end = front_end
        self.root = root
        self.extractor = Extractor(rules)

    def prepare(self) -> None:
        """Build the lookup tables and compile the queries now (before worker processes
        fork, so they inherit them instead of each building its own), and import the
        CUDA checks (each worker importing them on its first file cost ~0.05 s apiece)."""
        self.extractor.prepare()
        registered_checks(Language.CUDA)

    def scan(self, path: str, language: Language, raw: bytes) -> FileScan:
        """One file's FileScan; `path` is relative to the scanned folder."""
        data, encoding = decode_source(raw)  # read
        result = FileScan(path, language, count_lines(data), encoding)
        if language.is_python:
            from portcheck.python.code import scan_python

            scan_python(result, data, self.ignore, self.scan)
        if not language.is_source:
            # Build files, and setup.py among the Python files (nvcc flags, CUDAExtension).
            if not language.is_python or PurePosixPath(path).name == "setup.py":
                index = LineIndex(data)
                ctx = Context(path, language, data, None, [], index.span, lambda offset: False)
                result.findings.extend(run_checks(ctx, self.ignore))
            return result
        if not data.strip():
            return result
        result.preproc = preprocessor_facts(data)
        if language is not Language.CUDA and not looks_like_cuda(data):
            result.facts_only = True  # a header read for its macros and constants only
            result.definitions = _declared_names(data)
            if self._constants_need_a_compiler(result.preproc):
                self._clang(path, data, result)  # `sizeof(unsigned) * 8`: clang computes it
            return result

        # parse
        tree = parse_cuda(data)
        root = tree.root_node
        index = LineIndex(data)
        captures = structure_captures(root)
        result.parse_errors = len(captures.get("error", ()))
        amd_defined: list[tuple[str, int]] = []  # CUDA names defined in blanked AMD code
        view = data  # what was parsed: the text, or a view of it with the same offsets
        if result.parse_errors:
            # Alternatives for AMD written into one declaration or expression: parse the
            # NVIDIA view (preproc.nvidia_view; offsets unchanged, the file's text stays
            # what the checks read), when an error touches those alternatives.
            spans = amd_alternative_spans(data, result.preproc)
            errors = captures.get("error", ())
            meets = _meets(data, errors)
            if any(meets(s, t) for s, t in spans):
                view_root = parse_cuda(blanked(data, spans)).root_node
                view_captures = structure_captures(view_root)
                view_errors = len(view_captures.get("error", ()))
                if view_errors < result.parse_errors:
                    root, captures, result.parse_errors = view_root, view_captures, view_errors
                    amd_defined = self._defined_in(data, spans)
                    view = blanked(data, spans)
        read_as_text: list[tuple[int, int]] = []  # code left out of the parsed view
        # Tokens the parser made up to recover (a `;` after `int pos(…)` when the body
        # follows an `#endif`, one header per configuration): no ERROR node, but the body
        # is an orphan block, not the function; a view is better with fewer of both.
        missing = _missing(root) if root.has_error else []
        for whole in (False, True):
            # Alternatives written into one statement for two configurations (an `if
            # constexpr (…) {` and an `if (…) {` under `#if __cpp_if_constexpr`): parse the
            # view of one branch of each such conditional; then, if errors remain, of every
            # conditional an error meets. Code in the other branches is still read as text;
            # only its syntax tree is the one branch's.
            if not (result.parse_errors or missing) or not result.preproc.branches:
                break
            errors = [*captures.get("error", ()), *missing]
            spans, set_aside = one_arm_spans(
                view,
                result.preproc,
                _meets(view, errors),
                whole_constructs=whole,
            )
            if spans:
                arm_view = blanked(view, spans)
                view_root = parse_cuda(arm_view).root_node
                view_captures = structure_captures(view_root)
                view_errors = len(view_captures.get("error", ()))
                view_missing = _missing(view_root) if view_root.has_error else []
                if view_errors + len(view_missing) < result.parse_errors + len(missing):
                    root, captures, result.parse_errors = view_root, view_captures, view_errors
                    view, missing = arm_view, view_missing
                    read_as_text += set_aside  # their definitions too (Extractor._text_use)
        hidden: list[tuple[int, str]] = []  # specifier macros left out of the parsed view
        if result.parse_errors or missing:
            # (`static GPUdi() int f(…)`: no ERROR, but a `;` invented after `GPUdi()`)
            occurrences = self._specifier_macros(
                view, [*captures.get("error", []), *missing], index
            )
            if occurrences:
                view_root = parse_cuda(blanked(view, [(s, e) for s, e, _ in occurrences])).root_node
                view_captures = structure_captures(view_root)
                view_errors = len(view_captures.get("error", ()))
                view_missing = _missing(view_root) if view_root.has_error else []
                if view_errors + len(view_missing) < result.parse_errors + len(missing):
                    root, captures, result.parse_errors = view_root, view_captures, view_errors
                    hidden = [(s, name) for s, _, name in occurrences]
        device_ranges = self.extractor.device_ranges(captures)
        possible_device = self.extractor.possible_device_ranges(captures, hidden)
        wants_clang = self._wants_clang(data, device_ranges, possible_device)
        deep = wants_clang and self.front_end == "deep"
        # code only a device pass compiles (`#ifdef __CUDA_ARCH__`) is device code, whatever
        # declares the function around it
        passes = device_pass_spans(data, result.preproc) if result.preproc.branches else []
        if passes:
            passes = _outside_host_functions(passes, captures, device_ranges, possible_device)
            device_ranges = merged_ranges([*device_ranges, *passes])

        def extract_and_check(clang: ClangFacts | None) -> Context:
            return self._extract_and_check(
                result, path, language, data, root, captures, index, amd_defined,
                device_ranges, possible_device, clang, sorted(read_as_text),
            )  # fmt: skip

        ctx = extract_and_check(self._clang(path, data, result) if deep else None)
        if wants_clang and not deep and (possible_device or _in_functor(result)):
            # Device code behind a project macro (`__attribute__((device))` in a header),
            # or a finding inside a functor's `operator()`: only libclang's semantic facts
            # and call graph tell which code is device code and which kernels reach it.
            # Where the device code is spelled out and no finding sits in a functor its
            # facts changed nothing measured (cuda-samples' nine such files: the same
            # findings and kernels, for 0.23 s of CPU), so it runs only here.
            clang = self._clang(path, data, result)
            if clang is not None:
                ctx = extract_and_check(clang)
        branches = constexpr_branches(ctx)
        if branches:
            result.preproc = result.preproc._replace(constexpr_branches=branches)
        return result

    def _extract_and_check(
        self,
        result: FileScan,
        path: str,
        language: Language,
        data: bytes,
        root: Any,
        captures: Any,
        index: LineIndex,
        amd_defined: list[tuple[str, int]],
        device_ranges: list[tuple[int, int]],
        possible_device: list[tuple[int, int, tuple[str, ...]]],
        clang: ClangFacts | None,
        as_text: list[tuple[int, int]],
    ) -> Context:
        """Extraction, classification and the checks, with libclang's facts when given.
        `as_text`: code the parsed view left out, whose names are read from the text."""
        own_references: set[int] = set()
        if clang is not None:
            device_ranges, possible_device = _merge_device_code(
                device_ranges, possible_device, clang.device_ranges, clang.functions
            )
            own_references = clang.own_references

        def in_device(offset: int) -> bool:
            i = bisect.bisect_right(device_ranges, (offset, 1 << 62)) - 1
            return i >= 0 and offset < device_ranges[i][1]

        def may_be_device(offset: int) -> bool:
            return in_device(offset) or any(s <= offset < e for s, e, _ in possible_device)

        # extract
        found = self.extractor.extract(
            data,
            root,
            captures,
            may_be_device,
            sites=bool(result.preproc.branches),
            as_text=as_text,
        )
        result.definitions = found.definitions
        result.api_definitions = tuple(found.api_definitions + amd_defined)
        result.replaced_apis = found.replaced
        result.kernels = [Kernel(name, path, index.span(s, e)) for name, s, e in found.kernels]
        result.functions = found.functions
        if clang is not None:
            result.functions = _merge_functions(result.functions, clang.functions)

        # classify
        result.uses = _classify(found, own_references, path, index, in_device, data)

        # check
        ctx = Context(
            path,
            language,
            data,
            root,
            result.uses,
            index.span,
            in_device,
            result.functions,
            device_ranges,
            possible_device_ranges=possible_device,
            preproc=result.preproc,
            lookup=self.rules.lookup,
        )
        result.findings = run_checks(ctx, self.ignore)
        result.pending = ctx.pending
        result.lane_blind_names = set(ctx.memo.get("blind-names", ()))
        result.polls = device_polls(ctx)
        return ctx

    # -- the front end chosen per file ------------------------------------------------

    def _specifier_macros(
        self, view: bytes, errors: list[Node], index: LineIndex
    ) -> list[tuple[int, int, str]]:
        """Where a declaration begins with names the grammar cannot place
        (`DEVICE_INLINE T shfl_xor(`, `HOSTDEVICE inline Scalar2 f(`, `[=] AMREX_GPU_DEVICE
        (int i)`): the project's specifier macros, defined in some other header. Returns
        every such occurrence of the names that sit on a line with a parse error, for a
        view that leaves them out (the project decides what they expand to)."""
        masked = mask_comments_and_strings(view)
        types = {m.group(m.lastindex or 1) for m in DECLARED_TYPE.finditer(masked)}
        found: list[tuple[int, int, bytes]] = []
        for match in SPECIFIER_HEAD.finditer(masked):
            base = match.start(1)
            for word in SPECIFIER_WORD.finditer(match.group(1)):  # `GPUdi()` with its parens
                found.append((base + word.start(), base + word.end(), word.group(1)))
        found += [(m.start(1), m.end(1), m.group(1)) for m in LAMBDA_SPECIFIER.finditer(masked)]
        found = [
            (s, e, w)
            for s, e, w in found
            if w not in CPP_WORDS
            and w not in types
            and self.rules.lookup(w.decode()) is None
            and not CUDA_SHAPE.fullmatch(w.decode())
        ]
        if not found:
            return []
        error_lines = {e.start_point[0] for e in errors}

        def line(offset: int) -> int:  # 0-based, as tree-sitter's rows (the view's offsets
            return bisect.bisect_right(index.starts, offset) - 1  # are the text's)

        def next_code_line(offset: int) -> int:
            """The line of the next code after the name's line (`__gpu_inline__` alone on
            its line, the declaration after a blanked `#if`: the error is there)."""
            at = masked.find(b"\n", offset)
            while 0 <= at < len(masked) and masked[at : at + 1].isspace():
                at += 1
            return line(at) if 0 <= at < len(masked) else -1

        implicated = {
            w
            for s, e, w in found
            if line(s) in error_lines
            or any(err.start_byte <= s < err.end_byte for err in errors)
            or (not masked[e : masked.find(b"\n", e)].strip() and next_code_line(e) in error_lines)
        }
        return [(s, e, w.decode()) for s, e, w in found if w in implicated]

    def _defined_in(self, data: bytes, spans: list[tuple[int, int]]) -> list[tuple[str, int]]:
        """Functions named like a CUDA API that the AMD branches blanked from the NVIDIA
        view define (`__float2bfloat16_rn(float f) {` under `#ifdef USE_ROCM`): the parse
        that would find them is the one set aside, so they are found in the text."""
        masked = mask_comments_and_strings(data)
        found = []
        for start, end in spans:
            for match in FUNCTION_HEAD.finditer(masked, start, end):
                name = match.group(1).decode()
                if self.rules.lookup(name) is not None:
                    found.append((name, match.start(1)))
        return found

    def _wants_clang(
        self,
        data: bytes,
        device_ranges: list[tuple[int, int]],
        possible_device: list[tuple[int, int, tuple[str, ...]]],
    ) -> bool:
        """libclang where it pays (in the default mode): functors handed to template kernels
        (the call graph), and header constants only a compiler can compute (see
        _constants_need_a_compiler). Measured, it did not pay for files whose device code
        the grammar parsed with errors (cuda-samples, ggml, DeepSpeed, bitsandbytes, AMReX:
        the same findings with and without it, for 0.9 s more CPU on cuda-samples), nor for
        device code behind a project macro (the lexical project facts see those): `--deep`
        runs it there too."""
        if self.front_end == "tree-sitter" or self.root is None:
            return False
        if self.front_end == "deep":
            return True
        has_device_code = bool(device_ranges or possible_device)
        return has_device_code and b"operator()" in data and b"template" in data

    def _may_be_cuda_name(self, name: str) -> bool:
        """Could the extractor take `name` for a CUDA use (a name the rules know, or one
        shaped like CUDA's)? Only those are worth asking libclang what they refer to."""
        return self.rules.lookup(name) is not None or CUDA_SHAPE.fullmatch(name) is not None

    def _constants_need_a_compiler(self, facts: PreprocFacts) -> bool:
        if self.front_end == "tree-sitter" or self.root is None:
            return False
        # Only what the type system decides: `sizeof(unsigned) * 8`,
        # `std::numeric_limits<unsigned>::digits`. Other expressions the project evaluator
        # reads, or they depend on something no compiler here would know either.
        return any(
            ("sizeof" in c.expr or "::" in c.expr)
            and evaluate(c.expr, lambda name: None, in_if=False) is None
            for c in facts.constants
        )

    def _clang(self, path: str, data: bytes, result: FileScan) -> ClangFacts | None:
        """libclang's facts of this file (None when it cannot read it: tree-sitter's stand)."""
        from portcheck.parse import clang

        if not clang.available() or self.root is None:
            return None
        root = self.root
        facts = clang.analyze(
            os.path.join(root, path),
            data,
            clang.include_dirs_for(root, path),
            interesting=self._may_be_cuda_name,
        )
        if not facts.ok:
            return None
        result.front_end = "libclang"
        dependencies = []
        for header in facts.headers:
            relative = os.path.relpath(header, root)
            if relative.startswith(".."):
                continue
            try:
                with open(header, "rb") as handle:
                    dependencies.append((relative, hashlib.sha256(handle.read()).hexdigest()))
            except OSError:
                continue
        result.clang_inputs = tuple(sorted(dependencies))
        if facts.constants:  # values clang computed replace what the lexical reader saw
            computed = {c.offset: c for c in facts.constants}
            lexical = [
                c._replace(expr=computed.pop(c.offset).expr) if c.offset in computed else c
                for c in result.preproc.constants
            ]
            lexical += computed.values()
            result.preproc = result.preproc._replace(constants=tuple(lexical))
        return facts


def _in_functor(result: FileScan) -> bool:
    """Does a finding (or a question left for the project) sit in a functor's call
    operator?"""
    found = [*result.findings, *(p.finding for p in result.pending)]
    # an unknown name is a question about the name (the project answers it), not a place
    # whose kernels matter
    return any(f.function == "operator()" and f.slug != "unknown-api" for f in found)


# Test and benchmark frameworks' registration macros (GoogleTest, Google Benchmark): their
# name arguments declare a test, often named after the API it exercises
# (`BENCHMARK_DEFINE_F(CudaMallocManaged, cudaMallocManaged)`), and are pasted into class
# names, never called.
TEST_REGISTRATION = re.compile(
    rb"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P|BENCHMARK_DEFINE_F|BENCHMARK_REGISTER_F"
    rb"|BENCHMARK_F|BENCHMARK_TEMPLATE_F|BENCHMARK_TEMPLATE_DEFINE_F)\s*\(([^()]*)\)"
)


def _test_names(data: bytes) -> set[int]:
    """Offsets of the plain-word arguments of test registration macros."""
    found: set[int] = set()
    if b"TEST" not in data and b"BENCHMARK" not in data:
        return found
    for match in TEST_REGISTRATION.finditer(data):
        for word in re.finditer(rb"[A-Za-z_]\w*", match.group(1)):
            found.add(match.start(1) + word.start())
    return found


def _classify(
    found: Extraction,
    own_references: set[int],
    path: str,
    index: LineIndex,
    in_device: Callable[[int], bool],
    data: bytes,
) -> list[Use]:
    """The extracted names that are CUDA uses, each with its rule, family, exact span and
    whether it sits in device code, in file order."""
    variables = found.variables
    test_names = _test_names(data)
    uses: list[Use] = []
    for name, kind, rule, start, end in found.names:
        if start in test_names:
            continue  # `TEST_F(CudaRuntime, cudaMemcpy)`: a test's name
        # Scoping: a name the file declares as a variable or parameter (`float j0, y1;`) is
        # that variable wherever it is not called, not the CUDA function of that name.
        shadowed = name in variables and kind != "function"
        if shadowed and rule is not None and rule.kind == "function":
            continue
        if start in own_references:
            continue  # libclang: this name is a declaration of the project's own
        device = in_device(start)
        if name in C_LIBRARY_NAMES and not device:
            continue  # `printf` in host code is C's
        family = rule.family if rule else guess_family(name)
        kind = rule.kind if rule else kind
        uses.append(Use(name, kind, family, path, index.span(start, end), device, rule))
    uses.sort(key=lambda u: (u.span.start_byte, u.name))
    return uses


def _outside_host_functions(
    spans: list[tuple[int, int]],
    captures: dict[str, list[Node]],
    device: list[tuple[int, int]],
    possible: list[tuple[int, int, tuple[str, ...]]],
) -> list[tuple[int, int]]:
    """The device-pass spans that do not begin inside the body of a plain host function
    (no device qualifier, no macro in its declaration): there the branch is code neither
    pass builds (aphrodite's launchers wrapped in `#if __CUDA_ARCH__ >= 800`, which the
    host pass leaves empty and the device pass does not compile for a host function)."""
    hosts = []
    for fn in captures.get("function", ()):
        start, end = function_extent(fn)
        if any(s <= start and end <= e for s, e in device):
            continue
        if any(s == start for s, _, _ in possible):
            continue
        hosts.append((start, end))
    if not hosts:
        return spans
    return [(s, e) for s, e in spans if not any(hs < s < he for hs, he in hosts)]


def _merge_device_code(
    device: list[tuple[int, int]],
    possible: list[tuple[int, int, tuple[str, ...]]],
    clang_device: list[tuple[int, int]],
    clang_functions: list[FunctionInfo],
) -> tuple[list[tuple[int, int]], list[tuple[int, int, tuple[str, ...]]]]:
    """tree-sitter's device code refined by libclang's: a function clang resolved (its
    macros expanded) is device code or host code for certain."""
    resolved = [(f.start, f.end, f.is_device) for f in clang_functions]

    def decided(start: int, end: int) -> bool | None:
        for s, e, is_device in resolved:
            if s <= start < e or start <= s < end:  # the same definition, however bounded
                return is_device
        return None

    still_possible = []
    for start, end, macros in possible:
        verdict = decided(start, end)
        # host code to clang, but with a macro named for device code that clang could not
        # expand (gridtools' `GT_FUNCTION_DEVICE`, defined outside the files given to it):
        # the project's definitions or the name decide, as without clang
        if verdict is None or (
            verdict is False and any(DEVICE_SPECIFIER_NAME.search(m) for m in macros)
        ):
            still_possible.append((start, end, macros))
    return merged_ranges([*device, *clang_device]), still_possible


def _merge_functions(
    tree_sitter: list[FunctionInfo], clang: list[FunctionInfo]
) -> list[FunctionInfo]:
    """tree-sitter's functions with the calls and execution spaces libclang resolved."""
    by_name: dict[str, list[FunctionInfo]] = {}
    for info in clang:
        by_name.setdefault(info.name, []).append(info)
    for info in tree_sitter:
        for match in by_name.get(info.name, ()):
            if match.start <= info.start < match.end or info.start <= match.start < info.end:
                info.calls |= match.calls
                info.is_device = info.is_device or match.is_device
                info.is_kernel = info.is_kernel or match.is_kernel
                break
    return tree_sitter
