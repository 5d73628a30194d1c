"""Preprocessor facts of one file, and what they mean for an AMD build.

Owns: the conditional branches of a file (`#if/#ifdef/#elif/#else/#endif`), its
object-like macro definitions and integer constants (`#define WARP_SIZE 32`,
`constexpr int kWarpSize = 32;`), read lexically with comments and string literals
masked, so the result does not depend on the grammar surviving macro-heavy code; and a
small evaluator of `#if` conditions and constant expressions under two configurations:
a build for AMD (hipcc: `__HIP_PLATFORM_AMD__`, `USE_ROCM`, … defined) and a build for
NVIDIA (nvcc). A branch taken only in the AMD build is an *AMD path*; a branch never
taken in the AMD build, in a conditional that tests an AMD guard, is NVIDIA-only code
that already *has an AMD alternative*.

Everything here is plain data (tuples of str/int), so a file's facts are cached with its
scan; the project-level questions (a macro defined from a guard in another header, a
constant defined in another file) are answered in portcheck.project.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import NamedTuple

# Macros that are defined only when building for AMD GPUs (HIP-Clang/hipcc, ROCm builds of
# the big frameworks). Sources: HIP programming guide, "HIP porting guide: identifying HIP
# target platform" (__HIP_PLATFORM_AMD__, __HIP_PLATFORM_HCC__, __HIPCC__, __HIP__,
# __HIP_DEVICE_COMPILE__); projects' own build options (PyTorch USE_ROCM, ggml GGML_USE_HIP,
# TensorFlow TENSORFLOW_USE_ROCM, AMReX AMREX_USE_HIP, Kokkos KOKKOS_ENABLE_HIP, …).
AMD_GUARDS = frozenset(
    {
        "__HIP_PLATFORM_AMD__",
        "__HIP_PLATFORM_HCC__",
        "__HIPCC__",
        "__HIP__",
        "__HIP_DEVICE_COMPILE__",
        "__HIPCC_RTC__",
        "__AMDGCN__",
        "__AMDGPU__",
        "__HIP_ROCclr__",
        "USE_ROCM",
        "USE_HIP",
        "WITH_HIP",
        "WITH_ROCM",
        "PYTORCH_ROCM",
        "GGML_USE_HIP",
        "GGML_USE_HIPBLAS",
        "GGML_HIP",
        "TENSORFLOW_USE_ROCM",
        "AMREX_USE_HIP",
        "KOKKOS_ENABLE_HIP",
        "RAJA_ENABLE_HIP",
        "CUPY_USE_HIP",
        "ENABLE_HIP",
        "HIP_PLATFORM_AMD",
        "__HIP_PLATFORM_AMD",
        "ROCM_PLATFORM",
    }
)
AMD_GUARD_PATTERN = re.compile(r"__gfx\d+[a-z0-9]*__|__GFX\d+__")  # __gfx90a__, __gfx942__
# Of AMD_GUARDS, those a hipcc build defines in its device pass only (the host pass of the
# same build does not): AMD code either way, but not taken by every AMD compilation.
AMD_PASS_GUARDS = frozenset({"__HIP_DEVICE_COMPILE__", "__AMDGCN__", "__AMDGPU__"})
# The CUDA toolkit's version macros: a hipcc build does not define them (HIP has
# HIP_VERSION), unless the project does so itself.
NVIDIA_TOOLKIT_MACROS = frozenset(
    {
        "CUDART_VERSION",
        "CUDA_VERSION",
        "__CUDACC_VER_MAJOR__",
        "__CUDACC_VER_MINOR__",
        "__CUDACC_VER_BUILD__",
        "__CUDA_API_VERSION",
        "__CUDA_VERSION__",
    }
)
# HIP's and ROCm's version macros: hip_version.h (which hip_runtime.h includes) defines
# HIP_VERSION*, and ROCm builds pass ROCM_VERSION* (PyTorch's `-DROCM_VERSION=60200`). Defined,
# value unknown, in an AMD build; an NVIDIA build has none, unless the project defines them.
AMD_TOOLKIT_MACROS = frozenset(
    {
        "HIP_VERSION",
        "HIP_VERSION_MAJOR",
        "HIP_VERSION_MINOR",
        "HIP_VERSION_PATCH",
        "ROCM_VERSION",
        "ROCM_VERSION_MAJOR",
        "ROCM_VERSION_MINOR",
        "ROCM_VERSION_PATCH",
    }
)
# Defined only by nvcc / for NVIDIA device passes: undefined in a hipcc build.
NVIDIA_ONLY = frozenset(
    {
        "__CUDA_ARCH__",
        "__NVCC__",
        "__HIP_PLATFORM_NVIDIA__",
        "__HIP_PLATFORM_NVCC__",
        "__NVCOMPILER",
    }
)

# Comments (an unterminated one runs to the end) and string and character literals (an
# unterminated one to the end of its line). Written "unrolled" (`[^*]*(?:\*+[^*/][^*]*)*`
# rather than `.*?\*/`, `[^"\\\n]*(?:\\.[^"\\\n]*)*` rather than `(?:\\.|[^"\\\n])*`): the
# same matches, without a test of the closing delimiter or a branch per character (40 % less
# time on cuda-samples).
MASKED = re.compile(
    rb"//[^\n]*|/\*[^*]*(?:\*+[^*/][^*]*)*(?:\*+/|\**\Z)"
    # a quote after a digit is a C++14 digit separator (`0xff'ff'ff'ffu`), not a literal;
    # tested after the quote, so that the engine still finds every alternative by its
    # first character (a lookbehind in front made masking 3.6 times slower)
    rb"|\"[^\"\\\n]*(?:\\.[^\"\\\n]*)*(?:\"|$)"
    rb"|'(?<![0-9A-Fa-f]')[^'\\\n]*(?:\\.[^'\\\n]*)*(?:'|$)",
    re.DOTALL | re.MULTILINE,
)
# The rest of the directive runs to the end of the line, over backslash-newlines; written
# unrolled (see MASKED).
DIRECTIVE = re.compile(
    rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif|define|include)\b"
    rb"([^\n\\]*(?:\\[\s\S][^\n\\]*)*)",
    re.MULTILINE,
)
OBJECT_MACRO = re.compile(r"^\s*([A-Za-z_]\w*)(\(.*|\s+.*)?$", re.DOTALL)
# `constexpr int kWarpSize = 32;`, `static const unsigned FULL_MASK = 0xffffffffu;`,
# `constexpr static int WARP{32};`.
CONSTANT_DECL = re.compile(
    rb"\b(?:constexpr|const)\s+(?:static\s+)?"
    rb"(?:(?:unsigned|signed|long|short|int|char|auto|size_t|u?int(?:8|16|32|64)_t|uint)\s+)+"
    rb"([A-Za-z_]\w*)\s*(?:=\s*|\{\s*)([^;{}\n]{1,200}?)\s*\}?\s*;"
)
# `static constexpr int warp_size() { return 32; }`: a function that is a constant.
CONSTANT_FUNCTION = re.compile(
    rb"\bconstexpr\s+(?:static\s+|inline\s+)*(?:[A-Za-z_][\w:]*\s+)+([A-Za-z_]\w*)\s*\(\s*(?:void)?\s*\)"
    rb"\s*(?:const\s*)?(?:noexcept\s*)?\{\s*return\s+([^;{}]{1,100}?)\s*;\s*\}"
)
# `const int tid = threadIdx.x;`, `const float* p = a[i];`: locals, not constants.
NOT_CONSTANT = re.compile(rb"[.\[\]\"]|->|'(?![0-9A-Fa-f])|(?<![0-9A-Fa-f])'")
ENUM_CONSTANT = re.compile(rb"\benum\b[^{;]*\{([^{}]{1,2000})\}")

# Python's regex engine finds a pattern that begins with a literal at memchr speed, but tries
# a leading `\b` or `^[ \t]*` at every byte: ten times slower (cuda-samples, 9.6 MB: 0.09 s
# against 0.009 s per pattern). So the patterns above are searched without their anchor and
# the anchor is checked by hand; a candidate that fails it is retried one byte further on,
# which gives exactly the matches of the whole pattern's finditer.
_WORD_BYTES = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def without_anchor(pattern: re.Pattern[bytes], anchor: bytes) -> re.Pattern[bytes]:
    """`pattern` without its leading `anchor` (`^[ \\t]*` or `\\b`), to search with
    line_start_matches or word_start_matches."""
    if not pattern.pattern.startswith(anchor):
        raise ValueError(f"{pattern.pattern!r} does not begin with {anchor!r}")
    return re.compile(pattern.pattern[len(anchor) :], pattern.flags)


_DIRECTIVE_FROM_HASH = without_anchor(DIRECTIVE, rb"^[ \t]*")
_CONSTANT_DECL_WORD = without_anchor(CONSTANT_DECL, rb"\b")
_CONSTANT_FUNCTION_WORD = without_anchor(CONSTANT_FUNCTION, rb"\b")
_ENUM_CONSTANT_WORD = without_anchor(ENUM_CONSTANT, rb"\b")


def line_start_matches(
    tail: re.Pattern[bytes], text: bytes
) -> Iterator[tuple[int, re.Match[bytes]]]:
    """The matches of `^[ \\t]*` + `tail` (MULTILINE; `tail` begins with a character other
    than a blank or a newline, such as `#`), as (start of the match, the match of `tail`)."""
    position = 0
    search = tail.search
    while (match := search(text, position)) is not None:
        tail_at = match.start()
        start = tail_at
        while start > 0 and text[start - 1] in (32, 9):  # the indentation before it
            start -= 1
        if start >= position and (start == 0 or text[start - 1] == 10):
            yield start, match
            position = match.end()
        else:  # inside a line (`#x` in a macro body)
            position = tail_at + 1


def _directives(text: bytes) -> Iterator[tuple[int, re.Match[bytes]]]:
    """DIRECTIVE.finditer(text) as (start of the match, the match from its `#` on)."""
    return line_start_matches(_DIRECTIVE_FROM_HASH, text)


def word_start_matches(tail: re.Pattern[bytes], text: bytes) -> Iterator[re.Match[bytes]]:
    """The matches of `\b` + `tail` (a pattern that begins with a word character)."""
    position = 0
    search = tail.search
    while (match := search(text, position)) is not None:
        start = match.start()
        if start == 0 or text[start - 1] not in _WORD_BYTES:
            yield match
            position = match.end()
        else:  # inside a longer word (`xconst`)
            position = start + 1


class Branch(NamedTuple):
    """One branch of a conditional: its lines and bytes (from the directive that opens it
    to the one that closes it), the group it belongs to, and its condition written as the
    tests before it (which must be false) and its own test (None for `#else`)."""

    group: int
    start_line: int
    end_line: int
    start_byte: int
    end_byte: int
    prior: tuple[str, ...]
    test: str | None
    directive: str  # the line that opens it, whitespace-normalised (for reports)

    @property
    def tests(self) -> list[str]:
        """Every test its condition reads: those before it, then its own."""
        return [*self.prior, *([self.test] if self.test is not None else [])]


class MacroDef(NamedTuple):
    name: str
    body: str
    offset: int  # of the name
    function_like: bool
    line: int = 0
    column: int = 0  # 1-based, in characters
    text: str = ""  # the line, whitespace-normalised (for a finding's fingerprint)


class ConstantDef(NamedTuple):
    name: str
    expr: str
    offset: int  # of the name
    line: int = 0
    column: int = 0
    text: str = ""


class Invocation(NamedTuple):
    """A call of a macro named for a platform (`AMREX_HIP_OR_CUDA(hip_code, cuda_code)`):
    the byte range of each argument. Whether it picks an argument per platform is known
    only from its definitions (portcheck.project)."""

    name: str
    arguments: tuple[tuple[int, int], ...]


class PreprocFacts(NamedTuple):
    branches: tuple[Branch, ...]
    macros: tuple[MacroDef, ...]
    constants: tuple[ConstantDef, ...]
    invocations: tuple[Invocation, ...] = ()
    # Names passed as the explicit width of a warp shuffle (`__shfl_xor_sync(m, v, o,
    # WARP_SIZE)`, or a template parameter defaulting to one), with the shuffle's offset:
    # a project that does so works in logical groups of that many lanes on purpose.
    shuffle_widths: tuple[tuple[str, int], ...] = ()
    # `if constexpr` branches, as conditional branches (portcheck.constexpr_if)
    constexpr_branches: tuple[Branch, ...] = ()
    # Names given a HIP type (`using __nv_bfloat16 = hip_bfloat16;`, `typedef __hip_fp8_e4m3
    # __nv_fp8_e4m3;`): the project's own spelling of a CUDA type for its AMD build.
    hip_aliases: tuple[str, ...] = ()
    # `#include "…"` (quoted: the project's own headers) as written, with the directive's
    # offset: a header included only in one platform's branch is that platform's code.
    includes: tuple[tuple[str, int], ...] = ()


EMPTY_FACTS = PreprocFacts((), (), ())
# Found from the platform word (a literal the regex engine can search for quickly), then
# widened to the whole upper-case name around it.
# (and `GPU`: microsoft/ark's `ARK_GPU_DEFINE_FUNC_ALIAS(alias, cuda_func, rocm_func)`,
# defined once per platform; a name with no such definitions selects nothing)
PLATFORM_WORDS = (b"HIP", b"CUDA", b"ROCM", b"AMD", b"NVIDIA", b"NVCC", b"GPU")
_UPPER_CALL = rb"[A-Z0-9_]*\s*\("
PLATFORM_WORD = re.compile(rb"(?:" + b"|".join(PLATFORM_WORDS) + rb")" + _UPPER_CALL)
# Searched one word at a time: a pattern that begins with a literal is found quickly, an
# alternation is tried at every upper-case letter (half the time on cuda-samples).
_PLATFORM_WORD_EACH = tuple(re.compile(word + _UPPER_CALL) for word in PLATFORM_WORDS)
UPPER_NAME_CHARS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
MAX_ARGUMENTS_BYTES = 64 * 1024


_BLANK = bytes(10 if b == 10 else 32 for b in range(256))  # every byte but \n -> space


def mask_comments_and_strings(data: bytes) -> bytes:
    """The text with comments and string/char literals blanked (newlines kept), so
    offsets and line numbers stay those of the file."""
    if b"/" not in data and b'"' not in data and b"'" not in data:
        return data

    return MASKED.sub(_blanked, data)


def _blanked(match: re.Match[bytes]) -> bytes:
    return match.group().translate(_BLANK)


def _directive_test(kind: str, rest: str) -> str:
    rest = " ".join(rest.replace("\\\n", " ").split())
    if kind in ("ifdef", "elifdef"):
        return f"defined({rest.split()[0]})" if rest else "0"
    if kind in ("ifndef", "elifndef"):
        return f"!defined({rest.split()[0]})" if rest else "1"
    return rest or "0"


def preprocessor_facts(data: bytes) -> PreprocFacts:
    """The conditional branches, object-like macros and integer constants of a file."""
    if b"#" not in data and b"const" not in data and b"enum" not in data:
        return EMPTY_FACTS
    masked = mask_comments_and_strings(data)
    branches: list[Branch] = []
    macros: list[MacroDef] = []
    includes: list[tuple[str, int]] = []
    # An open group: (group id, tests so far, open branch's start line/byte/test/directive)
    stack: list[tuple[int, list[str], int, int, str | None, str]] = []
    groups = 0
    line = 1
    position = 0

    def close(entry: tuple[int, list[str], int, int, str | None, str], end_line: int, end: int):
        group, tests, start_line, start_byte, test, directive = entry
        prior = tuple(tests[:-1]) if test is not None else tuple(tests)
        branches.append(
            Branch(group, start_line, end_line, start_byte, end, prior, test, directive)
        )

    if b"#" in masked:
        for start, match in _directives(masked):
            line += masked.count(b"\n", position, start)
            position = start
            kind = match.group(1).decode()
            rest = match.group(2).decode("utf-8", "replace")
            if kind == "endif":
                if stack:
                    close(stack.pop(), line, match.end())
                continue
            if kind == "include":
                # the path is a string, blanked in `masked`: read from the text
                quoted = QUOTED_PATH.match(data, match.start(2), match.end(2))
                if quoted is not None:
                    includes.append((quoted.group(1).decode("utf-8", "replace"), start))
                continue
            if kind == "define":
                defined = OBJECT_MACRO.match(rest)
                if defined is not None:
                    name = defined.group(1)
                    after = rest[len(rest) - len(rest.lstrip()) + len(name) :]
                    body = " ".join((defined.group(2) or "").replace("\\\n", " ").split())
                    offset = match.start(2) + len(rest) - len(rest.lstrip())
                    column = offset - data.rfind(b"\n", 0, offset)  # ASCII up to a name
                    text = f"#define {name} {body}"
                    function_like = after.startswith("(")
                    macros.append(MacroDef(name, body, offset, function_like, line, column, text))
                continue
            directive = " ".join(f"#{kind} {rest.replace(chr(92) + chr(10), ' ')}".split())
            if kind in ("if", "ifdef", "ifndef"):
                test = _directive_test(kind, rest)
                stack.append((groups, [test], line, start, test, directive))
                groups += 1
            elif kind in ("elif", "elifdef", "elifndef", "else") and stack:
                entry = stack.pop()
                close(entry, line, start)
                tests = entry[1]
                own: str | None = None if kind == "else" else _directive_test(kind, rest)
                if own is not None:
                    tests.append(own)
                stack.append((entry[0], tests, line, start, own, directive))
        end_line = line + masked.count(b"\n", position)
        while stack:  # unterminated: the branch runs to the end of the file
            close(stack.pop(), end_line, len(data))
    constants = (
        [
            ConstantDef(
                m.group(1).decode(),
                m.group(2).decode("utf-8", "replace").strip(),
                m.start(1),
                *_where(data, m.start(1)),
            )
            for m in word_start_matches(_CONSTANT_DECL_WORD, masked)
            if NOT_CONSTANT.search(m.group(2)) is None
        ]
        if b"const" in masked
        else []
    )
    if b"enum" in masked:
        constants.extend(_enum_constants(data, masked))
    if b"constexpr" in masked:
        constants.extend(
            ConstantDef(
                m.group(1).decode(),
                m.group(2).decode("utf-8", "replace").strip(),
                m.start(1),
                *_where(data, m.start(1)),
            )
            for m in word_start_matches(_CONSTANT_FUNCTION_WORD, masked)
        )
    branches.sort(key=lambda b: b.start_byte)
    invocations = tuple(_platform_invocations(masked)) if b"(" in masked else ()
    widths = tuple(shuffle_width_names(masked)) if b"__shfl" in masked else ()
    aliases = (
        tuple(
            sorted(
                {
                    m.group(1).decode()
                    for pattern in HIP_ALIASES
                    for m in pattern.finditer(masked)
                    if not masked[m.start() - 1 : m.start()].isalnum()
                }
            )
        )
        if b"hip" in masked or b"HIP" in masked
        else ()
    )
    return PreprocFacts(
        tuple(branches),
        tuple(macros),
        tuple(constants),
        invocations,
        widths,
        (),
        aliases,
        tuple(includes),
    )


QUOTED_PATH = re.compile(rb'[ \t]*"([^"\n]+)"')


# Each begins with its keyword, which the regex engine finds at memchr speed.
HIP_ALIASES = (
    re.compile(rb"using\s+([A-Za-z_]\w*)\s*=\s*(?:struct\s+)?(?:hip|HIP|__hip)\w*\s*;"),
    re.compile(rb"typedef\s+(?:struct\s+)?(?:hip|HIP|__hip)\w*\s+([A-Za-z_]\w*)\s*;"),
)


SHUFFLE = re.compile(rb"\b__shfl(?:_xor|_up|_down)?(_sync)?\s*\(")
DEFAULTED_PARAMETER = re.compile(
    rb"\b(?:int|unsigned)\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*[,>]"
)


def top_level_arguments(text: bytes, start: int) -> list[bytes]:
    """The top-level arguments of the call whose `(` ends at `start`."""
    arguments: list[bytes] = []
    depth = 0
    begin = start
    for position in range(start, min(len(text), start + 4096)):
        char = text[position]
        if char in b"([{":
            depth += 1
        elif char in b")]}":
            if depth == 0:
                arguments.append(text[begin:position].strip())
                return arguments
            depth -= 1
        elif char == 44 and depth == 0:
            arguments.append(text[begin:position].strip())
            begin = position + 1
    return arguments


def shuffle_width_names(text: bytes) -> list[tuple[str, int]]:
    """(name, offset of the shuffle) for each shuffle given a name as its explicit width."""
    defaults = {m.group(1): m.group(2) for m in DEFAULTED_PARAMETER.finditer(text)}
    names: list[tuple[str, int]] = []
    for match in SHUFFLE.finditer(text):
        arguments = top_level_arguments(text, match.end())
        position = 3 if match.group(1) else 2
        if len(arguments) > position and re.fullmatch(rb"[A-Za-z_]\w*", arguments[position]):
            name = arguments[position]
            names.append((defaults.get(name, name).decode(), match.start()))
    return names


def _platform_calls(masked: bytes) -> Iterable[tuple[str, int]]:
    """(name, offset after its `(`) of each call of an upper-case name with a platform
    word in it (`AMREX_HIP_OR_CUDA(`)."""
    # PLATFORM_WORD.finditer finds one match per `(`, and every platform word in a name
    # leads to the same name: so the matches of each word, one per `(`, in order.
    calls: dict[int, int] = {}  # offset after the `(` -> where a platform word starts
    for pattern in _PLATFORM_WORD_EACH:
        for match in pattern.finditer(masked):
            calls.setdefault(match.end(), match.start())
    for end in sorted(calls):
        start = calls[end]
        while start > 0 and masked[start - 1] in UPPER_NAME_CHARS:
            start -= 1
        if start > 0 and (chr(masked[start - 1]).isalnum() or masked[start - 1] == 95):
            continue  # part of a lower-case identifier
        if masked[start] in b"0123456789":
            continue
        yield masked[start : end - 1].rstrip().decode(), end


def _platform_invocations(masked: bytes) -> Iterable[Invocation]:
    for name, after in _platform_calls(masked):
        arguments: list[tuple[int, int]] = []
        depth = 0
        start = after
        limit = min(len(masked), start + MAX_ARGUMENTS_BYTES)
        position = start
        while position < limit:
            char = masked[position]
            if char in b"([{":
                depth += 1
            elif char in b")]}":
                if depth == 0:
                    arguments.append((start, position))
                    yield Invocation(name, tuple(arguments))
                    break
                depth -= 1
            elif char == 44 and depth == 0:  # ","
                arguments.append((start, position))
                start = position + 1
            position += 1


_newlines: tuple[bytes, list[int]] = (b"", [])  # (the text, its newline offsets)


def _line_of(data: bytes, offset: int) -> int:
    """1-based line of `offset`, with one index of newlines per text (not a count from
    the start of the file for each definition)."""
    global _newlines
    if _newlines[0] is not data:  # the object itself: an id can be reused by another text
        _newlines = (data, [m.start() for m in re.finditer(b"\n", data)])
    return bisect.bisect_left(_newlines[1], offset) + 1


def _where(data: bytes, offset: int, line: int = 0) -> tuple[int, int, str]:
    """(line, column, normalised line text) of a byte offset."""
    start = data.rfind(b"\n", 0, offset) + 1
    end = data.find(b"\n", offset)
    text = data[start : end if end != -1 else len(data)]
    number = line or _line_of(data, offset)
    column = len(data[start:offset].decode("utf-8", "replace")) + 1
    return number, column, " ".join(text.decode("utf-8", "replace").split())


def _enum_constants(data: bytes, masked: bytes) -> Iterable[ConstantDef]:
    for match in word_start_matches(_ENUM_CONSTANT_WORD, masked):
        body_start = match.start(1)
        for item in re.finditer(rb"([A-Za-z_]\w*)\s*=\s*([^,]+)", match.group(1)):
            offset = body_start + item.start(1)
            yield ConstantDef(
                item.group(1).decode(),
                item.group(2).decode("utf-8", "replace").strip(),
                offset,
                *_where(data, offset),
            )


# -- evaluation ---------------------------------------------------------------------------

TOKEN = re.compile(
    # C++14 digit separators (`0xff'ff'ff'ffu`, `1'000`) are part of a number
    r"\s*(?:(?P<num>0[xX][0-9a-fA-F]+(?:'[0-9a-fA-F]+)*|\d+(?:'\d+)*)[uUlL]*"
    r"|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>&&|\|\||==|!=|<=|>=|<<|>>|[!<>()+\-*/%&|^~?:,]))"
)
UNKNOWN = None
Value = int | None  # None: not known in this configuration

# name -> value; a name absent from the mapping is unknown; UNDEFINED marks a name known
# not to be defined (its `defined()` is 0 and, in `#if`, its value 0).
UNDEFINED = object()
DEFINED = object()  # defined, with a value that is not known
Environment = Callable[[str], object]


# C++'s alternative spellings of operators, which are operators in `#if` too.
ALTERNATIVE_TOKENS = {
    "and": "&&",
    "or": "||",
    "not": "!",
    "bitand": "&",
    "bitor": "|",
    "xor": "^",
    "compl": "~",
    "not_eq": "!=",
}


@lru_cache(maxsize=4096)
def tokens(expr: str) -> list[tuple[str, str]] | None:
    """(kind, text) tokens of an expression; None when it has something we do not read."""
    found: list[tuple[str, str]] = []
    position = 0
    expr = expr.strip()
    while position < len(expr):
        match = TOKEN.match(expr, position)
        if match is None or match.end() == position:
            return None
        kind = match.lastgroup or "op"
        text = match.group(kind)
        if kind == "name" and text in ALTERNATIVE_TOKENS:  # `#if defined(X) and not Y`
            kind, text = "op", ALTERNATIVE_TOKENS[text]
        found.append((kind, text))
        position = match.end()
    return found


# An expression is compiled once into a tree of closures (cached by its text), then run
# against each configuration: conditions such as `defined(__CUDA_ARCH__)` recur in hundreds
# of files and are evaluated for an AMD and an NVIDIA build (parsing each time was most of
# the project's AMD-path analysis).
Compiled = Callable[[Environment], Value]

BINARY_PRECEDENCE = {
    "||": 1,
    "&&": 2,
    "|": 3,
    "^": 4,
    "&": 5,
    "==": 6,
    "!=": 6,
    "<": 7,
    ">": 7,
    "<=": 7,
    ">=": 7,
    "<<": 8,
    ">>": 8,
    "+": 9,
    "-": 9,
    "*": 10,
    "/": 10,
    "%": 10,
}


class _Compiler:
    """Precedence climbing over the tokens, producing closures with three-valued results
    (None = unknown). Raises ValueError or IndexError on text it does not read."""

    def __init__(self, items: list[tuple[str, str]], in_if: bool) -> None:
        self.items = items
        self.position = 0
        self.in_if = in_if  # `#if`: an undefined name is 0; elsewhere it is unknown
        self.depth = 0

    def peek(self) -> str | None:
        return self.items[self.position][1] if self.position < len(self.items) else None

    def take(self) -> tuple[str, str]:
        item = self.items[self.position]
        self.position += 1
        return item

    def expression(self, level: int = 1) -> Compiled:
        self.depth += 1
        if self.depth > 200:
            raise ValueError("expression too deep")
        left = self.unary()
        while True:
            op = self.peek()
            if op == "?":
                self.take()
                yes = self.expression()
                if self.peek() != ":":
                    raise ValueError("bad ternary")
                self.take()
                no = self.expression()
                left = _ternary(left, yes, no)
                continue
            precedence = BINARY_PRECEDENCE.get(op or "")
            if precedence is None or precedence < level:
                break
            self.take()
            right = self.expression(precedence + 1)
            left = _binary(op or "", left, right, self.in_if)
        self.depth -= 1
        return left

    def unary(self) -> Compiled:
        if self.position >= len(self.items):
            raise ValueError("unexpected end")
        kind, text = self.take()
        if text == "(":
            inner = self.expression()
            if self.peek() == ")":
                self.take()
            return inner
        if text in ("!", "-", "~"):
            return _unary(text, self.unary())
        if text == "+":
            return self.unary()
        if kind == "num":
            return _constant(int(text.replace("'", ""), 0))
        if kind == "name":
            if text in ("true", "false"):
                return _constant(int(text == "true"))
            if text == "defined":
                parenthesised = self.peek() == "("
                if parenthesised:
                    self.take()
                _, name = self.take()
                if parenthesised and self.peek() == ")":
                    self.take()
                return _defined(name)
            if self.peek() == "(":  # a function-like macro: not evaluated...
                start = self.position
                self._skip_call()
                inside = self.items[start + 1 : self.position - 1]
                if len(inside) == 1 and inside[0][0] == "name" and _platform_switch(inside[0][1]):
                    # ...but for a test of a platform switch (PETSc's `PetscDefined(HAVE_HIP)`,
                    # `IS_ENABLED(USE_ROCM)`): whether the switch is set
                    return _defined(inside[0][1])
                return _constant(UNKNOWN)
            return _name(text, self.in_if)
        raise ValueError(f"unexpected {text!r}")

    def _skip_call(self) -> None:
        depth = 0
        while self.position < len(self.items):
            _, text = self.take()
            if text == "(":
                depth += 1
            elif text == ")":
                depth -= 1
                if depth == 0:
                    return


def _constant(value: Value) -> Compiled:
    return lambda env: value


def _defined(name: str) -> Compiled:
    def run(env: Environment) -> Value:
        found = env(name)
        if found is UNDEFINED:
            return 0
        return None if found is None else 1

    return run


def _name(name: str, in_if: bool) -> Compiled:
    def run(env: Environment) -> Value:
        found = env(name)
        if found is UNDEFINED:
            return 0 if in_if else UNKNOWN
        if found is True:
            return 1
        return found if isinstance(found, int) else UNKNOWN

    return run


def _unary(op: str, operand: Compiled) -> Compiled:
    def run(env: Environment) -> Value:
        value = operand(env)
        if value is None:
            return None
        if op == "!":
            return int(not value)
        return -value if op == "-" else (~value) & 0xFFFFFFFFFFFFFFFF

    return run


def _ternary(condition: Compiled, yes: Compiled, no: Compiled) -> Compiled:
    def run(env: Environment) -> Value:
        test, if_yes, if_no = condition(env), yes(env), no(env)  # every name is looked up
        return UNKNOWN if test is None else (if_yes if test else if_no)

    return run


def _binary(op: str, left: Compiled, right: Compiled, in_if: bool = False) -> Compiled:
    def run(env: Environment) -> Value:
        a, b = left(env), right(env)
        if in_if and op == "|" and (a is None) != (b is None) and (a or b):
            # `#elif (defined(__HIPCC__) | CUTENSOR_VERSION >= 10700)`: a bitwise or written
            # for a logical one; with one side set the test is true, whatever the other
            return a if b is None else b
        if op in ("&", "*") and (a == 0 or b == 0):
            return 0
        return _apply(op, a, b)

    return run


def _apply(op: str, left: Value, right: Value) -> Value:
    if op == "&&":
        if left == 0 or right == 0:
            return 0
        return None if left is None or right is None else 1
    if op == "||":
        if (left is not None and left != 0) or (right is not None and right != 0):
            return 1
        return None if left is None or right is None else 0
    if left is None or right is None:
        return None
    try:
        return {
            "|": lambda: left | right,
            "^": lambda: left ^ right,
            "&": lambda: left & right,
            "==": lambda: int(left == right),
            "!=": lambda: int(left != right),
            "<": lambda: int(left < right),
            ">": lambda: int(left > right),
            "<=": lambda: int(left <= right),
            ">=": lambda: int(left >= right),
            "<<": lambda: left << right if 0 <= right < 128 else None,
            ">>": lambda: left >> right if 0 <= right < 128 else None,
            "+": lambda: left + right,
            "-": lambda: left - right,
            "*": lambda: left * right,
            "/": lambda: int(left / right) if right else None,
            "%": lambda: left % right if right else None,
        }[op]()
    except (KeyError, OverflowError):
        return None


@lru_cache(maxsize=8192)
def compiled(expr: str, in_if: bool) -> Compiled | None:
    """The expression as a function of the configuration; None when it has something
    this evaluator does not read."""
    items = tokens(expr)
    if not items:
        return None
    try:
        compiler = _Compiler(items, in_if)
        run = compiler.expression()
    except (ValueError, IndexError):
        return None
    return run if compiler.position == len(items) else None


def evaluate(expr: str, env: Environment, in_if: bool = True) -> Value:
    """The value of a preprocessor condition or integer constant expression; None when it
    depends on something unknown or is not an expression this evaluator reads."""
    run = compiled(expr, in_if)
    return None if run is None else run(env)


# What hipcc and the ROCm builds of the frameworks define from the ROCm release (HIP's
# hip_version.h: HIP_VERSION = major * 10,000,000 + minor * 100,000 + patch; PyTorch's
# TORCH_HIP_VERSION and the ROCM_VERSION its CMake passes).
HIP_RELEASE_MACROS = frozenset(
    {
        "HIP_VERSION",
        "HIP_VERSION_MAJOR",
        "HIP_VERSION_MINOR",
        "HIP_VERSION_PATCH",
        "TORCH_HIP_VERSION",
        "ROCM_VERSION",
        "ROCM_VERSION_MAJOR",
        "ROCM_VERSION_MINOR",
        "ROCM_VERSION_PATCH",
    }
)


def amd_takes_in_some_release(expr: str, amd: Environment) -> bool:
    """Does an AMD build take `expr` (= 1) with the release macros at one extreme or the
    other? `GKO_HIP && HIP_VERSION >= 60200000 || __CUDA_ARCH__ >= 800`: the project lets
    AMD in from ROCm 6.2 and gives older releases its fallback, so AMD is accounted for
    whichever release the team has. Only monotone tests are read that way (an `==` on
    one release is not)."""
    if not any(name in HIP_RELEASE_MACROS for name in names_in(expr)):
        return False
    for extreme in (0, 10**9):

        def env(name: str, extreme: int = extreme) -> object:
            return extreme if name in HIP_RELEASE_MACROS else amd(name)

        if evaluate(expr, env) == 1:
            return True
    return False


NAME = re.compile(r"[A-Za-z_]\w*")


def names_in(expr: str) -> set[str]:
    return set(NAME.findall(expr)) - {"defined"}


def is_amd_guard(name: str) -> bool:
    return name in AMD_GUARDS or AMD_GUARD_PATTERN.fullmatch(name) is not None


# A macro the project tests but does not define, whose name ends in a platform word
# (`BNB_HIP`, `IS_ROCM`, `PLATFORM_AMD`, `GINKGO_HIP_PLATFORM_HCC` — HCC is the old name of
# HIP's AMD platform, as in `__HIP_PLATFORM_HCC__`), is taken for an AMD guard set by the
# build. Only at the end (or before `_ENABLED`, RELION's `_HIP_ENABLED`): `GGML_HIP_NO_MMQ_MFMA`
# is an option *of* the AMD build, not a guard.
# A switch named after a library only ROCm has (`HAS_ROCTRACER`, `USE_MIOPEN`,
# `HYPRE_USING_ROCSPARSE`) is one too: no NVIDIA build links it.
# What may follow the platform's word in a switch's name: `AMREX_USE_HIP`, `HIP_ENABLED`,
# ELPA's `WITH_AMD_GPU_VERSION`, `USE_AMD_GPU`, `CUDA_SUPPORT`.
SWITCH_SUFFIX = r"(?:_ENABLED|_GPUS?|_GPU_VERSION|_GPU_SUPPORT|_SUPPORT)?"
PLATFORM_NAME = re.compile(
    r"(?:^|_)(?:HIP|HIPCC|HCC|ROCM|AMD|AMDGPU"
    r"|ROCTRACER|ROCPROFILER|ROCTX|MIOPEN|RCCL|ROCBLAS|ROCSPARSE|ROCSOLVER|ROCFFT|ROCRAND"
    r")" + SWITCH_SUFFIX + r"_*$"
    # the target's architecture, set only when building for that platform (microsoft/ark's
    # `ARK_TARGET_ROCM_ARCH=gfx942` beside `ARK_TARGET_CUDA_ARCH=800`)
    r"|^[A-Za-z]\w*_(?:HIP|ROCM|AMD|AMDGPU)_ARCH$"
)


# `EIGEN_NO_HIP`, `DISABLE_ROCM`: a switch that turns the AMD build's code off, not one that
# is on in it.
OPT_OUT = re.compile(r"(?:^|_)(?:NO|DISABLE|DISABLED|WITHOUT|SKIP|NOT)_")


def looks_like_amd_guard(name: str) -> bool:
    return PLATFORM_NAME.search(name) is not None and OPT_OUT.search(name) is None


def amd_opt_out(name: str) -> bool:
    """`EIGEN_NO_HIP`: set only by a user who wants the AMD code left out."""
    return PLATFORM_NAME.search(name) is not None and OPT_OUT.search(name) is not None


def _platform_switch(name: str) -> bool:
    """Is `name` a platform's switch (an AMD, NVIDIA or other GPU platform's guard)?"""
    return (
        is_amd_guard(name)
        or looks_like_amd_guard(name)
        or looks_like_nvidia_guard(name)
        or looks_like_other_dialect_guard(name)
        or looks_like_third_platform_guard(name)
    )


# The NVIDIA side's build switches (`AMREX_USE_CUDA`, `WITH_CUDA`, `KOKKOS_ENABLE_CUDA`,
# cp2k's `__OFFLOAD_CUDA`: a name ending in the platform word, as PLATFORM_NAME for AMD's),
# and a project's copy of HIP's NVIDIA-platform macro (`GINKGO_HIP_PLATFORM_NVCC`, like
# `__HIP_PLATFORM_NVIDIA__`), when the project does not define them itself: undefined (or
# 0) in an AMD build. One an AMD build sets too (a test for AMD nested inside it) is
# ProjectFacts' business.
# A switch named after a library only NVIDIA has (kineto's `HAS_CUPTI`, `USE_CUDNN`,
# `HYPRE_USING_CUSPARSE`: ROCm's counterparts go by other names) is read the same way, and so
# is one named after an NVIDIA-only tool (Aluminum's `AL_HAS_NVPROF`, `USE_NVTX`: ROCm
# profiles through roctx, and its SHMEM and SMI libraries have other names), or after
# NVIDIA's assembly (`USE_PTX`, `__PTX__`: inline PTX compiled only when asked for, beside
# a portable `#else`).
NVIDIA_NAME = re.compile(
    r"(?:^|_)(?:CUDA|CUPTI|CUDNN|CUBLAS|CUBLASLT|CUSPARSE|CUSOLVER|CUFFT|CURAND|CUTLASS"
    r"|NVPROF|NVTX|NVSHMEM|NVML|PTX)" + SWITCH_SUFFIX + r"_?_?$"
    r"|(?:^|_)NVIDIA(?:_GPUS?|_GPU_VERSION|_GPU_SUPPORT|_SUPPORT)_?_?$"
    r"|(?:^|_)PLATFORM_(?:NVCC|NVIDIA)_?_?$"
    r"|^[A-Za-z]\w*_CUDA_ARCH$"  # (as PLATFORM_NAME's `_ROCM_ARCH`; not `__CUDA_ARCH__`)
)


def looks_like_nvidia_guard(name: str) -> bool:
    return NVIDIA_NAME.search(name) is not None


# Other vendors' compilers of CUDA sources (Moore Threads' MUSA builds the same files with
# `-DGGML_USE_MUSA`, `__MUSA_ARCH__`; MetaX's MACA, Biren's SUPA and Iluvatar's CoreX, as
# Mooncake's CMake options name them, `-DUSE_MACA` beside `-DUSE_CUDA` and `-DUSE_HIP`): a
# hipcc build is never one of them, so their switches are undefined there, whatever the
# NVIDIA build makes of them.
OTHER_CUDA_DIALECT = re.compile(
    r"(?:^|_)(?:USE|WITH|ENABLE)_(?:MUSA|MACA|SUPA|COREX)$|^__MUSA\w*__$"
)


def looks_like_other_dialect_guard(name: str) -> bool:
    return OTHER_CUDA_DIALECT.search(name) is not None


# Switches of a third GPU platform that is not CUDA at all (jax's `JAX_GPU_ONEAPI`, hypre's
# `HYPRE_USING_SYCL`, cp2k's `__OFFLOAD_OPENCL`): neither an NVIDIA nor an AMD build sets them.
THIRD_PLATFORM = re.compile(
    r"(?:^|_)(?:SYCL|ONEAPI|OPENCL|DPCPP)" + SWITCH_SUFFIX + r"_?_?$"
    r"|(?:^|_)INTEL(?:_GPUS?|_GPU_VERSION|_GPU_SUPPORT)_?_?$"
)


# Set only by a SYCL compiler (DPC++, AdaptiveCpp), never by nvcc or hipcc.
SYCL_COMPILER_MACRO = re.compile(
    r"__SYCL_DEVICE_ONLY__|SYCL_LANGUAGE_VERSION|CL_SYCL_LANGUAGE_VERSION|__SYCL_COMPILER_VERSION"
    r"|__LIBSYCL_(?:MAJOR|MINOR)_VERSION|__ACPP__|__HIPSYCL__"
)


def looks_like_third_platform_guard(name: str) -> bool:
    return THIRD_PLATFORM.search(name) is not None or name in IDE_ONLY


# Defined only by an IDE's code model, never by a build (DeepEP's `#ifdef __CLION_IDE__`
# stubs): no vendor's compiler takes such a branch.
IDE_ONLY = frozenset({"__CLION_IDE__", "__JETBRAINS_IDE__", "__INTELLISENSE__", "__RESHARPER__"})


# The wavefront width of an AMD build: hip-clang's `__AMDGCN_WAVEFRONT_SIZE` or the width a
# project's build passes (`-DROCM_WAVEFRONT_SIZE=64`). 64 or 32 by GPU; the default target is
# any AMD GPU, so it is taken as 64, the width at which 32-lane code breaks (a wave32 target
# is credited per finding, see the target profile).
WAVEFRONT_MACRO = re.compile(r"(?:^|_)WAVEFRONT_SIZE(?:__)?$")
AMD_WAVEFRONT = 64


def unless_defined(name: str, amd: bool) -> object:
    """What `name` is in a build for AMD (amd=True) or NVIDIA when the project's own code
    does not decide it: the platform guards and what the build system sets (`-DBNB_HIP`,
    `-DAMREX_USE_CUDA`), the toolkit's own macros (`__CUDA_ARCH__`, `CUDART_VERSION`), the
    wavefront width."""
    if amd and WAVEFRONT_MACRO.search(name):
        return AMD_WAVEFRONT
    if name in AMD_PASS_GUARDS or AMD_GUARD_PATTERN.fullmatch(name):
        # `__gfx90a__`, `__GFX9__`: set only when compiling for that GPU; `__AMDGCN__`,
        # `__HIP_DEVICE_COMPILE__`: only in the device pass. Some AMD builds take the
        # branch, some not (FBGEMM's `#elif defined(__GFX9__) 64 #elif
        # defined(__HIP_DEVICE_COMPILE__) 32` is AMD code both ways); NVIDIA never.
        return None if amd else UNDEFINED
    if is_amd_guard(name) or looks_like_amd_guard(name):
        return 1 if amd else UNDEFINED
    if name in AMD_TOOLKIT_MACROS:
        return DEFINED if amd else UNDEFINED
    if name in NVIDIA_ONLY or name in NVIDIA_TOOLKIT_MACROS or looks_like_nvidia_guard(name):
        return UNDEFINED if amd else None
    if looks_like_other_dialect_guard(name):
        return UNDEFINED if amd else None
    if looks_like_third_platform_guard(name):
        return UNDEFINED
    return None


# What only a device pass defines: `__CUDA_ARCH__` (nvcc), `__HIP_DEVICE_COMPILE__`,
# `__AMDGCN__`, `__AMDGPU__`, `__gfx90a__` (hipcc), `__NVPTX__` (clang's CUDA).
DEVICE_PASS_MACROS = frozenset({"__CUDA_ARCH__", "__NVPTX__", *AMD_PASS_GUARDS})


def _host_pass(amd: bool) -> Environment:
    """A host pass of a build for AMD or NVIDIA: no device-pass macro is defined."""

    def env(name: str) -> object:
        if name in DEVICE_PASS_MACROS or AMD_GUARD_PATTERN.fullmatch(name):
            return UNDEFINED
        return unless_defined(name, amd)

    return env


_HOST_PASSES = (_host_pass(False), _host_pass(True))


def device_pass_spans(data: bytes, facts: PreprocFacts) -> list[tuple[int, int]]:
    """The byte ranges (after each opening directive's line) of the branches that only a
    device pass compiles: every test before and of the branch names a device-pass macro
    somewhere and no host pass, NVIDIA's or AMD's, takes it (`#ifdef __CUDA_ARCH__`,
    `#if (defined(X_CUDA) && defined(__CUDA_ARCH__)) || (defined(X_HIP) &&
    defined(__HIP_DEVICE_COMPILE__))`). Code there is device code whatever declares the
    function around it (alpaka's `ALPAKA_FN_ACC`, a macro from outside the project)."""
    spans = []
    for branch in facts.branches:
        if not any(DEVICE_PASS_MACROS & names_in(t) for t in branch.tests):
            continue
        if all(branch_condition_value(branch, env) == 0 for env in _HOST_PASSES):
            body = data.find(b"\n", branch.start_byte, branch.end_byte)
            if body != -1:
                spans.append((body + 1, branch.end_byte))
    return spans


def branch_condition_value(
    branch: Branch, env: Environment, priors: tuple[Value] | None = None
) -> Value:
    """Whether `branch` is taken: every prior test false and its own test (if any) true.
    `priors`: (the value of "every prior test false",) when the caller knows it already."""
    result: Value = 1
    if priors is not None:
        result = priors[0]
    else:
        for test in branch.prior:
            result = and_not(result, evaluate(test, env))
            if result == 0:
                return 0
    if result == 0:
        return 0
    if branch.test is not None:
        result = _apply("&&", result, evaluate(branch.test, env))
    return result


def and_not(result: Value, value: Value) -> Value:
    """`result && !value` in the three-valued logic (None: unknown)."""
    return _apply("&&", result, None if value is None else int(not value))


_BLANK_ALL = bytes(b if b == 0x0A else 0x20 for b in range(256))


def nvidia_view(data: bytes, facts: PreprocFacts) -> bytes | None:
    """The file as a parser should read it where the file's own tests tell the platforms
    apart: each branch only an AMD build takes is blanked, and so are the directive lines
    of its conditional (a directive inside a declaration is an error too), newlines and
    byte offsets kept. None when the file has no such branch. The grammar cannot parse two
    alternatives written into one declaration (`: lane(threadIdx.x & 31)` `#else`
    `: lane(threadIdx.x & (W - 1))`); the NVIDIA one alone it can, and nothing is reported
    inside an AMD path anyway."""
    spans = amd_alternative_spans(data, facts)
    return blanked(data, spans) if spans else None


def amd_alternative_spans(data: bytes, facts: PreprocFacts) -> list[tuple[int, int]]:
    """The bytes nvidia_view blanks: AMD-only branches (by this file's own tests) and the
    directive lines of their conditionals."""
    groups = _conditionals(facts)

    def nvidia(name: str) -> object:
        return unless_defined(name, False)

    def amd(name: str) -> object:
        return unless_defined(name, True)

    spans: list[tuple[int, int]] = []
    for branches in groups.values():
        amd_only = [
            b
            for b in branches
            if branch_condition_value(b, nvidia) == 0 and branch_condition_value(b, amd) != 0
        ]
        if not amd_only:
            continue
        for branch in branches:
            if branch in amd_only:
                spans.append((branch.start_byte, branch.end_byte))
            else:
                spans.append((branch.start_byte, _directive_end(data, branch.start_byte)))
        last = branches[-1]
        endif = _endif_line(data, last)
        if endif > last.start_byte:
            spans.append((endif, last.end_byte))
    return spans


def _conditionals(facts: PreprocFacts) -> dict[int, list[Branch]]:
    """The file's branches by conditional (`#if` … `#endif` group), in order."""
    groups: dict[int, list[Branch]] = {}
    for branch in facts.branches:
        groups.setdefault(branch.group, []).append(branch)
    return groups


def _endif_line(data: bytes, last: Branch) -> int:
    """Where the `#endif` line of a conditional whose last branch is `last` begins (the
    branch's own start when it has no line of its own)."""
    return data.rfind(b"\n", last.start_byte, last.end_byte) + 1


def _ends_whole(body: bytes) -> bool:
    """Does a branch's code (comments and strings masked) end where a construct may end
    (`;`, `}`, a label's `:`), or hold none? Not `int pos(int p, sycl::item& it)` with the
    body after the `#endif`, one header per configuration (Librett's tensorPos): balanced,
    but a part of one declaration. Directive lines are not code."""
    code = b"\n".join(
        line for line in body.splitlines() if not line.lstrip().startswith(b"#")
    ).rstrip()
    return not code or code.endswith((b";", b"}", b":", b"\\"))


NESTED_CONDITIONAL = re.compile(rb"(?m)^[ \t]*#[ \t]*if")


def one_arm_spans(
    data: bytes,
    facts: PreprocFacts,
    touched: Callable[[int, int], bool],
    whole_constructs: bool = False,
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """What a view of one configuration blanks in each conditional with alternatives
    (`#if __cpp_if_constexpr` `if constexpr (…) {` `#else` `if (…) {` `#endif`: two
    openings of one block, which no grammar parses together) that `touched(start, end)`
    says a parse error meets: every branch but the one a current NVIDIA GPU's device pass
    takes (the longest when the tests cannot tell), and the group's directive lines; a lone
    branch (`#ifdef _SYCL_ENABLED` around one parameter) is kept or blanked as that pass
    takes it, kept when the tests cannot tell. Only a
    conditional with a branch that opens more than it closes, or closes more than it
    opens, is taken, unless `whole_constructs`: one of whole constructs mostly parses as it
    is (not three alternatives of one member initializer, `accType(accCUDA)` `#elif`
    `accType(accHIP)` `#else` …), and blanking its other branches drops their code from
    the tree. Newlines and offsets are kept, as nvidia_view's. -> (the spans to blank, the
    code of the branches set aside, without their directive lines: read as text)."""
    groups = _conditionals(facts)
    # The branch kept, by index, per sequence of tests: a conditional that opens a block
    # (`#if X` `} else {` `#endif`) has a twin that closes it further down, which the error
    # need not touch; both take the same branch, or the view's braces no longer pair.
    decided: dict[tuple[tuple[tuple[str, ...], str | None], ...], int | None] = {}
    masked: bytes | None = None
    for branches in groups.values():
        if not touched(branches[0].start_byte, branches[-1].end_byte):
            continue
        masked = masked if masked is not None else mask_comments_and_strings(data)
        bodies = [masked[_directive_end(data, b.start_byte) : b.end_byte] for b in branches]
        if not whole_constructs and all(
            b.count(b"{") == b.count(b"}") and b.count(b"(") == b.count(b")") and _ends_whole(b)
            for b in bodies
        ):
            continue  # whole constructs in each branch: not what breaks the parse
        values = [branch_condition_value(b, newest_nvidia) for b in branches]
        kept = next((i for i, v in enumerate(values) if v == 1), None)
        if (
            len(branches) == 1
            and values[0] is None
            and bodies[0].count(b"{") != bodies[0].count(b"}")
            and NESTED_CONDITIONAL.search(bodies[0]) is None
        ):
            # a lone branch that opens a block it does not close (ELPA's `operator+` with
            # no `}` under `#ifdef WITH_CUCUB_COMPLEX`): blanked, and its twin that closes
            # it, if there is one, alike; kept, it swallows the rest of the file. (Not one
            # with conditionals inside, whose arms may open a block each: an include guard.)
            decided.setdefault(tuple((b.prior, b.test) for b in branches), None)
            continue
        if kept is None and (len(branches) > 1 or values[0] is None):
            # the tests cannot tell: the longest branch (a lone `#ifdef X`'s own code)
            kept = max(
                range(len(branches)), key=lambda i: branches[i].end_byte - branches[i].start_byte
            )
        if whole_constructs and (
            sum(b.end_line - b.start_line for i, b in enumerate(branches) if i != kept)
            > MAX_BLANKED_ALTERNATIVES
        ):
            continue  # whole functions or blocks: their trees are worth more than this parse
        decided.setdefault(tuple((b.prior, b.test) for b in branches), kept)
    spans: list[tuple[int, int]] = []
    set_aside: list[tuple[int, int]] = []
    for branches in groups.values() if decided else ():
        key = tuple((b.prior, b.test) for b in branches)
        if key not in decided:
            continue
        kept = decided[key]
        last = branches[-1]
        endif = _endif_line(data, last)
        for i, branch in enumerate(branches):
            if i == kept:
                spans.append((branch.start_byte, _directive_end(data, branch.start_byte)))
            else:
                spans.append((branch.start_byte, branch.end_byte))
                end = endif if branch is last and endif > branch.start_byte else branch.end_byte
                set_aside.append((_directive_end(data, branch.start_byte), end))
        if kept == len(branches) - 1 and endif > last.start_byte:
            spans.append((endif, last.end_byte))
    return spans, sorted(set_aside)


# Lines of alternatives of whole constructs one_arm_spans may leave out of the parsed view
# (the alternatives of one member initializer or statement are a few lines).
MAX_BLANKED_ALTERNATIVES = 12
NEWEST_ARCH = 1200  # above every compute capability a test in real code compares with


def newest_nvidia(name: str) -> object:
    """The device pass for a current NVIDIA GPU: `__CUDA_ARCH__` is a large number."""
    return NEWEST_ARCH if name == "__CUDA_ARCH__" else unless_defined(name, False)


def blanked(data: bytes, spans: Iterable[tuple[int, int]]) -> bytes:
    """`data` with every byte but newlines in `spans` turned into a space."""
    view = bytearray(data)
    for start, end in spans:
        view[start:end] = data[start:end].translate(_BLANK_ALL)
    return bytes(view)


def _directive_end(data: bytes, start: int) -> int:
    """The end of the (logical, backslash-continued) directive line that begins at `start`."""
    end = data.find(b"\n", start)
    while end > 0 and data[end - 1 : end] == b"\\":
        end = data.find(b"\n", end + 1)
    return len(data) if end == -1 else end
