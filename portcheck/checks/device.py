"""Device-code hazards: inline PTX, arch conditionals, launch bounds, device-side launches."""

from __future__ import annotations

import re
from typing import Any

from portcheck.checks import Context, hazard
from portcheck.checks.syntax import call_name, text
from portcheck.checks.warp import _nvidia_build, lone_neighbours
from portcheck.extract import nvptx_barrier_constraints
from portcheck.model import Status, Verdicts
from portcheck.preproc import (
    AMD_PASS_GUARDS,
    DEFINED,
    UNDEFINED,
    Branch,
    amd_takes_in_some_release,
    branch_condition_value,
    evaluate,
    is_amd_guard,
    looks_like_amd_guard,
    names_in,
    newest_nvidia,
    unless_defined,
)

COMPARE = r"\s*(?:[<>]=?|==|!=)\s*"
# A compute capability (`700`, `SM_80_ARCH`); not `__CUDA_ARCH__ > 0`, a device-pass test
OPERAND = r"(?:[1-9]\d{2,}|[A-Za-z_]\w*)"
ARCH_COMPARISON = re.compile(rf"__CUDA_ARCH__{COMPARE}{OPERAND}|{OPERAND}{COMPARE}__CUDA_ARCH__")


def _nvidia_device_pass(name: str) -> object:
    """An NVIDIA device pass for some GPU: `__CUDA_ARCH__` defined, its value unknown."""
    return DEFINED if name == "__CUDA_ARCH__" else unless_defined(name, False)


def _nvidia_host_pass(name: str) -> object:
    """The host pass of the same build: no `__CUDA_ARCH__`."""
    return UNDEFINED if name == "__CUDA_ARCH__" else unless_defined(name, False)


def _host_pass_only(ctx: Context, offset: int) -> bool:
    """Is `offset` in a branch no NVIDIA device pass compiles but its host pass may
    (`#elif defined(__x86_64__)` after `#if defined(__CUDA_ARCH__) || …` in a `__host__
    __device__` function)? Assembly there is the host CPU's, not PTX. A branch neither pass
    takes (another platform's, hashcat's OpenCL kernels for NVIDIA GPUs) is not decided here."""
    spans: list[tuple[int, int]] | None = ctx.memo.get("host-pass-only")
    if spans is None:
        spans = ctx.memo["host-pass-only"] = [
            (b.start_byte, b.end_byte)
            for b in ctx.preproc.branches
            if branch_condition_value(b, _nvidia_device_pass) == 0
            and branch_condition_value(b, _nvidia_host_pass) != 0
        ]
    return any(start <= offset < end for start, end in spans)


@hazard("inline-ptx")
def inline_ptx(ctx: Context) -> None:
    for use in ctx.uses_named(["asm"]):
        if _host_pass_only(ctx, use.span.start_byte):
            continue
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            "inline PTX assembly in device code cannot be compiled for AMD GPUs",
        )
    _barrier_constraints(ctx)
    if ctx.root is None or not ctx.preproc.branches:
        return
    # `ldmatrix_m8n8x4(offset, frag)` in the NVIDIA branch beside the project's AMD one,
    # the PTX in another header's wrapper: the call is where the port changed the code.
    for call in ctx.device_nodes("call"):
        name = call_name(call)
        if not name or not PROJECT_CALLEE.fullmatch(name) or ctx.lookup is None:
            continue
        if ctx.lookup(name) is not None or not _in_branch_within_function(ctx, call.start_byte):
            continue  # whether the branch is NVIDIA-only beside an AMD one: the project's call
        function = call.child_by_field_name("function")
        qualifier = text(function).rpartition("::")[0].strip() if function is not None else ""
        if qualifier.split("::")[0].strip() in LIBRARY_NAMESPACES:
            continue  # `cg::reduce(tile, …)`: the library's, whatever the project names `reduce`
        end = function.end_byte if function is not None else call.end_byte
        ctx.report(
            call.start_byte,
            end,
            f"`{name}` runs inline PTX; the project's AMD branch beside this call replaces it",
            fix="Nothing to change while the AMD branch is kept in step with this one.",
            amd_alternative=True,
            ptx_callee=name,
        )


BARRIER_ASM = re.compile(rb'\b(?:asm|__asm__|__asm)\b[\s\w]*\(\s*""')


def _barrier_constraints(ctx: Context) -> None:
    """`asm volatile("" : "+l"(need))`, a value barrier in device code (not PTX, so no
    `asm` use): an operand constraint only NVPTX has is a compile error for AMD."""
    if b'""' not in ctx.data:
        return
    for match in BARRIER_ASM.finditer(ctx.data):
        start = match.start()
        if not ctx.in_device(start) or _host_pass_only(ctx, start):
            continue
        end = ctx.data.find(b";", start)
        letters = nvptx_barrier_constraints(ctx.data[start : end if end >= 0 else len(ctx.data)])
        if not letters:
            continue
        shown = ", ".join(f"`{c}`" for c in letters)
        ctx.report(
            start,
            start + len(match.group(0).split(b"(")[0].rstrip()),
            f"an empty asm statement (a compiler barrier) binds an operand with NVPTX's "
            f"register constraint {shown}, which hipcc rejects (invalid constraint)",
            fix="Keep the barrier and bind the operand with `v` (a vector register) or `r`.",
            # a constraint to change, not PTX to rewrite: reviewed, not rewritten
            targets=Verdicts(Status.PARTIAL, Status.SUPPORTED, Status.SUPPORTED),
        )


PROJECT_CALLEE = re.compile(r"[A-Za-z_]\w*")
# Namespaces of the toolkit's and the standard libraries (and their usual aliases): a call
# qualified with one is not the project's function of the same name.
LIBRARY_NAMESPACES = frozenset(
    {
        "cg",
        "cooperative_groups",
        "cub",
        "thrust",
        "nvcuda",
        "wmma",
        "cuda",
        "std",
        "cute",
        "cutlass",
        "at",
        "c10",
        "torch",
        "__gnu_cxx",
    }
)


def _in_branch_within_function(ctx: Context, offset: int) -> bool:
    """Is `offset` in a conditional branch that lies inside the function around it?"""
    fn = next((f for f in ctx.functions if f.start <= offset < f.end), None)
    return fn is not None and any(
        b.start_byte <= offset < b.end_byte and fn.start < b.start_byte
        for b in ctx.preproc.branches
    )


@hazard("arch-conditional")
def arch_conditional(ctx: Context) -> None:
    """Read from the file's preprocessor facts (lexical, so a branch the grammar could not
    parse is still seen): `#if`/`#elif` tests and `#define` bodies that compare
    `__CUDA_ARCH__` with a number or a named compute capability."""
    if b"__CUDA_ARCH__" not in ctx.data:
        return
    seen: set[int] = set()

    def amd(name: str) -> object:  # this file's view of an AMD build
        return unless_defined(name, True)

    def unless_amd_takes(test: str) -> dict[str, Any]:
        """Report now when this file shows an AMD build does not take `test`; when only
        the project's macros can tell (`defined(FP16_AVAILABLE) && __CUDA_ARCH__ != 610`,
        FP16_AVAILABLE derived from the AMD guard in another header), ask the project."""
        if evaluate(test, amd) is None:
            return {"when": (test, (1,), True), "directive": True, "if_unknown": True}
        return {}

    def line_end(offset: int) -> int:
        end = ctx.data.find(b"\n", offset)
        return end if end != -1 else len(ctx.data)

    # One finding per #if/#elif chain of compute-capability tests (a ladder of 16 `#elif
    # __CUDA_ARCH__ == …` is one place to port), at its first test.
    chains: dict[int, list[tuple[Branch, str]]] = {}
    let_in: dict[int, tuple[Branch, str, str]] = {}  # group -> first test AMD is let into
    # group -> a test for older NVIDIA GPUs (`__CUDA_ARCH__ < 700`) that an AMD build takes
    # only because it leaves `__CUDA_ARCH__` undefined
    older: dict[int, tuple[Branch, str]] = {}
    for branch in ctx.preproc.branches:
        match = ARCH_COMPARISON.search(branch.test or "")
        if match and (
            evaluate(branch.test or "", amd) == 1
            or amd_takes_in_some_release(branch.test or "", amd)
        ):
            # `__CUDA_ARCH__ >= 700 || defined(USE_ROCM)`: the project's port let its AMD
            # build into the branch; a test AMD takes for want of `__CUDA_ARCH__` (`||
            # !defined(__CUDA_ARCH__)`, the host pass) is no port's work.
            guard = next(
                (
                    n
                    for n in sorted(names_in(branch.test or ""))
                    if is_amd_guard(n) or looks_like_amd_guard(n)
                ),
                None,
            )
            if guard is not None and branch.group not in let_in:
                let_in[branch.group] = (branch, match.group(), guard)
            elif (
                guard is None
                and evaluate(branch.test or "", newest_nvidia) == 0
                and evaluate(branch.test or "", amd) == 1
                and branch.group not in older
            ):
                older[branch.group] = (branch, match.group())
            continue
        if match and branch.start_byte not in seen:
            seen.add(branch.start_byte)
            deferred = unless_amd_takes(branch.test or "")
            if not deferred:
                chains.setdefault(branch.group, []).append((branch, match.group()))
                continue
            ctx.report(
                branch.start_byte,
                line_end(branch.start_byte),
                f"`{match.group()}` selects code by NVIDIA compute capability",
                **deferred,
            )
    for chain in chains.values():
        first, test = chain[0]
        more = (
            f" ({len(chain)} compute-capability tests in this #if/#elif chain, the last "
            f"`{chain[-1][1]}`; an AMD build takes none of them)"
            if len(chain) > 1
            else ""
        )
        ctx.report(
            first.start_byte,
            line_end(first.start_byte),
            f"`{test}` selects code by NVIDIA compute capability{more}",
        )
    said: set[tuple[str | None, object]] = set()
    for branch, test in older.values():
        # a block's opening and closing halves (`#if X` `} else {` … `#if X` `}`): one place
        where = (branch.test, ctx.function_at(branch.start_byte))
        if where in said:
            continue
        said.add(where)
        ctx.report(
            branch.start_byte,
            line_end(branch.start_byte),
            f"`{test}` selects code for older NVIDIA GPUs; an AMD build, which does not "
            "define `__CUDA_ARCH__`, takes it too",
            fix="Decide which code AMD GPUs should run and say so in the test (e.g. "
            "`defined(__HIP_PLATFORM_AMD__) || __CUDA_ARCH__ >= 700` for the newer path).",
        )
    for branch, test, guard in let_in.values():
        ctx.report(
            branch.start_byte,
            line_end(branch.start_byte),
            f"`{test}` selects code by NVIDIA compute capability; the project's `{guard}` in "
            "the same test lets its AMD build in",
            fix="Nothing to change while the AMD build's code in this branch is kept right for "
            "AMD (what the NVIDIA architectures it is gated on provide, AMD GPUs must too).",
            amd_alternative=True,
        )
    _device_pass_tests(ctx, amd, line_end)
    for macro in ctx.preproc.macros:
        match = ARCH_COMPARISON.search(macro.body)
        if match and evaluate(macro.body, amd) != 1:
            ctx.report(
                macro.offset,
                macro.offset + len(macro.name),
                f"`{macro.name}` is defined by comparing `{match.group()}`: the NVIDIA compute "
                "capability, which an AMD build does not define",
                **unless_amd_takes(macro.body),
            )


DEVICE_PASS_TEST = re.compile(r"defined\s*\(?\s*__CUDA_ARCH__\s*\)?")
_DEFINED_ARCH = r"defined\s*\(?\s*__CUDA_ARCH__\s*\)?"
NOT_DEVICE_PASS = re.compile(rf"!\s*(?:{_DEFINED_ARCH}|\(\s*{_DEFINED_ARCH}\s*\))")


def _device_pass_part(test: str) -> bool:
    """Is `test` NVIDIA's device or host pass, negated or in a conjunction with switches
    (`!defined(__CUDA_ARCH__)`, `defined(USE_CUDA) && defined(__CUDA_ARCH__)`)?"""
    if "__CUDA_ARCH__" not in test or "||" in test:
        return False
    parts = [p.strip() for p in test.split("&&")]
    return any(
        DEVICE_PASS_TEST.fullmatch(p) is not None or NOT_DEVICE_PASS.fullmatch(p) is not None
        for p in parts
    )


def _nvidia_twin_around(ctx: Context, branch: Branch, amd: Any) -> str | None:
    """The directive of an AMD branch beside a conditional branch around `branch` that no
    AMD build takes (`#if H2_HAS_CUDA` … `#elif H2_HAS_ROCM`), or None."""
    for outer in ctx.preproc.branches:
        if outer.group == branch.group or not (
            outer.start_byte < branch.start_byte < outer.end_byte
        ):
            continue
        if branch_condition_value(outer, amd) != 0:
            continue
        for twin in ctx.preproc.branches:
            if (
                twin.group == outer.group
                and twin is not outer
                and twin.test is not None
                and any(is_amd_guard(n) or looks_like_amd_guard(n) for n in names_in(twin.test))
            ):
                return twin.directive
    return None


# What only device code reads: a branch that holds them runs on the GPU.
DEVICE_ONLY_WORDS = re.compile(
    rb"\b(?:threadIdx|blockIdx|blockDim|gridDim|warpSize|__syncthreads|__syncwarp"
    rb"|__shfl\w*|__ballot\w*|atomic[A-Z]\w*)\b"
)


def _holds_code(masked: bytes, branch: Branch) -> bool:
    """Is there code in the branch (after its own directive)? Directives that only talk to
    the builder (`#pragma message`, `#warning`, `#error`) and nested conditionals' own lines
    are not; a `#define` is (hpx's `HPX_COMPUTE_DEVICE_CODE`, which the rest of the project
    reads to know it is compiling device code)."""
    start = masked.find(b"\n", branch.start_byte)
    if start < 0:
        return False
    for line in masked[start + 1 : branch.end_byte].splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith(b"#"):
            return True
        if DEFINING_DIRECTIVE.match(stripped):
            return True
    return False


DEFINING_DIRECTIVE = re.compile(rb"#\s*(?:define|undef|include)\b")

# What device code cannot do: a host branch holding one fails to compile in a device pass
# (exceptions, the host's streams and exit). `printf`, `assert` and `abort` work on both.
HOST_ONLY_WORDS = re.compile(
    rb"\b(?:throw|try\s*\{|catch\s*\(|std::(?:cout|cerr|clog)\b|(?:std::)?(?:fprintf|fputs|exit)\s*\()"
)


def _host_only_word(ctx: Context, branch: Branch) -> str | None:
    """The first host-only word in `branch` when it lies in device code (a `__device__` or
    `__host__ __device__` function), else None."""
    if not ctx.in_device(branch.start_byte):
        return None
    match = HOST_ONLY_WORDS.search(ctx.masked, branch.start_byte, branch.end_byte)
    if match is None:
        return None
    word = match.group().decode()
    return word.rstrip("({ \t\n").strip()


def _widened_device_pass(ctx: Context, branch: Branch, amd: Any, line_end: Any) -> bool:
    """`#if defined(__CUDA_ARCH__) || defined(USE_ROCM)`: NVIDIA's device-pass test that
    the project's port widened with its AMD switch (both passes of its AMD build take the
    branch). Reported as NVIDIA code with its AMD alternative, as the compute-capability
    tests the port widened are; True when reported. Not for `__HIP_DEVICE_COMPILE__`,
    which is the device-pass test written for both compilers."""
    test = branch.test or ""
    if "||" not in test or ARCH_COMPARISON.search(test):
        return False
    if not any(DEVICE_PASS_TEST.fullmatch(part.strip()) for part in test.split("||")):
        return False
    names = names_in(test)
    if names & AMD_PASS_GUARDS or evaluate(test, amd) != 1:
        return False
    guard = next((n for n in sorted(names) if is_amd_guard(n) or looks_like_amd_guard(n)), None)
    if guard is None or not _holds_code(ctx.masked, branch):
        return False
    if ctx.masked.find(b"__CUDA_ARCH__", line_end(branch.start_byte), branch.end_byte) >= 0:
        return True  # the compute-capability test inside is reported, with the same note
    ctx.report(
        branch.start_byte,
        line_end(branch.start_byte),
        f"`{branch.directive}` tests for NVIDIA's device pass; the project's `{guard}` in "
        "the same test lets both passes of its AMD build in",
        fix="Nothing to change while the code in this branch compiles for AMD in both passes.",
        amd_alternative=True,
    )
    return True


def _device_pass_tests(ctx: Context, amd: Any, line_end: Any) -> None:
    """`#ifdef __CUDA_ARCH__` marks NVIDIA's device pass, and hipcc does not define it: an
    AMD device pass compiles the other branch. Reported when that loses device code (no
    `#else`: mmcv's `reduceAdd` overloads exist in no AMD device pass) or swaps it for the
    host's (the `#else` of a branch reading `threadIdx`: cdpQuadtree's random seed becomes
    `hash(0)` in every AMD thread). A sibling branch that is AMD's own (`#elif
    defined(__HIP_DEVICE_COMPILE__)`, Legion's half.h) is the project's AMD device pass:
    the test is reported with amd_alternative, as the arch gates beside it are. Not when
    the test lets AMD in."""
    groups: dict[int, list[Branch]] = {}
    for branch in ctx.preproc.branches:
        groups.setdefault(branch.group, []).append(branch)
    for branch in ctx.preproc.branches:
        test = branch.test or ""
        plain = DEVICE_PASS_TEST.fullmatch(test.strip()) is not None
        if not plain and _widened_device_pass(ctx, branch, amd, line_end):
            continue
        if not plain and (not _device_pass_part(test) or ARCH_COMPARISON.search(test)):
            continue  # a compute-capability comparison is reported as such
        if not _holds_code(ctx.masked, branch):
            continue  # only a `#pragma message` or `#warning`: nothing to lose
        siblings = [b for b in groups[branch.group] if b is not branch]
        host_pass = NOT_DEVICE_PASS.fullmatch(test.strip()) is not None
        if host_pass and not any(
            b.test is not None and evaluate(b.test, amd) != 0 for b in siblings
        ):
            # `#ifndef __CUDA_ARCH__` around `throw` in a `__host__ __device__` function:
            # the AMD device pass compiles the host's code, which device code cannot run.
            word = _host_only_word(ctx, branch)
            if word is not None:
                _report_pass_test(
                    ctx,
                    branch,
                    line_end,
                    f"`{branch.directive}` tests for NVIDIA's host pass; hipcc does not "
                    f"define `__CUDA_ARCH__`, so an AMD device pass compiles this host code "
                    f"(`{word}`), which device code cannot run",
                    "Test `!defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)`.",
                    unless_taken=False,
                )
                continue
        # the other branches an AMD build may take (or this file cannot rule out)
        open_to_amd = [b for b in siblings if b.test is not None and evaluate(b.test, amd) != 0]
        amd_sibling = next(
            (b for b in open_to_amd if any(is_amd_guard(n) for n in names_in(b.test or ""))),
            None,
        )
        if not plain:
            # `#ifndef __CUDA_ARCH__`, `defined(KOKKOS_ENABLE_CUDA) && defined(__CUDA_ARCH__)`:
            # reported only where the project's AMD path is in sight, beside it (Kokkos'
            # `#elif defined(KOKKOS_ENABLE_HIP) && defined(__HIP_DEVICE_COMPILE__)`) or around
            # it (DiHydrogen's `#if H2_HAS_CUDA … #elif H2_HAS_ROCM`).
            outer = _nvidia_twin_around(ctx, branch, amd)
            if amd_sibling is None and outer is None:
                continue
            where = (
                f"`{amd_sibling.directive}` is the AMD path"
                if amd_sibling is not None
                else f"`{outer}` is the AMD path"
            )
        elif amd_sibling is not None:
            inner = ctx.masked.find(b"__CUDA_ARCH__", line_end(branch.start_byte), branch.end_byte)
            if inner >= 0:
                continue  # the compute-capability test inside is reported, with the same note
            where = f"`{amd_sibling.directive}` beside it is the AMD one"
        elif not siblings and (twin := _lone_amd_twin(ctx, branch, amd)) is not None:
            # `#if defined(__CUDA_ARCH__)` … `#endif` then `#if defined(__HIPCC__)` … `#endif`
            # (EigenG's warp collectives): two lone blocks, one per compiler
            where = f"`{twin.directive}` beside it is the AMD one"
        elif (
            len(siblings) == 1
            and siblings[0].test is None
            and (around := _gpu_only_around(ctx, branch, amd)) is not None
        ):
            # `#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)` around
            # `#if defined(__CUDA_ARCH__)` … `#else` …: no NVIDIA pass reaches that `#else`,
            # only AMD's (torchcomms' `__builtin_amdgcn_fence` for `__syncwarp()`)
            where = f"`#else` is the AMD one (inside `{around.directive}`)"
        elif (
            not siblings
            and (around := _gpu_only_around(ctx, branch, amd)) is not None
            and any(is_amd_guard(n) for t in around.tests for n in names_in(t))
        ):
            # the same with no `#else`: the region names AMD's device pass, which skips this
            # step on purpose (pixeltrack's ballot refreshing a mask HIP's shuffles lack)
            where = f"`{around.directive}` around it takes AMD's device pass, without this"
        else:
            where = ""
        if where:
            ctx.report(
                branch.start_byte,
                line_end(branch.start_byte),
                f"`{branch.directive}` tests for NVIDIA's device pass, which hipcc does not "
                f"define; the project's {where}",
                fix="Nothing to change while the AMD branch is kept in step with this one.",
                amd_alternative=True,
            )
            continue
        if open_to_amd:
            continue  # a branch beside it this file cannot rule out for AMD
        other = next((b for b in siblings if b.test is None), None)
        host_word = _host_only_word(ctx, other) if other is not None else None
        if (
            other is not None
            and host_word is None
            and not DEVICE_ONLY_WORDS.search(ctx.masked, branch.start_byte, branch.end_byte)
        ):
            continue  # `cuda_arch[0] = __CUDA_ARCH__;` `#else` nothing: the same on both
        if (
            other is not None
            and host_word is None
            and _device_only_function(ctx, branch.start_byte)
            and DEVICE_ONLY_WORDS.search(ctx.masked, other.start_byte, other.end_byte)
        ):
            # in a kernel or a `__device__`-only function the `#else` is no host code: it is
            # device code too, written for the passes without `__CUDA_ARCH__` (sppark's NTT
            # loop, whose NVIDIA arm only adds a bound against register spills)
            continue
        if host_word is not None:
            lost = (
                f"compiles the `#else` (host) code, with `{host_word}`, which device code "
                "cannot run"
            )
        elif other is not None:
            lost = "runs the `#else` (host) code instead"
        else:
            lost = "compiles nothing here"
        _report_pass_test(
            ctx,
            branch,
            line_end,
            f"`{branch.directive}` tests for NVIDIA's device pass; hipcc does not define "
            f"`__CUDA_ARCH__`, so an AMD device pass {lost}",
            "Test `defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)`.",
            unless_taken=True,
        )


def _gpu_only_around(ctx: Context, branch: Branch, amd: Any) -> Branch | None:
    """A conditional branch around `branch` that an NVIDIA build takes only in its device
    pass and an AMD build may take: within it, the `#else` of a `__CUDA_ARCH__` test is
    AMD's code. None when there is none."""
    for outer in ctx.preproc.branches:
        if outer.group == branch.group or not (
            outer.start_byte < branch.start_byte < outer.end_byte
        ):
            continue
        if (
            branch_condition_value(outer, _nvidia_host_pass) == 0
            and branch_condition_value(outer, amd) != 0
        ):
            return outer
    return None


def _lone_amd_twin(ctx: Context, branch: Branch, amd: Any) -> Branch | None:
    """The lone conditional right before or after the lone `branch` that only an AMD
    build takes by its own test (`#if defined(__HIPCC__)`), or None."""
    for other in lone_neighbours(ctx, branch):
        test = other.test or ""
        if evaluate(test, amd) == 0 or evaluate(test, _nvidia_build) != 0:
            continue
        if any(is_amd_guard(n) for n in names_in(test)):
            return other
    return None


def _device_only_function(ctx: Context, offset: int) -> bool:
    """Is `offset` in a `__global__` function or a `__device__` one without `__host__`
    (by the specifiers written before its name)?"""
    fn = ctx.function_info_at(offset)
    if fn is None:
        return False
    if fn.is_kernel:
        return True
    head = ctx.masked[fn.start : ctx.masked.find(b"(", fn.start, offset)]
    return b"__device__" in head and b"__host__" not in head and b"HOST" not in head.upper()


def _report_pass_test(
    ctx: Context, branch: Branch, line_end: Any, message: str, fix: str, unless_taken: bool
) -> None:
    """Report a device- or host-pass test at its directive, unless the project defines
    `__CUDA_ARCH__` for its AMD build itself: then the AMD device pass takes the test as
    NVIDIA's does (`unless_taken`: the finding is that AMD does not take the branch; else
    that it does)."""
    ctx.report(
        branch.start_byte,
        line_end(branch.start_byte),
        message,
        fix=fix,
        when=(branch.test or "", (1,), unless_taken),
        directive=True,
        if_unknown=True,
    )


@hazard("launch-bounds")
def launch_bounds(ctx: Context) -> None:
    if ctx.root is None or b"__launch_bounds__" not in ctx.data:
        return
    for node in ctx.device_nodes("bounds"):
        arguments = [c for c in node.named_children]
        if len(arguments) < 2:
            continue
        # A minimum of one block per multiprocessor asks nothing of the compiler on
        # either vendor: only other values change meaning.
        message = (
            f"`{text(node)}`: on AMD the second argument means minimum waves per "
            "execution unit, not blocks per multiprocessor"
        )
        value = ctx.value(arguments[1])
        if isinstance(value, str):
            ctx.report(node.start_byte, node.end_byte, message, when=(value, (1,), True))
        elif value != 1:
            ctx.report(node.start_byte, node.end_byte, message)


@hazard("dynamic-parallelism")
def dynamic_parallelism(ctx: Context) -> None:
    for use in ctx.uses_named(lambda u: u.name == "<<<>>>" and u.in_device_code):
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            "kernel launched from device code (dynamic parallelism)",
        )
