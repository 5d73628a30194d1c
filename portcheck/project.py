"""Facts of the whole project, and the questions only they answer.

Owns: which macros the project derives from the AMD guards (`#ifdef __HIP_PLATFORM_AMD__`
`#define MY_HIP 1`), which macros hide a device qualifier (`#define DINLINE __device__
__forceinline__`), the value of an integer constant as an AMD build sees it wherever it is
defined (`#define WARP_SIZE 32` in one header, used in another file's kernels; a value
chosen by `#ifdef USE_ROCM`), and where the project already has AMD paths.

A file's scan is cached by its own content, so a check that needs another file's facts
records its question instead of an answer (a `Pending` finding: "report this if
`WARP_SIZE` is 32"); the questions are answered here, once every file is read. One
constant evaluator (portcheck.preproc.evaluate) serves every check.
"""

from __future__ import annotations

import bisect
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from portcheck.model import AmdPath, Finding, Span
from portcheck.preproc import (
    AMD_TOOLKIT_MACROS,
    DEFINED,
    IDE_ONLY,
    NVIDIA_ONLY,
    NVIDIA_TOOLKIT_MACROS,
    SYCL_COMPILER_MACRO,
    UNDEFINED,
    WAVEFRONT_MACRO,
    Branch,
    ConstantDef,
    MacroDef,
    PreprocFacts,
    amd_opt_out,
    amd_takes_in_some_release,
    and_not,
    branch_condition_value,
    evaluate,
    is_amd_guard,
    looks_like_amd_guard,
    looks_like_nvidia_guard,
    looks_like_third_platform_guard,
    names_in,
    top_level_arguments,
    unless_defined,
)

if TYPE_CHECKING:
    from portcheck.checks import FunctionInfo

ARCH_COMPARISON = re.compile(r"__CUDA_ARCH__\s*(?:[<>]=?|==|!=)|(?:[<>]=?|==|!=)\s*__CUDA_ARCH__")
ATTRIBUTE_SPACES = frozenset({"device", "global"})  # `__attribute__((device))`
DEVICE_QUALIFIER_TOKENS = frozenset({"__device__", "__global__"})
MAX_DEPTH = 12
MAX_WIDTH_READERS = 64  # functions followed from a kernel for whether it reads warpSize
INCLUDE_DEPTH = 4  # levels of `#include "…"` followed to name the definition a file reads
LOGICAL_MARK = "~"  # lane_callees entry: blind, or working in logical groups of 32 lanes
# Every AMD guard's name holds one of these (is_amd_guard, looks_like_amd_guard): a test
# without any cannot name one.
AMD_WORDS = ("HIP", "HCC", "ROCM", "AMD", "gfx", "GFX")


# CUDA as one word of a switch's name (`CUDA_MPIV`, `USE_CUDA_GRAPHS`), its neighbours kept.
CUDA_WORD = re.compile(r"(^|_)CUDA(_|$)")


# What only NVIDIA's compiler defines: its device pass (`__CUDA_ARCH__`) and nvcc itself.
# `__CUDACC__` too, for code hipcc compiles as it is (hipcc 5.2's `-dM -E`, with or without
# hip_runtime.h, has no __CUDACC__); a hipified copy reads `__HIPCC__` there instead, so it
# is read that way only in files that test an AMD guard (ProjectFacts._compiled_as_is).
NVIDIA_COMPILERS = frozenset({"__CUDA_ARCH__", "__NVCC__", "__CUDACC__"})


def _never_compiled(branch: Branch) -> bool:
    """`#if 0` (a test that names no macro and is false), or the `#else`/`#elif` after a
    test that names no macro and is true (`#if 1` … `#else`, Librett's retired kernels): no
    build compiles the branch."""
    test = branch.test
    if test is not None and not branch.prior:
        return not names_in(test) and evaluate(test, lambda name: None) == 0
    return any(
        not names_in(earlier) and evaluate(earlier, lambda name: None) not in (0, None)
        for earlier in branch.prior
    )


def _tests_for_amd(test: str) -> bool:
    """Does an `#if` test name an AMD guard (or a macro named like one)?"""
    return any(word in test for word in AMD_WORDS) and any(
        is_amd_guard(n) or looks_like_amd_guard(n) for n in names_in(test)
    )


def _switched_on(name: str, test: str) -> bool:
    """Does `test` require `name` (`defined(NAME)`, `NAME && …`), not its absence?"""
    for match in re.finditer(rf"\b{re.escape(name)}\b", test):
        before = re.sub(r"(?:defined)?[\s(]*$", "", test[: match.start()])
        if not before.endswith("!"):
            return True
    return False


# Switches that turn on the CUDA code itself (`HAVE_CUDA`, `GPU_ENABLED`), which is what
# there is to port, not an optional part of it.
CUDA_SWITCH = re.compile(
    r"(?:^|_)(?:USE|WITH|ENABLE|HAVE|HAS|BUILD)_(?:CUDA|GPU|NVIDIA|CUBLAS)$"
    r"|^(?:CUDA|GPU)_(?:ENABLED|FOUND|AVAILABLE|SUPPORT)$"
)
# Operating systems that compilers predefine without an underscore: a platform, not a part.
OPERATING_SYSTEMS = frozenset({"WIN32", "WIN64", "linux", "unix", "APPLE", "MACOSX"})
# Macros that headers define rather than the build: the CUDA toolkit's and its libraries'
# (`CUSPARSEAPI`, `CUDA_INIT_D3D10`), and include guards (`CUBLAS_API_H_`).
NOT_A_SWITCH = re.compile(
    r"^(?:CU|NV|THRUST)[A-Z0-9_]*$|^(?:cu|nv)[A-Z]|_(?:H|HPP|CUH|INCLUDED)_*$"
)


class Pending(NamedTuple):
    """A finding whose truth depends on facts outside its file: report it when `expr`
    evaluates (in an AMD build) to one of `values` (or to none of them, `negate`), and,
    if `device_macros` is set, when one of those macros hides a device qualifier.
    `fold`: the finding is a use of the definition that decided it: listed at that
    definition, and reported only there when it is the project's logical warp width.
    False for findings that stand on their own (wrong at any logical width, or decided
    by a constant that is not itself the fault)."""

    finding: Finding
    expr: str = ""
    values: tuple[int, ...] = ()
    negate: bool = False
    device_macros: tuple[str, ...] = ()
    fold: bool = True
    # `expr` is an `#if` test (or a macro body such a test reads): evaluated as an AMD
    # build's preprocessor sees the project's macros.
    directive: bool = False
    # Report the finding when the project cannot answer (else it is dropped).
    if_unknown: bool = False
    # A call of a project macro with a 32-bit full mask as its `wrapper_arg`-th argument:
    # reported when the macro passes that parameter to a *_sync intrinsic as its mask.
    wrapper: str = ""
    wrapper_arg: int = -1
    # A call, in NVIDIA-only code beside the project's AMD branch, of a project function
    # `ptx_callee`: reported when that function holds inline PTX (ProjectFacts.ptx_functions).
    ptx_callee: str = ""
    # Width arithmetic in a function that is lane-blind but for calls of these functions
    # (comma-separated), which its file does not define: dropped when each is a project
    # function with no warp-level code in it or in what it calls (ProjectFacts.lane_blind).
    lane_callees: str = ""
    # Launches of the project's kernels defined in other files ("kernel:factor", comma-
    # separated) that count their warps in 32 threads: reported when one of the kernels
    # depends on the lane count and neither splits its threads by 32 (or the launch's
    # factor) itself nor groups its lanes on purpose; "kernel:32:width" (a thread count
    # made as warps of 32) and "kernel:32:rows" (rows of 32 threads): when the kernel
    # reads `warpSize` (and, for rows, does not number its block flat) (ProjectFacts.answer).
    launched: str = ""
    # Reported when device code near the finding's file polls memory (FileScan.polls,
    # _polled_near): device memory shared with other processes' GPUs is then a flag or a
    # buffer a running kernel waits on.
    polled: bool = False


LANE_BLIND_DEPTH = 4  # calls followed from another file's function (lane_blind)


@dataclass
class _FileFacts:
    path: str
    facts: PreprocFacts
    starts: list[int] = field(default_factory=list)
    _groups: dict[int, list[Branch]] | None = None
    _empty: dict[str, list[int]] | None = None
    _parents: list[int] | Literal[False] | None = None  # False: they do not nest
    _macro_offsets: list[int] | None = None

    @property
    def macro_offsets(self) -> list[int]:
        """The offsets of the file's macro definitions, in order."""
        if self._macro_offsets is None:
            self._macro_offsets = sorted(m.offset for m in self.facts.macros)
        return self._macro_offsets

    @property
    def empty_macros(self) -> dict[str, list[int]]:
        """name -> offsets of its bodiless definitions (`#define HELPER_H`)."""
        if self._empty is None:
            self._empty = {}
            for macro in self.facts.macros:
                if not macro.body:
                    self._empty.setdefault(macro.name, []).append(macro.offset)
        return self._empty

    @property
    def groups(self) -> dict[int, list[Branch]]:
        if self._groups is None:
            self._groups = {}
            for branch in self.facts.branches:
                self._groups.setdefault(branch.group, []).append(branch)
        return self._groups

    def enclosing(self, offset: int) -> list[Branch]:
        """The branches that contain `offset`, outermost first."""
        branches = self.facts.branches
        i = bisect.bisect_right(self.starts, offset)
        parents = self.parents
        if parents is None:
            return [b for b in branches[:i] if b.start_byte <= offset < b.end_byte]
        # Up the chain from the last branch that starts before `offset`: the branches that
        # contain it are among its ancestors (a lookup in a header of thousands of branches
        # no longer reads them all).
        found = []
        i -= 1
        while i >= 0:
            branch = branches[i]
            if offset < branch.end_byte:
                found.append(branch)
            i = parents[i]
        found.reverse()
        return found

    @property
    def parents(self) -> list[int] | None:
        """Per branch, the index of the innermost branch around it (-1: none); None when
        the branches do not nest (never, from preprocessor_facts: conditionals nest)."""
        if self._parents is None:
            nesting = _nesting(self.facts.branches)
            self._parents = False if nesting is None else nesting
        return None if self._parents is False else self._parents


def _nesting(branches: tuple[Branch, ...]) -> list[int] | None:
    parents: list[int] = []
    around: list[int] = []  # the branches that contain the current one, innermost last
    previous_start = -1
    for i, branch in enumerate(branches):
        if branch.start_byte <= previous_start or branch.end_byte < branch.start_byte:
            return None
        previous_start = branch.start_byte
        while around and branches[around[-1]].end_byte <= branch.start_byte:
            around.pop()
        if around and branch.end_byte > branches[around[-1]].end_byte:
            return None  # overlaps the branch around it without nesting in it
        parents.append(around[-1] if around else -1)
        around.append(i)
    return parents


# A project's switches named after HIP (not after AMD or ROCm). A project that builds its
# HIP code for NVIDIA GPUs too (it tests HIP's NVIDIA platform, `__HIP_PLATFORM_NVCC__` or
# `__HIP_PLATFORM_NVIDIA__`, or its own copy of it, and has no switch of its own for CUDA)
# sets them in its NVIDIA build as well: hoomd-blue turns `ENABLE_HIP` on for every GPU
# build. HIP's toolchain macros (`__HIPCC__`) are left AMD's: `#if !defined(__HIPCC__)` is
# as often an nvcc build's test as a host compiler's.
# A build switch for an optional feature (`ENABLE_FP8`, `USE_FLASH_ATTN`, `WITH_NVSHMEM`)
FEATURE_SWITCH = re.compile(r"(?:\w+_)?(?:ENABLE|USE|WITH|HAS|HAVE|BUILD)_[A-Z0-9_]+$")
HIP_ON_NVIDIA = re.compile(r"(?:^|_)HIP_PLATFORM_(?:NVCC|NVIDIA)_?_?$")
HIP_SWITCH = re.compile(r"(?:^|_)HIP_?_?$")


def _resolve_include(
    folder: str, written: str, files: Mapping[str, object], by_name: Mapping[str, list[str]]
) -> str | None:
    for candidate in (posixpath.join(folder, written), written):
        normal = posixpath.normpath(candidate)
        if normal in files:
            return normal
    tail = "/" + posixpath.normpath(written).lstrip("./")
    matches = [p for p in by_name.get(posixpath.basename(written), ()) if p.endswith(tail)]
    return matches[0] if len(matches) == 1 else None


class ProjectFacts:
    """Built once per scan from every file's preprocessor facts."""

    def __init__(self, files: Iterable[tuple[str, PreprocFacts]]) -> None:
        self.files: dict[str, _FileFacts] = {}
        for path, facts in files:
            self.files[path] = _FileFacts(path, facts, [b.start_byte for b in facts.branches])
        self._macro_defs: dict[str, list[tuple[str, MacroDef]]] = {}
        for path, ff in self.files.items():
            for macro in ff.facts.macros:
                self._macro_defs.setdefault(macro.name, []).append((path, macro))
        self._macro_state: dict[tuple[str, bool], object] = {}
        self._envs = {True: self._make_env(True), False: self._make_env(False)}
        self._kinds: dict[tuple[str, int], str | None] = {}
        self._platform_tests: dict[tuple[tuple[str, ...], str | None], bool] = {}
        self._taken_cache: dict[tuple[tuple[str, ...], str | None, bool], int | None] = {}
        self._priors_cache: dict[tuple[tuple[str, ...], object], int | None] = {}
        self._test_names: dict[str, set[str]] = {}
        self._telling_tests: dict[str, bool] = {}
        self._build_switches: dict[str, bool] = {}
        self._marked: dict[str, list[tuple[int, int, str]]] = {}
        self._depth = 0
        self._selectors: dict[str, tuple[frozenset[int], frozenset[int]] | None] = {}
        self._platform_names: dict[str, bool] = {}
        self._options: dict[tuple[tuple[str, ...], str | None], str] = {}
        self._switched: dict[str, bool] = {}  # path -> any branch behind a build switch
        self._sites: dict[str, list[tuple[str, int]]] | None = None  # header -> includes
        self._includes: dict[str, frozenset[str]] = {}  # file -> the files it includes
        self._included_as: dict[str, str | None] = {}
        self._deriving: set[str] = set()  # names whose definitions are being read
        self.shuffle_widths = {n for ff in self.files.values() for n, _ in ff.facts.shuffle_widths}
        self._amd_widths: frozenset[str] | None = None
        self._builds_for_amd: bool | None = None
        self._mask_wrappers: dict[str, tuple[frozenset[int], bool]] | None = None
        # The project's functions whose bodies hold inline PTX (set by the scan, from the
        # files' inline-ptx findings): a wrapper such as `ldmatrix_m8n8x4` in another header.
        self.ptx_functions: dict[str, frozenset[str]] = {}
        # The files whose device code polls memory (set by the scan, from FileScan.polls).
        self.polling_files: frozenset[str] = frozenset()
        # The project's functions by name with their files, whether a name the project
        # does not define is a CUDA name, and what marks a file's functions' warp-level
        # code (set by the scan when a question needs them: lane_blind).
        self.functions: dict[str, list[tuple[str, FunctionInfo]]] = {}
        self.known_name: Callable[[str], bool] = lambda name: False
        self.mark_functions: Callable[[str], None] = lambda path: None
        # width constants read only where the project found the code lane-blind (answer)
        self.blind_reads: set[str] = set()
        self._blind: dict[tuple[str, bool], bool] = {}
        # a file's definitions of one name, by offset (_nearest_before)
        self._by_name_and_offset: dict[tuple[str, str], tuple[list[int], list[Definition]]] = {}
        self._regions: dict[str, list[tuple[int, int, str]]] = {}
        self._amd_too: frozenset[str] | None = None  # _cuda_switches_on_amd
        self._hip_everywhere: bool | None = None  # _hip_on_nvidia
        self._tests_amd: dict[str, bool] = {}  # path -> _tests_amd_guard
        # (path, start) of the branches _nvidia_compiler_branch made NVIDIA-only: a finding at
        # such a directive (the arch check's device-pass test) asks whether the code an AMD
        # device pass gets instead is right, so it is not credited to that code.
        self.compiler_branches: set[tuple[str, int]] = set()
        self._twins: frozenset[str] | None = None
        self.device_macros = self._device_macros()
        # name -> its definitions: (path, expression, the definition)
        self._constants: dict[str, list[tuple[str, str, Definition]]] = {}
        for path, ff in self.files.items():
            for macro in ff.facts.macros:
                if not macro.function_like:
                    self._constants.setdefault(macro.name, []).append((path, macro.body, macro))
            for constant in ff.facts.constants:
                self._constants.setdefault(constant.name, []).append(
                    (path, constant.expr, constant)
                )
        self._value_cache: dict[tuple[str, str], int | None] = {}
        self._project_values: dict[str, int | None] = {}
        self._live_cache: dict[
            str,
            tuple[list[tuple[str, str, Definition]], dict[str, list[tuple[str, str, Definition]]]],
        ] = {}
        self._decided_by: dict[tuple[str, str], tuple[str, Definition] | None] = {}
        # definitions that answered a check's question: (path, offset) -> (slug, definition,
        # value, the findings at the places that use it)
        self.roots: dict[tuple[str, int], tuple[str, str, Definition, int, list[Finding]]] = {}

    # -- configurations -------------------------------------------------------------------

    def _env(self, amd: bool):
        return self._envs[amd]

    def _make_env(self, amd: bool):
        def env(name: str) -> object:
            return self.macro(name, amd)

        return env

    def macro(self, name: str, amd: bool) -> object:
        """What `name` is in a build for AMD (amd=True) or NVIDIA: an int value, DEFINED
        (defined, value unknown), UNDEFINED, or None (unknown). The project's definitions
        count in a build whose preprocessor reaches them: `#ifdef __HIP_PLATFORM_AMD__`
        `#define BNB_HIP 1` `#else` `#define BNB_HIP 0` gives 1 for AMD and 0 for NVIDIA."""
        key = (name, amd)
        state = self._macro_state
        if key in state:
            return state[key]
        state[key] = None  # a definition that depends on itself is unknown
        if self._depth > 40:  # a chain of definitions that deep: leave it unknown
            del state[key]
            return None
        self._depth += 1
        try:
            state[key] = result = self._macro(name, amd)
        finally:
            self._depth -= 1
        return result

    def _hip_on_nvidia(self) -> bool:
        """Is HIP the project's way to NVIDIA GPUs too? It tests HIP's NVIDIA platform and
        has no build switch of its own for CUDA (AMReX tests `__HIP_PLATFORM_NVIDIA__` once,
        but builds for NVIDIA with `AMREX_USE_CUDA`: its `AMREX_USE_HIP` stays AMD's)."""
        if self._hip_everywhere is None:
            names = {
                n
                for ff in self.files.values()
                for branch in ff.facts.branches
                if branch.test is not None and ("NV" in branch.test or "CUDA" in branch.test)
                for n in names_in(branch.test)
            }
            self._hip_everywhere = any(HIP_ON_NVIDIA.search(n) for n in names) and not any(
                looks_like_nvidia_guard(n) and not HIP_ON_NVIDIA.search(n) for n in names
            )
        return self._hip_everywhere

    def _shared_hip(self, name: str) -> bool:
        """A HIP-named build switch that this project's NVIDIA build sets as well (see
        HIP_ON_NVIDIA)."""
        return (
            not name.startswith("_")
            and HIP_SWITCH.search(name) is not None
            and self._hip_on_nvidia()
        )

    def _macro(self, name: str, amd: bool) -> object:
        if name in IDE_ONLY:
            return UNDEFINED  # an IDE's code model, no build
        if self._shared_hip(name):
            return 1  # the build switch is on for either vendor's GPU build
        if is_amd_guard(name):
            return unless_defined(name, amd)  # 1 for AMD (unknown: per GPU or pass), else undefined
        if name in NVIDIA_ONLY:
            return UNDEFINED if amd else None
        if SYCL_COMPILER_MACRO.fullmatch(name):
            return UNDEFINED  # a SYCL compiler's (`__SYCL_DEVICE_ONLY__`): neither build's
        definitions = self._macro_defs.get(name)
        if not definitions:
            if amd_opt_out(name):
                return UNDEFINED  # `EIGEN_NO_HIP`: a build for AMD does not opt out of it
            if amd and name in self._cuda_switches_on_amd():
                return 1  # the project tests for its AMD build inside this switch
            if amd and name in self._cuda_twins():
                return UNDEFINED  # `CUDA_MPIV` where the project tests `HIP_MPIV` too
            return unless_defined(name, amd)
        env = self._envs[amd]
        certain: list[object] = []
        possible = False
        for path, definition in definitions:
            if self._guards_itself(path, definition):
                continue  # the header's first inclusion: its guard is not yet defined
            reached = self._reached(path, definition.offset, amd)
            if reached and self._defaults_itself(path, definition):
                # `#ifndef KF_BF16_OPS` `#define KF_BF16_OPS (…)`: a default that applies
                # unless the build predefines the name, which a build does not by default
                reached = [*reached[:-1], 1]
            if 0 in reached:
                continue
            if all(value == 1 for value in reached):
                if definition.function_like:
                    certain.append(DEFINED)
                else:
                    value = evaluate(definition.body, env) if definition.body else 1
                    certain.append(DEFINED if value is None else value)
            else:
                possible = True
        if certain:
            distinct = set(map(id, certain)) if DEFINED in certain else set(certain)
            return certain[0] if len(distinct) == 1 else DEFINED
        return None if possible else UNDEFINED

    def _cuda_twins(self) -> frozenset[str]:
        """Switches the project tests, named with CUDA as one word (`CUDA_MPIV`, QUICK's MPI
        build for NVIDIA), whose twin with HIP or ROCM for it (`HIP_MPIV`) it tests too and
        defines neither: one build switch per platform, the CUDA one off for AMD."""
        if self._twins is None:
            tested = {
                n
                for ff in self.files.values()
                for b in ff.facts.branches
                for t in b.tests
                for n in names_in(t)
            }
            self._twins = frozenset(
                n
                for n in tested
                if CUDA_WORD.search(n)
                and n not in self._macro_defs
                and any(
                    CUDA_WORD.sub(rf"\g<1>{word}\g<2>", n) in tested for word in ("HIP", "ROCM")
                )
            )
        return self._twins

    def _cuda_switches_on_amd(self) -> frozenset[str]:
        """Switches named like an NVIDIA build's (`MMCV_WITH_CUDA`) that the project's AMD
        build sets too: a conditional choosing between AMD and other code (`#ifdef
        MMCV_WITH_HIP` … `#else`) lies inside a branch taken when the switch is on, which
        would be dead code otherwise."""
        if self._amd_too is not None:
            return self._amd_too
        found: set[str] = set()
        for ff in self.files.values():
            for branch in ff.facts.branches:
                if not any(_tests_for_amd(t) for t in branch.tests):
                    continue
                if len(ff.groups.get(branch.group, ())) < 2:
                    # a lone `#ifdef COMB_ENABLE_HIP` overload inside `#ifdef
                    # COMB_ENABLE_CUDA`: code for a build with both back ends, not an AMD
                    # alternative to the NVIDIA code around it
                    continue
                for outer in ff.enclosing(branch.start_byte):
                    if outer is branch or outer.test is None or "||" in outer.test:
                        continue  # `A || B` around an AMD test: A may be off in that build
                    found.update(
                        n
                        for n in names_in(outer.test)
                        if looks_like_nvidia_guard(n)
                        and n not in self._macro_defs
                        and _switched_on(n, outer.test)
                    )
        self._amd_too = frozenset(found)
        return self._amd_too

    def _taken(self, branch: Branch, amd: bool) -> int | None:
        """branch_condition_value in one build, remembered by the branch's tests (the same
        `#ifdef __CUDA_ARCH__` recurs in hundreds of files)."""
        key = (branch.prior, branch.test, amd)
        if key not in self._taken_cache:
            priors = (self._priors_false(branch.prior, amd),) if len(branch.prior) > 8 else None
            self._taken_cache[key] = branch_condition_value(branch, self._envs[amd], priors)
        return self._taken_cache[key]

    def _priors_false(self, prior: tuple[str, ...], amd: bool) -> int | None:
        """Every test of `prior` false in one build (see _priors_value)."""
        return self._priors_value(prior, amd, self._envs[amd])

    def _priors_value(self, prior: tuple[str, ...], tag: object, env: Any) -> int | None:
        """Every test of `prior` false under `env` (named by `tag`), from the value the
        branch before it in its `#elif` chain had (its prior is this one without the last
        test): a chain thousands long (generated dispatch code) costs linear time, not
        quadratic. Only the branches' own prior tuples are kept as keys."""
        cache = self._priors_cache
        key = (prior, tag)
        if key in cache:
            return cache[key]
        value: int | None = 1
        previous = (prior[:-1], tag)
        if previous in cache:
            value = cache[previous]
            if value != 0:
                value = and_not(value, evaluate(prior[-1], env))
        else:
            for test in prior:
                value = and_not(value, evaluate(test, env))
                if value == 0:
                    break
        cache[key] = value
        return value

    def _reached(self, path: str, offset: int, amd: bool) -> list[int | None]:
        """Per branch around `offset` (outermost first), is it taken in that build? For an
        AMD build, a branch that needs `__CUDACC__` in a file hipcc compiles as it is is
        not (OIDN's `#if defined(__CUDACC__)` `#define OIDN_COMPILE_CUDA`)."""
        enclosing = self.files[path].enclosing(offset)
        reached = [self._taken(b, amd) for b in enclosing]
        if amd and None in reached:
            reached = [
                (0 if self._cudacc_decides(path, b) else 1 if self._cudacc_gives(path, b) else None)
                if value is None
                else value
                for value, b in zip(reached, enclosing, strict=True)
            ]
        return reached

    def _guards_itself(self, path: str, definition: MacroDef) -> bool:
        """Is this `#define DEVICE_HPP_` the include guard of the `#ifndef DEVICE_HPP_` it
        sits in? Counted as a definition, it would make the guard's test, and so every
        definition inside the header, depend on itself: unknown in both builds."""
        enclosing = self.files[path].enclosing(definition.offset)
        return bool(enclosing) and (
            enclosing[-1].test == f"!defined({definition.name})"
            and self._include_guard(path, enclosing[-1])
        )

    def _defaults_itself(self, path: str, definition: MacroDef) -> bool:
        """Is this definition alone in an `#ifndef` of its own name (a default)? Not an
        include guard (`#ifndef DEFS_H` `#define DEFS_H 1` and the header after it)."""
        ff = self.files[path]
        enclosing = ff.enclosing(definition.offset)
        if not enclosing:
            return False
        branch = enclosing[-1]
        if branch.prior or branch.test != f"!defined({definition.name})":
            return False
        if branch.end_line - branch.start_line > 8:
            return False
        offsets = ff.macro_offsets
        inside = bisect.bisect_left(offsets, branch.end_byte) - bisect.bisect_right(
            offsets, branch.start_byte
        )
        at = bisect.bisect_right(ff.starts, branch.start_byte)
        nested = at < len(ff.starts) and ff.starts[at] < branch.end_byte
        return inside == 1 and not nested

    def reached_for_amd(self, path: str, definition: Definition) -> bool:
        """Does every AMD build reach this definition (each branch around it taken)?"""
        return all(value == 1 for value in self._reached(path, definition.offset, True))

    def is_platform_macro(self, name: str) -> bool:
        """Does testing `name` tell an AMD build from an NVIDIA one?"""
        if self._shared_hip(name):
            return False
        if is_amd_guard(name):
            return True
        definitions = self._macro_defs.get(name, ())
        if definitions and all(self._guards_itself(p, d) for p, d in definitions):
            return False  # a header's include guard
        amd, nvidia = self.macro(name, True), self.macro(name, False)
        if nvidia is UNDEFINED and amd is not UNDEFINED:
            return amd is not None or name in self._macro_defs
        nvidia_named = looks_like_nvidia_guard(name) or name in NVIDIA_TOOLKIT_MACROS
        if amd is UNDEFINED and (name in self._macro_defs or nvidia_named):
            # `TURING_MMA_AVAILABLE`, `GGML_CUDA_USE_PDL`: defined by the project only where
            # an AMD build never goes; `AMREX_USE_CUDA`: set by the build for NVIDIA only.
            return True
        if amd is UNDEFINED and nvidia is not UNDEFINED and nvidia is not None:
            return True
        unknown_for_nvidia = nvidia is None or nvidia is DEFINED
        if isinstance(amd, int) and unknown_for_nvidia and self._defined_per_platform(name):
            # `#if !defined(DEVICE_HIP)` `#define NVLS_AVAILABLE (CUDART_VERSION >= 12030)`
            # `#else` `#define NVLS_AVAILABLE 0`: known for AMD, per toolkit for NVIDIA.
            return True
        if isinstance(amd, int) and unknown_for_nvidia and self._derived_from_platform(name):
            # `#define KF_BF16_OPS (KF_IS_CUDA && __CUDA_ARCH__ >= 800)`: 0 for AMD through
            # the platform names it is made of, per GPU for NVIDIA
            return True
        return isinstance(amd, int) and isinstance(nvidia, int) and amd != nvidia

    def _derived_from_platform(self, name: str) -> bool:
        """Does every definition of `name` an AMD build reaches name a platform macro?"""
        if name in self._deriving:
            return False  # defined from itself
        self._deriving.add(name)
        try:
            bodies = [
                d.body
                for p, d in self._macro_defs.get(name, ())
                if 0 not in self._reached(p, d.offset, True)
            ]
            return bool(bodies) and all(
                any(n != name and self.is_platform_macro(n) for n in names_in(body))
                for body in bodies
            )
        finally:
            self._deriving.discard(name)

    def _defined_per_platform(self, name: str) -> bool:
        """Has `name` a definition that an NVIDIA build may reach and an AMD build never
        does?"""
        for path, definition in self._macro_defs.get(name, ()):
            if 0 in self._reached(path, definition.offset, True) and 0 not in self._reached(
                path, definition.offset, False
            ):
                return True
        return False

    def _excluded_by_amd_feature(self, branch: Branch) -> bool:
        """`#ifndef FULL_BF16`, where `#if __CUDA_ARCH__ >= 800 || defined(USE_AMD_ROCM)`
        `#define FULL_BF16 1`: a feature every AMD build has because of an AMD guard (and
        some NVIDIA GPUs), whose absence is what keeps an AMD build out of this branch (a
        polyfill for the NVIDIA GPUs without it). Not `defined(FULL_BF16) && __CUDA_ARCH__
        >= 900`: there the arch test keeps AMD out, and an AMD build loses the branch."""
        tests = branch.tests
        features = {
            n
            for t in tests
            for n in names_in(t)
            if n in self._macro_defs and self._defined_for_amd(n)
        }
        if not features:
            return False
        amd = self._envs[True]

        def without_features(name: str) -> object:
            return None if name in features else amd(name)

        return branch_condition_value(branch, without_features) != 0

    def _defined_for_amd(self, name: str) -> bool:
        """Set in every AMD build because of an AMD guard, and unknown for NVIDIA (by GPU)."""
        amd, nvidia = self.macro(name, True), self.macro(name, False)
        if nvidia is not None or amd is None or amd is UNDEFINED:
            return False
        reached = False
        for path, definition in self._macro_defs.get(name, ()):
            enclosing = self.files[path].enclosing(definition.offset)
            if any(self._taken(b, True) == 0 for b in enclosing):
                continue
            reached = True
            tests = [t for b in enclosing for t in (*b.prior, *([b.test] if b.test else []))]
            if not any(
                is_amd_guard(n) or looks_like_amd_guard(n) for t in tests for n in names_in(t)
            ):
                return False
        return reached

    def _branch_kind(self, path: str, branch: Branch) -> str | None:
        """'amd' for a branch only an AMD build takes, 'nvidia' for one an AMD build never
        takes in a conditional that tests a platform macro, else None."""
        key = (path, branch.start_byte)
        if key in self._kinds:
            return self._kinds[key]
        if _never_compiled(branch):
            self._kinds[key] = "other"  # `#if 0`: code no build compiles
            return "other"
        if (
            not self._may_tell_platforms(branch) and not self._cudacc_decides(path, branch)
        ) or self._include_guard(path, branch):
            # `#ifdef _WIN32`, `#ifndef HELPER_H`: the same in both (unless its twin follows)
            kind = "nvidia" if self._before_amd_twin(path, branch) else None
            self._kinds[key] = kind
            return kind
        in_amd = self._taken(branch, True)
        if in_amd is None and self._cudacc_decides(path, branch):
            in_amd = 0
        elif in_amd is None and self._cudacc_gives(path, branch):
            in_amd = 1
        in_nv = self._taken(branch, False)
        kind = None
        if in_nv == 0 and in_amd != 0:
            kind = "amd"

        elif in_nv == 0 and in_amd == 0 and self._names_third_platform(branch):
            kind = "other"  # a SYCL or OpenCL branch: no CUDA build compiles it
        elif in_amd == 0 and (
            self._mentions_platform(branch)
            or self._arch_branch_with_fallback(path, branch)
            or self._old_arch_branch(branch)
            or self._excluded_by_amd_feature(branch)
            or self._has_amd_sibling(path, branch)
        ):
            kind = "nvidia"
        elif in_amd == 0 and self._nvidia_compiler_branch(path, branch):
            kind = "nvidia"
            self.compiler_branches.add(key)
        self._kinds[key] = kind
        return kind

    def _before_amd_twin(self, path: str, branch: Branch) -> bool:
        """`#ifdef ENABLE_FP8` `CASE(TYPE_FP8_E4M3, __nv_fp8_e4m3);` `#endif` followed at once
        by `#if USING_ROCM` `CASE(TYPE_FP8_E4M3, __hip_fp8_e4m3_fnuz);` `#endif` (rtp-llm, whose
        Bazel config sets ENABLE_FP8 for CUDA builds only): a lone feature switch the
        project never defines, directly before a lone AMD-only conditional, is that
        conditional's NVIDIA twin."""
        ff = self.files[path]
        group = ff.groups.get(branch.group, ())
        if len(group) != 1 or branch.prior or branch.test is None:
            return False
        names = names_in(branch.test)
        if len(names) != 1:
            return False
        (name,) = names
        if name in self._macro_defs or not FEATURE_SWITCH.match(name):
            return False
        at = bisect.bisect_left(ff.starts, branch.end_byte)
        following = ff.facts.branches[at] if at < len(ff.starts) else None
        if following is None or following.start_line not in (branch.end_line, branch.end_line + 1):
            return False
        if len(ff.groups.get(following.group, ())) != 1:
            return False
        return self._taken(following, False) == 0 and self._taken(following, True) != 0

    def _cudacc_decides(self, path: str, branch: Branch) -> bool:
        """Is `branch` one no AMD build takes once `__CUDACC__` is read as hipcc has it
        (undefined), in a file hipcc compiles as it is? SeisSol's `#elif defined(__CUDACC__)
        || (defined(__HIP_PLATFORM_NVIDIA__) && defined(__HIP__))` before its `#elif
        defined(__HIP_PLATFORM_AMD__)`, cornerstone's `#ifdef __CUDACC__` PTX lane id. Only
        to take the branch away from AMD: its `#else` is a plain host compiler's too."""
        if not any("__CUDACC__" in t for t in branch.tests) or not self._compiled_as_is(path):
            return False
        return self._as_hipcc(branch) == 0

    def _cudacc_gives(self, path: str, branch: Branch) -> bool:
        """Is `branch` an AMD test of its own (`#elif defined(__HIPCC__)`) that an AMD build
        takes once the `#ifdef __CUDACC__` before it is read as hipcc has it, in a file
        hipcc compiles as it is? (An `#else` is not: a plain host compiler takes it too.)"""
        if branch.test is None or not _tests_for_amd(branch.test):
            return False
        if not any("__CUDACC__" in t for t in branch.prior) or not self._compiled_as_is(path):
            return False
        return self._as_hipcc(branch) == 1

    def _as_hipcc(self, branch: Branch) -> int | None:
        """branch_condition_value in an AMD build, `__CUDACC__` undefined as hipcc has it."""
        amd = self._envs[True]

        def hipcc(name: str) -> object:
            return UNDEFINED if name == "__CUDACC__" else amd(name)

        return branch_condition_value(branch, hipcc)

    def _compiled_as_is(self, path: str) -> bool:
        """Does hipcc compile this file as it is, not a hipified copy? It, or a header it
        includes, tests an AMD guard."""
        return self._tests_amd_guard(path) or any(
            self._tests_amd_guard(p) for p in self.includes_of(path) if p in self.files
        )

    def _nvidia_compiler_branch(self, path: str, branch: Branch) -> bool:
        """`#if defined(__CUDA_ARCH__)` (or `__NVCC__`) in a file hipcc compiles as it is (it,
        or a header it includes, tests an AMD guard): hipcc defines neither, so the AMD
        build takes the `#else` (or leaves the block out), and that is the project's AMD
        path, as for a `#ifdef USE_CUDA` block. In CUDA-only code the same test tells device
        code from host code only. Comparisons (`__CUDA_ARCH__ >= 800`) are the arch checks'
        business."""
        test = branch.test
        if test is None or any(c in test for c in "<>="):
            return False
        names = names_in(test)
        if not names or not names <= NVIDIA_COMPILERS:
            return False
        return self._compiled_as_is(path)

    def _tests_amd_guard(self, path: str) -> bool:
        known = self._tests_amd.get(path)
        if known is None:
            known = self._tests_amd[path] = any(
                b.test is not None and _tests_for_amd(b.test)
                for b in self.files[path].facts.branches
            )
        return known

    @staticmethod
    def _names_third_platform(branch: Branch) -> bool:
        return branch.test is not None and any(
            looks_like_third_platform_guard(n) for n in names_in(branch.test)
        )

    def _has_amd_sibling(self, path: str, branch: Branch) -> bool:
        """`#if defined(__CUDA_ARCH__)` … `#elif defined(__HIP_DEVICE_COMPILE__)`: another
        branch of the same conditional is only an AMD build's, so this one, which an AMD
        build never takes, is NVIDIA code with its AMD alternative beside it."""
        siblings = self.files[path].groups.get(branch.group, ())
        return any(
            other is not branch and self._taken(other, False) == 0 and self._taken(other, True) != 0
            for other in siblings
        )

    def _include_guard(self, path: str, branch: Branch) -> bool:
        """`#ifndef HELPER_CUDA_H` / `#define HELPER_CUDA_H`: a header's include guard."""
        test = branch.test or ""
        if branch.prior or not test.startswith("!defined(") or not test.endswith(")"):
            return False
        name = test[len("!defined(") : -1]
        offsets = self.files[path].empty_macros.get(name, ())
        return any(branch.start_byte < offset < branch.start_byte + 512 for offset in offsets)

    def _may_tell_platforms(self, branch: Branch) -> bool:
        """Can this branch's tests come out differently for AMD and NVIDIA? Only if they
        name a platform guard, an NVIDIA-only or toolkit macro, or a macro the project
        defines (which may be derived from one); else there is nothing to evaluate."""
        key = (branch.prior, branch.test)
        known = self._platform_tests.get(key)
        if known is None:
            known = self._platform_tests[key] = any(map(self._tells_platforms, branch.tests))
        return known

    def _tells_platforms(self, test: str) -> bool:
        """_may_tell_platforms for one test, once per test (an `#elif` chain repeats them)."""
        known = self._telling_tests.get(test)
        if known is None:
            known = self._telling_tests[test] = any(
                is_amd_guard(n)
                or n in NVIDIA_ONLY
                or n in IDE_ONLY
                or n in NVIDIA_TOOLKIT_MACROS
                or n in AMD_TOOLKIT_MACROS
                or n in self._macro_defs
                or looks_like_amd_guard(n)
                or looks_like_nvidia_guard(n)
                for n in self._names_of(test)
            )
        return known

    def _arch_branch_with_fallback(self, path: str, branch: Branch) -> bool:
        """`#if __CUDA_ARCH__ >= 800 … #else … #endif`: an AMD build takes the other branch
        (the arch-conditional finding on the directive says so); what is inside this one is
        NVIDIA-only code with an alternative, not a blocker."""
        tests = branch.tests
        if not any(ARCH_COMPARISON.search(t) for t in tests):
            return False
        siblings = self.files[path].groups.get(branch.group, ())
        return any(other is not branch and self._taken(other, True) != 0 for other in siblings)

    def _old_arch_branch(self, branch: Branch) -> bool:
        """`#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 600` with no `#else`: a fallback
        for old NVIDIA GPUs (a double atomicAdd, a trap stub). An AMD build skips it, as a
        current NVIDIA GPU does, and compiles the code after it: NVIDIA-only code whose
        alternative is that code. A test an old GPU fails but a newer one passes
        (`__CUDA_ARCH__ >= 800`, no `#else`) is not one: there an AMD build loses the
        branch."""
        tests = branch.tests
        if not any(ARCH_COMPARISON.search(t) for t in tests):
            return False

        def on(arch: int):
            def env(name: str) -> object:
                return arch if name == "__CUDA_ARCH__" else self.macro(name, False)

            return env

        newest = branch_condition_value(branch, on(10**6))
        return newest == 0 and branch_condition_value(branch, on(100)) != 0

    def _mentions_platform(self, branch: Branch) -> bool:
        tests = branch.tests
        return any(self.is_platform_macro(n) for t in tests for n in names_in(t))

    def lane_blind(self, name: str, depth: int = 0, logical: bool = False) -> bool:
        """Is every project function named `name` free of warp-level code, and so is what
        it calls (project functions, CUDA names, casts and value types)? A name the
        project does not define is not known to be (a library's warp reduction). With
        `logical`, warp-level code in logical groups of 32 lanes (FunctionInfo.logical32: a
        butterfly or tree reduction from 16) counts as blind too: what a caller working
        in such groups may call."""
        if name.startswith(LOGICAL_MARK):  # a Pending's lane_callees entry: "~name"
            return self.lane_blind(name[len(LOGICAL_MARK) :], depth, logical=True)
        known = self._blind.get((name, logical))
        if known is not None:
            return known
        defined = self.functions.get(name)
        if not defined and depth <= LANE_BLIND_DEPTH and name in self._macro_defs:
            # a function-like macro of the project (`idx2(x, y, w)`): blind if its bodies are
            from portcheck.checks.warp import warp_level_code

            macros = [d for _, d in self._macro_defs[name]]
            return all(d.function_like and not warp_level_code(d.body.encode()) for d in macros)
        if not defined or depth > LANE_BLIND_DEPTH:
            return False
        from portcheck.checks import METHOD_MARK
        from portcheck.checks.warp import NOT_CALLEES, _elementwise_macro

        self._blind[(name, logical)] = True  # a recursive call adds nothing new
        for path, _ in defined:
            self.mark_functions(path)
        result = all(
            (not fn.warp_level or (logical and fn.logical32))
            and all(
                (
                    self.lane_blind(callee, depth + 1, logical)
                    if callee in self.functions
                    # a method of the project's (`x.get_bits()`): by its name
                    else self.lane_blind(callee[1:], depth + 1, logical)
                    if callee.startswith(METHOD_MARK) and callee[1:] in self.functions
                    else self.known_name(callee)
                    or callee in fn.opaque_calls
                    or callee in NOT_CALLEES
                    or _elementwise_macro(callee)
                )
                for callee in fn.calls
            )
            for _, fn in defined
        )
        self._blind[(name, logical)] = result
        return result

    def _counts_hardware_warps(self, launched: str) -> bool:
        """`launched` = "kernel:factor": is the kernel the project's, and do its warps
        follow the hardware's lane count: not lane-blind, no split of its threads by 32 (or
        by the launch's factor) of its own, no tiles or shuffle widths of 32? With
        ":width" or ":rows" after the factor (Pending.launched): does it read `warpSize`?
        (A kernel the project does not define is no question for it.)"""
        kernel, _, factor = launched.partition(":")
        factor, _, mode = factor.partition(":")
        defined = [(path, fn) for path, fn in self.functions.get(kernel, ()) if fn.is_kernel]
        if not defined:
            return False
        for path, _ in defined:
            self.mark_functions(path)
        if mode == "width":  # "kernel:32:width": does it count its lanes with warpSize?
            return self._reads_width([fn for _, fn in defined])
        if mode == "rows":  # and, for rows of 32 threads, are its warps not the flat block's?
            kernels = [fn for _, fn in defined]
            return not any(fn.flat_block for fn in kernels) and self._reads_width(kernels)
        if any(fn.own_groups or {"32", factor} & fn.split_by for _, fn in defined):
            return False
        return not self.lane_blind(kernel)

    def _reads_width(self, functions: list[FunctionInfo]) -> bool:
        """Do these functions, or the project's functions they call, read the device's
        `warpSize` (FunctionInfo.reads_width)?"""
        seen: set[str] = set()
        todo = list(functions)
        while todo and len(seen) < MAX_WIDTH_READERS:
            fn = todo.pop()
            if fn.reads_width:
                return True
            for name in fn.calls - seen:
                seen.add(name)
                for path, callee in self.functions.get(name, ()):
                    self.mark_functions(path)
                    todo.append(callee)
        return False

    def mask_wrappers(self) -> dict[str, tuple[frozenset[int], bool]]:
        """Function-like macros that hand a parameter to a *_sync intrinsic as its lane mask
        (`#define SHFL_XOR_SYNC(mask, var, lane_mask) __shfl_xor_sync((mask), (var),
        (lane_mask))`): name -> (the positions of such parameters in the definitions an
        NVIDIA build reaches, whether every definition an AMD build reaches drops the mask,
        as `__shfl_xor((var), (lane_mask))` does)."""
        if self._mask_wrappers is not None:
            return self._mask_wrappers
        found: dict[str, tuple[frozenset[int], bool]] = {}
        for name, definitions in self._macro_defs.items():
            if not any("_sync" in d.body for _, d in definitions):
                continue  # most macros: no *_sync call in any definition
            nvidia: set[int] = set()
            amd_masks: list[bool] = []
            for path, definition in definitions:
                head = parameters_and_body(definition)
                if head is not None:
                    parameters, body = head
                    positions = {
                        parameters.index(m.group(1))
                        for m in MASK_ARGUMENT.finditer(body)
                        if m.group(1) in parameters
                    }
                elif MASKED_INTRINSIC.fullmatch(definition.body.strip()):
                    # `#define SHFL_DOWN __shfl_down_sync`: the call's first argument is
                    # the intrinsic's mask (apex's welford.cu, whose ROCm arm is
                    # `#define SHFL_DOWN(mask, val, i) __shfl_down(val, i)`)
                    positions = {0}
                else:
                    continue
                # (a header included only in one platform's code: that platform's macro)
                included = self.included_only_in(path)
                if included != "amd" and 0 not in self._reached(path, definition.offset, False):
                    nvidia |= positions
                if included != "nvidia" and 0 not in self._reached(path, definition.offset, True):
                    amd_masks.append(bool(positions))
            if nvidia:
                found[name] = (frozenset(nvidia), bool(amd_masks) and not any(amd_masks))
        self._mask_wrappers = found
        return found

    def _hides_device(self, macros: tuple[str, ...]) -> bool:
        """Does one of these macros in a function's head stand for `__device__`: one the
        project defines so, or one it does not define at all whose name says so
        (gridtools' `GT_FUNCTION_DEVICE`, `CUTLASS_DEVICE` from a header outside the
        scanned folder)?"""
        return any(
            name in self.device_macros
            or (name not in self._macro_defs and DEVICE_SPECIFIER_NAME.search(name) is not None)
            for name in macros
        )

    def _device_macros(self) -> set[str]:
        bodies: dict[str, set[str]] = {}
        for ff in self.files.values():
            for macro in ff.facts.macros:
                body = macro.body
                if macro.function_like:
                    # `#define GPUdi() __device__ inline` (AliceO2): no parameters, a specifier
                    empty = re.match(r"\(\s*\)", body)
                    if empty is None:
                        continue
                    body = body[empty.end() :]
                if body:
                    bodies.setdefault(macro.name, set()).update(re.findall(r"\w+", body))
        found = {
            n
            for n, words in bodies.items()
            if words & DEVICE_QUALIFIER_TOKENS
            or ("__attribute__" in words and words & ATTRIBUTE_SPACES)
        }
        changed = True
        while changed:  # `#define HOST_DEVICE __host__ DEVICE`, `#define DEVICE __device__`
            changed = False
            for name, words in bodies.items():
                if name not in found and words & found:
                    found.add(name)
                    changed = True
        return found

    # -- where code sits ------------------------------------------------------------------

    def _selector(self, name: str) -> tuple[frozenset[int], frozenset[int]] | None:
        """For a function-like macro that keeps different arguments per platform
        (`#define AMREX_HIP_OR_CUDA(a,b) a` for HIP, `b` for CUDA): the argument positions
        only an AMD build keeps, and those only an NVIDIA build keeps."""
        if name in self._selectors:
            return self._selectors[name]
        kept: dict[bool, set[int]] = {True: set(), False: set()}
        for amd in (True, False):
            for path, definition in self._macro_defs.get(name, ()):
                if not definition.function_like:
                    continue
                reached = self._reached(path, definition.offset, amd)
                if 0 in reached:
                    continue
                head = parameters_and_body(definition)
                if head is None:
                    continue
                parameters, body = head
                words = set(re.findall(r"\w+", body))
                kept[amd] |= {i for i, p in enumerate(parameters) if p in words}
        amd_only, nvidia_only = (
            frozenset(kept[True] - kept[False]),
            frozenset(kept[False] - kept[True]),
        )
        result = (amd_only, nvidia_only) if amd_only or nvidia_only else None
        self._selectors[name] = result
        return result

    def _argument_regions(self, ff: _FileFacts) -> list[tuple[int, int, str]]:
        regions = self._regions.get(ff.path)
        if regions is None:
            regions = []
            for invocation in ff.facts.invocations:
                selector = self._selector(invocation.name)
                if selector is None:
                    continue
                for i, (start, end) in enumerate(invocation.arguments):
                    if i in selector[0]:
                        regions.append((start, end, "amd"))
                    elif i in selector[1]:
                        regions.append((start, end, "nvidia"))
            self._regions[ff.path] = regions
        return regions

    def plain(self, path: str) -> bool:
        """Is every offset of the file neither in an AMD path or NVIDIA-only code with one
        (placement None) nor behind a build switch (optional_guard "")? Most files: their
        uses then need no lookup one by one."""
        marked = self._marked.get(path)
        if marked is None:
            marked = self._marked[path] = self._marked_regions(path)
        return not marked and not self._switched_file(path)

    def placement(self, path: str, offset: int) -> str | None:
        """'amd' inside an AMD path, 'nvidia' in NVIDIA-only code with an AMD alternative,
        'other' in a third platform's branch (SYCL, OpenCL) that no CUDA build compiles."""
        marked = self._marked_of(path)
        if not marked:
            return None  # most files: no branch that tells the platforms apart
        kinds = {kind for start, end, kind in marked if start <= offset < end}
        if "amd" in kinds:
            return "amd"
        if "other" in kinds:
            return "other"  # another platform's code (SYCL, OpenCL): not a port's concern
        if "nvidia" in kinds:
            return "nvidia"
        return None

    def nvidia_around(self, path: str, offset: int) -> bool:
        """Is `offset` in NVIDIA-only code because of a branch that does not start there (an
        outer one), not only the branch whose directive it is?"""
        return any(
            kind == "nvidia" and start < offset < end for start, end, kind in self._marked_of(path)
        )

    def has_nvidia_code(self, path: str) -> bool:
        """Does the file hold NVIDIA-only code with an AMD alternative (the `#else` of an
        AMD branch)? Then it is not a header only an AMD build reads."""
        return any(kind == "nvidia" for _, _, kind in self._marked_of(path))

    def _marked_of(self, path: str) -> list[tuple[int, int, str]]:
        """_marked_regions, once per file."""
        marked = self._marked.get(path)
        if marked is None:
            marked = self._marked[path] = self._marked_regions(path)
        return marked

    def optional_guard(self, path: str, offset: int) -> str:
        """The build switch that code at `offset` is compiled only with (`#ifdef
        GGML_USE_NCCL`), or "" when every NVIDIA build compiles it: an optional component,
        which the scores leave out and the reports cost apart (docs/scoring.md)."""
        ff = self.files.get(path)
        if ff is None or not self._switched_file(path):
            return ""
        for branch in ff.enclosing(offset):
            guard = self._option_of(branch)
            if guard:
                return guard
        return ""

    def _switched_file(self, path: str) -> bool:
        """Has the file any branch behind a build switch? Once per file: most have none."""
        switched = self._switched.get(path)
        if switched is None:
            ff = self.files.get(path)
            branches = ff.facts.branches if ff is not None else ()
            switched = self._switched[path] = any(map(self._option_of, branches))
        return switched

    def _option_of(self, branch: Branch) -> str:
        """The build switch a branch is taken only with: a macro it tests that the
        project never defines and that says nothing about the platform; "" if none. The
        branch must be left out of a default NVIDIA build (every such switch undefined)
        and taken once the switch is defined. The switches its own test names are tried
        first; a long `#elif` chain of switches costs quadratic time at most."""
        key = (branch.prior, branch.test)
        known = self._options.get(key)
        if known is not None:
            return known
        in_priors = {n for t in branch.prior for n in self._names_of(t)}
        own = self._names_of(branch.test) if branch.test is not None else set()
        switches = {n for n in in_priors | own if self._is_build_switch(n)}
        found = ""
        if switches:

            def default(name: str) -> object:
                return UNDEFINED if self._is_build_switch(name) else self.macro(name, False)

            # every name the tests read is in `switches` exactly when it is a build switch,
            # so `default` is the same for every branch and its priors' value is shared
            priors_default = self._priors_value(branch.prior, "no-switch", default)
            if branch_condition_value(branch, default, (priors_default,)) == 0:
                ordered = sorted(switches & own) + sorted(switches - own)
                for switch in ordered:

                    def enabled(name: str, on: str = switch) -> object:
                        return 1 if name == on else default(name)

                    shared = None if switch in in_priors else (priors_default,)
                    if branch_condition_value(branch, enabled, shared) != 0:
                        found = switch
                        break
        self._options[key] = found
        return found

    def _names_of(self, test: str) -> set[str]:
        names = self._test_names.get(test)
        if names is None:
            names = self._test_names[test] = names_in(test)
        return names

    def _is_build_switch(self, name: str) -> bool:
        """A macro only the build can define (`-DGGML_USE_NCCL`): not defined in the
        project, not reserved to the compiler (`__CUDACC__`, `_WIN32`), not the toolkit's,
        and not one that picks the platform or turns the CUDA code itself on."""
        known = self._build_switches.get(name)
        if known is None:
            known = self._build_switches[name] = self._decide_build_switch(name)
        return known

    def _decide_build_switch(self, name: str) -> bool:
        return not (
            name.startswith("_")
            or name in OPERATING_SYSTEMS
            or NOT_A_SWITCH.search(name)
            or name in self._macro_defs
            or name in NVIDIA_ONLY
            or name in NVIDIA_TOOLKIT_MACROS
            or CUDA_SWITCH.search(name)
            or self.is_platform_macro(name)
            or looks_like_amd_guard(name)
            or looks_like_nvidia_guard(name)
        )

    def _marked_regions(self, path: str) -> list[tuple[int, int, str]]:
        """The byte ranges of a file that are AMD paths or NVIDIA-only code with an AMD
        alternative (branches and platform-selecting macro arguments, or the whole file
        when it is only ever included in such code), judged once."""
        ff = self.files.get(path)
        if ff is None:
            return []
        included = self.included_only_in(path)
        regions = [(0, 1 << 62, included)] if included is not None else []
        regions += [
            (b.start_byte, b.end_byte, kind)
            for b in ff.facts.branches
            if (kind := self._branch_kind(path, b)) is not None
        ]
        regions += [
            (b.start_byte, b.end_byte, kind)
            for b in ff.facts.constexpr_branches
            if (kind := self._constexpr_kind(path, b)) is not None
        ]
        return regions + self._argument_regions(ff)

    def included_only_in(self, path: str) -> str | None:
        """'nvidia' for a header the project includes only in NVIDIA-only code with an AMD
        alternative (`#if defined(__HIP_PLATFORM_AMD__)` `#include "arch_hip.h"` `#else`
        `#include "arch_cuda.h"`), 'amd' for one it includes only in AMD paths: the whole
        header is that platform's code. None for a file included elsewhere too, or never."""
        if path in self._included_as:
            return self._included_as[path]
        self._included_as[path] = None  # while judged: a cycle of includes decides nothing
        kinds = {self.placement(f, offset) for f, offset in self._include_sites().get(path, ())}
        kind = kinds.pop() if len(kinds) == 1 else None
        self._included_as[path] = kind if kind in ("nvidia", "amd") else None
        return self._included_as[path]

    def _include_sites(self) -> dict[str, list[tuple[str, int]]]:
        """Each scanned file -> the `#include "…"` directives (file, offset) that name it:
        resolved from the including file's folder, from the scanned folder, or else the one
        scanned file whose path ends with what is written (an include path of the build)."""
        if self._sites is not None:
            return self._sites
        by_name: dict[str, list[str]] = {}
        for known in self.files:
            by_name.setdefault(posixpath.basename(known), []).append(known)
        sites: dict[str, list[tuple[str, int]]] = {}
        for path, ff in self.files.items():
            folder = posixpath.dirname(path)
            targets = set()
            for written, offset in ff.facts.includes:
                target = _resolve_include(folder, written, self.files, by_name)
                if target is not None and target != path:
                    sites.setdefault(target, []).append((path, offset))
                    targets.add(target)
            self._includes[path] = frozenset(targets)
        self._sites = sites
        return sites

    def includes_of(self, path: str) -> frozenset[str]:
        """The scanned files `path` includes with `#include "…"`."""
        self._include_sites()
        return self._includes.get(path, frozenset())

    def _constexpr_kind(self, path: str, branch: Branch) -> str | None:
        """As _branch_kind, for a branch of an `if constexpr` (portcheck.constexpr_if):
        its tests may also read the project's constants (`if constexpr (kLanes == 64)`),
        and must name something the platforms set differently."""
        tests = branch.tests
        if not any(self._per_platform(n) for t in tests for n in names_in(t)):
            return None
        amd = branch_condition_value(branch, self._constant_env(path))
        if amd == 0:
            return "nvidia"
        if self._taken(branch, False) == 0:
            return "amd"
        return None

    def _constant_env(self, path: str):
        """An AMD build's macros, and the project's constants as seen from `path`."""

        def env(name: str) -> object:
            if name in self._macro_defs or name not in self._constants:
                return self.macro(name, True)
            return self.value(name, path)

        return env

    def _per_platform(self, name: str) -> bool:
        """Does an AMD build set `name` apart from an NVIDIA one: a platform macro, a
        wavefront-size macro, or a constant defined in an AMD path or from such names?"""
        known = self._platform_names.get(name)
        if known is not None:
            return known
        self._platform_names[name] = False  # a constant defined from itself: no
        found = self.is_platform_macro(name) or WAVEFRONT_MACRO.search(name) is not None
        if not found and name not in self._macro_defs:
            for def_path, expr, definition in self._live(name)[0]:
                enclosing = self.files[def_path].enclosing(definition.offset)
                if any(self._branch_kind(def_path, b) == "amd" for b in enclosing) or any(
                    self._per_platform(n) for n in names_in(expr)
                ):
                    found = True
                    break
        self._platform_names[name] = found
        return found

    def amd_paths(self) -> list[AmdPath]:
        """Every branch only an AMD build takes, outermost ones only."""
        found: list[AmdPath] = []
        for path in sorted(self.files):
            if self.included_only_in(path) == "amd":
                continue  # the whole file is (the scan lists it with its length)
            ff = self.files[path]
            covered_until = -1
            for branch in ff.facts.branches:
                if branch.start_byte < covered_until:
                    continue
                if self._branch_kind(path, branch) == "amd":
                    found.append(
                        AmdPath(path, branch.start_line, branch.end_line, branch.directive)
                    )
                    covered_until = branch.end_byte
        return found

    # -- constants ------------------------------------------------------------------------

    def value(self, name: str, path: str, depth: int = 0) -> int | None:
        """The integer value of `name` in an AMD build, as seen from `path`: definitions in
        NVIDIA-only branches do not count, one in an AMD path wins, one in the same file
        comes before the rest of the project; several different values: unknown."""
        key = (name, path)
        if key in self._value_cache:
            return self._value_cache[key]
        self._value_cache[key] = None  # a cycle evaluates to unknown
        result = self._value(name, path, depth)
        self._value_cache[key] = result
        return result

    def _named_definition(
        self, chosen: list[tuple[str, str, Definition]], path: str
    ) -> tuple[str, Definition]:
        """Of agreeing definitions, the one `path` reaches through its `#include "…"`s
        (nearest first, a few levels deep), else the first."""
        if len(chosen) > 1:
            by_file: dict[str, Definition] = {}
            for def_path, _, definition in chosen:
                by_file.setdefault(def_path, definition)  # a file's first, as without this
            seen = {path}
            level = [path]
            for _ in range(INCLUDE_DEPTH):
                level = [f for p in level for f in sorted(self.includes_of(p)) if f not in seen]
                seen.update(level)
                for included in level:
                    if included in by_file:
                        return included, by_file[included]
                if not level:
                    break
        return chosen[0][0], chosen[0][2]

    def _live(
        self, name: str
    ) -> tuple[list[tuple[str, str, Definition]], dict[str, list[tuple[str, str, Definition]]]]:
        """The definitions of `name` an AMD build reaches (those in an AMD path only, when
        there are any), and the files that hold them. Once per name: a name defined in
        thousands of files is not re-read for each of them."""
        cached = self._live_cache.get(name)
        if cached is not None:
            return cached
        in_amd_path: list[tuple[str, str, Definition]] = []
        elsewhere: list[tuple[str, str, Definition]] = []
        for def_path, expr, definition in self._constants.get(name, ()):
            ff = self.files[def_path]
            enclosing = ff.enclosing(definition.offset)
            kinds = {self._branch_kind(def_path, b) for b in enclosing}
            kinds.add(self.included_only_in(def_path))  # a header of one platform's
            if "nvidia" in kinds:
                continue
            if any(self._taken(b, True) == 0 for b in enclosing):
                continue
            (in_amd_path if "amd" in kinds else elsewhere).append((def_path, expr, definition))
        live = in_amd_path or elsewhere
        by_path: dict[str, list[tuple[str, str, Definition]]] = {}
        for item in live:
            by_path.setdefault(item[0], []).append(item)
        result = (live, by_path)
        self._live_cache[name] = result
        return result

    def _value(self, name: str, path: str, depth: int) -> int | None:
        if depth > MAX_DEPTH:
            return None
        live, paths = self._live(name)
        if not live:
            return None
        # A definition in the same file comes first; else every file's definitions, whose
        # common value (if any) is the same for all files that use the name. A file whose
        # own definitions an AMD build never reaches (`constexpr int warp_size = 32;` in an
        # `#ifndef USE_ROCM` namespace) means those, not another file's local of that name.
        if path not in paths and any(p == path for p, _, _ in self._constants.get(name, ())):
            return None
        chosen = paths.get(path, live)
        shared = path not in paths and len(chosen) > 1
        if shared and name in self._project_values:
            value = self._project_values[name]
            if value is not None:
                self._decided_by[(name, path)] = self._named_definition(chosen, path)
            return value
        values = {self.evaluate(expr, def_path, depth + 1) for def_path, expr, _ in chosen}
        value = values.pop() if len(values) == 1 else None
        if len(chosen) == 1 or value is not None:
            # several definitions that agree (a constant and the same enum in two structs):
            # the one this file includes decides, else the first; its uses are listed there
            self._decided_by[(name, path)] = self._named_definition(chosen, path)
        if shared:
            self._project_values[name] = value
        return value

    def evaluate(self, expr: str, path: str, depth: int = 0) -> int | None:
        """An integer expression in an AMD build, names resolved through the project."""

        def env(name: str) -> object:
            if is_amd_guard(name) or name in NVIDIA_ONLY:
                return self.macro(name, True)
            if name not in self._constants:  # what the build or the compiler sets
                return unless_defined(name, True)
            return self.value(name, path, depth)

        return evaluate(expr, env, in_if=False)

    # -- questions recorded by checks -----------------------------------------------------

    def _polled_near(self, path: str) -> bool:
        """Does device code that polls memory (FileScan.polls) sit in `path`'s folder or
        below it, or in a file it includes? A tree of independent programs (NVIDIA's
        samples) has polling kernels somewhere; the one that exports memory must be near."""
        folder = posixpath.dirname(path)
        prefix = folder + "/" if folder else ""
        return any(p.startswith(prefix) for p in self.polling_files) or bool(
            self.includes_of(path) & self.polling_files
        )

    def answer(self, pending: Pending) -> Finding | None:
        """The finding if its question's answer is yes (its message then names the
        definition that decided it), else None."""
        finding = pending.finding
        if pending.device_macros and not self._hides_device(pending.device_macros):
            return None
        if pending.ptx_callee:
            defined = self.ptx_functions.get(pending.ptx_callee, frozenset())
            if not defined - {finding.path}:
                return None  # not a PTX wrapper, or one of this file (its `asm` is listed)
            if self.placement(finding.path, finding.span.start_byte) != "nvidia":
                return None  # not a call the AMD branch beside it replaces
        if pending.lane_callees and all(
            self.lane_blind(name) for name in pending.lane_callees.split(",")
        ):
            # what it calls elsewhere in the project does not use lanes either: the width
            # constant it reads is read harmlessly there (definition_findings)
            self.blind_reads.update(names_in(pending.expr) if pending.expr else ())
            return None
        if pending.polled and not self._polled_near(finding.path):
            return None  # no kernel near it waits on memory another GPU writes
        if pending.launched and not any(
            self._counts_hardware_warps(launch) for launch in pending.launched.split(",")
        ):
            return None
        if pending.wrapper:
            positions, amd_drops = self.mask_wrappers().get(pending.wrapper, (frozenset(), False))
            if pending.wrapper_arg not in positions:
                return None
            if amd_drops:  # the macro's AMD definition passes no mask: already ported
                finding = replace(finding, amd_alternative=True)
        if not pending.expr:
            return finding
        if pending.directive:
            value = evaluate(pending.expr, self._envs[True])
            # `GKO_ON_AMD && HIP_VERSION >= 60200000 || …`, GKO_ON_AMD the project's: AMD
            # is let in from some ROCm release on, the fallback before it.
            if (
                value is None
                and pending.negate
                and 1 in pending.values
                and amd_takes_in_some_release(pending.expr, self._envs[True])
            ):
                return None
        else:
            value = self.evaluate(pending.expr, finding.path)
        if value is None:
            return finding if pending.if_unknown else None
        hit = value in pending.values
        if hit == pending.negate:
            return None
        if pending.directive:
            return finding
        names = [n for n in names_in(pending.expr) if (n, finding.path) in self._decided_by]
        decided = self._decided_by.get((names[0], finding.path)) if len(names) == 1 else None
        if decided is None:
            return finding
        def_path, definition = decided
        if def_path == finding.path:
            # the same name defined again further on in this file (`constexpr uint32_t
            # FULL_MASK = 0xffffffff;` in each of apex's softmax functions): the use reads
            # the nearest one before it
            definition = self._nearest_before(definition, finding.path, finding.span.start_byte)
        constant = self.value(definition.name, finding.path)
        finding = replace(
            finding,
            message=f"{finding.message} (`{definition.name}` is {constant}: "
            f"{def_path}:{definition.line})",
            # a launch bound the project sets in its AMD branch (`#ifdef
            # __HIP_PLATFORM_AMD__` `#define WID3S_PER_MP 7`): chosen for AMD's meaning of
            # it, the project's AMD path
            amd_alternative=finding.amd_alternative
            or (
                finding.slug == "launch-bounds"
                and self.placement(def_path, definition.offset) == "amd"
            ),
        )
        if pending.fold and finding.slug in DEFINITION_SLUGS and constant is not None:
            key = (def_path, definition.offset)
            root = self.roots.setdefault(key, (finding.slug, def_path, definition, constant, []))
            root[4].append(finding)
            if self._logical_width(finding.slug, definition, def_path, constant):
                return None  # reported once, at the definition
        return finding

    def _nearest_before(self, definition: Definition, path: str, offset: int) -> Definition:
        """The last definition of `definition`'s name in `path` before `offset`, if it has the
        same value; else `definition`."""
        key = (path, definition.name)
        known = self._by_name_and_offset.get(key)
        if known is None:
            ff = self.files.get(path)
            candidates: list[Definition] = [*ff.facts.macros, *ff.facts.constants] if ff else []
            ordered = sorted(
                (d for d in candidates if d.name == definition.name), key=lambda d: d.offset
            )
            known = self._by_name_and_offset[key] = ([d.offset for d in ordered], ordered)
        offsets, ordered = known
        i = bisect.bisect_left(offsets, offset) - 1
        if i < 0:
            return definition
        nearest = ordered[i]
        return nearest if _own_value(nearest) == _own_value(definition) else definition

    def _logical_width(self, slug: str, definition: Definition, path: str, value: int) -> bool:
        """Is this 32 the project's deliberate logical warp width? It is when the project
        builds for AMD too, the definition is not NVIDIA-only, and the name is passed as
        the explicit width of its shuffles (ggml's WARP_SIZE with `width = WARP_SIZE`):
        each use is then right on wave64, and the definition is what to review."""
        if slug != "warp-size-assumption" or value != 32:
            return False
        if definition.name not in self.shuffle_widths:
            return False
        if definition.name in self.amd_shuffle_widths():
            return True
        if self._builds_for_amd is None:
            self._builds_for_amd = bool(self.amd_paths())
        return self._builds_for_amd and self.placement(path, definition.offset) is None

    def amd_shuffle_widths(self) -> frozenset[str]:
        """Names the project's AMD code passes as its shuffles' width (Transformer Engine's
        `__shfl_xor(x, idx, THREADS_PER_WARP)` under `#ifdef __HIP_PLATFORM_AMD__`): the AMD
        port keeps logical groups of that many lanes on purpose, so a 32 there is its
        decision, not a width still to port."""
        if self._amd_widths is None:
            self._amd_widths = frozenset(
                name
                for path, ff in self.files.items()
                for name, offset in ff.facts.shuffle_widths
                if self.placement(path, offset) == "amd"
            )
        return self._amd_widths

    def _wider_amd_twin(
        self, path: str, definition: Definition, definitions: list[Definition]
    ) -> tuple[str, int] | None:
        """(slug, value) when `definition` is NVIDIA-only code that fixes
        32 lanes and the same file's AMD code defines the same name 64 wide (`#define
        DEFAULT_WIDTH 32` in the `#else` of `#ifdef MAGMA_HAVE_HIP`, whose branch says 64;
        `#define _WS warpSize`; `0xffffffff` against `0xffffffffffffffff`): the project's
        own port says what the name is. A bare 64 needs a name that says width."""
        own = _own_value(definition)
        if own == 32:
            slug, wide = "warp-size-assumption", 64
        elif own == 0xFFFFFFFF:
            slug, wide = "lane-mask-width", 0xFFFFFFFFFFFFFFFF
        else:
            return None
        if self.placement(path, definition.offset) != "nvidia":
            return None
        for other in definitions:
            if other.name != definition.name or other.offset == definition.offset:
                continue
            hardware = slug == "warp-size-assumption" and (
                HARDWARE_WIDTH.fullmatch(_text_of(other).strip())
                or _widened(_text_of(definition), _text_of(other))
            )
            if not hardware and _own_value(other) != wide:
                continue
            if (
                not hardware
                and slug == "warp-size-assumption"
                and TWIN_WIDTH_NAME.search(definition.name) is None
            ):
                continue  # 32 and 64 tuned per platform (a tile, a block): not a width
            if self.placement(path, other.offset) == "amd":
                return slug, own
        return None

    def _selected_width(self, definition: Definition) -> tuple[str, int] | None:
        """(slug, value) for `warp_size = AMREX_HIP_OR_CUDA(64, 32)`: a
        project macro that keeps one argument per platform, given 32 for NVIDIA and 64 (or
        `warpSize`) for AMD, or the two all-ones masks."""
        expr = _text_of(definition)
        if "(" not in expr:
            return None
        call = SELECTOR_CALL.fullmatch(expr.strip())
        if call is None:
            return None
        selector = self._selector(call.group(1))
        if selector is None:
            return None
        amd_positions, nvidia_positions = selector
        raw = call.group(2).encode()
        arguments = [a.decode().strip() for a in top_level_arguments(b"(" + raw + b")", 1)]

        def values(positions: frozenset[int]) -> list[object]:
            return [
                "hw" if HARDWARE_WIDTH.fullmatch(arguments[i]) else _evaluated(arguments[i])
                for i in positions
                if i < len(arguments)
            ]

        amd, nvidia = values(amd_positions), values(nvidia_positions)
        if 32 in nvidia and (64 in amd or "hw" in amd):
            return "warp-size-assumption", 32
        if 0xFFFFFFFF in nvidia and 0xFFFFFFFFFFFFFFFF in amd:
            return "lane-mask-width", 0xFFFFFFFF
        return None

    def definition_findings(self, lane_blind: Collection[str] = ()) -> list[Finding]:
        """One finding at each definition that fixes a warp width or a 32-lane mask: those
        that answered a check's question, and those whose name says what they are
        (`#define WARP_SIZE 32`, `constexpr int hw_warp_size = 32;`, `FULL_MASK`), unless
        the only reads the checks met were lane-blind (`lane_blind`: CTranslate2's
        `C10_WARP_SIZE`, which chunks shared memory in a reduction right on wave64)."""
        from portcheck.checks import catalogue, line_fingerprint_of_text

        roots = dict(self.roots)
        per_platform: set[tuple[str, int]] = set()  # the project's AMD code has its own value
        # a function's own width constant in logical 32-lane groups (checks.warp's
        # _widths_of_logical_groups, with the other files' functions that decide it)
        in_groups: set[tuple[str, str, int]] = set()
        for entry in lane_blind:
            if entry.startswith("\x00"):
                _, constant, at, in_path, callees = entry.split("\x00")
                if all(self.lane_blind(n) for n in filter(None, callees.split(","))):
                    in_groups.add((in_path, constant, int(at)))
        for path, ff in self.files.items():
            definitions: list[Definition] = [*ff.facts.macros, *ff.facts.constants]
            twice = {n for n, k in Counter(d.name for d in definitions).items() if k > 1}
            for definition in definitions:
                if (path, definition.offset) in roots:
                    continue
                if isinstance(definition, MacroDef) and definition.function_like:
                    continue
                twin = (
                    self._wider_amd_twin(path, definition, definitions)
                    if definition.name in twice
                    else self._selected_width(definition)
                )
                if twin is not None:
                    slug, value = twin
                    roots[(path, definition.offset)] = (slug, path, definition, value, [])
                    per_platform.add((path, definition.offset))
                    continue
                lowered = definition.name.lower()  # both patterns need one of these words
                if "warp" not in lowered and "mask" not in lowered:
                    continue
                if WARP_WIDTH_NAME.search(definition.name):
                    if definition.name in lane_blind:
                        continue
                    if (path, definition.name, definition.offset) in in_groups:
                        continue
                    slug, wanted = "warp-size-assumption", 32
                elif _lane_mask_name(definition.name):
                    slug, wanted = "lane-mask-width", 0xFFFFFFFF
                else:
                    continue  # the name says nothing: only its uses could (roots above)
                own = _own_value(definition)
                if own != wanted:
                    continue
                roots[(path, definition.offset)] = (slug, path, definition, own, [])
        specs = catalogue()
        found: list[Finding] = []
        amd_widths = self.amd_shuffle_widths()
        for (path, offset), (slug, _, definition, value, uses) in sorted(roots.items()):
            spec = specs[slug]
            what = "the warp width" if slug == "warp-size-assumption" else "a full-warp lane mask"
            where = sorted({f"{u.path}:{u.span.line}" for u in uses})
            places = ", ".join(where[:5]) + (", …" if len(where) > 5 else "")
            used = f"; used so in {len(where)} place(s): {places}" if uses else ""
            if self._logical_width(slug, definition, path, value):
                used += (
                    " (passed as the shuffles' width: logical 32-lane groups, right on wave64 "
                    "where storage and indexing follow the same width; review the definition "
                    "rather than each use)"
                )
            kernels = tuple(sorted({k for u in uses for k in u.kernels}))
            length = len(definition.name.encode())
            written = " ".join(_text_of(definition).split())
            # `MAX_NUMWARP = (1024/32)`: the expression the width is in, not only its value
            shown = f"`{written}`" if "32" in written and written.strip("()") != "32" else value
            # Shared by both builds but read only by NVIDIA-only code that has an AMD path
            # (mmcv's FULL_MASK, passed only to the __shfl_down_sync of `#else` branches
            # whose `#ifdef MMCV_WITH_HIP` twins shuffle without a mask): nothing to change.
            nvidia_only = bool(uses) and all(
                u.amd_alternative or self.placement(u.path, u.span.start_byte) == "nvidia"
                for u in uses
            )  # or read only by a macro whose AMD definition drops the mask (apex's SHFL)
            nvidia_only = nvidia_only or (path, offset) in per_platform
            if slug == "warp-size-assumption" and definition.name in amd_widths:
                # the AMD code passes it as its shuffles' width (amd_shuffle_widths): the
                # port kept the logical width on purpose, its AMD path is that code
                used += "; the project's AMD code shuffles in groups of this width"
                nvidia_only = True
            found.append(
                Finding(
                    id=spec.id,
                    slug=slug,
                    severity=spec.severity,
                    path=path,
                    span=Span(
                        definition.line,
                        definition.column,
                        definition.line,
                        definition.column + len(definition.name),
                        offset,
                        offset + length,
                    ),
                    message=f"`{definition.name}` = {shown} fixes {what} at 32 lanes; CDNA "
                    f"wavefronts are 64 wide{used}",
                    targets=spec.cuda_targets,
                    help_url=spec.help_url,
                    fix=spec.fix,
                    kernels=kernels,
                    fingerprint=line_fingerprint_of_text(slug, path, definition.text),
                    amd_alternative=nvidia_only,
                )
            )
        return found


def _evaluated(expr: str) -> object:
    """An expression's value from its own text (no name resolved)."""
    return evaluate(expr, lambda name: None, in_if=False)


def _text_of(definition: Definition) -> str:
    return definition.body if isinstance(definition, MacroDef) else definition.expr


# `NAME(args)`: a whole definition that is one macro call.
SELECTOR_CALL = re.compile(r"([A-Za-z_]\w*)\s*\((.*)\)", re.DOTALL)


def _own_value(definition: Definition) -> object:
    """The definition's value from its own text (no other name resolved)."""
    if isinstance(definition, MacroDef) and definition.function_like:
        return None
    return _evaluated(_text_of(definition))


# A specifier macro's name that says device code: `GT_FUNCTION_DEVICE`, `CUTLASS_DEVICE`,
# `HOST_DEVICE`, `DEVICE_INLINE` (not `DEVICE_COUNT`-like names, which sit in no function's
# head).
DEVICE_SPECIFIER_NAME = re.compile(
    r"^(?!(?:\w*_)?(?:NO|NOT|NON)_)\w*?(?:^|_)DEVICE(?:_(?:INLINE|FUNC|FUNCTION|QUALIFIERS?))?_*$"
)


# Names a per-platform 32/64 pair may carry to be read as a lane width (not a tile size).
TWIN_WIDTH_NAME = re.compile(r"(?i)warp|wave|lane|width|simd|sub_?group")
# An AMD definition that is the hardware's width whatever its name (`#define _WS warpSize`).
HARDWARE_WIDTH = re.compile(r"\(?\s*(?:warpSize|\w*WAVEFRONT_SIZE(?:__)?)\s*\)?")


def _widened(nvidia: str, amd: str) -> bool:
    """Is the AMD text the NVIDIA one with its 32 written 64 in an expression (`(1024/32)`
    against `(1024/64)`, Librett's MAX_NUMWARP): the port's own edit of a warp width."""
    spaced = "".join(nvidia.split())
    if spaced.strip("()") == "32":
        return False  # a bare 32 against 64 (a block size tuned per platform): the name decides
    return "32" in spaced and re.sub(r"\b32\b", "64", spaced) == "".join(amd.split())


def parameters_and_body(definition: Definition) -> tuple[list[str], str] | None:
    """A function-like macro's parameter names and its body (None for an object-like one)."""
    if not isinstance(definition, MacroDef) or not definition.function_like:
        return None
    head = re.match(r"\(([^)]*)\)\s*(.*)", definition.body, re.DOTALL)
    if head is None:
        return None
    return [p.strip() for p in head.group(1).split(",")], head.group(2)


# A *_sync intrinsic's mask argument, when it is a bare (or parenthesised) name.
MASK_ARGUMENT = re.compile(
    r"\b(?:__shfl(?:_xor|_up|_down)?_sync|__ballot_sync|__any_sync|__all_sync"
    r"|__match_\w+_sync|__reduce_\w+_sync)\s*\(\s*\(?\s*([A-Za-z_]\w*)\s*\)?\s*,"
)
# A *_sync intrinsic that takes a lane mask first, as a whole macro body (an alias).
MASKED_INTRINSIC = re.compile(
    r"__shfl(?:_xor|_up|_down)?_sync|__ballot_sync|__any_sync|__all_sync|__match_\w+_sync"
    r"|__reduce_\w+_sync"
)
# Hazards whose cause is often one definition (`#define WARP_SIZE 32`), reported there too.
DEFINITION_SLUGS = frozenset({"warp-size-assumption", "lane-mask-width"})
# Names that say a constant is a warp width or a full-warp mask.
WARP_WIDTH_NAME = re.compile(
    r"(?i)(?:^|_)(?:k_?)?(?:hw_?|cuda_?|phys(?:ical)?_?)?warp(?:_?(?:size|width|lanes?|sz))?"
    # FBGEMM's `kWarpSizeHost()`: the width for host-side launch arithmetic
    r"(?:_?(?:host|device))?$"
    r"|lanes?_?per_?warp|threads?_?per_?warp"
)
LANE_MASK_NAME = re.compile(
    r"(?i)(?:full|warp|lane|all|active|shfl|sync).*mask|mask.*(?:full|warp|lane|all)"
)
# Words that make a mask a lane mask whatever else its name says; "all" alone does only in a
# name of mask words (`MASK_ALL`, not `NBNXN_INTERACTION_MASK_ALL`, a pair-exclusion mask).
LANE_MASK_WORDS = frozenset({"full", "warp", "lane", "lanes", "active", "shfl", "sync"})
MASK_NAME_WORDS = LANE_MASK_WORDS | {"all", "mask", "k", "final", "default", "32", "u32", "bits"}
NAME_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")


def _lane_mask_name(name: str) -> bool:
    """Does the name say it is a full-warp lane mask (`FULL_MASK`, `kWarpMask`,
    `MASK_ALL`)?"""
    if not LANE_MASK_NAME.search(name):
        return False
    words = {w.lower() for w in NAME_WORD.findall(name)}
    return bool(words & LANE_MASK_WORDS) or words <= MASK_NAME_WORDS


Definition = MacroDef | ConstantDef
