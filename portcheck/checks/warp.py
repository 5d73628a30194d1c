"""Wave-width hazards: code that assumes 32 lanes per warp (AMD CDNA runs 64)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from portcheck.checks import METHOD_MARK, Context, hazard
from portcheck.checks.syntax import (
    call_arguments,
    call_name,
    descendants,
    text,
)
from portcheck.preproc import (
    SHUFFLE,
    branch_condition_value,
    evaluate,
    is_amd_guard,
    looks_like_amd_guard,
    looks_like_nvidia_guard,
    names_in,
    top_level_arguments,
    unless_defined,
)
from portcheck.project import (
    LANE_MASK_NAME,
    LOGICAL_MARK,
    MAX_WIDTH_READERS,
    NVIDIA_COMPILERS,
    WARP_WIDTH_NAME,
)

# An operand that is plausibly a thread or lane index.
THREAD_INDEX = re.compile(
    r"threadIdx|blockDim|\blane|\btid\b|thread_?id|\bltid\b|laneid|_tid\b|\bidx\b", re.I
)
# (operator, literal) pairs that divide a thread index into 32-wide warps.
WARP_ARITHMETIC = {("%", 32), ("/", 32), ("&", 31), (">>", 5)}
SYNC_INTRINSICS = frozenset(
    {
        "__shfl_sync",
        "__shfl_up_sync",
        "__shfl_down_sync",
        "__shfl_xor_sync",
        "__ballot_sync",
        "__any_sync",
        "__all_sync",
        "__uni_sync",
        "__match_any_sync",
        "__match_all_sync",
        "__syncwarp",
        "__reduce_add_sync",
        "__reduce_min_sync",
        "__reduce_max_sync",
        "__reduce_and_sync",
        "__reduce_or_sync",
        "__reduce_xor_sync",
    }
)
MASK_PRODUCERS = frozenset(
    {"__ballot_sync", "__ballot", "__activemask", "__match_any_sync", "__match_all_sync"}
)
# A project's wrapper named for a ballot (`WARP_BALLOT`, `warp_ballot`), often defined in a
# header outside the scanned folder: its result is a ballot's, 64 bits on wave64 too.
BALLOT_WRAPPER = re.compile(r"(?i)(?:\w*_)?(?:warp_?)?ballot(?:_sync)?")


def _ballot_producer(name: str | None) -> bool:
    if name is None:
        return False
    if name in MASK_PRODUCERS:
        return True
    # most calls name no ballot: a substring test before the pattern
    return ("allot" in name or "ALLOT" in name) and BALLOT_WRAPPER.fullmatch(name) is not None


# (and the fixed-width aliases projects declare in headers portcheck may not see: zpc's
# `using u32 = unsigned int;`, `uint32`, `U32`)
NARROW_TYPES = re.compile(
    r"^(?:unsigned(?:\s+int)?|int|(?:std::)?u?int32_t|uint|unsigned\s+long"
    r"|u32|U32|u_?int32|UINT32|u32_t)$"
)
MASK_TYPE_WORD = re.compile(rb"(?i)mask|ballot|lane|warp|wave|bits")
WIDE_TYPES = re.compile(
    r"^(?:(?:unsigned\s+)?long\s+long(?:\s+int)?|u?int64_t|std::u?int64_t|unsigned\s+__int64"
    r"|lane_mask_t)$"
)
# A 32-bit all-ones mask as projects write it (spaces removed): 0xffffffff, ~0u, 4294967295,
# -1 (the mask parameter is a 32-bit unsigned on CUDA), uint32_t(-1), (unsigned)-1,
# static_cast<unsigned int>(-1), ~uint32_t(0), UINT32_MAX.
_U32 = r"(?:uint32_t|unsigned|unsignedint|uint)"
FULL_MASK_32_TEXT = (
    r"0x[fF]{8}[uU]?|~0[uU]?|4294967295[uU]?|-1[uU]?|UINT32_MAX"
    rf"|{_U32}\(-1\)|\({_U32}\)-1|\({_U32}\)\(-1\)|static_cast<{_U32}>\(-1\)"
    rf"|~{_U32}\(0\)|~\({_U32}\)0|~static_cast<{_U32}>\(0\)"
)
FULL_MASK_32 = re.compile(rf"^(?:{FULL_MASK_32_TEXT})$")
ALL_ONES_32 = 0xFFFFFFFF


# A cooperative-groups tile and its width (`tiled_partition<32>`, `thread_block_tile<WARP>`).
TILE = re.compile(rb"(?:tiled_partition|thread_block_tile)\s*<\s*([^<>;{}]{1,80}?)\s*>")


def _grouping(ctx: Context, offset: int) -> str | None:
    """How the code around `offset` groups lanes on purpose: "width" when every warp
    shuffle in its function passes an explicit width of at most 32 lanes; "tile" when its
    function works on cooperative-groups tiles of 32; "tile:EXPR" when its tiles are as
    wide as a constant only the project can evaluate (`tiled_partition<WARP_SIZE>`);
    "logical" for logical groups of 32 (_logical_groups), "logical?f,g" when they are so
    if the other files' functions f and g it reaches are lane-blind (or logical
    themselves); "warpsize" (and "warpsize?f,g") for groups of `warpSize` lanes throughout.
    Arithmetic in 32s is then consistent with those groups on a 64-lane wavefront."""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    if fn is None:
        return None
    known = ctx.memo.get(("grouping", fn.start))
    if known is None:
        code = ctx.data[fn.start : fn.end]
        widths = [_tile_width(ctx, m.group(1).decode(), fn.start) for m in TILE.finditer(code)]
        named = [w for w in widths if isinstance(w, str)]
        if 32 in widths:
            known = "tile"
        elif named:
            known = "tile:" + named[0]
        else:
            known = "width" if _all_explicit_widths(code) else ""
            logical = _logical_groups(ctx, fn) if not known else False
            if logical is True:
                known = "logical"
            elif isinstance(logical, frozenset) and logical >= WARPSIZE_GROUPS:
                names = sorted(logical - WARPSIZE_GROUPS)
                known = "warpsize?" + ",".join(names) if names else "warpsize"
            elif logical:  # unless another file's function it calls takes the whole warp
                known = "logical?" + ",".join(sorted(logical))
        ctx.memo[("grouping", fn.start)] = known
    return known or None


# What makes lanes 32-63 of a wavefront part of a warp-level group: the hardware's width,
# votes and matches over the whole warp, cooperative groups, matrix fragments, PTX, lockstep
# shared memory. (`__activemask()` as a shuffle's mask is not: which lanes take part.)
HARDWARE_GROUP = re.compile(
    rb"\bwarpSize\b|__ballot|__any|__all|__match_|__reduce_\w+_sync|__lane|%laneid"
    rb"|\.shfl|\.ballot|tiled_partition|thread_block_tile|coalesced|wmma|\bmma|ldmatrix"
    rb"|\bvolatile\b|\basm\b"
)
SHUFFLE_KIND = re.compile(rb"__shfl(_xor|_down|_up)?")


def _logical_if_blind(grouping: str | None) -> set[str]:
    """The other files' functions that decide a "logical?f,g" grouping, as lane_callees
    entries that they be lane-blind or in logical groups of 32 themselves ("~f")."""
    if grouping is None or not grouping.startswith("logical?"):
        return set()
    return {LOGICAL_MARK + name for name in grouping[len("logical?") :].split(",")}


def logical_32_code(code: bytes) -> bool:
    """Does a function's code (comments and strings blanked) shuffle only within logical
    groups of 32 lanes, by its own literals (butterflies and tree reductions from at most
    16, explicit widths of at most 32), and take nothing of the hardware's whole warp? A
    caller in logical 32-lane groups may call it (ProjectFacts.lane_blind(logical=True))."""
    if HARDWARE_GROUP.search(code):
        return False
    return bool(_shuffles_in_groups(code, _literal_value, None))


def _shuffles_in_groups(
    code: bytes, value: Callable[[str], int | None], spanning: bytes | None
) -> int | None:
    """How many warp shuffles `code` has when each keeps to its group: an explicit width,
    or a step down or across that stays within 32 lanes (`value` reads a loop's first
    offset); with `spanning`, a halving loop that starts from that width's name (`offset =
    warpSize / 2`). None when one reads across (a broadcast, a scan, a neighbour)."""
    count = 0
    for match in SHUFFLE.finditer(code):
        count += 1
        if _explicit_width(code, match):
            continue  # its own width: a group of its own
        kind = SHUFFLE_KIND.match(code, match.start())
        step = kind.group(1) if kind is not None else None
        if step not in (b"_xor", b"_down"):
            return None
        if spanning is not None:
            start = _loop_start(code, match)
            if start is None or spanning not in start:
                return None  # a span of its own beside the width
        elif not _within_32(code, match, step == b"_down", value):
            return None
    return count


def _literal_value(expr: str) -> int | None:
    found = evaluate(expr, lambda name: None, in_if=False)
    return found if isinstance(found, int) else None


def _logical_groups(ctx: Context, fn: Any) -> bool | frozenset[str]:
    """Do `fn`, the functions of this file that call it up to a kernel, and what they all
    call, work in logical groups of 32 lanes that a 64-lane wavefront runs as two: shuffles
    only down or across (`__shfl_down_sync`, `__shfl_xor_sync`, offsets that stay within
    the 32), or with an explicit width, and nothing that takes the hardware's whole warp
    (HARDWARE_GROUP)? Then `tid / 32`, `tid % 32`, `[32]` slots and a reduction from 16
    agree with each other on wave64 (lane 0 and lane 32 each hold their group's sum) and
    are not reported. Not when no kernel of this file is in the group. When a function of
    the group calls ones this file does not define (they may use the whole warp), their
    names: logical groups if the project finds them all lane-blind."""
    by_name = _functions_by_name(ctx)
    cuda_names = _cuda_names(ctx)
    # The group: `fn`, the functions that call it (up to the kernels), and everything all
    # of those call; not the other callers of what `fn` calls (a kernel's reduction helper
    # shared with a kernel that broadcasts says nothing of this kernel).
    callers: dict[int, Any] = {fn.start: fn}
    up = [fn]
    while up and len(callers) <= 32:
        current = up.pop()
        if current.is_kernel:
            continue  # its launches (host code) are not part of its lanes' groups
        for caller in ctx.functions:
            if current.name in caller.calls and caller.start not in callers:
                callers[caller.start] = caller
                up.append(caller)
    group: dict[int, Any] = dict(callers)
    outside: set[str] = set()
    todo = list(callers.values())
    while todo:
        current = todo.pop()
        for name in current.calls:
            if name.startswith(METHOD_MARK) or name in NOT_CALLEES or name in cuda_names:
                continue
            defined = by_name.get(name)
            if not defined:
                if not _elementwise_macro(name):
                    outside.add(name)  # another file's function: it may take the whole warp
                continue
            for callee in defined:
                if callee.start not in group:
                    group[callee.start] = callee
                    todo.append(callee)
        if len(group) > 32:
            return False
    if not any(f.is_kernel for f in group.values()):
        return False  # its callers are elsewhere: what they take a warp to be is not in view
    # The widths the splits name: 32 by this file's own definitions, or the project's
    # (`WARP_SIZE` in another header), which the findings here are conditional on being 32
    # in an AMD build: read as 32. Not beside a split by a literal 32 (`tid % 32` and `tid
    # / WARP_SIZE` are two widths if the project's is 64 on AMD). The hardware's `warpSize`
    # (or a project's macro of that name) only when every shuffle spans it itself (`offset
    # = warpSize / 2` beside `tid / warpSize`): then the groups are its, whatever it is.
    amd = _amd_groups(ctx)
    named: set[str] = set()  # the project's width names this file does not define
    hardware_width = False
    fixed = False  # a split by a 32 of this file's (`% 32`, `/ WARP_SIZE` defined 32 here)
    for member in group.values():
        if amd and any(
            b.group in amd and member.start <= b.start_byte < member.end
            for b in ctx.preproc.branches
        ):
            return False  # the project's AMD branch here says what AMD needs
        code = ctx.masked[member.start : member.end]
        hardware = {m.group() for m in HARDWARE_GROUP.finditer(code)}
        if hardware - {b"warpSize"}:
            return False
        hardware_width = hardware_width or bool(hardware)
        divisors = split_divisors(code, 0, len(code))
        fixed = fixed or "32" in divisors
        for divisor in divisors:
            if divisor == "warpSize":
                hardware_width = True
            elif WIDTH_FACTOR_NAME.search(divisor):
                known = _file_value(ctx, divisor, member.start)
                if known is None:
                    named.add(divisor)
                elif known != 32:
                    return False
                else:
                    fixed = True  # this file's own 32
    if (named or hardware_width) and fixed:
        return False  # `tid % 32` beside `tid / WARP_SIZE`: two widths in one group
    shuffles = 0
    for member in group.values():
        code = ctx.masked[member.start : member.end]

        def value(expr: str, at: int = member.start) -> int | None:
            for name in named & set(names_in(expr)):  # the project's width: 32 on AMD
                expr = re.sub(rf"\b{name}\b", "32", expr)
            return _file_value(ctx, expr, at)

        found = _shuffles_in_groups(code, value, b"warpSize" if hardware_width else None)
        if found is None:
            return False
        shuffles += found
    if not shuffles and not outside:
        return False  # (with calls elsewhere: the project finds whether they shuffle so)
    if hardware_width:
        # groups of `warpSize` lanes throughout: consistent whatever the name is, but the
        # hardware's warp if it is the built-in (WARPSIZE_GROUPS, not logical 32-lane ones)
        return WARPSIZE_GROUPS | frozenset(outside)
    return frozenset(outside) if outside else True


# _logical_groups' answer for code in groups of `warpSize` lanes throughout (shuffles that
# span it, splits by it): right whatever `warpSize` is, so a project's `#define warpSize
# 32` read there is harmless; but if it is the hardware's, launches and 32-slot arrays
# sized for 32-lane warps are still questions.
WARPSIZE_GROUPS = frozenset({"\x00warpSize"})


def _file_value(ctx: Context, expr: str, offset: int) -> int | None:
    """The value of `expr` by this file alone: its function's local constants, then the
    file's own macros and constants, each defined once (a name defined twice, per platform
    perhaps, or elsewhere in the project gives None)."""
    table = ctx.memo.get("file-constants")
    if table is None:
        bodies: dict[str, list[str]] = {}
        for macro in ctx.preproc.macros:
            if not macro.function_like:
                bodies.setdefault(macro.name, []).append(macro.body)
        for constant in ctx.preproc.constants:
            bodies.setdefault(constant.name, []).append(constant.expr)
        table = ctx.memo["file-constants"] = {n: b[0] for n, b in bodies.items() if len(b) == 1}
    text_ = ctx._with_locals(expr, offset)
    for _ in range(4):
        if text_ is None:
            return None
        names = [n for n in names_in(text_) if n in table]
        if not names:
            break
        text_ = re.sub(
            r"\b[A-Za-z_]\w*\b",
            lambda m: f"({table[m.group()]})" if m.group() in table else m.group(),
            text_,
        )
    found = evaluate(text_, lambda name: None, in_if=False) if text_ is not None else None
    return found if isinstance(found, int) else None


HALVING = re.compile(rb"/=\s*2\b|>>=\s*1\b|=\s*\w+\s*(?:/\s*2|>>\s*1)\b")
LOOP_HEADER = re.compile(rb"\bfor\s*\(([^;{}]*);([^;{}]*);([^{};]*)\)")
UNROLLED_DOWN = re.compile(rb"__shfl_down\w*\s*\([^;]*?,\s*(16|8|4|2|1)\s*\)")


def _halving_loop(code: bytes, match: re.Match[bytes]) -> re.Match[bytes] | None:
    """The header of the loop around the shuffle at `match` when it halves its offset."""
    header = None
    for loop in LOOP_HEADER.finditer(code, max(0, match.start() - 400), match.start()):
        header = loop
    return header if header is not None and HALVING.search(header.group(3)) else None


def _loop_start(code: bytes, match: re.Match[bytes]) -> bytes | None:
    """The first offset of the halving loop around a shuffle (`warpSize / 2` of `for (int
    offset = warpSize / 2; offset > 0; offset /= 2)`), or None."""
    header = _halving_loop(code, match)
    start = re.search(rb"=\s*([^=]+)$", header.group(1).strip()) if header is not None else None
    return start.group(1).strip() if start is not None else None


def _within_32(
    code: bytes, match: re.Match[bytes], down: bool, value: Callable[[str], int | None]
) -> bool:
    """Does the shuffle at `match` stay inside its 32-lane group: a butterfly or a tree
    reduction (offsets halving from at most 16, in a loop or written out), whose group
    leaders hold the group's result on a 64-lane wavefront too?"""
    header = _halving_loop(code, match)
    if header is not None:
        start = _loop_start(code, match)
        first = value(start.decode(errors="replace")) if start else None
        return first is not None and first <= 16
    if down:  # written out: 16, 8, 4, ... in the same function
        return len(set(UNROLLED_DOWN.findall(code))) >= 3
    arguments = top_level_arguments(code, match.end())
    offset = arguments[-1].strip() if arguments else b""
    literal = re.fullmatch(rb"(\d+)[uU]?", offset)
    return literal is not None and int(literal.group(1)) < 32


def _tile_width(ctx: Context, width: str, offset: int) -> int | str | None:
    """A tile's width: its value when the file decides it, else the expression the
    project's constants decide (None when it is not a constant expression)."""
    expr = ctx._with_locals(width, offset)
    if expr is None:
        return None
    value = evaluate(expr, lambda name: None, in_if=False)
    if value is not None:
        return value
    return expr if re.fullmatch(r"[\w\s()+\-*/]+", expr) and names_in(expr) else None


# A name for the hardware's lane count: `warpSize`, or a local read from a query of it
# (`const int lanes = physical_warp_width();`, `wave_size`).
WIDTH_QUERY_NAME = re.compile(
    r"(?i)(?:warp|wave(?:front)?)_?(?:size|width|lanes?|sz)$|^(?:n_?)?lanes$|lanes_?per_?(?:warp|wave)"
)
RELATION = rb"\s*(?:/|%|<=?|>=?|==|!=)\s*"


def _adapts_to_warp_width(ctx: Context, operand: str, offset: int) -> bool:
    """Does the function around `offset` relate `operand` (a group width of 32) to the
    hardware's lane count, as in `rows_per_warp = warp_lanes / row_width` or
    `warp_lanes > row_width ? ... : ...`? Then the 32 is the data's group width, and the
    code already works out how many such groups a 64-lane wavefront holds."""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    if fn is None or not re.fullmatch(r"[A-Za-z_]\w*|\d+[uU]?", operand):
        return False
    key = ("adapts", fn.start, operand)
    known = ctx.memo.get(key)
    if known is None:
        code = ctx.data[fn.start : fn.end]
        name = re.escape(operand.encode())
        pattern = re.compile(
            rb"\b([A-Za-z_]\w*)" + RELATION + name + rb"\b"
            rb"|\b" + name + RELATION + rb"([A-Za-z_]\w*)\b"
        )
        known = False
        for match in pattern.finditer(code):
            other = (match.group(1) or match.group(2)).decode()
            if other == "warpSize" or (
                WIDTH_QUERY_NAME.search(other) and ctx._with_locals(other, offset) is None
            ):
                known = True
                break
        ctx.memo[key] = known
    return bool(known)


def _explicit_width(text: bytes, match: re.Match[bytes]) -> bool:
    arguments = top_level_arguments(text, match.end())
    position = 3 if match.group(1) else 2
    if len(arguments) <= position:
        return False
    width = arguments[position]
    literal = re.fullmatch(rb"(\d+)[uU]?", width)
    return literal is None or int(literal.group(1)) <= 32


# What makes code depend on how many lanes the hardware runs together: warp primitives,
# cooperative-groups tiles and coalesced groups, matrix fragments, lane ids, PTX, volatile
# warp-synchronous shared memory, and the hardware's width itself (`warpSize`). Not
# `__syncwarp`, a barrier among the lanes that call it, which a 32-thread group inside a
# wider wavefront passes alike; nor the names a project gives its own variables (a local
# `lane` or `warpVal` in shared-memory arithmetic): see SPLIT_ESCAPES for where names count.
WARP_LEVEL = re.compile(
    rb"__shfl|__ballot|__any|__all|__activemask|__match_|__reduce_\w+_sync|__lane"
    rb"|\.shfl|\.ballot|\.any\s*\(|\.all\s*\(|\.match_|tiled_partition"
    rb"|thread_block_tile|coalesced|wmma|\bmma|ldmatrix|%laneid|\bvolatile\b|\basm\b"
    rb"|\bwarpSize\b"
)


def warp_level_code(masked: bytes) -> bool:
    """Does code (comments and strings blanked) hold warp-level code, once the warp width
    used as a stride is set aside?"""
    return WARP_LEVEL.search(WIDTH_AS_STRIDE.sub(b"", masked)) is not None


# A split that leaves its function: a member initialised with it (mamba's
# `lane_id(threadIdx.x & 0x1f)` in a constructor, read by the warp scans of other methods),
# or a value returned (a `lane_id()` helper): where it is used is not in view, so the
# function is not lane-blind when it is named after lanes, warps or waves, or its result
# is returned.
SPLIT_ESCAPES = frozenset({"field_initializer_list", "return_statement"})
LANE_WORD = re.compile(r"[Ww]arp|WARP|[Ww]ave|WAVE|[Ll]ane")
# The warp width's own name as a factor (`shared[c * WARP_SIZE + pixel]`, `kWarpSize * row`):
# a stride that lays out storage, which makes nothing warp-level, so it is set aside before
# WARP_LEVEL looks for warp-level code. Read any other way (`warpSize / 2` as a reduction's
# first step) it still counts.
_WIDTH_NAME = (
    rb"\w*?(?:WARP_?SIZE|[Ww]arp_?[Ss]ize|WAVE(?:FRONT)?_?SIZE|[Ww]ave(?:front)?_?[Ss]ize)"
)
WIDTH_AS_STRIDE = re.compile(rb"\*\s*" + _WIDTH_NAME + rb"\b|\b" + _WIDTH_NAME + rb"\s*\*")
MAX_CALL_DEPTH = 3
TEMPLATE_TYPE = re.compile(rb"\b(?:typename|class)\s+([A-Za-z_]\w*)\s*[,>=]")
# A type the file declares (`struct Tile {`, `typedef … real;`, `using opmath_t = …`): a
# call of its name is a construction, not a function that could hide warp code.
DECLARED_TYPE = re.compile(
    rb"\b(?:struct|class|union|enum)\s+(\w+)|\btypedef\b[^;{}]*?\b(\w+)\s*;|\busing\s+(\w+)\s*="
)
# "Calls" that are casts, operators or value-type constructions, not functions that could
# hide a warp reduction.
NOT_CALLEES = frozenset(
    {
        # the C library and the compiler's hints: nothing a warp does together
        "assert",
        "static_assert",
        "memcpy",
        "memset",
        "printf",
        "__builtin_assume_aligned",
        "__builtin_expect",
        "__builtin_assume",
        "__builtin_unreachable",
        "static_cast",
        "reinterpret_cast",
        "const_cast",
        "dynamic_cast",
        "bit_cast",
        "sizeof",
        "alignof",
        "decltype",
        "int",
        "unsigned",
        "float",
        "double",
        "char",
        "short",
        "long",
        "bool",
        "size_t",
        "half",
        "half2",
        "float2",
        "float4",
        "int2",
        "int4",
        "uint2",
        "uint4",
    }
)


def _lane_blind(ctx: Context, offset: int, width_named: bool = False) -> bool | frozenset[str]:
    """Is the function around `offset` free of anything that depends on the hardware's
    lane count, and so is everything it calls in this file? Then `tid / 32`, `tid % 32`
    and `[32]` there are block-level index arithmetic (a table copied 32 times against
    shared-memory bank conflicts, a 64-wide block handled as two halves), correct on any
    wavefront. Calls of functions this file does not define (and that are not CUDA names
    the scan saw) are returned: then it is lane-blind if those are, which the project
    answers (one of them could be a warp reduction). With `width_named`, `warpSize` itself is
    no warp-level code: the project defines it (`#define warpSize 32`), so it is a number."""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    if fn is None or _escapes(ctx, offset):
        return False
    if LANE_WORD.search(fn.name) and not fn.is_kernel:
        # a `lane_id()` helper's split is its callers' (a kernel's stays in the kernel:
        # `moe_sum_reduce_warp_per_token_kernel` partitions tokens among groups of 32)
        return False
    if _beside_amd_branch(ctx, offset, fn):
        return False  # the project's AMD twin changes it: the project's word on it
    cuda_names = _cuda_names(ctx)
    template_types = ctx.memo.get("template-types")
    if template_types is None:  # `template <typename scalar_t>`: `scalar_t(x)` is a cast
        template_types = ctx.memo["template-types"] = {
            m.group(1).decode() for m in TEMPLATE_TYPE.finditer(ctx.data)
        } | {  # the file's own types and aliases (`using opmath_t = …`): constructions
            m.group(m.lastindex or 1).decode() for m in DECLARED_TYPE.finditer(ctx.data)
        }
    by_name = _functions_by_name(ctx)

    def blind(function: Any, depth: int) -> bool:
        """Lane-blind within this file; memo: (that, the other files' functions it and
        its callees here call)."""
        key = ("lane-blind", function.start, width_named)
        known = ctx.memo.get(key)
        if known is not None:
            return bool(known[0])
        ctx.memo[key] = (True, ())  # a recursive call adds nothing new
        outside: set[str] = set()
        # Comments and strings blanked: "fully coalesced loads" in a comment is no warp code.
        code = ctx.masked[function.start : function.end]
        if width_named:
            code = HARDWARE_WIDTH.sub(b"", code)
        result = not warp_level_code(code)
        # A functor parameter (`const Reduction& r`, called as `r(a, b)`): the combining
        # operation handed to a reduction, elementwise as far as this function goes.
        parameters = {
            name
            for name, found in ctx.declarations(function).items()
            if result and any(d.parameter for _, d in found)
        }
        for name in function.calls if result else ():
            if name in cuda_names or name in NOT_CALLEES or name in template_types:
                continue
            if name in parameters:
                continue
            defined = by_name.get(name)
            if not defined and _elementwise_macro(name):
                continue
            if not defined and not name.startswith(METHOD_MARK):
                outside.add(name)  # another file's function, perhaps: the project decides
                continue
            if not defined or depth >= MAX_CALL_DEPTH:
                result = False
                break
            if not all(blind(callee, depth + 1) for callee in defined):
                result = False
                break
            for callee in defined:
                outside.update(ctx.memo[("lane-blind", callee.start, width_named)][1])
        ctx.memo[key] = (result, tuple(outside))
        return result

    if not blind(fn, 0):
        return False
    external = ctx.memo[("lane-blind", fn.start, width_named)][1]
    return frozenset(external) if external else True


# `max_vector_length = 32;` / `int kWidth = 32;` / `constexpr int lanes{32};`
WIDTH_ASSIGNMENT = re.compile(rb"\b([A-Za-z_]\w*)\s*(?:=|\{|\()\s*(32|64)\s*[;})]")
NUMBER_RETURN = re.compile(rb"\breturn\s+\(?\s*(\d+)\s*\)?\s*;")
RETURNED = b"\x00return"  # assigned()'s key for a `return 32;`


def _widths_set_per_platform(ctx: Context) -> None:
    """A variable set to 32 in an NVIDIA branch and to 64 in the AMD branch beside it
    (kokkos-kernels: `#ifdef KOKKOS_ENABLE_CUDA` … `max_vector_length = 32;` then
    `#ifdef KOKKOS_ENABLE_HIP` … `= 64;`): the project says it is the warp width. Reported
    at the 32; the AMD branch is its AMD path. The branches are one conditional's, or two
    conditionals with nothing between them."""
    if b"64" not in ctx.data or b"32" not in ctx.data:
        return
    masked = ctx.masked

    def tests_any(branch: Any, looks: Any) -> bool:
        """Does one of the branch's tests (its own or an earlier branch's of its
        conditional) name such a guard? Per conditional, in order: linear in a long `#elif`
        chain."""
        if branch.test is None:
            return False
        key = (id(looks), branch.group)
        seen = named.get(key, (0, False))
        found = seen[1] or any(looks(n) for t in branch.prior[seen[0] :] for n in names_in(t))
        found = found or any(looks(n) for n in names_in(branch.test))
        named[key] = (len(branch.prior), found or seen[1])
        return found

    named: dict[tuple[int, int], tuple[int, bool]] = {}

    def assigned(branch: Any, value: bytes) -> dict[bytes, int]:
        """name -> offset of `name = 32;` (`value`) in the branch; `return 32;` under the
        key RETURNED (tilelang's `default_warp_size()`: `return 64;` for AMD, else 32)."""
        body = masked[branch.start_byte : branch.end_byte]
        found = {
            m.group(1): branch.start_byte + m.start(2)
            for m in WIDTH_ASSIGNMENT.finditer(body)
            if m.group(2) == value
        }
        returns = list(NUMBER_RETURN.finditer(body))
        if returns and all(m.group(1) == value for m in returns):
            # one width per platform, not a ladder of thread counts (MAGMA's geqr2 tuning
            # returns 32 … 512 in both branches)
            found.setdefault(RETURNED, branch.start_byte + returns[0].start(1))
        return found

    def amd_else(branch: Any) -> bool:
        """The `#else` of a conditional that tests for AMD: the other platforms' code."""
        return branch.test is None and any(
            is_amd_guard(n) or looks_like_amd_guard(n) for t in branch.prior for n in names_in(t)
        )

    def adjacent(first: Any, second: Any) -> bool:
        """Only blank lines and `#endif`s between the two branches."""
        if second.start_byte < first.end_byte:
            return False
        between = masked[first.end_byte : second.start_byte].splitlines()
        return all(not line.strip() or line.strip().startswith(b"#endif") for line in between)

    amd = [
        b
        for b in ctx.preproc.branches
        if masked.find(b"64", b.start_byte, b.end_byte) != -1
        and (
            _only_for(b) == "amd"
            or (
                tests_any(b, lambda n: is_amd_guard(n) or looks_like_amd_guard(n))
                and _only_for(b) != "nvidia"
            )
        )
    ]
    if not amd:
        return
    sixty_four = {id(b): assigned(b, b"64") for b in amd}
    for nvidia in ctx.preproc.branches:
        if masked.find(b"32", nvidia.start_byte, nvidia.end_byte) == -1:
            continue
        if any(b is nvidia for b in amd):
            continue
        named_nvidia = tests_any(nvidia, looks_like_nvidia_guard)
        if not (named_nvidia or amd_else(nvidia) or _only_for(nvidia) == "nvidia"):
            continue
        thirty_two = assigned(nvidia, b"32")
        if not named_nvidia and nvidia.test is None:
            # the `#else` of an AMD test: only a returned width (an assignment there is
            # read by the definition checks, and `f(32)` there is any call)
            thirty_two = {k: v for k, v in thirty_two.items() if k == RETURNED}
        if not thirty_two:
            continue
        for twin in amd:
            same = twin.group == nvidia.group
            if not same and not adjacent(nvidia, twin):
                continue
            for name, at in thirty_two.items():
                if name not in sixty_four[id(twin)] or (name == RETURNED and not same):
                    continue  # a return pairs only within one conditional (one function)
                what = "`return 32`" if name == RETURNED else f"`{name.decode()} = 32`"
                ctx.report(
                    at,
                    at + 2,
                    f"{what} in the NVIDIA branch; the project's AMD branch "
                    f"{'returns' if name == RETURNED else 'sets it to'} 64: a warp width",
                    amd_alternative=True,  # that branch is the project's AMD path
                )
    for twin in amd:
        # Set to 32 for every platform just above an AMD test that sets it to 64
        # (`unsigned warp_size = 32;` then `#if defined(__HIP_PLATFORM_AMD__)` … `= 64;`):
        # the same, with the AMD build overriding the default.
        widened = {k: v for k, v in sixty_four[id(twin)].items() if k != RETURNED}
        if twin.prior or not widened:
            continue
        for name, at in _set_just_above(masked, twin.start_byte, b"32").items():
            if name in widened:
                ctx.report(
                    at,
                    at + 2,
                    f"`{name.decode()} = 32` for every platform; the project's AMD branch "
                    "below sets it to 64: a warp width",
                    amd_alternative=True,
                )


def _only_for(branch: Any) -> str | None:
    """Which platform alone can take `branch`: "nvidia" or "amd" (by the platform guards
    its tests and the tests before it name: the `#else` of `#if
    defined(__HIP_PLATFORM_AMD__)` is NVIDIA's), else None."""
    nvidia = branch_condition_value(branch, _nvidia_build)
    amd = branch_condition_value(branch, _amd_build)
    if nvidia == 0 and amd != 0:
        return "amd"
    if amd == 0 and nvidia != 0:
        return "nvidia"
    return None


def _set_just_above(masked: bytes, offset: int, value: bytes, lines: int = 3) -> dict[bytes, int]:
    """name -> offset of `value` in `name = value;` on the few statement lines just above
    `offset` (blank lines skipped; a directive, or a line that opens or closes a block,
    ends the search: another conditional's or another scope's code)."""
    found: dict[bytes, int] = {}
    end = offset
    while lines and end > 0:
        start = masked.rfind(b"\n", 0, max(end - 1, 0)) + 1
        line = masked[start:end]
        end = start
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith((b"#", b"}")) or stripped.endswith(b"{"):
            break
        lines -= 1
        for m in WIDTH_ASSIGNMENT.finditer(line):
            if m.group(2) == value:
                found.setdefault(m.group(1), start + m.start(2))
    return found


# A project macro called in device code (`MAGMA_Z_ABS(x)`, `MAX(a, b)`) whose name says
# nothing of warps, lanes, shuffles or reductions: an elementwise helper.
MACRO_CALLEE = re.compile(r"[A-Z_][A-Z0-9_]{2,}")
COLLECTIVE_WORD = re.compile(
    r"WARP|LANE|WAVE|SHFL|SHUFFLE|BALLOT|REDUC|SUM|VOTE|SYNC|ALL|ANY|SCAN|BROADCAST|MATCH"
    r"|ATOMIC|COOP|TILE|GROUP"
)


def _elementwise_macro(name: str) -> bool:
    return MACRO_CALLEE.fullmatch(name) is not None and COLLECTIVE_WORD.search(name) is None


def _beside_amd_branch(ctx: Context, offset: int, fn: Any) -> bool:
    """Is `offset` in a branch of a conditional that tests for an AMD build (`#if
    defined(__HIP_PLATFORM_AMD__) && WAVE == 64 … #else tid % 32`)? The project wrote an
    AMD alternative for it, so the split is the platform's, whatever the code around it.
    Not a branch around the whole function `fn` (`#ifndef USE_ROCM` over a file's kernels):
    its alternative is other code, and this function's arithmetic is judged on its own."""
    return any(True for _ in _branches_beside_amd(ctx, offset, fn))


def _in_nvidia_twin(ctx: Context, offset: int) -> bool:
    """Is `offset`, inside a function, in a branch no AMD build takes of a conditional that
    has an AMD branch (the `#else` of `#ifdef __HIP_PLATFORM_AMD__` within a device
    function), or in a lone NVIDIA conditional with a lone AMD one beside it?"""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    return fn is not None and (
        any(
            branch_condition_value(branch, _amd_build) == 0
            for branch in _branches_beside_amd(ctx, offset, fn)
        )
        or bool(_amd_twins(ctx, offset))
    )


def _amd_twins(ctx: Context, offset: int) -> list[Any]:
    """The AMD branches that stand in for the NVIDIA branch holding `offset` inside a
    function: the AMD branches of its own conditional (`#ifdef __HIP_PLATFORM_AMD__ …
    #else …`), or, for a lone `#ifdef __NVCC__ … #endif` (a test of NVIDIA's compiler or
    platform only), a lone AMD-only conditional next to it in the same function
    (`#ifdef __HIP__ … #endif`, hashinator's wrappers)."""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    if fn is None:
        return []
    twins: list[Any] = []
    for branch in _branches_beside_amd(ctx, offset, fn):
        if branch_condition_value(branch, _amd_build) == 0:
            twins += [
                b
                for b in ctx.preproc.branches
                if b.group == branch.group and b is not branch and _amd_takes(ctx, b.start_byte)
            ]
    if twins:
        return twins
    for branch in ctx.preproc.branches:
        if not branch.start_byte <= offset < branch.end_byte or not _lone_nvidia(ctx, branch):
            continue
        if not fn.start <= branch.start_byte < branch.end_byte <= fn.end:
            continue
        twins += [
            other
            for other in lone_neighbours(ctx, branch)
            if fn.start <= other.start_byte < other.end_byte <= fn.end
            and _amd_takes(ctx, other.start_byte)
        ]
    return twins


def lone_neighbours(ctx: Context, branch: Any) -> list[Any]:
    """The lone conditionals (one branch, no `#else`) right before and after `branch`,
    within three lines of it and not around it: `#ifdef __NVCC__ … #endif` then `#ifdef
    __HIP__ … #endif`, one block per compiler."""
    branches = ctx.preproc.branches
    at = branches.index(branch)
    found = []
    for other in (branches[at - 1] if at else None, *branches[at + 1 : at + 2]):
        if other is None or other.prior or other.test is None or not _lone(ctx, other):
            continue
        if other.start_byte > branch.start_byte:
            gap = other.start_line - branch.end_line
        else:
            gap = branch.start_line - other.end_line
        if 0 <= gap <= 3 and not other.start_byte < branch.end_byte < other.end_byte:
            found.append(other)
    return found


def _lone(ctx: Context, branch: Any) -> bool:
    """Is `branch` the only branch of its conditional (no `#else`, no `#elif`)?"""
    sizes = ctx.memo.get("group-sizes")
    if sizes is None:
        sizes = ctx.memo["group-sizes"] = {}
        for b in ctx.preproc.branches:
            sizes[b.group] = sizes.get(b.group, 0) + 1
    return sizes.get(branch.group) == 1


def _lone_nvidia(ctx: Context, branch: Any) -> bool:
    """A conditional of one branch testing only NVIDIA's compiler or platform."""
    if branch.test is None or branch.prior or not _lone(ctx, branch):
        return False
    names = names_in(branch.test)
    return (
        bool(names)
        and all(n in NVIDIA_COMPILERS or looks_like_nvidia_guard(n) for n in names)
        and not any(c in branch.test for c in "<>=!")
    )


def _branches_beside_amd(ctx: Context, offset: int, fn: Any) -> Iterator[Any]:
    """The branches holding `offset`, inside `fn`, of conditionals that test for AMD."""
    for branch in ctx.preproc.branches:
        if not branch.start_byte <= offset < branch.end_byte:
            continue
        if branch.start_byte <= fn.start and fn.end <= branch.end_byte:
            continue
        if branch.group in _amd_groups(ctx):
            yield branch


def _amd_groups(ctx: Context) -> frozenset[Any]:
    """The file's conditionals (by group) one of whose tests picks out an AMD build."""
    groups = ctx.memo.get("amd-groups")
    if groups is None:
        groups = ctx.memo["amd-groups"] = frozenset(
            b.group for b in ctx.preproc.branches if any(_selects_amd(t) for t in b.tests)
        )
    return groups


def _shared_by_ported_function(ctx: Context, offset: int) -> bool:
    """Is `offset` in code both builds compile, inside a function that holds a conditional
    of its own testing for an AMD build (`#if GOOGLE_CUDA … #elif TENSORFLOW_USE_ROCM`
    around its warp step)? The project ported this function and left this line as it is:
    its AMD build runs it, and the split there is not a width the port changes."""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    if fn is None:
        return False
    amd = _amd_groups(ctx)
    ported = False
    for branch in ctx.preproc.branches:
        if branch.group not in amd or branch.start_byte < fn.start or branch.end_byte > fn.end:
            continue  # not an AMD conditional's, or around the function, or elsewhere
        if branch.start_byte <= offset < branch.end_byte:
            return False
        ported = True
    return ported


def _amd_build(name: str) -> object:
    return unless_defined(name, True)


def _selects_amd(test: str) -> bool:
    """Does `test` pick out an AMD build? Not `__CUDA_ARCH__ >= 200 || defined(HIP)`, where
    the AMD build only joins the others in the same code."""
    return all(
        any(is_amd_guard(n) or looks_like_amd_guard(n) for n in names_in(part))
        for part in test.split("||")
    )


# A warp index from the hardware's width: `threadIdx.x / warpSize`.
WARP_INDEX = re.compile(r"^\(?\s*threadIdx\.x\s*\)?\s*/\s*warpSize$")


def _slot_per_hardware_warp(ctx: Context, array: Any) -> bool:
    """`__shared__ T partial[32]` written only at `partial[wid]`, `wid = threadIdx.x /
    warpSize`: one slot per hardware warp, at most 32 of them in a 1024-thread block on
    NVIDIA and 16 on wave64, so the 32 slots suffice on either (tiny-cuda-nn's block_reduce)."""
    size = ctx.value(array.child_by_field_name("size"))
    if size is None or (isinstance(size, int) and size != 32):
        return False  # not a 32: nothing to excuse (most shared arrays)
    name_node = array.child_by_field_name("declarator")
    fn = next((f for f in ctx.functions if f.start <= array.start_byte < f.end), None)
    if name_node is None or fn is None:
        return False
    written = _slot_writes(ctx, fn, text(name_node))
    if not written:
        # `blockReduce(v, shmem, op)`: filled by a function of this file it is handed to
        # (SeisSol's kernel_reduce), where the parameter's writes tell
        for callee, parameter in _handed_to(ctx, fn, text(name_node)):
            more = _slot_writes(ctx, callee, parameter)
            if not more:
                return False
            written += more
    if not written:
        return False
    for where, index in written:
        index = " ".join(index.split())
        if WARP_INDEX.match(index):
            continue
        found = ctx.declarations(where).get(index)
        initial = found[-1][1].initial if found else None
        expr = " ".join(text(initial).split()) if initial is not None else index
        if WARP_INDEX.match(expr) is None:
            return False
    return True


def _slot_writes(ctx: Context, fn: Any, name: str) -> list[tuple[Any, str]]:
    """The index expressions `fn` writes the array `name` at (`name[i] = …`)."""
    pattern = rb"\b" + re.escape(name.encode()) + rb"\s*\[([^\]\[]*)\]\s*(?:[-+*/|&^]?=)(?!=)"
    write = re.compile(pattern)
    return [(fn, m.group(1).decode()) for m in write.finditer(ctx.masked, fn.start, fn.end)]


def _handed_to(ctx: Context, fn: Any, name: str) -> list[tuple[Any, str]]:
    """The functions of this file (and the parameter) that `fn` passes `name` to as an
    argument, by name; none when a callee is not the file's own."""
    handed: list[tuple[Any, str]] = []
    for call in ctx.device_nodes("call"):
        if not fn.start <= call.start_byte < fn.end:
            continue
        args = [text(a) for a in call_arguments(call)]
        if name not in args:
            continue
        position = args.index(name)
        callee_name = call_name(call).split("<", 1)[0].strip()  # `blockReduce<T, Op>(…)`
        callees = [f for f in ctx.functions if f.name == callee_name and f is not fn]
        if not callees:
            return []
        for callee in callees:
            parameter = _parameter_at(ctx, callee, position)
            if parameter is None:
                return []
            handed.append((callee, parameter))
    return handed


def _parameter_at(ctx: Context, fn: Any, position: int) -> str | None:
    """The name of `fn`'s parameter at `position`, from its definition."""
    node = ctx.root.descendant_for_byte_range(fn.start, fn.start) if ctx.root else None
    while node is not None and node.type != "function_definition":
        node = node.parent
    declarator = node.child_by_field_name("declarator") if node is not None else None
    while declarator is not None and declarator.type != "function_declarator":
        declarator = declarator.child_by_field_name("declarator")
    parameters = declarator.child_by_field_name("parameters") if declarator is not None else None
    if parameters is None:
        return None
    names = [_parameter_name(p) for p in parameters.named_children]
    return names[position] if position < len(names) and names[position] else None


def _escapes(ctx: Context, offset: int) -> bool:
    """Does the expression at `offset` initialise a member or make a return value?"""
    node = ctx.root.descendant_for_byte_range(offset, offset + 1) if ctx.root else None
    while node is not None and node.type not in ("function_definition", "translation_unit"):
        if node.type in SPLIT_ESCAPES:
            return True
        node = node.parent
    return False


def _report_if(ctx: Context, node, wanted: tuple[int, ...], start: int, end: int, **kw) -> None:
    """Report when `node`'s value is one of `wanted`: now if this file decides it, else
    once the project's constants are known (`WARP_SIZE` defined in another header)."""
    value = ctx.value(node)
    if value is None and node is not None and node.type == "number_literal":
        # `blockDim.x / 32.f`: a warp count taken as a float, to round it up
        whole = FLOAT_WHOLE.fullmatch(text(node))
        value = int(whole.group(1)) if whole else None
    if value is None or (isinstance(value, int) and value not in wanted):
        return
    if ctx._current is not None and ctx._current.slug == "warp-size-assumption":
        # `tid / warpSize` reported only because the project defines warpSize as a number
        blind = _lane_blind(ctx, start, width_named=value == "warpSize")
        if blind is True:
            # the project's width constant read here (`C10_WARP_SIZE`) is read harmlessly
            _read_harmlessly(ctx, node)
            return
        if blind:  # lane-blind unless a function it calls in another file is not
            kw["lane_callees"] = ",".join(sorted(blind))
        grouping = _grouping(ctx, start)
        if grouping == "width":
            return  # every shuffle here names its 32-lane width: the groups are deliberate
        # a project's `warpSize` (`#define warpSize 32`) read in groups of warpSize lanes
        width_only = isinstance(value, str) and set(names_in(value)) == {"warpSize"}
        if grouping == "logical" or (grouping == "warpsize" and width_only):
            _read_harmlessly(ctx, node)
            return  # logical groups of 32 throughout: two to a wavefront, each right
        if grouping is not None and grouping.startswith("warpsize?") and width_only:
            grouping = "logical?" + grouping[len("warpsize?") :]  # the same, if those are
        names = _logical_if_blind(grouping)
        if names:  # the same, unless a function of another file the group calls shuffles
            kw["lane_callees"] = ",".join(sorted(names))  # otherwise (or is not blind)
        if _adapts_to_warp_width(ctx, text(node), start):
            return  # 32 is the data's row width; groups per warp are derived from the lanes
        # In cooperative-groups tiles of 32 (`tiled_partition<32>`) a lane or tile index
        # computed with 32 is right on wave64: each tile fills half a CDNA wavefront, a
        # performance matter, not a port's. Not reported (the whole-tree sample of DeepSpeed
        # read such notes as false alarms: nothing to change).
        if grouping == "tile":
            _read_harmlessly(ctx, node)  # `kWARP_SIZE` that only sizes tiles is no finding
            return
        if grouping is not None and grouping.startswith("tile:"):
            tile = grouping[len("tile:") :]
            if isinstance(value, int):  # whether it is one waits for the tile's width
                ctx.report(start, end, when=(tile, (32,), True), if_unknown=True, fold=False, **kw)
                return
            if value.replace(" ", "") == tile.replace(" ", ""):
                _read_harmlessly(ctx, node)
                return  # `lane % WARP_SIZE` in tiles of WARP_SIZE
    if isinstance(value, int):
        if value in wanted:
            ctx.report(start, end, **kw)
    elif isinstance(value, str):
        ctx.report(start, end, when=(value, wanted, False), **kw)


OPERAND_TYPES = ("number_literal", "identifier", "parenthesized_expression")
FLOAT_WHOLE = re.compile(r"(\d+)\.0*[fF]?")


# A size named for a chunk of the data (`CHUNK_SIZE`) and not for lanes: its 32 is how much
# data a step holds. (Not "tile": `kReduceTileSize` tiles are sized to the warp.)
DATA_TILE_NAME = re.compile(r"(?i)^(?!.*(?:warp|lane|wave|thread|simd|tile)).*chunk")


def _widths_of_logical_groups(ctx: Context) -> None:
    """A function's own constant named for the warp width and set to 32 (`constexpr int
    WarpSize = 32;` in a kernel) where the function works in logical groups of 32 lanes,
    or where host code that launches only kernels whose lanes do not matter sets it:
    harmless, whoever reads it (recorded among the file's harmless reads as NUL, name,
    offset, path and the other files' functions f and g ("~f,~g") whose being lane-blind
    or logical themselves it takes, for the project to decide: definition_findings)."""
    for constant in ctx.preproc.constants:
        if not WARP_WIDTH_NAME.search(constant.name):
            continue
        host = ctx.function_info_at(constant.offset)
        if host is None:
            continue  # a file's constant: its reads decide
        if _file_value(ctx, constant.expr, constant.offset) != 32:
            continue
        if host.is_kernel or host.is_device:
            grouping = _grouping(ctx, constant.offset)
            names = _logical_if_blind(grouping)
            if grouping != "logical" and not names:
                continue
        else:  # host code: harmless if every kernel it launches leaves the lanes alone
            launched = _launched_lanes(ctx, host)
            if launched is False:
                continue
            names = set(launched) if isinstance(launched, frozenset) else set()
        place = "\x00".join(("", constant.name, str(constant.offset), ctx.path))
        ctx.memo.setdefault("blind-names", set()).add(place + "\x00" + ",".join(sorted(names)))


def _read_harmlessly(ctx: Context, node: Any) -> None:
    """The project's width constant read at `node` is read where it is right on wave64:
    not a use that makes its definition a finding."""
    ctx.memo.setdefault("blind-names", set()).update(names_in(text(node)))


def _shift_count(ctx: Context, node: Any) -> bool:
    """Is `node` (perhaps in parentheses) the count of a shift (`1u << (idx & 31)`,
    `word >> (i % 32)`)? Then 31 or 32 is the bit width of the word shifted: a bit
    signature or a bit vector's index, whatever the index it reduces. (Read from the
    shifts down, once per file: a node's parent is found by walking from the root.)"""
    counts = ctx.memo.get("shift-counts")
    if counts is None:
        counts = ctx.memo["shift-counts"] = set()
        for shift in ctx.device_nodes("binary"):
            operator = shift.child_by_field_name("operator")
            if operator is None or text(operator) not in ("<<", ">>"):
                continue
            right = shift.child_by_field_name("right")
            while right is not None:
                counts.add((right.start_byte, right.end_byte))
                if right.type != "parenthesized_expression" or not right.named_children:
                    break
                right = right.named_children[0]
    return (node.start_byte, node.end_byte) in counts


# A constant named for a tile's shape, not for the warp (`tile_dim_y`, `TILE_W`): threads
# split by it form tiles of that size on any GPU. (Not a row's width: a row of 32 that a
# shuffle crosses is a warp, adaptive_rows' fixture.)
TILE_NAME = re.compile(r"^(?!.*(?i:warp|lane|wave|simd|row)).*(?i:tile|dim)")


@hazard("warp-size-assumption")
def warp_size_assumption(ctx: Context) -> None:
    _widths_set_per_platform(ctx)
    if ctx.root is None:
        return
    for node in ctx.device_nodes("binary"):
        right = node.child_by_field_name("right")
        if right is None or right.type not in OPERAND_TYPES:
            continue  # most device arithmetic: nothing to look up
        operator = node.child_by_field_name("operator")
        wanted = tuple(
            v for op, v in WARP_ARITHMETIC if operator is not None and op == text(operator)
        )
        if not wanted or not THREAD_INDEX.search(text(node.child_by_field_name("left"))):
            continue
        if _shift_count(ctx, node):
            continue  # `1 << (idx & 31)`: a bit of a 32-bit word, bounded by its width
        if right.type == "identifier" and TILE_NAME.search(text(right)):
            continue  # `threadIdx.x / tile_dim_y`: a tile of 32, whatever runs it (HiPACE's)
        if _shared_by_ported_function(ctx, node.start_byte):
            _read_harmlessly(ctx, right)
            continue
        _report_if(
            ctx,
            right,
            wanted,
            node.start_byte,
            node.end_byte,
            message=f"`{text(node)}` splits threads into 32-wide warps; CDNA wavefronts are "
            "64 wide",
            fix="Use `warpSize` (e.g. `threadIdx.x % warpSize`, `threadIdx.x / warpSize`).",
        )
    for decl in ctx.device_nodes("declaration"):
        if b"__shared__" not in (decl.text or b""):
            continue
        for array in descendants(decl, "array_declarator"):
            if _slot_per_hardware_warp(ctx, array):
                continue
            if DATA_TILE_NAME.search(text(array.child_by_field_name("size"))):
                continue  # `C_block[CHUNK_SIZE]`: a chunk of the data, 32 columns wide
            if _shared_by_ported_function(ctx, array.start_byte):
                _read_harmlessly(ctx, array.child_by_field_name("size"))
                continue
            grouping = _grouping(ctx, array.start_byte) or ""
            if grouping.startswith("tile") or grouping == "logical":  # ("logical?": below)
                # one slot per cooperative-groups tile (`partialSum[MAX_WARP_NUM]` beside
                # `tiled_partition<WARP_SIZE>`): 32 slots hold a 1024-thread block's tiles
                # of 32, and more than enough for wider ones
                continue
            _report_if(
                ctx,
                array.child_by_field_name("size"),
                (32,),
                array.start_byte,
                array.end_byte,
                message=f"shared array `{text(array)}` has one slot per lane or warp of a "
                "32-wide warp",
                fix="Size it from the wave size (64 on CDNA), e.g. `[1024 / warpSize]` via a "
                "constexpr, or `[64]`.",
            )
    warp_synchronous(ctx)
    tile_shares(ctx)
    width_ladders(ctx)
    for loop in ctx.device_nodes("for"):
        init = loop.child_by_field_name("initializer")
        body = loop.child_by_field_name("body")
        if init is None or body is None or b"__shfl" not in (body.text or b""):
            continue
        starts = [d.child_by_field_name("value") for d in descendants(init, "init_declarator")]
        starts += [
            a.child_by_field_name("right") for a in descendants(init, "assignment_expression")
        ]
        for start in starts:
            _report_if(
                ctx,
                start,
                (16,),
                loop.start_byte,
                init.end_byte,
                message="shuffle reduction starts at offset 16, covering only 32 lanes",
                fix="Start at `warpSize / 2` so all 64 lanes of a CDNA wavefront are reduced.",
            )
    _unrolled_reductions(ctx)
    _host_width_locals(ctx)
    _first_warp_guards(ctx)
    _launches_counting_warps(ctx)
    _widths_of_logical_groups(ctx)


# `int devID, warp_size = 32;`: a local of host code named for the warp width, given 32.
HOST_WIDTH_LOCAL = re.compile(
    rb"\b(?:int|unsigned|size_t|uint32_t|int32_t|auto)\b[^;(){}]*?\b([A-Za-z_]\w*)\s*(?:=\s*|\{\s*)32\s*[;,}]"
)


def _host_width_locals(ctx: Context) -> None:
    """A local of host code named for the warp width and given 32 (`int warp_size = 32;`,
    `int warpSize = 32;`), and never given anything else in its function (not read from the
    device: `cudaDeviceGetAttribute(&warp_size, …)`, `warp_size = prop.warpSize`): the
    launches and buffers sized from it count 32-thread warps. (Constants the project
    defines at file scope are its definitions' findings.)"""
    if b"32" not in ctx.data:
        return
    masked = ctx.masked
    for fn in ctx.functions:
        if fn.is_kernel or fn.is_device:
            continue
        for match in HOST_WIDTH_LOCAL.finditer(masked, fn.start, fn.end):
            name = match.group(1).decode()
            if not WIDTH_FACTOR_NAME.search(name) or ctx.in_device(match.start(1)):
                continue
            after = masked[match.end() : fn.end]
            given = re.search(
                rb"\b"
                + re.escape(match.group(1))
                + rb"\s*(?:[-+*/|&]?=(?!=)|\+\+|--)|&\s*"
                + re.escape(match.group(1))
                + rb"\b",
                after,
            )
            if given is not None:
                continue  # set again (from the device, perhaps): not only 32
            launched = _launched_lanes(ctx, fn)
            if launched is True:
                continue  # it sizes launches of kernels whose lanes do not matter (or in 32s)
            kw: dict[str, Any] = {"lane_callees": ",".join(sorted(launched))} if launched else {}
            ctx.report(
                match.start(1),
                match.end(1),
                message=f"`{name}` is set to 32 in host code: what is sized from it counts "
                "32-thread warps; CDNA wavefronts are 64 wide",
                fix="Read the width from the device (`hipDeviceProp_t::warpSize` or "
                "`hipDeviceGetAttribute(&w, hipDeviceAttributeWarpSize, dev)`).",
                **kw,
            )


def _launched_lanes(ctx: Context, host: Any) -> bool | frozenset[str]:
    """Do all the kernels `host` launches leave the hardware's lane count alone: True
    when each is this file's and lane-blind or in logical groups of 32; the other
    files' functions that decide it ("~f" for lane-blind or logical) when only those do;
    False when one does depend on it, or `host` launches none (a buffer sized per warp
    may be for any code)."""
    kernels = _kernels(ctx)
    names: set[str] = set()
    launches = 0
    for launch, name in _host_launches(ctx):
        if not host.start <= launch.start_byte < host.end:
            continue
        kernel = kernels.get(name.group(1))
        if kernel is None:
            return False  # another file's kernel (or one not told): not in view
        launches += 1
        blind = _lane_blind(ctx, kernel.start)
        grouping = _grouping(ctx, kernel.start) or ""
        if blind is True or grouping == "logical":
            continue
        # (groups of an explicit width or tiles capped at the host's 32, as simpleSpmv's
        # `threads_per_row` below `warpSize = 32` is: what a wave64 port widens)
        conditional = _logical_if_blind(grouping) or (
            set(blind) if isinstance(blind, frozenset) else set()
        )
        if not conditional:
            return False
        names |= conditional
    if not launches:
        return False
    return frozenset(names) if names else True


def _first_warp_guards(ctx: Context) -> None:
    """`if (tid < 32)` around a reduction over the hardware's width (`for (int d =
    warpSize / 2; …) v += __shfl_xor_sync(…, v, d)`): the first 32 threads taken as the
    block's first warp. On CDNA they are half a wavefront, and the shuffles read lanes
    32-63, which the guard left idle. Not when the shuffles keep to 32 lanes themselves
    (offsets from 16, widths of 32): the guard and they agree."""
    if b"warpSize" not in ctx.data or SHUFFLE_WORD.search(ctx.data) is None:
        return
    for statement in ctx.device_nodes("if"):
        condition = statement.child_by_field_name("condition")
        body = statement.child_by_field_name("consequence")
        if condition is None or body is None:
            continue
        test = condition.named_children[0] if condition.named_children else None
        while test is not None and test.type == "parenthesized_expression" and test.named_children:
            test = test.named_children[0]
        if test is None or test.type != "binary_expression":
            continue
        operator = test.child_by_field_name("operator")
        left, right = test.child_by_field_name("left"), test.child_by_field_name("right")
        if operator is None or text(operator) != "<" or left is None or right is None:
            continue
        if right.type not in OPERAND_TYPES or not _thread_index(ctx, left):
            continue
        code = ctx.masked[body.start_byte : body.end_byte]
        if SHUFFLE_WORD.search(code) is None or WARP_WIDE_STEP.search(code) is None:
            continue
        _report_if(
            ctx,
            right,
            (32,),
            test.start_byte,
            test.end_byte,
            message=f"`{text(test)}` takes 32 threads as a warp, but the shuffles it guards "
            "step over `warpSize` lanes: on CDNA they read lanes 32-63 of a 64-wide "
            "wavefront, which the guard left idle",
            fix="Guard with `< warpSize` (and size what it reads for 64 lanes).",
        )


# A shuffle, CUDA's or a project's wrapper of one (`GpuShuffleXorSync`, `WARP_SHFL_XOR`).
SHUFFLE_WORD = re.compile(rb"(?i)shfl|shuffle")
# A shuffle step or width taken from the hardware's lane count.
WARP_WIDE_STEP = re.compile(rb"\bwarpSize\s*(?:/|>>)|\bwarpSize\s*\)")


def _thread_index(ctx: Context, node: Any) -> bool:
    """Is `node` a thread index: named like one, or a local initialised from one?"""
    if THREAD_INDEX.search(text(node)):
        return True
    declared = ctx.declared(node)
    initial = declared.initial if declared is not None else None
    return initial is not None and "threadIdx" in text(initial)


def _launches_counting_warps(ctx: Context) -> None:
    """A launch whose block is sized as a number of 32-thread warps (`threads = 32 *
    thread_m`, `<<<blocks, 24 * WS>>>`), or whose grid counts the block's warps as its size
    over 32 (`(n + BLOCK_SIZE/32 - 1) / (BLOCK_SIZE/32)` beside `<<<grid, BLOCK_SIZE>>>`),
    of a kernel in this file that depends on the hardware's lane count: on CDNA the block
    holds half as many wavefronts as the kernel is given warps. Not when the kernel is
    lane-blind or groups its lanes itself (explicit shuffle widths, tiles of 32)."""
    kernels = _kernels(ctx)
    by_place: dict[int, tuple[Any, dict[str, Any]]] = {}
    hints: dict[int, bool] = {}
    for launch, name in _host_launches(ctx):
        config = launch.named_children
        if len(config) < 2:
            continue
        kernel = kernels.get(name.group(1))
        host = ctx.function_info_at(launch.start_byte)
        if host is not None:
            hinted = hints.get(host.start)
            if hinted is None:
                code = ctx.masked[host.start : host.end]
                hinted = hints[host.start] = any(word in code for word in WARP_COUNT_HINTS)
            if not hinted:
                continue  # no 32 and no warp width named where the launch is made
            if not _config_hinted(ctx, host.start, launch.start_byte, config[:2]):
                continue  # neither the grid nor the block is computed from one
        block_x = _first_extent(ctx, host, config[1])
        if block_x is None:
            _launch_against_width(ctx, host, launch, name.group(1), kernel, config, by_place)
            continue
        block_text = text(block_x)
        if block_x.type == "identifier" and host is not None:
            # `dim3 blocks(BLOCK_SIZE);` reads as a function's declaration to the grammar
            vexing = re.search(
                rb"\bdim3\s+" + re.escape(block_text.encode()) + rb"\s*\(\s*(\w+)\s*\)\s*;",
                ctx.masked[host.start : launch.start_byte],
            )
            if vexing:
                block_text = vexing.group(1).decode()
        found = _factor_of_32(ctx, block_x)
        if found is not None:
            operand, value = found
            what = f"gives its block `{block_text}` threads, counted in 32-thread warps"
        else:
            grid = _resolved(ctx, host, config[0])
            division = _warps_per_block(ctx, grid, block_text)
            if division is None:
                _launch_against_width(ctx, host, launch, name.group(1), kernel, config, by_place)
                continue
            operand, value = division.child_by_field_name("right"), 32
            what = f"sizes its grid by `{text(division)}` warps per block"
        kw: dict[str, Any] = {}
        blind: bool | frozenset[str] = False
        grouping: str | None = None
        if kernel is None:  # another file's kernel: the project answers for it
            kw["launched"] = f"{name.group(1)}:{text(operand)}"
        else:
            if _splits_by_32(ctx, kernel, text(operand)):
                continue  # `threadIdx.x / 32` in the kernel too: its warps are the launch's
            blind = _lane_blind(ctx, kernel.start)
            grouping = _grouping(ctx, kernel.start)
            if blind is True or (grouping or "").startswith(("width", "tile")):
                continue  # lane-blind, or its groups are 32 lanes on purpose, as the launch's
            if grouping == "logical":
                continue
        # lane-blind if those are; logical groups if those are blind or logical themselves
        callees = _logical_if_blind(grouping) or (
            set(blind) if isinstance(blind, frozenset) else set()
        )
        if callees:
            kw["lane_callees"] = ",".join(sorted(callees))
        if isinstance(value, str):
            kw["when"] = (value, (32,), False)
        kw["message"] = (
            f"the launch of `{name.group(1)}` {what}; a CDNA wavefront is 64 threads, so the "
            "block holds half the warps the launch counts"
        )
        # One finding per place: the launches that share a `threads` local are one question
        # (the project's kernels of a place are asked together).
        earlier = by_place.get(operand.start_byte)
        if earlier is None:
            by_place[operand.start_byte] = (operand, kw)
        elif "launched" in earlier[1] and "launched" in kw:
            earlier[1]["launched"] += "," + kw["launched"]
        elif "launched" in earlier[1]:
            by_place[operand.start_byte] = (operand, kw)  # this file's kernel decides
    for operand, kw in by_place.values():
        ctx.report(
            operand.start_byte,
            operand.end_byte,
            fix="Size the launch from the device's warp size (`hipDeviceProp_t::warpSize` or "
            "`hipDeviceAttributeWarpSize`).",
            fold=False,
            **kw,
        )


def _launch_against_width(
    ctx: Context,
    host: Any,
    launch: Any,
    kernel_name: str,
    kernel: Any,
    config: list[Any],
    by_place: dict[int, tuple[Any, dict[str, Any]]],
) -> None:
    """A launch whose block has rows of 32 threads (`dim3 threads(32, 8)`, `thread_x =
    32`) or whose grid divides a count of threads made as warps of 32 (`total_threads =
    walks * 32`) into blocks, of a kernel that counts its lanes with the device's
    `warpSize` (64 on CDNA): the host's warps are not the kernel's. Asked of the project
    when the kernel (or what it calls) is another file's."""
    found = _rows_of_32(ctx, host, launch, config[1])
    mode = "width"
    if found is not None:
        if kernel is not None and flattens_block(ctx.masked[kernel.start : kernel.end]):
            return  # `threadIdx.y * blockDim.x + threadIdx.x`: its warps are the flat block's
        what = f"gives its block rows of `{text(found)}` threads"
        consequence = "two rows share a wavefront"
        mode = "rows"
    else:
        found = _thread_total(ctx, host, config[0])
        if found is None:
            return
        what = f"sizes its grid from a thread count made as warps of `{text(found)}`"
        consequence = "the grid holds half the warps it counts"
    kw: dict[str, Any] = {}
    if kernel is None or not _reads_width(ctx, kernel):
        if kernel is not None and not _calls_elsewhere(ctx, kernel):
            return  # the kernel and all it calls are here, and none reads warpSize
        kw["launched"] = f"{kernel_name}:{text(found)}:{mode}"
    kw["message"] = (
        f"the launch of `{kernel_name}` {what}, but the kernel counts its lanes with "
        f"`warpSize`, 64 on a CDNA wavefront: {consequence}"
    )
    by_place.setdefault(found.start_byte, (found, kw))


def _rows_of_32(ctx: Context, host: Any, launch: Any, block: Any) -> Any:
    """The 32 of a block of two or three dimensions whose x extent is 32 threads (`dim3
    threads(32, 8)`, or `dim3 threads(thread_x, thread_y)` with `int thread_x = 32;`):
    the node that says 32 (a local's initialiser when the extent is named), or None."""
    node = _resolved(ctx, host, block)
    extents: list[Any] = []
    if node is not None and node.type == "call_expression":
        if text(node.child_by_field_name("function")) == "dim3":
            arguments = node.child_by_field_name("arguments")
            extents = arguments.named_children if arguments is not None else []
    elif node is not None and node.type in ("argument_list", "initializer_list"):
        extents = node.named_children
    elif node is not None and node.type == "identifier" and host is not None:
        # `dim3 threads(thread_x, thread_y);` reads as a function's declaration
        vexing = re.search(
            rb"\bdim3\s+" + re.escape(text(node).encode()) + rb"\s*\(\s*(\w+)\s*,",
            ctx.masked[host.start : launch.start_byte],
        )
        if vexing:
            first = ctx.root.descendant_for_byte_range(
                host.start + vexing.start(1), host.start + vexing.end(1)
            )
            extents = [first, None] if first is not None else []
    if len(extents) < 2 or extents[0] is None:
        return None
    x = _resolved(ctx, host, extents[0])
    if x is None or x.type == "type_identifier" or ctx.value(x) != 32:
        return None
    return x


def _thread_total(ctx: Context, host: Any, grid: Any) -> Any:
    """In a launch's grid, a count of threads made as warps of 32 that the grid divides
    into blocks (`(walks * 32 + 255) / 256`, or a local given `vec_size * 32`): the 32."""
    grid = _resolved(ctx, host, grid)
    if grid is None or grid.type == "number_literal":
        return None
    if grid.type == "call_expression" and text(grid.child_by_field_name("function")) == "dim3":
        arguments = grid.child_by_field_name("arguments")
        grid = arguments.named_children[0] if arguments and arguments.named_children else None
        grid = _resolved(ctx, host, grid)
    if grid is None or b"/" not in text(grid).encode():
        return None  # not divided into blocks here
    for node in [grid, *descendants(grid, "binary_expression"), *descendants(grid, "identifier")]:
        product = _resolved(ctx, host, node) if node.type == "identifier" else node
        found = _factor_of_32(ctx, product)
        if found is not None and found[1] == 32:
            return found[0]
    return None


def _reads_width(ctx: Context, kernel: Any) -> bool:
    """Does the kernel, or a function of this file it calls, read the device's
    `warpSize`?"""
    by_name = _functions_by_name(ctx)
    seen: set[int] = set()
    todo = [kernel]
    while todo and len(seen) < MAX_WIDTH_READERS:
        fn = todo.pop()
        if fn.start in seen:
            continue
        seen.add(fn.start)
        if reads_hardware_width(ctx.masked[fn.start : fn.end]):
            return True
        for name in fn.calls:
            todo.extend(by_name.get(name, ()))
    return False


def _calls_elsewhere(ctx: Context, kernel: Any) -> bool:
    """Does the kernel call a function that neither this file nor CUDA defines?"""
    by_name = _functions_by_name(ctx)
    cuda_names = _cuda_names(ctx)
    return any(
        name not in by_name
        and name not in cuda_names
        and name not in NOT_CALLEES
        and not name.startswith(METHOD_MARK)
        for name in kernel.calls
    )


HARDWARE_WIDTH = re.compile(rb"\bwarpSize\b")
# `int warpSize = 32;`: a local of that name, not the device's
LOCAL_WIDTH = re.compile(rb"\b(?:int|unsigned|auto|size_t|int32_t)\s+warpSize\s*(?:=|\{)")


# `threadIdx.y * blockDim.x + threadIdx.x`: a two-dimensional block numbered flat
FLAT_BLOCK = re.compile(rb"threadIdx\.y\s*\*\s*blockDim\.x|blockDim\.x\s*\*\s*threadIdx\.y")


def flattens_block(code: bytes) -> bool:
    """Does a kernel number its threads flat across the rows of its block?"""
    return FLAT_BLOCK.search(code) is not None


def reads_hardware_width(code: bytes) -> bool:
    """Does code (comments and strings blanked) read the device's `warpSize`?"""
    return HARDWARE_WIDTH.search(code) is not None and LOCAL_WIDTH.search(code) is None


def _splits_by_32(ctx: Context, kernel: Any, factor: str) -> bool:
    """Does the kernel split its threads into warps of 32 itself (`threadIdx.x / 32`, `>>
    5`, `& 31`, `% WS` with the launch's own factor)? Then the launch's warps are the
    kernel's; whether that split is a hazard is the kernel's finding."""
    return bool({"32", factor} & split_divisors(ctx.masked, kernel.start, kernel.end))


SPLIT_DIVISOR = re.compile(rb"(?:/|%)\s*([A-Za-z_]\w*|\d+)\b|>>\s*5\b|&\s*(?:31|0x1[fF])\b")


def split_divisors(masked: bytes, start: int, end: int) -> frozenset[str]:
    """What code (comments and strings blanked) divides by or takes the remainder of, as
    written; `>> 5` and `& 31` as "32"."""
    return frozenset(
        m.group(1).decode() if m.group(1) is not None else "32"
        for m in SPLIT_DIVISOR.finditer(masked, start, end)
    )


def own_groups(code: bytes) -> bool:
    """Does a function's code group its lanes on purpose: cooperative-groups tiles of 32, or
    shuffles that all pass an explicit width of at most 32 (_grouping, read without the
    file's constants)?"""
    if any(m.group(1).strip() == b"32" for m in TILE.finditer(code)):
        return True
    return _all_explicit_widths(code)


def _all_explicit_widths(code: bytes) -> bool:
    """Does every warp shuffle in `code` (there being one) pass an explicit width of at most
    32 lanes?"""
    verdicts = [_explicit_width(code, m) for m in SHUFFLE.finditer(code)]
    return bool(verdicts) and all(verdicts)


def _functions_by_name(ctx: Context) -> dict[str, list[Any]]:
    """The file's functions by name, once per file."""
    by_name = ctx.memo.get("functions-by-name")
    if by_name is None:
        by_name = ctx.memo["functions-by-name"] = {}
        for f in ctx.functions:
            by_name.setdefault(f.name, []).append(f)
    return by_name


def _cuda_names(ctx: Context) -> set[str]:
    """The CUDA names the file uses, once per file."""
    names = ctx.memo.get("cuda-names")
    if names is None:
        names = ctx.memo["cuda-names"] = {u.name for u in ctx.uses}
    return names


# A 32 or a warp width's name somewhere in a host function: what a launch counting warps
# needs (checked, once per function, before anything is resolved).
WARP_COUNT_HINTS = (b"32", b"warp", b"Warp", b"WARP", b"WS")

KERNEL_NAME = re.compile(r"\s*(?:::)?(?:\w+::)*(\w+)")


def _kernels(ctx: Context) -> dict[str, Any]:
    """The file's kernels by name (the first of a name), once per file."""
    kernels = ctx.memo.get("kernels")
    if kernels is None:
        kernels = ctx.memo["kernels"] = {}
        for fn in ctx.functions:
            if fn.is_kernel:
                kernels.setdefault(fn.name, fn)
    return kernels


def _host_launches(ctx: Context) -> list[tuple[Any, re.Match[str]]]:
    """The file's `<<<…>>>` launches in host code: (the launch's configuration node, the
    match of the kernel's name), once per file."""
    found = ctx.memo.get("host-launches")
    if found is not None:
        return found
    found = ctx.memo["host-launches"] = []
    if ctx.root is None or b"<<<" not in ctx.data:
        return found
    for use in ctx.uses_named(["<<<>>>"]):
        if use.in_device_code:
            continue
        launch = ctx.root.descendant_for_byte_range(use.span.start_byte, use.span.end_byte)
        if launch is None or launch.type != "kernel_call_syntax":
            continue
        call = launch.parent
        callee = call.child_by_field_name("function") if call is not None else None
        name = KERNEL_NAME.match(text(callee)) if callee is not None else None
        if name is not None:
            found.append((launch, name))
    return found


def _config_hinted(ctx: Context, start: int, end: int, config: list[Any]) -> bool:
    """Does a launch's grid or block, or what a local it names is first given before the
    launch (or what a local named there is given), name a 32 or a warp width? A textual
    look before anything is resolved."""
    for arg in config:
        written = text(arg).encode()
        if any(word in written for word in WARP_COUNT_HINTS):
            return True
        for name in set(IDENTIFIER.findall(written)):  # `blocks`, `(total + 255) / 256`
            if _given_hint(ctx, start, end, name, 1):
                return True
    return False


def _given_hint(ctx: Context, start: int, end: int, name: bytes, hops: int) -> bool:
    """Is the local `name` first given (between start and end) something that names a 32
    or a warp width, or, `hops` more times, a local that is?"""
    given = re.search(rb"\b" + re.escape(name) + rb"\s*(?:=|\(|\{)([^;]*)", ctx.masked[start:end])
    if given is None:
        return False
    if any(word in given.group(1) for word in WARP_COUNT_HINTS):
        return True
    return hops > 0 and any(
        _given_hint(ctx, start, end, other, hops - 1)
        for other in set(IDENTIFIER.findall(given.group(1))) - {name}
    )


IDENTIFIER = re.compile(rb"\b[A-Za-z_]\w*\b")


def _resolved(ctx: Context, fn: Any, node: Any) -> Any:
    """`node`, or the initialiser of the local it names when `fn` declares it once with
    one (`int threads = 32 * thread_m;`, `dim3 grid(...)`)."""
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    # (a type_identifier: `dim3 b(tx, ty);` reads as a declaration of a function of types)
    if fn is None or node is None or node.type not in ("identifier", "type_identifier"):
        return node
    found = ctx.declarations(fn).get(text(node))
    if not found or len(found) != 1 or found[0][1].parameter or found[0][1].initial is None:
        return node
    return found[0][1].initial


def _first_extent(ctx: Context, fn: Any, node: Any) -> Any:
    """The x extent of a launch's block argument: the expression itself, or the first of a
    `dim3(...)`, `dim3 b(...)` or `{...}`."""
    node = _resolved(ctx, fn, node)
    if node is None:
        return None
    if node.type == "call_expression" and text(node.child_by_field_name("function")) == "dim3":
        node = node.child_by_field_name("arguments")
    if node is not None and node.type in ("argument_list", "initializer_list"):
        extents = node.named_children
        if len(extents) != 1:
            return None  # `dim3(32, 8)`: rows of 32 threads, a layout of its own
        node = extents[0]
    return node


def _factor_of_32(ctx: Context, node: Any) -> tuple[Any, int | str] | None:
    """In a product (`32 * thread_m`, `kWarps * WARP_SIZE`), the factor whose value is or
    may be 32 and that value (an expression the project decides when named)."""
    while node is not None and node.type == "parenthesized_expression" and node.named_children:
        node = node.named_children[0]
    if node is None or node.type != "binary_expression":
        return None
    operator = node.child_by_field_name("operator")
    if operator is None or text(operator) != "*":
        return None
    sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
    for operand, other in ((sides[0], sides[1]), (sides[1], sides[0])):
        if operand is None:
            continue
        if other is not None and re.search(
            r"/\s*\(?\s*" + re.escape(text(operand)) + r"\b", text(other)
        ):
            continue  # `((n + 31) / 32) * 32`: n rounded up to whole warps, not a warp count
        if operand.type == "binary_expression":
            inner = _factor_of_32(ctx, operand)
            if inner is not None:
                return inner
            continue
        if operand.type not in OPERAND_TYPES:
            continue
        value = ctx.value(operand)
        if operand.type != "number_literal" and not WIDTH_FACTOR_NAME.search(text(operand)):
            continue  # `TILE * 8`: a 32 that is not said to be the warp's
        if value == 32 or isinstance(value, str):
            return operand, value
    return None


# A factor named for the warp width (`WARP_SIZE`, `kWarpSize`, HeCBench's `WS`).
WIDTH_FACTOR_NAME = re.compile(WARP_WIDTH_NAME.pattern + r"|^WS$")


def _warps_per_block(ctx: Context, grid: Any, block: str) -> Any:
    """The division `block / 32` inside a grid's expression, or None."""
    if grid is None:
        return None
    wanted = block.replace(" ", "")
    for division in descendants(grid, "binary_expression"):
        operator = division.child_by_field_name("operator")
        left = division.child_by_field_name("left")
        right = division.child_by_field_name("right")
        if operator is None or text(operator) != "/" or left is None or right is None:
            continue
        if text(left).replace(" ", "") == wanted and ctx.value(right) == 32:
            return division
    return None


# Offsets that make a butterfly or tree reduction over 32 lanes when written out.
UNROLLED_OFFSETS = frozenset({16, 8, 4, 2, 1})


def _unrolled_reductions(ctx: Context) -> None:
    """`sum += __shfl_down_sync(m, sum, 16); … 8; … 4; … 2; … 1;` written out, not as a
    loop: a reduction over 32 lanes, as the loop form is (reported at the 16). Also through
    a project's shuffle wrapper (`SHFL_DOWN(sum, 16)`, `warp_shfl_xor(v, 8)`): the offset
    is the literal argument that halves from call to call. An offset-32 step that only an
    AMD build takes (`#if USE_HIP  s += SHFL_DOWN(s, 32);  #endif` in front of the shared
    ladder) is the project's AMD path for it."""
    if b"__shfl" not in ctx.data and SHUFFLE_WORD.search(ctx.data) is None:
        return
    # (function, callee, argument position) -> [(offset, node, AMD-only)]
    steps: dict[tuple[int, str, int], list[tuple[int, Any, bool]]] = {}
    for call in ctx.device_nodes("call"):
        name = call_name(call)
        args = call_arguments(call)
        if name in UNROLLED_SHUFFLES:
            position = 2 if name.endswith("_sync") else 1
            if len(args) != position + 1 or args[position].type != "number_literal":
                continue  # (an explicit width: the groups are deliberate)
        elif REDUCING_WRAPPER.search(name) is not None:
            literals = [i for i, a in enumerate(args) if a.type == "number_literal"]
            if len(literals) != 1:
                continue  # none, or a width beside the offset
            position = literals[0]
        else:
            continue
        value = evaluate(text(args[position]), lambda n: None, in_if=False)
        fn = next((f for f in ctx.functions if f.start <= call.start_byte < f.end), None)
        if fn is None or not isinstance(value, int):
            continue
        if value == 16 and _under_width_test(call):
            # `if constexpr (kWarpSize == 64) v = max(v, shfl_xor(v, 16));`: a half-warp
            # reduction whose first step comes with the wider wavefront
            continue
        amd = _amd_takes(ctx, call.start_byte)
        steps.setdefault((fn.start, name, position), []).append((value, args[position], amd))
    for (start, _, _), calls in steps.items():
        offsets = {v for v, _, amd in calls if not amd}
        if 32 in offsets or 16 not in offsets or len(offsets & UNROLLED_OFFSETS) < 3:
            continue
        node = next(n for v, n, amd in calls if v == 16 and not amd)
        wide = [n for v, n, amd in calls if v == 32 and amd]
        wide += [
            n
            for (other, _, _), more in steps.items()
            if other == start
            for v, n, amd in more
            if v == 32 and amd and n not in wide
        ]
        message = "shuffle reduction written out from offset 16 covers only 32 lanes"
        if wide:
            line = ctx.span(wide[0].start_byte, wide[0].end_byte).line
            message += f"; the AMD branch's offset-32 step (line {line}) completes it on wave64"
        _report_if(
            ctx,
            node,
            (16,),
            node.start_byte,
            node.end_byte,
            message=message,
            fix="Add the offset-32 step under a wave64 test (or loop from `warpSize / 2`).",
            amd_alternative=bool(wide),
        )


def _under_width_test(node: Any) -> bool:
    """Is `node` inside an `if` (in its function) that tests the warp's width?"""
    parent = node.parent
    while parent is not None and parent.type != "function_definition":
        if parent.type == "if_statement":
            condition = text(parent.child_by_field_name("condition"))
            if WIDTH_TEST.search(condition):
                return True
        parent = parent.parent
    return False


# A test of the warp's width: `kWarpSize == 64`, `warpSize > 32`, `WAVE_SIZE >= 64`.
WIDTH_TEST = re.compile(r"(?i)\b\w*(?:warp|wave|wavefront)\w*\s*(?:==|!=|>=|<=|>|<)\s*(?:32|64)\b")


# A project's wrapper of a reducing shuffle: `SHFL_DOWN`, `warp_shuffle_xor`, `shfl_down_f`.
REDUCING_WRAPPER = re.compile(
    r"(?i)^(?!__shfl).*(?:(?:shfl|shuffle).*(?:down|xor|bfly)|(?:down|xor|bfly).*(?:shfl|shuffle))"
)


UNROLLED_SHUFFLES = frozenset({"__shfl_down_sync", "__shfl_xor_sync", "__shfl_down", "__shfl_xor"})


# `static constexpr int ne = I * J / 32;` then `float x[ne];`: each lane's share of a tile
# that a 32-lane warp holds between its lanes (an mma/ldmatrix fragment layout).
TILE_SHARE = re.compile(
    r"^\(?\s*(?:[A-Za-z_]\w*|\d+)\s*\*\s*(?:[A-Za-z_]\w*|\d+)\s*\)?\s*/\s*"
    r"(?P<lanes>[A-Za-z_]\w*|\d+[uU]?)$"
)


def tile_shares(ctx: Context) -> None:
    """Per-lane register arrays sized as a tile's elements over 32 lanes. Reported at the
    use even where the project's 32 is a deliberate logical width: a fragment layout
    is the hardware's, and CDNA's MFMA spreads its tiles over 64 lanes."""
    for constant in ctx.preproc.constants:
        match = TILE_SHARE.match(constant.expr)
        if match is None:
            continue
        array = re.compile(
            rb"\b[A-Za-z_][\w:]*\s+[A-Za-z_]\w*\s*\[\s*"
            + re.escape(constant.name.encode())
            + rb"\s*\]"
        )
        if array.search(ctx.data, constant.offset) is None:
            continue
        lanes = match.group("lanes")
        message = (
            f"`{constant.name} = {constant.expr}` gives each lane its share of a tile held by a "
            "32-lane warp (an NVIDIA mma fragment layout); CDNA wavefronts are 64 wide and "
            "MFMA fragments are laid out differently"
        )
        fix = (
            "Size the share from the wave size (`I * J / warpSize`) and map lanes to the "
            "MFMA/WMMA layouts (rocWMMA), as the AMD branch of such a tile does."
        )
        start, end = constant.offset, constant.offset + len(constant.name.encode())
        if lanes[0].isdigit():
            if int(lanes.rstrip("uU")) == 32:
                ctx.report(start, end, message, fix=fix)
        else:
            ctx.report(start, end, message, fix=fix, when=(lanes, (32,), False), fold=False)


# `if (threads_per_head == 8) … else if (threads_per_head == 16) … else if (… == 32)`:
# a launch ladder over group widths whose top rung is one 32-lane warp.
LADDER_RUNG = re.compile(rb"\bif\s*\(\s*([A-Za-z_]\w*)\s*==\s*(\d+)\s*\)")
LANE_COUNT_NAME = re.compile(r"(?i)thread|lane|width|warp|group")
LADDER_GAP = 600  # bytes between two rungs of one ladder
IDENTIFIER = re.compile(rb"\b[A-Za-z_]\w*")
DIRECTIVE_LINE = re.compile(rb"\n[ \t]*#")  # ladders in different branches are different


def width_ladders(ctx: Context) -> None:
    """A dispatch over lane-group widths that stops at 32, in a file that reads the
    project's warp width: where that width is 64 (an AMD build), the widest group the
    code asks for has no rung. Decided with the project's constants."""
    if b"== 32" not in ctx.data and b"==32" not in ctx.data:
        return
    masked = ctx.masked
    ladders: dict[str, list[list[re.Match[bytes]]]] = {}
    for rung in LADDER_RUNG.finditer(masked):
        runs = ladders.setdefault(rung.group(1).decode(), [])
        gap = masked[runs[-1][-1].end() : rung.start()] if runs else b""
        if runs and len(gap) <= LADDER_GAP and DIRECTIVE_LINE.search(gap) is None:
            runs[-1].append(rung)
        else:
            runs.append([rung])
    widths: list[str] | None = None
    for name, runs in ladders.items():
        if not LANE_COUNT_NAME.search(name):
            continue
        for rungs in runs:
            values = {int(r.group(2)) for r in rungs}
            if 32 not in values or 64 in values or len(values & {2, 4, 8, 16}) < 2:
                continue
            if widths is None:
                names = {m.group().decode() for m in IDENTIFIER.finditer(masked)}
                widths = sorted(n for n in names if WARP_WIDTH_NAME.search(n))
            if not widths:
                return
            top = next(r for r in rungs if int(r.group(2)) == 32)
            ctx.report(
                top.start(1),
                top.end(2),
                f"`{name}` is dispatched over group widths up to 32, one NVIDIA warp; this "
                "project's warp width is 64 on AMD, so a group as wide as the wavefront has "
                "no case",
                fix="Add the 64-lane case (or derive the ladder's top from the warp width).",
                when=(" || ".join(f"{w} == 64" for w in widths), (1,), False),
                fold=False,
            )


# The classic unrolled warp reduction: `if (tid < 32) { volatile float* s = sdata;
# s[tid] += s[tid + 32]; s[tid] += s[tid + 16]; ... }`, which relies on the first 32
# threads running in lockstep without a __syncwarp().
BELOW_A_WARP = re.compile(r"^\s*\(?\s*(?P<index>[^<>]+?)\s*<\s*(?P<bound>\w+)\s*\)?\s*$")
# `s[tid + 16]`: one step of a tree reduction over a warp (an index plus a power of two);
# not `xs[tid * n + 1]`, a record's second field.
UNROLLED_STEP = re.compile(rb"\[\s*[A-Za-z_]\w*\s*\+\s*(32|16|8|4|2|1)\s*\]")


def _steps(code: bytes) -> int:
    """How many different steps of a tree reduction `code` takes."""
    return len(set(UNROLLED_STEP.findall(code)))


def warp_synchronous(ctx: Context) -> None:
    for fn in ctx.functions:
        # `__device__ void warpReduce(volatile float* s, int tid)`: the helper form.
        if not fn.is_device:
            continue
        code = ctx.data[fn.start : fn.end]
        head, _, body = code.partition(b"{")
        steps = _steps(body)
        if b"volatile" in head and steps >= 2 and b"__syncwarp" not in body:
            ctx.report(
                fn.start,
                fn.start + len(head.rstrip()),
                f"warp-synchronous helper `{fn.name}`: updates shared memory through a "
                "volatile pointer in lanes 32 apart, relying on 32 threads in lockstep "
                "without __syncwarp(); an AMD CDNA wavefront has 64 lanes",
                fix="Reduce with `__shfl_down` over `warpSize` lanes instead.",
            )
    for branch in ctx.device_nodes("if"):
        condition = branch.child_by_field_name("condition")
        body = branch.child_by_field_name("consequence")
        match = BELOW_A_WARP.match(text(condition).strip("()"))
        if match is None or body is None or not THREAD_INDEX.search(match.group("index")):
            continue
        code = body.text or b""
        if b"__syncwarp" in code:
            continue
        if b"volatile" not in code and _steps(code) < 3:
            continue
        bound = condition.named_children[-1] if condition.named_children else None
        target = bound.child_by_field_name("right") if bound is not None else None
        _report_if(
            ctx,
            target,
            (32,),
            branch.start_byte,
            condition.end_byte,
            message="warp-synchronous code: the first 32 threads are taken to run in lockstep "
            "as one warp, without __syncwarp(); an AMD CDNA wavefront has 64 lanes",
            fix="Loop with `__shfl_down` over `warpSize` lanes, or synchronise each step; do "
            "not rely on implicit lockstep.",
        )


# `#define SHFL_SYNC(v, src, w) __shfl_sync(0xffffffff, v, src, w)`: a wrapper macro's body
# is not code the grammar parses, so its mask is read from the text.
MACRO_SYNC_CALL = re.compile(
    rb"\b("
    + rb"|".join(re.escape(n.encode()) for n in sorted(SYNC_INTRINSICS))
    + rb")\s*\(\s*"
    + rb"("
    + FULL_MASK_32_TEXT.encode()
    + rb")\s*[,)]"
)


def _macro_body_masks(ctx: Context) -> None:
    if b"_sync" not in ctx.data:
        return
    masked = ctx.masked
    for macro in ctx.preproc.macros:
        if "_sync" not in macro.body:
            continue
        if not macro.function_like:
            if macro.body in SYNC_INTRINSICS:
                # `#define SHFL_DOWN_SYNC __shfl_down_sync`: every call through the alias
                # passes a lane mask, and the calls do not name the intrinsic.
                at = masked.find(macro.body.encode(), macro.offset)
                if at < 0:
                    continue
                ctx.report(
                    at,
                    at + len(macro.body),
                    f"`{macro.name}` stands for {macro.body}: its calls pass a lane mask, 32 "
                    "bits wide on NVIDIA; HIP's *_sync intrinsics take a 64-bit mask and wave64 "
                    "needs 64 lanes",
                    fix="Pass the mask as `unsigned long long` (all ones: `~0ull`) through the "
                    "alias, or define it per platform.",
                )
            continue
        end = masked.find(b"\n", macro.offset)
        while end > 0 and masked[end - 1 : end] == b"\\":
            end = masked.find(b"\n", end + 1)
        for call in MACRO_SYNC_CALL.finditer(masked, macro.offset, len(masked) if end < 0 else end):
            name, mask = call.group(1).decode(), call.group(2).decode()
            ctx.report(
                call.start(2),
                call.end(2),
                f"`{mask}` passed to {name} in macro `{macro.name}` is a 32-lane mask; wave64 "
                "needs 64 bits",
                fix=FULL_MASK_FIX,
            )


MACRO_NAME = re.compile(r"[A-Z][A-Z0-9_]*")


def _mask_through_macro(ctx: Context, call: Any, name: str, literal_only: bool = False) -> None:
    """`SHFL_XOR_SYNC(0xffffffff, v, 16)`: a 32-bit full mask handed to a project macro.
    Reported when the project's macro passes that argument to a *_sync intrinsic as its
    mask (known only with every file's macros: a pending question). `literal_only`: not
    for a named mask (a call that may be a function's)."""
    for position, arg in enumerate(call_arguments(call)):
        message, fix = _wrapped_mask_message(arg, name), FULL_MASK_FIX
        if FULL_MASK_32.match("".join(text(arg).split())):
            ctx.report(arg.start_byte, arg.end_byte, message, fix=fix, wrapper=(name, position))
        elif arg.type == "identifier" and not literal_only:
            # `SM_SHFL_XOR(SM_FULL_MASK, v, o)`: a named mask, whose value the project
            # knows; a use of that definition (folded into it, as other uses are)
            value = ctx.value(arg)
            # Asked of the project too when this file decides it, so that the use is listed
            # at (and folded into) the definition, which then has an AMD path where the
            # macro drops the mask.
            expr = text(arg) if value == ALL_ONES_32 else value
            if isinstance(expr, str):
                ctx.report(
                    arg.start_byte,
                    arg.end_byte,
                    message,
                    fix=fix,
                    wrapper=(name, position),
                    when=(expr, (ALL_ONES_32,), False),
                    if_unknown=value == ALL_ONES_32,
                )


# A lane number taken from the device's warp width: `% warpSize`, `& (warpSize - 1)`.
LANE_OF_WARPSIZE = re.compile(r"%\s*warpSize\b|&\s*\(\s*warpSize\s*-\s*1\s*\)")
# CUDA's 32-bit bit-counting intrinsics and their 64-bit counterparts.
BIT_COUNTS_32 = {"__popc": "__popcll", "__ffs": "__ffsll", "__clz": "__clzll", "__brev": "__brevll"}


def _bit_counts_of_ballots(ctx: Context) -> None:
    """`__popc(__ballot_sync(m, p))`, or `__popc(votes)` where `votes` holds a ballot:
    the 32-bit intrinsic counts (or finds) among lanes 0-31 only of a wave64 ballot (Cycles'
    GPU popcount, HeCBench rsmt's port to `__popcll`)."""
    if not any(name.encode() in ctx.data for name in BIT_COUNTS_32):
        return
    for call in ctx.device_nodes("call"):
        name = call_name(call)
        if name not in BIT_COUNTS_32:
            continue
        args = call_arguments(call)
        if len(args) != 1:
            continue
        producer = _ballot_in(ctx, args[0])
        wide = BIT_COUNTS_32[name]
        if producer is not None:
            message = (
                f"`{name}` of a {producer} result counts lanes 0-31 only; wave64 ballots "
                "are 64 bits"
            )
        elif any(
            re.search(rb"\b%s\s*\(" % wide.encode(), ctx.data[b.start_byte : b.end_byte])
            for b in _amd_twins(ctx, call.start_byte)
        ):
            # `#ifdef __NVCC__ return __ffs(mask); #endif` beside `#ifdef __HIP__ return
            # __ffsll(mask); #endif`: the project's AMD branch counts 64 lanes, so the mask
            # counted here is a lane mask, 32 bits wide on NVIDIA only
            message = (
                f"`{name}` counts 32 bits of a lane mask; the project's AMD branch beside it "
                f"uses `{wide}` for wave64"
            )
        else:
            continue
        ctx.report(call.start_byte, call.end_byte, message, fix=f"Use `{wide}` on a 64-bit mask.")


def _ballot_in(ctx: Context, node: Any, depth: int = 0) -> str | None:
    """The ballot producer whose result `node` is or holds, also as an operand of a bitwise
    expression (`__activemask() & lanes_below`): None when there is none."""
    kind = node.type
    if kind == "parenthesized_expression" and node.named_child_count == 1 and depth < 4:
        return _ballot_in(ctx, node.named_children[0], depth + 1)
    if kind == "binary_expression" and depth < 4:
        operator = node.child_by_field_name("operator")
        if operator is not None and operator.type in ("&", "|", "^"):
            for side in ("left", "right"):
                operand = node.child_by_field_name(side)
                found = _ballot_in(ctx, operand, depth + 1) if operand is not None else None
                if found is not None:
                    return found
        return None
    producer = call_name(node) if kind == "call_expression" else None
    if producer is None and kind == "identifier":
        declared = ctx.declared(node)
        initial = declared.initial if declared is not None else None
        producer = call_name(initial) if initial is not None else None
        if declared is not None and initial is None:  # `mask = __match_any_sync(…);` later
            fn = next((f for f in ctx.functions if f.start <= node.start_byte < f.end), None)
            assigned = ctx.memo.get("assigned-ballots", {})
            producer = assigned.get((fn.start, text(node))) if fn is not None else None
    return producer if _ballot_producer(producer) else None


def _mask_through_function(ctx: Context, call: Any, name: str) -> bool:
    """`GpuShuffleSync(0xffffffff, v, 0)`: a 32-bit full mask handed to a function of this
    file that passes that parameter to a *_sync intrinsic as its mask. Marked
    `amd_alternative` when that intrinsic sits in the NVIDIA branch beside the function's
    own AMD path (which drops the mask). Whether `name` is such a function."""
    wrappers = ctx.memo.get("mask-functions")
    if wrappers is None:
        wrappers = ctx.memo["mask-functions"] = _mask_functions(ctx)
    found = wrappers.get(name)
    if found is None:
        return False
    position, ported = found
    args = call_arguments(call)
    if position >= len(args) or not FULL_MASK_32.match("".join(text(args[position]).split())):
        return True
    arg = args[position]
    ctx.report(
        arg.start_byte,
        arg.end_byte,
        _wrapped_mask_message(arg, name)
        + ("; the function's AMD branch drops it" if ported else ""),
        fix=FULL_MASK_FIX,
        amd_alternative=ported,
    )
    return True


FULL_MASK_FIX = "Pass `__activemask()` or a 64-bit all-ones mask (`~0ull`)."


def _wrapped_mask_message(arg: Any, wrapper: str) -> str:
    return (
        f"`{text(arg)}` passed to {wrapper} is the lane mask of a *_sync intrinsic inside it: "
        "a 32-lane mask; wave64 needs 64 bits"
    )


def _mask_functions(ctx: Context) -> dict[str, tuple[int, bool]]:
    """Functions of this file that pass their i-th parameter to a *_sync intrinsic as its
    mask: name -> (i, whether that intrinsic is in an NVIDIA branch beside an AMD one)."""
    found: dict[str, tuple[int, bool]] = {}
    for call in ctx.device_nodes("call"):
        if call_name(call) not in SYNC_INTRINSICS:
            continue
        args = call_arguments(call)
        if not args or args[0].type != "identifier":
            continue
        node = call.parent
        while node is not None and node.type != "function_definition":
            node = node.parent
        declarator = node.child_by_field_name("declarator") if node is not None else None
        while declarator is not None and declarator.type != "function_declarator":
            declarator = declarator.child_by_field_name("declarator")
        if declarator is None:
            continue
        function = declarator.child_by_field_name("declarator")
        parameters = declarator.child_by_field_name("parameters")
        if function is None or parameters is None:
            continue
        names = [_parameter_name(p) for p in parameters.named_children]
        mask = text(args[0])
        if mask in names:
            fname = text(function).split("::")[-1].strip()
            found.setdefault(fname, (names.index(mask), _in_nvidia_twin(ctx, call.start_byte)))
    return found


def _parameter_name(parameter: Any) -> str:
    """The name a parameter declaration introduces (`unsigned mask = 0xffffffff` -> mask)."""
    node = parameter.child_by_field_name("declarator")
    while node is not None and node.type != "identifier":
        node = node.child_by_field_name("declarator")
    return text(node) if node is not None else ""


def _coalesced_ballot(ctx: Context, call: Any) -> bool:
    """`active.ballot(p)` on a cooperative-groups `coalesced_group` (`cg::coalesced_group
    active = cg::coalesced_threads();`): as many lanes as the wavefront, so a 64-bit mask
    on HIP. A `thread_block_tile<32>`'s ballot fits 32 bits and is not matched."""
    function = call.child_by_field_name("function")
    if function is None or function.type != "field_expression":
        return False
    field, target = function.child_by_field_name("field"), function.child_by_field_name("argument")
    if field is None or target is None or text(field) != "ballot":
        return False
    name = re.escape(text(target).encode())
    declared = (
        rb"coalesced_group\s*&?\s*"
        + name
        + rb"\b|\b"
        + name
        + rb"\s*=\s*(?:\w+::)*coalesced_threads\s*\("
    )
    return re.search(declared, ctx.data) is not None


# `using warp_mask_t = unsigned int;`, `typedef uint32_t lane_mask_t;`: a type for lane masks
MASK_TYPE_ALIAS = re.compile(
    rb"\busing[ \t]+(\w+)[ \t]*=[ \t]*([\w \t]+?)[ \t]*;"
    rb"|\btypedef[ \t]+([\w \t]+?)[ \t]+(\w+)[ \t]*;"
)


def _narrow_mask_types(ctx: Context) -> None:
    """A type the project names for lane masks (pytorch_scatter's `warp_mask_t`) declared
    32 bits wide: every mask held in it drops lanes 32-63 of a wave64 ballot or shuffle.
    So is one, whatever its name, that the project's AMD branch declares 64 bits wide
    (apex's `typedef unsigned int bitmask_t;` for ballot words, `uint64_t` under
    `#ifdef __HIP_PLATFORM_AMD__`)."""
    has_mask_word = re.search(rb"(?i)mask", ctx.data) is not None
    could_twin = bool(ctx.preproc.branches) and any(
        word in ctx.data for word in (b"HIP", b"ROCM", b"AMD")
    )
    if not has_mask_word and not could_twin:
        return
    masked = ctx.masked
    aliases = [
        (m.group(1), m.group(2), m.start(1))
        if m.group(1) is not None
        else (m.group(4), m.group(3), m.start(4))
        for m in MASK_TYPE_ALIAS.finditer(masked)
    ]
    wide_twins = {
        (name, at)
        for name, kind, at in aliases
        if WIDE_TYPES.match(" ".join(kind.decode(errors="replace").split())) and _amd_takes(ctx, at)
    }
    for name, kind, at in aliases:
        declared = " ".join(kind.decode(errors="replace").split())
        if not NARROW_TYPES.match(declared):
            continue
        named = has_mask_word and LANE_MASK_NAME.search(name.decode(errors="replace"))
        twinned = any(n == name for n, _ in wide_twins) and not _amd_takes(ctx, at)
        if not named and not (twinned and MASK_TYPE_WORD.search(name)):
            continue  # an index type widened for AMD (`int` against `int64_t`) is no mask
        ctx.report(
            at,
            at + len(name),
            f"`{name.decode()}` is a 32-bit lane-mask type (`{declared}`); wave64 ballots "
            "and shuffle masks are 64 bits",
            fix="Declare it `unsigned long long` (or `uint64_t`).",
        )


def _amd_takes(ctx: Context, offset: int) -> bool:
    """Is `offset` in a branch only an AMD build takes (by the file's own tests)?"""
    return any(
        branch.start_byte <= offset < branch.end_byte
        and branch_condition_value(branch, _nvidia_build) == 0
        and branch_condition_value(branch, _amd_build) != 0
        for branch in ctx.preproc.branches
    )


def _nvidia_build(name: str) -> object:
    return unless_defined(name, False)


def _ballots_assigned_to_narrow(ctx: Context) -> None:
    """`unsigned warpMask;` then `warpMask = __activemask();` in a loop: the ballot is
    stored in 32 bits as surely as with an initialiser. Reported at the declaration, whose
    type is the fix (once, however often it is assigned)."""
    for call in ctx.device_nodes("call"):
        name = call_name(call)
        if not _ballot_producer(name):
            continue
        parent = call.parent  # found by walking down from the root: only for these calls
        if parent is None or parent.type != "assignment_expression":
            continue
        operator, left = parent.child_by_field_name("operator"), parent.child_by_field_name("left")
        if operator is None or text(operator) != "=" or left is None or left.type != "identifier":
            continue
        fn = next((f for f in ctx.functions if f.start <= left.start_byte < f.end), None)
        if fn is None:
            continue
        found = [
            (at, d) for at, d in ctx.declarations(fn).get(text(left), ()) if at < left.start_byte
        ]
        if not found:
            continue
        at, declared = found[-1]
        ctx.memo.setdefault("assigned-ballots", {})[(fn.start, text(left))] = name
        if (
            declared.parameter
            or declared.initial is not None
            or not NARROW_TYPES.match(declared.type)
        ):
            continue
        line = ctx.data.count(b"\n", 0, call.start_byte) + 1
        ctx.report(
            at,
            at + len(declared.type),
            f"`{text(left)}` is declared `{declared.type}` (32 bits) and holds the {name} "
            f"result of line {line}; wave64 ballots are 64 bits",
            fix="Declare it `unsigned long long` (or `auto` at the assignment).",
        )


@hazard("lane-mask-width")
def lane_mask_width(ctx: Context) -> None:
    if ctx.root is None:
        return
    _macro_body_masks(ctx)
    _narrow_mask_types(ctx)
    for call in ctx.device_nodes("call"):
        name = call_name(call)
        if name not in SYNC_INTRINSICS:
            if name is not None and MACRO_NAME.fullmatch(name):
                _mask_through_macro(ctx, call, name)
            elif name and not _mask_through_function(ctx, call, name):
                # `gpuKernelAny(0xFFFFFFFF, x)`: a macro named like a function (asked of
                # the project's macros, as an upper-case one is; a full mask written out)
                _mask_through_macro(ctx, call, name, literal_only=True)
            continue
        args = call_arguments(call)
        if not args:
            continue
        message = f"`{text(args[0])}` passed to {name} is a 32-lane mask; wave64 needs 64 bits"
        fix = FULL_MASK_FIX
        declared = ctx.declared(args[0])
        if FULL_MASK_32.match("".join(text(args[0]).split())):
            ctx.report(args[0].start_byte, args[0].end_byte, message, fix=fix)
        elif (
            declared is not None
            and NARROW_TYPES.match(declared.type)
            and (declared.parameter or ctx.value(args[0]) is None)  # else its value decides
        ):
            # `unsigned mask = 0xffffffff` as a parameter (its default), or a mask computed
            # at run time into a 32-bit local: HIP's *_sync intrinsics take 64-bit masks only (a
            # static_assert in amd_warp_sync_functions.h), so the call does not compile. A
            # ballot stored in one is reported where it is stored too (its bits are lost
            # there). Once per declaration: the fix is its type.
            key = ("narrow-mask", id(declared))
            if key in ctx.memo:
                continue
            ctx.memo[key] = True
            producer = call_name(declared.initial) if declared.initial is not None else ""
            held = f", holding a {producer} result," if _ballot_producer(producer) else ""
            ctx.report(
                args[0].start_byte,
                args[0].end_byte,
                f"`{text(args[0])}`{held} passed to {name} is declared `{declared.type}` (32 "
                "bits); HIP's *_sync intrinsics take a 64-bit mask and wave64 needs 64 lanes",
                fix="Declare the mask `unsigned long long` (all ones: `~0ull`).",
            )
        elif ctx.value(args[0]) is None and _in_nvidia_twin(ctx, call.start_byte):
            # `__shfl_sync(mask, v, lane)` in the `#else` of the function's `#ifdef
            # MAGMA_HAVE_HIP`, whose AMD twin shuffles without a mask: whatever `mask` holds,
            # this is CUDA's 32-bit mask API where the project wrote an AMD path (a constant
            # defined per platform would otherwise be read with the AMD build's value).
            ctx.report(
                args[0].start_byte,
                args[0].end_byte,
                f"`{text(args[0])}` passed to {name} is CUDA's 32-bit lane mask; the project's "
                "AMD branch beside it replaces this call",
                fix=fix,
            )
        else:
            _report_if(
                ctx,
                args[0],
                (ALL_ONES_32,),
                args[0].start_byte,
                args[0].end_byte,
                message=message,
                fix=fix,
            )
    for declarator in ctx.device_nodes("init"):
        value = declarator.child_by_field_name("value")
        if value is None or value.type != "call_expression":
            continue
        if not _ballot_producer(call_name(value)) and not _coalesced_ballot(ctx, value):
            continue
        declaration = declarator.parent
        type_node = declaration.child_by_field_name("type") if declaration is not None else None
        type_text = " ".join(text(type_node).split())
        if NARROW_TYPES.match(type_text):
            ctx.report(
                declarator.start_byte,
                declarator.end_byte,
                f"{call_name(value)} result stored in 32-bit `{type_text}`; "
                "wave64 ballots are 64 bits",
                fix="Store it in `unsigned long long` (or `auto`).",
            )
    _ballots_assigned_to_narrow(ctx)
    _bit_counts_of_ballots(ctx)
    for shift in ctx.device_nodes("binary"):
        operator = shift.child_by_field_name("operator")
        if operator is None or text(operator) != "<<":
            continue
        left, right = shift.child_by_field_name("left"), shift.child_by_field_name("right")
        # `1u << lane`, `1u << (threadIdx.x % warpSize)`: a lane's bit in 32 bits (not
        # `1 << (blockDim.x / warpSize)`, a bit per warp)
        if text(left).lower() in ("1", "1u") and (
            re.search(r"lane", text(right), re.I) or LANE_OF_WARPSIZE.search(text(right))
        ):
            ctx.report(
                shift.start_byte,
                shift.end_byte,
                f"`{text(shift)}` overflows a 32-bit mask for lanes 32–63",
                fix="Shift a 64-bit one: `1ull << lane`.",
            )
