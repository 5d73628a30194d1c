"""The lexical reader's fast searches give exactly the matches of the plain patterns they
stand for (portcheck.preproc: anchors checked by hand, unrolled loops)."""

from __future__ import annotations

import random
import re

import pytest

from portcheck import preproc
from portcheck.project import _FileFacts

# The patterns as first written: slower, and the definition of what the fast ones match.
PLAIN_MASKED = re.compile(  # a quote after a hex digit is a C++14 digit separator
    rb"//[^\n]*|/\*.*?(?:\*/|\Z)|\"(?:\\.|[^\"\\\n])*(?:\"|$)"
    rb"|(?<![0-9A-Fa-f])'(?:\\.|[^'\\\n])*(?:'|$)",
    re.DOTALL | re.MULTILINE,
)
PLAIN_DIRECTIVE = re.compile(
    rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|elifdef|elifndef|else|endif|define)\b"
    rb"((?:[^\n\\]|\\[^\n]|\\\n)*)",
    re.MULTILINE,
)

TRICKY = [
    b"",
    b"/* a **",
    b"/*/ x */ y",
    b"/* a * b **/ c",
    b'"ab\\',
    b'"a\\"b" x',
    b"'\\'' y",
    b'"abc\nd"',
    b"/**/ /***/ /* ** / */x",
    b'"a\\\nb"',
    b"x = '\\\\'; // c\n#define A 1",
    b"  #  ifdef X\n#define STR(x) #x\n\t#endif",
    b"#if A \\\n  && B\n#else\n# endif",
    b"a #if not a directive\n#ifdef B\n#endif",
    b"xconst int a = 1; const int b = 2;\nenum E { A = 1 }; myenum { B = 2 };",
    b"constexpr int w() { return 32; } const_cast<int>(x); static const unsigned M = 0xffu;",
    b"const unsigned m = 0xff'ff'ff'ffu; char c = 'x'; int n = 1'000; // 'q'",
]


def _random_texts(alphabet: bytes, count: int, seed: int) -> list[bytes]:
    rng = random.Random(seed)
    return [bytes(rng.choice(alphabet) for _ in range(rng.randint(0, 16))) for _ in range(count)]


def _plain_mask(data: bytes) -> bytes:
    masked = bytearray(data)
    for match in PLAIN_MASKED.finditer(data):
        start, end = match.span()
        masked[start:end] = data[start:end].translate(preproc._BLANK)
    return bytes(masked)


def test_masking_matches_the_plain_pattern() -> None:
    for text in TRICKY + _random_texts(b"/*\"'\\\nab ", 20_000, seed=1):
        assert preproc.mask_comments_and_strings(text) == _plain_mask(text), text


def test_directives_match_the_plain_pattern() -> None:
    for text in TRICKY + _random_texts(b"#if\\\n d e", 20_000, seed=2):
        _check_directives(text)


def _check_directives(text: bytes) -> None:
    fast = [
        (start, m.end(), m.group(1), m.group(2), m.start(2))
        for start, m in preproc._directives(text)
    ]
    plain = [
        (m.start(), m.end(), m.group(1), m.group(2), m.start(2))
        for m in PLAIN_DIRECTIVE.finditer(text)
    ]
    assert fast == plain, text


@pytest.mark.parametrize(
    ("pattern", "tail"),
    [
        (preproc.CONSTANT_DECL, preproc._CONSTANT_DECL_WORD),
        (preproc.CONSTANT_FUNCTION, preproc._CONSTANT_FUNCTION_WORD),
        (preproc.ENUM_CONSTANT, preproc._ENUM_CONSTANT_WORD),
    ],
)
def test_word_start_searches_match_the_anchored_patterns(
    pattern: re.Pattern[bytes], tail: re.Pattern[bytes]
) -> None:
    for text in TRICKY + _random_texts(b"const int=1;{}xenum_ ", 5_000, seed=3):
        fast = [(m.span(), m.groups()) for m in preproc.word_start_matches(tail, text)]
        assert fast == [(m.span(), m.groups()) for m in pattern.finditer(text)], text


NESTED = b"""#ifndef GUARD_H
#define GUARD_H
#if defined(__HIP_PLATFORM_AMD__)
#  define WARP 64
#  ifdef FAST
#    define LANES 8
#  else
#    define LANES 4
#  endif
#elif defined(__CUDA_ARCH__)
#  define WARP 32
#else
#  define WARP 0
#endif
int x;
#ifdef UNTERMINATED
#  if A
#  define B 1
"""


def test_enclosing_branches_are_those_that_contain_the_offset() -> None:
    facts = preproc.preprocessor_facts(NESTED)
    file_facts = _FileFacts("guard.h", facts, [b.start_byte for b in facts.branches])
    assert file_facts.parents is not None  # conditionals nest: the chain is walked
    for offset in range(len(NESTED) + 1):
        plain = [b for b in facts.branches if b.start_byte <= offset < b.end_byte]
        assert file_facts.enclosing(offset) == plain, offset


def test_enclosing_branches_when_they_do_not_nest() -> None:
    facts = preproc.preprocessor_facts(NESTED)
    first, second, *_ = facts.branches
    longer = second._replace(end_byte=first.end_byte + 5)  # past the end of the branch around it
    file_facts = _FileFacts(
        "odd.h", facts._replace(branches=(first, longer)), [0, longer.start_byte]
    )
    assert file_facts.parents is None
    assert file_facts.enclosing(first.end_byte - 1) == [first, longer]
    assert file_facts.enclosing(first.end_byte) == [longer]


def _plain_platform_calls(masked: bytes) -> list[tuple[str, int]]:
    found = []
    for match in preproc.PLATFORM_WORD.finditer(masked):
        start = match.start()
        while start > 0 and masked[start - 1] in preproc.UPPER_NAME_CHARS:
            start -= 1
        if start > 0 and (chr(masked[start - 1]).isalnum() or masked[start - 1] == 95):
            continue
        if masked[start] in b"0123456789":
            continue
        found.append((masked[start : match.end() - 1].rstrip().decode(), match.end()))
    return found


def test_platform_calls_match_the_alternation() -> None:
    texts = [
        b"AMREX_HIP_OR_CUDA(a, b) x_HIP(1) 9CUDA(2) HIPCUDA_AMD (3) NVIDIA_NVCC\n(4)",
        *_random_texts(b"HIPCUDAROCMNV_9a (", 20_000, seed=4),
    ]
    for text in texts:
        assert list(preproc._platform_calls(text)) == _plain_platform_calls(text), text


def test_macro_definitions_match_the_anchored_pattern() -> None:
    from portcheck.extract import _DEFINE_FROM_HASH, MACRO_DEFINITION

    for text in TRICKY + _random_texts(b"#define X\n \t(", 20_000, seed=5):
        fast = [
            (start, m.end(), m.span(1))
            for start, m in preproc.line_start_matches(_DEFINE_FROM_HASH, text)
        ]
        assert fast == [(m.start(), m.end(), m.span(1)) for m in MACRO_DEFINITION.finditer(text)], (
            text
        )


def test_nvidia_view_blanks_amd_alternatives_and_keeps_offsets() -> None:
    source = (
        b"__device__ Scan::Scan()\n"
        b"#ifndef USE_ROCM\n"
        b"    : lane(threadIdx.x & 31)\n"
        b"#else\n"
        b"    : lane(threadIdx.x & (WAVE - 1))\n"
        b"#endif\n"
        b"{}\n"
        b"#if CUDA_VERSION >= 9000\n"
        b"int v = 1;\n"
        b"#endif\n"
    )
    view = preproc.nvidia_view(source, preproc.preprocessor_facts(source))
    assert view is not None and len(view) == len(source)
    assert view.count(b"\n") == source.count(b"\n")
    nvidia_line = b"lane(threadIdx.x & 31)"
    assert view.find(nvidia_line) == source.index(nvidia_line)
    assert b"WAVE" not in view and b"#ifndef" not in view and b"#endif\n{}" not in view
    # A conditional that does not tell the platforms apart is left as it is.
    assert b"#if CUDA_VERSION >= 9000\nint v = 1;\n#endif" in view
    plain = b"#if X\nint a;\n#endif\n"
    assert preproc.nvidia_view(plain, preproc.preprocessor_facts(plain)) is None
