"""The built-in CUDA -> HIP engine: exact byte-span edits from the parse and the rule set.

Every edit replaces the span of one classified use (an identifier, a type, an enum, a
macro, an include path, the leading namespace of a qualified name) with its HIP
equivalent from rules/. Nothing is matched by regex over the whole file, so comments,
strings and look-alikes (`mycudaFree`) are never touched, and code in every `#if`
branch is translated because the parser reads them all.

Line numbers are preserved: marker comments for hazards are appended to the end of
their line, and the one line that may be added (`#include <hip/hip_runtime.h>`) is
recorded in `inserted_lines` so diagnostics can be mapped back to the CUDA source.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from portcheck.checks.apis import UNKNOWN_API
from portcheck.checks.device import ARCH_COMPARISON
from portcheck.extract import ASM_NAME, CUDA_HEADER_SHAPE, LAUNCH_NAME
from portcheck.filescan import FileScan, FileScanner
from portcheck.model import Finding, Language, Status, Use
from portcheck.ruleset import default_rules
from portcheck.translate.arguments import ARGUMENT_EDITS, argument_edits
from portcheck.translate.spelling import HIP_VECTOR_TYPES, Spelling

HIP_RUNTIME_HEADER = "hip/hip_runtime.h"
HIP_RUNTIME_INCLUDE = re.compile(
    rb"^[ \t]*#[ \t]*include[ \t]*[<\"]hip/hip_runtime\.h[>\"]", re.MULTILINE
)
MARKER = "portcheck:"
NEEDS_RUNTIME_FAMILIES = frozenset({"runtime", "driver", "device"})
# CUDA's version macros are left as written in preprocessor lines. HIP defines neither, so
# `#if CUDA_VERSION >= 11000` reads 0 under hipcc and keeps the project's branch for an
# older CUDA, which is the API level HIP follows (and what human ports do). Renamed to
# HIP_VERSION (50221153 in ROCm 5.2) every such test would pass and pick the branch meant
# for the newest NVIDIA toolkit. In code (`printf("%d", CUDART_VERSION)`) a value is needed:
# there the rule's HIP_VERSION is written.
VERSION_MACROS_KEPT = frozenset({"CUDA_VERSION", "CUDART_VERSION"})


@dataclass
class Translation:
    """The HIP text of one file and what was done to it."""

    path: str
    text: bytes
    replacements: int = 0
    markers: int = 0
    injected_include: bool = False
    inserted_lines: list[int] = field(default_factory=list)  # 1-based lines added in the output
    encoding: str = "utf-8"
    findings: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.replacements or self.markers or self.injected_include)

    def original_line(self, line: int) -> int:
        """Map a line of the translated text back to the CUDA source line."""
        return line - sum(1 for inserted in self.inserted_lines if inserted < line)


def _namespace_edit(use: Use, data: bytes) -> tuple[int, int, str] | None:
    """Rename the written namespace prefix of a qualified name (`cub::` -> `hipcub::`)."""
    assert use.rule is not None and use.hip is not None
    cuda_parts, hip_parts = use.name.split("::"), use.hip.split("::")
    # The shared tail (the member name) stays; the differing head is the namespace rename.
    shared = 0
    while (
        shared < min(len(cuda_parts), len(hip_parts))
        and cuda_parts[-1 - shared] == hip_parts[-1 - shared]
    ):
        shared += 1
    cuda_head, hip_head = (
        cuda_parts[: len(cuda_parts) - shared],
        hip_parts[: len(hip_parts) - shared],
    )
    if not cuda_head or not hip_head:
        return None
    start = use.span.start_byte
    token = data[start : use.span.end_byte].decode()
    if token == cuda_head[0]:
        written = re.compile(r"\s*::\s*".join(re.escape(p) for p in cuda_head).encode())
        match = written.match(data, start)
        if match:
            return start, match.end(), "::".join(hip_head)
    elif token == cuda_head[-1]:  # written after `using namespace nvcuda;` as `wmma::…`
        return start, use.span.end_byte, hip_head[-1]
    return None  # written through an alias: the alias declaration itself is renamed


# CUDA calls whose HIP name depends on how many arguments are passed.
ARITY_RENAMES: dict[str, dict[int, str]] = {
    "cudaEventCreate": {2: "hipEventCreateWithFlags"},  # HIP's hipEventCreate takes one
    # CUDA 12's (exec, graph, flags); HIP's hipGraphInstantiate is CUDA 11's five arguments.
    "cudaGraphInstantiate": {3: "hipGraphInstantiateWithFlags"},
}


def _call_arguments(data: bytes, after: int) -> list[tuple[int, int]] | None:
    """The byte spans of the top-level arguments of the call whose name ends at `after`
    ([] for `f()`; None: not a call, or one longer than this looks)."""
    position = after
    while position < len(data) and data[position : position + 1].isspace():
        position += 1
    if data[position : position + 1] != b"(":
        return None
    spans: list[tuple[int, int]] = []
    depth, start, empty = 0, position + 1, True
    for offset in range(position, min(len(data), position + 4096)):
        char = data[offset : offset + 1]
        if char in b"([{":
            depth += 1
        elif char in b")]}":
            depth -= 1
            if depth == 0:
                return spans if empty and not spans else [*spans, (start, offset)]
        elif char == b"," and depth == 1:
            spans.append((start, offset))
            start = offset + 1
        elif depth >= 1 and not char.isspace():
            empty = False
    return None


def _argument_count(data: bytes, after: int) -> int | None:
    """Top-level arguments of the call whose name ends at `after` (None: not a call)."""
    arguments = _call_arguments(data, after)
    return None if arguments is None else len(arguments)


def _release_edits(use: Use, data: bytes, spelling: Spelling) -> list[tuple[int, int, str]]:
    """A warp builtin the chosen release lacks, written in the form it has:
    `__shfl_xor_sync(mask, v, o)` -> `__shfl_xor(v, o)` (the mask goes),
    `__activemask()` -> `__ballot(1)`."""
    rule = use.rule
    if rule is None:
        return []
    start, end = use.span.start_byte, use.span.end_byte
    if data[start:end].decode(errors="replace") != use.name:
        return []
    plain = spelling.maskless(rule)
    if plain is not None:
        arguments = _call_arguments(data, end)
        if not arguments or len(arguments) < 2:
            return []
        # The mask, its comma and the spaces up to the next argument go.
        next_argument = arguments[1][0]
        while data[next_argument : next_argument + 1] in (b" ", b"\t"):
            next_argument += 1
        return [(start, end, plain), (arguments[0][0], next_argument, "")]
    fallback = spelling.call_fallback(rule)
    if fallback is not None and _call_arguments(data, end) == []:
        callee, written_arguments = fallback
        close = data.index(b")", end)
        return [(start, end, callee), (close, close, written_arguments)]
    return []


def _duplicate_includes(
    uses: list[Use], edits: list[tuple[int, int, str]], data: bytes
) -> list[tuple[int, int, str]]:
    """Comment out an include that translation made a duplicate of an earlier one
    (`cuda.h` and `cuda_runtime.h` both become `hip/hip_runtime.h`), or of a header HIP
    does not need; the line stays, so line numbers do too."""
    renamed = {start: text for start, _, text in edits}
    seen: set[str] = set()
    extra = []
    for use in uses:
        if use.kind != "header":
            continue
        rule = use.rule
        if rule is not None and rule.hip is None and rule.status.hip is Status.SUPPORTED:
            # A CUDA header HIP needs no counterpart for (device_launch_parameters.h).
            line_start = data.rfind(b"\n", 0, use.span.start_byte) + 1
            extra.append((line_start, line_start, "// "))
            continue
        written = data[use.span.start_byte + 1 : use.span.end_byte - 1].decode(errors="replace")
        final = renamed.get(use.span.start_byte + 1, written)
        if final in seen and use.span.start_byte + 1 in renamed:
            line_start = data.rfind(b"\n", 0, use.span.start_byte) + 1
            extra.append((line_start, line_start, "// "))
        seen.add(final)
    return extra


def _in_directive(data: bytes, offset: int) -> bool:
    """Is `offset` on a preprocessor line (`#if …`, `#define …`, continuations included)?"""
    line_start = data.rfind(b"\n", 0, offset) + 1
    while line_start > 1 and data[line_start - 2 : line_start - 1] == b"\\":
        line_start = data.rfind(b"\n", 0, line_start - 1) + 1  # the line continues one above
    return data[line_start:offset].lstrip().startswith(b"#")


SPACED_LAUNCH_OPEN = re.compile(rb"<\s*<\s*<")
SPACED_LAUNCH_CLOSE = re.compile(rb">\s*>\s*>$")


def _launch_edits(use: Use, data: bytes) -> list[tuple[int, int, str]]:
    """`k << < grid, block >> > (…)`, which nvcc accepts, written `k<<<grid, block>>>(…)`:
    clang reads only the unspaced brackets as a launch."""
    if use.name != LAUNCH_NAME:
        return []
    start, end = use.span.start_byte, use.span.end_byte
    written = data[start:end]
    if written.startswith(b"<<<") and written.endswith(b">>>"):
        return []
    opening = SPACED_LAUNCH_OPEN.match(written)
    closing = SPACED_LAUNCH_CLOSE.search(written)
    if opening is None or closing is None:
        return []
    return [
        (start, start + opening.end(), "<<<"),
        (start + closing.start(), end, ">>>"),
    ]


REGISTER_OR_SKIPPED = re.compile(
    rb"//[^\n]*|/\*.*?(?:\*/|$)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|"
    rb"(?<![\w$])register\b[ \t]*",
    re.DOTALL,
)


def _register_removals(data: bytes) -> list[tuple[int, int, str]]:
    """C++17 has no `register` storage class: nvcc's host compiler only warns, clang (hipcc)
    stops. The keyword has had no effect for decades, so it goes, in C files too (hipcc
    builds them as HIP C++; and in C dropping it only allows taking an address). Comments
    and strings are skipped; it is a reserved word, never a name."""
    if b"register" not in data:
        return []
    return [
        (match.start(), match.end(), "")
        for match in REGISTER_OR_SKIPPED.finditer(data)
        if match.group().startswith(b"register")
    ]


def _legacy_cublas(scan: FileScan) -> Callable[[str], bool] | None:
    """In a file that includes the legacy cublas.h and not cublas_v2.h, `cublasSscal(n,
    alpha, x, incx)` is the handle-less legacy API, which hipBLAS does not have: renamed,
    it would call hipBLAS's handle-taking function with the wrong arguments. Such calls
    (every cuBLAS function that has a `_v2` twin) stay as written, and the build says
    what is left. None when the file uses the current API."""
    headers = {u.name for u in scan.uses if u.kind == "header"}
    if "cublas.h" not in headers or "cublas_v2.h" in headers:
        return None
    twins = {u.name for u in scan.uses if u.family == "cublas" and u.name.endswith("_v2")}
    rules = default_rules()
    return lambda name: (
        name.startswith("cublas") and name not in twins and rules.lookup(name + "_v2") is not None
    )


@dataclass(frozen=True)
class ProjectFiles:
    """The files of the tree being translated (relative, with "/"), and each one's tails
    (`util/cuda/cuda.h` -> `cuda/cuda.h`, `cuda.h`), for telling a project's own header
    from the CUDA one it shares a name with."""

    paths: frozenset[str] = frozenset()
    tails: frozenset[str] = frozenset()

    @classmethod
    def of(cls, paths: Iterable[str]) -> ProjectFiles:
        listed = frozenset(paths)
        tails = {path.split("/", k)[-1] for path in listed for k in range(path.count("/") + 1)}
        return cls(listed, frozenset(tails))


def _own_header(use: Use, data: bytes, path: str, project: ProjectFiles) -> bool:
    """Is this include one of the project's own files? A quoted include of a file beside
    the includer (b+tree's own util/cuda/cuda.h), or a header that is not the CUDA
    toolkit's and that the project has (cuda-samples' helper_cuda.h, which HIPIFY's table
    maps to hip_runtime_api.h for projects without it)."""
    if use.kind != "header" or not project.paths:
        return False
    if data[use.span.start_byte : use.span.start_byte + 1] == b'"':
        folder = posixpath.dirname(path)
        if posixpath.normpath(posixpath.join(folder, use.name)) in project.paths:
            return True
    return not CUDA_HEADER_SHAPE.fullmatch(use.name) and use.name in project.tails


OPERATOR_NAME = re.compile(rb"\boperator\s*([-+*/%^|&<>=!]+)\s*\(")
PARAMETER = re.compile(rb"^(?:const\s+)?(\w+)\s*(&?)\s*(?:const\s*)?(&?)\s*\w*$")
DEMOTED = "template <typename = void> /* portcheck: HIP's vector types define this operator */ "


def _vector_parameter(text: bytes) -> tuple[str, bool] | None:
    """(vector type, taken by non-const reference) of one parameter, if it is a HIP
    vector type (`float4 &a`, `const float4& b`, `float4 b`)."""
    match = PARAMETER.match(b" ".join(text.split()))
    if match is None or match.group(1).decode() not in HIP_VECTOR_TYPES:
        return None
    const = text.lstrip().startswith(b"const")
    return match.group(1).decode(), bool(match.group(2) or match.group(3)) and not const


def _vector_operator_demotions(
    scan: FileScan, data: bytes, spelling: Spelling
) -> list[tuple[int, int, str]]:
    """A project's own `operator+=(float4&, float4)` (helper_math.h) next to HIP's member
    of the same meaning makes `a += b` ambiguous. Written as a template with a default
    argument, it loses every tie to HIP's operator and still serves any other call."""
    edits = []
    for function in scan.functions:
        if not function.name.startswith("operator"):
            continue
        head = data[function.start : data.find(b"{", function.start, function.end)]
        named = OPERATOR_NAME.search(head)
        if named is None:
            continue
        operator = named.group(1).decode()
        arguments = _call_arguments(data, function.start + named.end() - 1)
        if arguments is None or len(arguments) != 2:
            continue
        first, second = (_vector_parameter(data[a:b]) for a, b in arguments)
        if first is None or second is None or first[0] != second[0] or second[1]:
            continue
        if operator.endswith("=") and operator not in ("==", "!=", "<=", ">="):
            same_type = first[1]  # the target by reference
        else:
            same_type = not first[1]
        if not spelling.vector_operator_clashes(operator, same_type):
            continue
        before = data[max(0, function.start - 256) : function.start].rstrip()
        if before.endswith((b">", DEMOTED.strip().encode())):
            continue  # a template already, or translated before
        edits.append((function.start, function.start, DEMOTED))
    return edits


def _line_at(data: bytes, offset: int) -> bytes:
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    return data[start : end if end != -1 else len(data)]


def _arch_guards_kept(scan: FileScan, data: bytes) -> set[int]:
    """Offsets of `__CUDA_ARCH__` in `#ifdef __CUDA_ARCH__` guards that must stay as
    written: those whose branch uses the number in code (`SHM_BANKS = __CUDA_ARCH__ >= 200
    ? 32 : 16` in an enum). Renamed to `__HIP_DEVICE_COMPILE__`, the guard would let the
    device pass into a branch that reads a macro HIP never defines; kept, HIP takes the
    other branch, as human ports do."""
    arch = [u.span.start_byte for u in scan.uses if u.name == "__CUDA_ARCH__"]
    numeric_in_code = [
        offset
        for offset in arch
        if not _in_directive(data, offset)
        and ARCH_COMPARISON.search(_line_at(data, offset).decode(errors="replace"))
    ]
    if not numeric_in_code:
        return set()
    groups = {
        branch.group
        for branch in scan.preproc.branches
        if "__CUDA_ARCH__" in (branch.test or "")
        and any(branch.start_byte <= offset < branch.end_byte for offset in numeric_in_code)
    }
    directives = [
        (branch.start_byte, data.find(b"\n", branch.start_byte))
        for branch in scan.preproc.branches
        if branch.group in groups
    ]
    return {
        offset
        for offset in arch
        if any(start <= offset and (end == -1 or offset < end) for start, end in directives)
    }


def _without_deleted(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The edits, less those inside text another edit deletes (the mask argument of a
    `_sync` builtin may itself hold a call: `__ballot_sync(__activemask(), p)`)."""
    deleted = sorted((start, end) for start, end, text in edits if not text and end > start)
    if not deleted:
        return edits
    kept = []
    for start, end, text in edits:
        is_deletion = not text and end > start
        inside = any(s <= start and end <= e and start < e for s, e in deleted)
        if is_deletion or not inside:
            kept.append((start, end, text))
    return kept


def _dropped_macro(use: Use, data: bytes) -> tuple[int, int, str] | None:
    """A CUDA macro HIP needs no counterpart for (the calling convention `CUDART_CB`,
    empty on Linux, which HIP does not define): the name goes with the blanks after it,
    except on a preprocessor line, where it may be tested or defined."""
    start, end = use.span.start_byte, use.span.end_byte
    if _in_directive(data, start):
        return None
    while end < len(data) and data[end : end + 1] in (b" ", b"\t"):
        end += 1
    return start, end, ""


def _edit_for(use: Use, data: bytes, spelling: Spelling) -> tuple[int, int, str] | None:
    rule = use.rule
    if use.name == LAUNCH_NAME:
        return None  # see _launch_edits
    if rule is None or use.name == ASM_NAME:
        return None
    if rule.hip is None:
        if rule.kind == "macro" and rule.status.hip is Status.SUPPORTED:
            return _dropped_macro(use, data)
        return None
    hip = spelling.hip(rule)
    if hip is None:
        return None
    start, end = use.span.start_byte, use.span.end_byte
    if use.name in VERSION_MACROS_KEPT and _in_directive(data, start):
        return None
    if use.kind == "header":
        written = data[start + 1 : end - 1].decode()
        if rule.cuda.endswith("/"):  # a directory rule: `thrust/` keeps its paths
            if not hip.endswith("/") or hip == rule.cuda:
                return None
            return start + 1, end - 1, hip + written[len(rule.cuda) :]
        return (start + 1, end - 1, hip) if written != hip else None
    if hip == use.name:
        return None
    if "::" in use.name:
        return _namespace_edit(use, data)
    if use.name == "__CUDA_ARCH__":
        line_start = data.rfind(b"\n", 0, start) + 1
        line_end = data.find(b"\n", start)
        line = data[line_start : line_end if line_end != -1 else len(data)].decode(errors="replace")
        if ARCH_COMPARISON.search(line):
            return None  # a numeric arch test has no HIP meaning: leave it, mark it
    if data[start:end].decode(errors="replace") != use.name:
        return None
    by_arity = ARITY_RENAMES.get(use.name)
    if by_arity:
        count = _argument_count(data, end)
        if count in by_arity:
            return start, end, by_arity[count]
    return start, end, hip


def _line_end(data: bytes, line: int) -> int:
    offset = 0
    for _ in range(line - 1):
        offset = data.index(b"\n", offset) + 1
    end = data.find(b"\n", offset)
    return len(data) if end == -1 else end


def _marker_inserts(data: bytes, findings: list[Finding]) -> list[tuple[int, int, str]]:
    """One `/* portcheck: … */` comment at the end of each line with findings."""
    by_line: dict[int, list[Finding]] = {}
    for finding in findings:
        by_line.setdefault(finding.span.line, []).append(finding)
    inserts = []
    for line, line_findings in sorted(by_line.items()):
        end = _line_end(data, line)
        line_start = data.rfind(b"\n", 0, end) + 1
        existing = data[line_start:end]
        if MARKER.encode() + b" " + line_findings[0].id.encode() in existing:
            continue  # translated before: keep it idempotent
        label = "; ".join(dict.fromkeys(f"{f.id} {f.slug}" for f in line_findings))
        first = line_findings[0]
        see = first.help_url or f"portcheck explain {first.id}"
        comment = f" /* {MARKER} {label}: see {see} */"
        position = end - 1 if existing.endswith(b"\r") else end  # CRLF stays together
        stripped = existing.rstrip()
        if stripped.endswith(b"\\"):  # inside a macro: stay before the continuation
            position = line_start + len(stripped) - 1
        inserts.append((position, position, comment))
    return inserts


# Comments, string and character literals (skipped), and the braces of the code.
CODE_BRACE = re.compile(
    rb"//[^\n]*|/\*.*?(?:\*/|$)|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|[{}]", re.DOTALL
)


def _inside_braces(data: bytes, offset: int) -> bool:
    """Is `offset` inside a `{…}` block: an `extern "C" {`, a namespace, a function? The
    HIP runtime header is C++ (templates) and must be included at the top level."""
    depth = 0
    for match in CODE_BRACE.finditer(data, 0, offset):
        token = match.group()
        if token == b"{":
            depth += 1
        elif token == b"}":
            depth = max(0, depth - 1)
    return depth > 0


INCLUDE_GUARD = re.compile(rb"[ \t]*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\r?\n")


def _include_position(data: bytes) -> int:
    """Where to add `#include <hip/hip_runtime.h>`: first of all, as nvcc's implicit
    include is: after the leading comments and a leading `#pragma once` or include
    guard's `#ifndef` (so a header's include stays inside its guard); else before the
    first #include (unless that one is inside an `extern "C" {` or other block)."""
    offset = 0
    lines = data.splitlines(keepends=True)
    for line in lines:
        text = line.strip()
        if text and not text.startswith((b"//", b"/*", b"*")):
            break
        offset += len(line)
    head = data[offset:]
    if re.match(rb"[ \t]*#[ \t]*pragma[ \t]+once\b", head):
        end = data.find(b"\n", offset)
        return len(data) if end == -1 else end + 1
    guard = INCLUDE_GUARD.match(head)
    if guard and re.search(rb"^[ \t]*#[ \t]*define[ \t]+" + guard.group(1) + rb"\b", head, re.M):
        return offset + guard.end()
    match = re.search(rb"^[ \t]*#[ \t]*include\b", data, re.MULTILINE)
    if match and not _inside_braces(data, match.start()):
        return match.start()
    return offset


def _needs_runtime(scan: FileScan) -> bool:
    if scan.kernels or any(fn.is_device for fn in scan.functions):
        return True
    return any(
        u.rule is not None and u.family in NEEDS_RUNTIME_FAMILIES and u.hip != u.name
        for u in scan.uses
    )


HIP_HEADER_INCLUDE = re.compile(
    rb"^[ \t]*#[ \t]*include[ \t]*[<\"](?:hip|rocwmma|roctracer|rccl|miopen)[^>\"]*[>\"]",
    re.MULTILINE,
)


def _runtime_include_needed(text: bytes, scan: FileScan) -> bool:
    """True when hip/hip_runtime.h must be added: the file needs the runtime and does not
    include it, or includes another HIP header first (ROCm's cooperative-groups and
    library headers expect the runtime header before them). A `.cu` file always needs
    it: nvcc includes cuda_runtime.h in every one, and code relies on that."""
    runtime = HIP_RUNTIME_INCLUDE.search(text)
    if runtime is not None and _inside_braces(text, runtime.start()):
        runtime = None  # inside `extern "C" {`: one more at the top level comes first
    first_hip = HIP_HEADER_INCLUDE.search(text)
    if runtime is None:
        return _needs_runtime(scan) or first_hip is not None or scan.path.endswith(".cu")
    return first_hip is not None and first_hip.start() < runtime.start()


def _source_offsets(data: bytes, encoding: str, offsets: set[int]) -> dict[int, int]:
    """Map offsets in the UTF-8 text the parser read to offsets in the file's own bytes.

    The file was read either as UTF-8 (the same bytes) or with a one-byte-per-character
    code page (cp1252, latin-1): there, an offset is the number of characters before it.
    Every edit starts and ends between characters (tokens, line ends)."""
    if encoding in ("utf-8", "utf-8-sig"):
        return {offset: offset for offset in offsets}
    mapping, characters, previous = {}, 0, 0
    for offset in sorted(offsets):
        characters += len(data[previous:offset].decode("utf-8"))
        mapping[offset] = characters
        previous = offset
    return mapping


def _line_ending(text: bytes) -> bytes:
    """The file's own line ending (that of its first line): CRLF or LF."""
    first = text.find(b"\n")
    return b"\r\n" if first > 0 and text[first - 1 : first] == b"\r" else b"\n"


def _inject_runtime_include(text: bytes) -> tuple[bytes, int]:
    """`text` with `#include <hip/hip_runtime.h>` added, and the 1-based line it is on."""
    eol = _line_ending(text)
    include = f"#include <{HIP_RUNTIME_HEADER}>".encode()
    position = _include_position(text)
    if position == len(text) and text and not text.endswith(b"\n"):
        # Only comments, without a final newline: the include goes on a new last line,
        # and the file still ends without one.
        return text + eol + include, text.count(b"\n") + 2
    line = text.count(b"\n", 0, position) + 1
    return text[:position] + include + eol + text[position:], line


def translate_source(
    scanner: FileScanner,
    path: str,
    language: Language,
    raw: bytes,
    add_markers: bool = True,
    scan: FileScan | None = None,
    judge: Callable[[Finding], Finding] | None = None,
    spelling: Spelling | None = None,
    project_files: ProjectFiles | None = None,
) -> Translation:
    """Translate one file's bytes to HIP (`scan`: these bytes' FileScan when a scan has
    made it already).

    `spelling`: the ROCm release to write for (default: the newest the rules know).
    `project_files`: the paths (relative, with "/", like `path`) of the tree's files: a
    quoted include of a CUDA header name that the project has itself beside the file
    (`#include "cuda.h"` of its own util/cuda/cuda.h) is left alone.
    Only the rewritten spans change: the encoding (a latin-1 file stays latin-1), a UTF-8
    byte-order mark, CRLF line endings and a missing final newline are all kept."""
    if scan is None:
        scan = scanner.scan(path, language, raw)
    from portcheck.parse import decode_source
    from portcheck.parse.text import UTF8_BOM

    data, encoding = decode_source(raw)
    spelling = spelling if spelling is not None else Spelling()
    project = project_files if project_files is not None else ProjectFiles()
    edits: list[tuple[int, int, str]] = []
    replacements = 0
    kept_guards = _arch_guards_kept(scan, data)
    legacy_blas = _legacy_cublas(scan)
    for use in scan.uses:
        if use.span.start_byte in kept_guards or _own_header(use, data, path, project):
            continue
        if legacy_blas and use.kind == "function" and legacy_blas(use.name):
            continue
        found = _release_edits(use, data, spelling) or _launch_edits(use, data)
        if not found:
            edit = _edit_for(use, data, spelling)
            found = [edit] if edit is not None else []
        if found:
            replacements += 1
            edits += found
            if use.name in ARGUMENT_EDITS:
                arguments = _call_arguments(data, use.span.end_byte)
                if arguments:
                    edits += argument_edits(use.name, data, arguments, spelling.version_number())
    edits = _without_deleted(edits)
    edits += _vector_operator_demotions(scan, data, spelling)
    edits += _register_removals(data)
    edits += _duplicate_includes(scan.uses, edits, data)
    # unknown-api is left out of the markers: whether the project defines the name itself
    # (CUDA_CHECK in a header) is known only to a whole-project scan, not file by file.
    # A name the chosen release has under another spelling (hip_bfloat16 before 5.7) is
    # written that way: its "no HIP equivalent in this release" finding gets no marker.
    respelled = {
        use.span.start_byte
        for use in scan.uses
        if use.rule is not None and spelling.hip(use.rule) != use.rule.hip
    }
    marked = [
        f
        for f in scan.findings
        if f.slug != UNKNOWN_API
        and not (f.slug == "unsupported-api" and f.span.start_byte in respelled)
    ]
    if judge is not None:  # only what is a problem on the chosen GPU gets a marker
        marked = [f for f in map(judge, marked) if f.targets.hip is not Status.SUPPORTED]
    markers = _marker_inserts(data, marked) if add_markers else []
    result = Translation(
        path, raw, replacements, len(markers), encoding=encoding, findings=scan.findings
    )
    bom = UTF8_BOM if raw.startswith(UTF8_BOM) else b""
    body = raw[len(bom) :]  # the bytes `data` was decoded from
    pieces = sorted(edits + markers, key=lambda e: (e[0], e[1]))
    offsets = _source_offsets(data, encoding, {o for s, e, _ in pieces for o in (s, e)})
    codec = "utf-8" if encoding.startswith("utf-8") else encoding
    output = bytearray()
    cursor = 0  # in `data`; body[offsets[cursor]:] is still to be copied
    for start, end, replacement in pieces:
        if start < cursor:
            continue  # overlapping edits cannot happen with disjoint use spans; be safe
        output += body[offsets.get(cursor, 0) : offsets[start]] + replacement.encode(codec)
        cursor = end
    output += body[offsets.get(cursor, 0) :]
    text = bytes(output)
    if _runtime_include_needed(text, scan):
        text, line = _inject_runtime_include(text)
        result.injected_include = True
        result.inserted_lines.append(line)
    result.text = bom + text
    return result
