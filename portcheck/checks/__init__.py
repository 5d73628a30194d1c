"""Hazard checks: the problems renaming cannot fix, in CUDA and in Python code.

Owns the registry of checks and the context a CUDA check reports through; the catalogue
they report against (rules/hazards.yaml) is portcheck.checks.spec. One hazard = one small
function registered with `@hazard("slug")` (or `@hazard("slug", language=Language.PYTHON)`
for a check over Python code) that calls `ctx.report(start, end, ...)`; the framework fills
in the id, severity, per-route verdict, help link and fix hint from the catalogue, and
applies inline suppressions (`// portcheck: ignore[slug]`, `# portcheck: ignore[slug]`).
"""

from __future__ import annotations

import bisect
import hashlib
import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar

# The catalogue, re-exported: checks, the pipeline and the formatters import it from here.
from portcheck.checks.spec import HazardSpec, catalogue
from portcheck.checks.spec import hazards_of as hazards_of
from portcheck.checks.spec import resolve_ignores as resolve_ignores
from portcheck.model import Finding, Language, PyFinding, Severity, Span, Use, Verdicts
from portcheck.preproc import (
    EMPTY_FACTS,
    PreprocFacts,
    evaluate,
    mask_comments_and_strings,
    names_in,
)
from portcheck.project import Pending

SUPPRESSION = re.compile(rb"portcheck:\s*ignore(?:\[([^\]]*)\])?")


def line_fingerprint(slug: str, path: str, data: bytes, offset: int) -> str:
    """Stable across edits elsewhere in the file: hazard, file and the line's own text
    (whitespace-normalised)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    line_end = data.find(b"\n", offset)
    line = data[line_start : line_end if line_end != -1 else len(data)]
    digest = hashlib.sha256(f"{slug}\0{path}\0".encode() + b" ".join(line.split()))
    return digest.hexdigest()[:20]


def line_fingerprint_of_text(slug: str, path: str, line: str) -> str:
    """line_fingerprint for a line already whitespace-normalised."""
    return line_fingerprint(slug, path, line.encode(), 0)


# Checks that look at device code: in a function whose device qualifier hides behind a
# project macro (`DINLINE float f()`), their findings wait for the project's macro table.
DEVICE_CODE_CHECKS = frozenset(
    {
        "warp-size-assumption",
        "lane-mask-width",
        "launch-bounds",
        "inline-ptx",
        "dynamic-parallelism",
    }
)
ASSIGNED = re.compile(rb"\b([A-Za-z_]\w*)\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)")

ADDRESS_OF = re.compile(rb"(?<!&)&\s*([A-Za-z_]\w*)\b")

METHOD_MARK = "."  # in FunctionInfo.calls: ".sync" is a call of a method named sync


@dataclass
class FunctionInfo:
    """A function definition in a file, for the call graph. `calls` holds the names it
    calls; a method call (`group.sync()`) is METHOD_MARK + name."""

    name: str
    start: int
    end: int
    is_kernel: bool
    is_device: bool
    calls: set[str] = field(default_factory=set)
    # Where it calls each name: (name, byte offset), recorded in files with conditional
    # code only (where a call may sit in NVIDIA-only code); empty elsewhere.
    sites: list[tuple[str, int]] = field(default_factory=list)
    # Defined in a namespace or a class, or out of line with a qualified name: not the
    # global function of its name (`mylib::cudaFree`).
    scoped: bool = False
    # Set by filescan.mark_warp_level, when the project needs them (not stored): its body
    # holds warp-level code (checks.warp.WARP_LEVEL); the names it calls that are its own
    # parameters or the file's template types (a functor handed in, `scalar_t(x)`).
    warp_level: bool = False
    opaque_calls: set[str] = field(default_factory=set)
    # Also set by mark_warp_level, for kernels: what it divides by or takes the remainder
    # of (`threadIdx.x / 32`, `% WS`; `>> 5` and `& 31` as "32"), and whether it groups its
    # lanes on purpose (tiles of 32, explicit shuffle widths): checks.warp.own_groups.
    split_by: frozenset[str] = frozenset()
    own_groups: bool = False
    # Also set by mark_warp_level: its body reads the device's `warpSize`; (kernels) it
    # numbers its threads flat across a two-dimensional block (checks.warp.flattens_block).
    reads_width: bool = False
    flat_block: bool = False
    # Also set by mark_warp_level: its warp-level code is in logical groups of 32 lanes
    # (checks.warp.logical_32_code).
    logical32: bool = False


def nesting(functions: list[FunctionInfo]) -> list[int]:
    """For functions sorted by start: the index of the innermost function around each
    (a method of a class defined in a function), or -1."""
    outer: list[int] = []
    open_: list[int] = []
    for i, fn in enumerate(functions):
        while open_ and functions[open_[-1]].end <= fn.start:
            open_.pop()
        outer.append(open_[-1] if open_ else -1)
        open_.append(i)
    return outer


def innermost_function(
    functions: list[FunctionInfo], starts: list[int], outer: list[int], offset: int
) -> int:
    """Index of the innermost function (sorted by start; `starts`, `outer` = nesting())
    around `offset`, or -1. The last function starting before it, or one around that."""
    i = bisect.bisect_right(starts, offset) - 1
    while i >= 0 and not functions[i].start <= offset < functions[i].end:
        i = outer[i]
    return i


# Syntax nodes that declare names in a function: its parameters and its locals.
DECLARING = frozenset({"parameter_declaration", "optional_parameter_declaration", "declaration"})


class Declared(NamedTuple):
    """A parameter or local as its function declares it."""

    type: str  # as written, spaces normalised: `unsigned int`
    initial: Any  # the initialiser's or default's syntax node, or None
    parameter: bool


@dataclass
class Context:
    """What a check sees of one file, and where it reports."""

    path: str
    language: Language
    data: bytes
    root: Any  # tree_sitter.Node, or None for build files
    uses: list[Use]
    span: Callable[[int, int], Span]
    in_device: Callable[[int], bool]
    functions: list[FunctionInfo] = field(default_factory=list)
    device_ranges: list[tuple[int, int]] = field(default_factory=list)  # merged, sorted
    findings: list[Finding] = field(default_factory=list)
    _device_nodes: dict[str, list[Any]] | None = None
    _current: HazardSpec | None = None
    _seen: set[tuple[str, int]] = field(default_factory=set)
    # Functions that are device code if a project macro in their declaration hides
    # `__device__`: (start, end, macro names), sorted.
    possible_device_ranges: list[tuple[int, int, tuple[str, ...]]] = field(default_factory=list)
    pending: list[Pending] = field(default_factory=list)
    preproc: PreprocFacts = EMPTY_FACTS
    _locals: dict[int, dict[str, str]] = field(default_factory=dict)
    memo: dict[Any, Any] = field(default_factory=dict)  # what a check computed once per file
    _function_index: tuple[list[int], list[int]] | None = None
    # The rule set's lookup (a name -> its rule, or None), for checks that ask about a name
    # no use in the file carries
    lookup: Callable[[str], Any] | None = None

    @property
    def masked(self) -> bytes:
        """The file's text with comments and string literals blanked, once per file."""
        text = self.memo.get("masked")
        if text is None:
            text = self.memo["masked"] = mask_comments_and_strings(self.data)
        return text

    def report(
        self,
        start: int,
        end: int,
        message: str | None = None,
        fix: str | None = None,
        targets: Verdicts | None = None,
        once_per_line: bool = True,
        slug: str | None = None,
        when: tuple[str, tuple[int, ...], bool] | None = None,
        severity: Severity | None = None,
        fold: bool = True,
        directive: bool = False,
        if_unknown: bool = False,
        wrapper: tuple[str, int] | None = None,
        amd_alternative: bool = False,
        ptx_callee: str = "",
        lane_callees: str = "",
        launched: str = "",
        polled: bool = False,
    ) -> None:
        """Report the current check's hazard (or the catalogue's `slug`) at start..end.

        `when=(expr, values, negate)`: only if the constant expression `expr`, evaluated
        with the whole project's constants, is (or, negated, is not) one of `values`;
        `fold=False`: the finding is not a use of the constant that decides it, so it is
        neither listed at nor folded into that constant's definition (see Pending);
        `directive=True`: `expr` is an `#if` test, read with the project's macros;
        `if_unknown=True`: report it too when the project cannot evaluate `expr`;
        `wrapper=(macro, i)`: only if the project's `macro` passes its i-th parameter to a
        *_sync intrinsic as the lane mask (ProjectFacts.mask_wrappers);
        `amd_alternative=True`: the check itself saw the project's AMD path for this code;
        `ptx_callee=name`: only if the project's function `name` holds inline PTX;
        `lane_callees="f,g"`: unless those project functions are all lane-blind;
        `launched=kernel`: only if the project's kernel of that name counts hardware warps
        (ProjectFacts.answer); `polled=True`: only if device code near the file polls
        memory (FileScan.polls, ProjectFacts._polled_near)."""
        spec = catalogue()[slug] if slug is not None else self._current
        assert spec is not None, "report() called outside a registered check"
        span = self.span(start, end)
        macros: tuple[str, ...] = ()
        if spec.slug in DEVICE_CODE_CHECKS and not self.in_device(start):
            macros = self.device_macros_at(start)
        conditional = (
            bool(macros)
            or when is not None
            or wrapper is not None
            or bool(ptx_callee)
            or bool(lane_callees)
            or bool(launched)
            or polled
        )
        if once_per_line:
            key = (spec.slug, span.line)
            if key in self._seen:
                return
            if not conditional:
                self._seen.add(key)
        finding = Finding(
            id=spec.id,
            slug=spec.slug,
            severity=severity or spec.severity,
            path=self.path,
            span=span,
            message=message or spec.summary,
            targets=targets or spec.cuda_targets,
            help_url=spec.help_url,
            fix=fix or spec.fix,
            function=self.function_at(start),
            fingerprint=line_fingerprint(spec.slug, self.path, self.data, start),
            amd_alternative=amd_alternative,
        )
        if not conditional:
            self.findings.append(finding)
            return
        expr, values, negate = when if when is not None else ("", (), False)
        name, position = wrapper if wrapper is not None else ("", -1)
        self.pending.append(
            Pending(
                finding,
                expr,
                values,
                negate,
                macros,
                fold,
                directive,
                if_unknown,
                name,
                position,
                ptx_callee,
                lane_callees,
                launched,
                polled,
            )
        )

    def device_macros_at(self, offset: int) -> tuple[str, ...]:
        """The macros that would make `offset` device code (empty: it is host code)."""
        found: tuple[str, ...] = ()
        for start, end, macros in self.possible_device_ranges:
            if start <= offset < end:
                found += macros  # a lambda's macro inside a function's: either will do
        return found

    def value(self, node: Any) -> int | str | None:
        """An integer operand: its value when this file decides it (a literal, or a local
        initialised once from one: `unsigned m = 0xffffffffu;`), the expression to evaluate
        with the project's constants when it names any (`WARP_SIZE`, `(kWarp - 1)`), None
        when it is not a constant expression."""
        from portcheck.checks.syntax import integer_value, text

        if node is None:
            return None
        literal = integer_value(node)
        if literal is not None:
            return literal
        if node.type == "qualified_identifier":  # `fused::kFullMask`: the constant's own name
            name = node.child_by_field_name("name")
            while name is not None and name.type == "qualified_identifier":
                name = name.child_by_field_name("name")
            return text(name) if name is not None and name.type == "identifier" else None
        if node.type not in ("identifier", "parenthesized_expression", "binary_expression"):
            return None
        expr = self._with_locals(text(node), node.start_byte)
        if expr is None:
            return None
        known = evaluate(expr, lambda name: None, in_if=False)
        if known is not None:
            return known
        return expr if names_in(expr) else None

    def _with_locals(self, expr: str, offset: int, depth: int = 0) -> str | None:
        """`expr` with each local constant of the enclosing function replaced by its
        initialiser; None when it reads a local that changes (a loop variable)."""
        if depth > 4 or len(expr) > 200:
            return None
        fn = next((f for f in self.functions if f.start <= offset < f.end), None)
        if fn is None:
            return expr
        local = self._local_constants(fn)
        out = []
        for piece in re.split(r"(\b[A-Za-z_]\w*\b)", expr):
            if piece in local:
                init = local[piece]
                if not init:
                    return None  # assigned more than once, or not from a constant
                inner = self._with_locals(init, offset, depth + 1)
                if inner is None:
                    return None
                out.append(f"({inner})")
            else:
                out.append(piece)
        return "".join(out)

    def _local_constants(self, fn: FunctionInfo) -> dict[str, str]:
        """name -> initialiser for locals and parameters of `fn` ('' when not a constant)."""
        cached = self._locals.get(fn.start)
        if cached is not None:
            return cached
        from portcheck.checks.syntax import text

        found: dict[str, str] = {}
        body = self.data[fn.start : fn.end]
        # How often each name is assigned in the function (`x = `, `x += `, …), in one pass.
        assignments: dict[str, int] = {}
        for match in ASSIGNED.finditer(body):
            name = match.group(1).decode()
            assignments[name] = assignments.get(name, 0) + 1
        # `cudaDeviceGetAttribute(&warp_size, …)`: a callee given its address may set it
        for match in ADDRESS_OF.finditer(body):
            before = body[max(0, match.start() - 64) : match.start()].rstrip()
            if not before or before[-1:] in b"(,=;{}!?:" or before.endswith(b"return"):
                name = match.group(1).decode()
                assignments[name] = assignments.get(name, 0) + 2
        for name, declarations in self.declarations(fn).items():
            for _, declared in declarations:
                if declared.parameter:
                    found[name] = ""  # whatever the caller passes
                    continue
                value = declared.initial
                if value is None:
                    continue  # `int x;`: assigned later, counted above
                constant = value.type in (
                    "number_literal",
                    "identifier",
                    "parenthesized_expression",
                    "binary_expression",
                    "unary_expression",
                )
                found[name] = (
                    text(value)
                    if constant and assignments.get(name, 0) <= 1 and name not in found
                    else ""
                )
        self._locals[fn.start] = found
        return found

    def _function_node(self, fn: FunctionInfo) -> Any:
        node = self.root.descendant_for_byte_range(fn.start, fn.end) if self.root else None
        while node is not None and node.start_byte > fn.start:
            node = node.parent
        return node

    def declared(self, node: Any) -> Declared | None:
        """How the enclosing function declares the name `node` reads (a parameter, with
        or without a default, or a local): its type as written and its initialiser. None
        for anything else (a global, a member, a project constant)."""
        from portcheck.checks.syntax import text

        if node is None or node.type != "identifier":
            return None
        fn = next((f for f in self.functions if f.start <= node.start_byte < f.end), None)
        if fn is None:
            return None
        # The last declaration before the use: the one in scope there, but for a sibling
        # block's (rare, and then of the same kind of type as often as not).
        found = self.declarations(fn).get(text(node), ())
        before = [d for start, d in found if start < node.start_byte]
        return before[-1] if before else None

    def declarations(self, fn: FunctionInfo) -> dict[str, list[tuple[int, Declared]]]:
        """The parameters and locals `fn` declares: name -> (where, how), in order. A
        pointer or reference declarator names its identifier (`const Op& op`)."""
        from portcheck.checks.syntax import text

        key = ("declared", fn.start)
        table: dict[str, list[tuple[int, Declared]]] | None = self.memo.get(key)
        if table is not None:
            return table
        table = self.memo[key] = {}
        function = self._function_node(fn)
        stack = [function] if function is not None else []
        while stack:
            current = stack.pop()
            stack.extend(current.children)
            if current.type not in DECLARING:
                continue
            type_node = current.child_by_field_name("type")
            if type_node is None:
                continue
            written = " ".join(text(type_node).split())
            for declarator in current.children_by_field_name("declarator"):
                name, initial = declarator, current.child_by_field_name("default_value")
                if declarator.type == "init_declarator":
                    name = declarator.child_by_field_name("declarator")
                    initial = declarator.child_by_field_name("value")
                while name is not None and name.type in (
                    "reference_declarator",
                    "pointer_declarator",
                ):
                    name = name.child_by_field_name("declarator") or (
                        name.named_children[-1] if name.named_children else None
                    )
                if name is not None and name.type == "identifier":
                    parameter = current.type != "declaration"
                    table.setdefault(text(name), []).append(
                        (current.start_byte, Declared(written, initial, parameter))
                    )
        for declarations in table.values():
            declarations.sort(key=lambda d: d[0])
        return table

    def device_nodes(self, name: str) -> list[Any]:
        """Syntax nodes of one kind (see DEVICE_PATTERNS) inside device code. One query runs
        once per file, restricted to the device functions' byte ranges."""
        if self._device_nodes is None:
            from portcheck.checks.syntax import device_captures

            ranges = self.device_ranges
            if self.possible_device_ranges:
                ranges = merged_ranges(
                    [*ranges, *((s, e) for s, e, _ in self.possible_device_ranges)]
                )
            self._device_nodes = device_captures(self.root, ranges)
        return self._device_nodes.get(name, [])

    def function_at(self, offset: int) -> str:
        fn = self.function_info_at(offset)
        return fn.name if fn is not None else ""

    def function_info_at(self, offset: int) -> FunctionInfo | None:
        """The innermost function around `offset`, or None."""
        if self._function_index is None:  # once per file, not once per finding
            self._function_index = ([f.start for f in self.functions], nesting(self.functions))
        starts, outer = self._function_index
        i = innermost_function(self.functions, starts, outer, offset)
        return self.functions[i] if i >= 0 else None

    def uses_named(self, names: Iterable[str] | Callable[[Use], bool]) -> list[Use]:
        if callable(names):
            return [u for u in self.uses if names(u)]
        wanted = set(names)
        return [u for u in self.uses if u.name in wanted]


def merged_ranges(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


# A check takes the context of the code it reads: a Context for Language.CUDA (CUDA, C
# and C++ sources, and build files), a portcheck.python.code.PythonContext for
# Language.PYTHON (Python sources and dependency manifests).
Check = Callable[[Any], None]
CheckT = TypeVar("CheckT", bound=Callable[..., None])
REGISTRY: dict[Language, dict[str, Check]] = {Language.CUDA: {}, Language.PYTHON: {}}
# The modules (portcheck.checks.<group>) that register the checks over each language;
# imported on first use, so a scan without Python files never loads the Python parser.
CHECK_MODULES = {
    Language.CUDA: ("apis", "build", "device", "warp"),
    Language.PYTHON: ("python",),
}


def hazard(slug: str, language: Language = Language.CUDA) -> Callable[[CheckT], CheckT]:
    """Register a check for the catalogue entry `slug`, over code of `language`. A hazard
    can have one check per language: a CUDA hazard such as warp-size-assumption is also
    looked for in numba.cuda kernels written in Python."""

    def register(check: CheckT) -> CheckT:
        if language not in REGISTRY:
            raise ValueError(f"no checks over {language} code: one of {list(REGISTRY)}")
        if slug in REGISTRY[language]:
            raise ValueError(f"two {language} checks registered for {slug!r}")
        REGISTRY[language][slug] = check
        return check

    return register


_imported: set[Language] = set()  # languages whose check modules are all imported


def registered_checks(language: Language) -> dict[str, Check]:
    """slug -> check, for the checks over code of `language` (their modules imported;
    some may have been imported earlier alone)."""
    if language not in _imported:
        for module in CHECK_MODULES[language]:
            importlib.import_module(f"portcheck.checks.{module}")
        _imported.add(language)
    return REGISTRY[language]


class Reporting(Protocol):
    """A context checks report through: the framework sets the hazard being checked."""

    _current: HazardSpec | None


def run_registered(ctx: Reporting, language: Language, ignore: frozenset[str]) -> None:
    """Run every check registered over `language` on one file's context, except the
    ignored hazards; the findings collect in the context."""
    specs = catalogue()
    for slug, check in registered_checks(language).items():
        if slug in ignore:
            continue
        ctx._current = specs[slug]
        check(ctx)
    ctx._current = None


def suppressions_in(data: bytes) -> dict[int, frozenset[str] | None]:
    """line -> slugs ignored there (None = all), from `portcheck: ignore[...]` comments.
    A suppression covers its own line and the next one."""
    found: dict[int, frozenset[str] | None] = {}
    if b"portcheck:" not in data:
        return found
    line, counted = 1, 0
    for match in SUPPRESSION.finditer(data):  # lines counted once through, not per match
        line += data.count(b"\n", counted, match.start())
        counted = match.start()
        slugs = (
            frozenset(s.strip() for s in match.group(1).decode().split(",") if s.strip())
            if match.group(1) is not None
            else None
        )
        for target_line in (line, line + 1):
            previous = found.get(target_line, frozenset())
            if slugs is None or previous is None:
                found[target_line] = None
            else:
                found[target_line] = previous | slugs
    return found


def suppressed(
    finding: Finding | PyFinding, suppressions: Mapping[int, frozenset[str] | None]
) -> bool:
    if finding.span.line not in suppressions:
        return False
    slugs = suppressions[finding.span.line]
    return slugs is None or finding.slug in slugs or finding.id in slugs


def run_checks(ctx: Context, ignore: frozenset[str] = frozenset()) -> list[Finding]:
    """Run every registered CUDA check on one file; returns its unsuppressed findings."""
    run_registered(ctx, Language.CUDA, ignore)
    suppressions = suppressions_in(ctx.data)
    ctx.pending = [p for p in ctx.pending if not suppressed(p.finding, suppressions)]
    kept = [f for f in ctx.findings if not suppressed(f, suppressions)]
    kept.sort(key=lambda f: (f.span.start_byte, f.id))
    return kept
