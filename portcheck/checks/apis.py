"""Hazards carried by particular APIs: found from the classified uses, not by re-parsing."""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable

from portcheck.checks import Context, hazard
from portcheck.checks.warp import _amd_build, _amd_takes
from portcheck.discover import CPP_SUFFIXES, CUDA_SUFFIXES
from portcheck.model import Status, Use, Verdicts
from portcheck.preproc import (
    HIP_RELEASE_MACROS,
    branch_condition_value,
    names_in,
    top_level_arguments,
)

# The FP8 value types (__nv_fp8_e4m3, __nv_fp8x2_e5m2, …); not __nv_fp8_storage_t (raw bits).
# The OCP FP8 types, the library data types that name them (`CUDA_R_8F_E4M3` in a cuBLASLt
# matmul's layout), and the interpretations of the conversion intrinsics (`__NV_E4M3`)
FP8_TYPE = re.compile(
    r"__nv_fp8(?:x[24])?_(?:e4m3|e5m2|storage_t)|CUDA_R_8F_E(?:4M3|5M2)|__NV_E(?:4M3|5M2)"
)
# PyTorch's OCP FP8 types in an extension's kernels (`using FP8_TYPE = c10::Float8_e4m3fn;`);
# ROCm builds for MI300 use `c10::Float8_e4m3fnuz` (and `Float8_e5m2fnuz`).
TORCH_FP8_TYPE = re.compile(
    rb"\b(?:(?:c10|at)::(?:ScalarType::)?|(?:torch|at|c10)::k)Float8_e(?:4m3fn|5m2)\b"
)
TORCH_FNUZ_TYPE = re.compile(rb"\b(?:c10|at|torch)::(?:ScalarType::|k)?Float8_e(?:4m3|5m2)fnuz\b")
# The allocations and the placement decisions; `cudaStreamAttachMemAsync`, a hint that
# hipStreamAttachMemAsync takes as it is, is the allocation's question, not one of its own.
MANAGED = frozenset(
    {
        "cudaMallocManaged",
        "cudaMemAdvise",
        "cudaMemAdvise_v2",
        "cudaMemPrefetchAsync",
        "cudaMemPrefetchAsync_v2",
        "cuMemAllocManaged",
        "cuMemAdvise",
        "cuMemPrefetchAsync",
        "__managed__",
    }
)
TEXTURE_REFERENCES = frozenset(
    {
        "texture",
        "cudaBindTexture",
        "cudaBindTexture2D",
        "cudaBindTextureToArray",
        "cudaBindTextureToMipmappedArray",
        "cudaUnbindTexture",
        "cudaGetTextureReference",
        "cudaGetTextureAlignmentOffset",
        "textureReference",
        "cuTexRefCreate",
        "cuTexRefSetAddress",
        "cuModuleGetTexRef",
    }
)
COOPERATIVE = frozenset(
    {
        "cooperative_groups::this_grid",
        "cooperative_groups::grid_group",
        "cooperative_groups::this_multi_grid",
        "cooperative_groups::multi_grid_group",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cuLaunchCooperativeKernel",
        "cuLaunchCooperativeKernelMultiDevice",
    }
)
GRAPH_PREFIXES = ("cudaGraph", "cuGraph")
GRAPH_NAMES = frozenset(
    {
        "cudaStreamBeginCapture",
        "cudaStreamEndCapture",
        "cudaStreamIsCapturing",
        "cudaStreamGetCaptureInfo",
        "cuStreamBeginCapture",
        "cuStreamEndCapture",
    }
)
MODULE_LOADS = frozenset(
    {
        "cuModuleLoad",
        "cuModuleLoadData",
        "cuModuleLoadDataEx",
        "cuModuleLoadFatBinary",
        "cuLinkCreate",
        "cuLinkAddData",
        "cuLinkAddFile",
        "cuLinkComplete",
        "cuLibraryLoadData",
        "cuLibraryLoadFromFile",
        "cudaLibraryLoadData",
        "cudaLibraryLoadFromFile",
        "nvrtcGetPTX",
        "nvrtcGetCUBIN",
    }
)
# Families whose ROCm counterpart has a different API: renaming is not a port.
MANUAL_PORT_FAMILIES = {
    "cudnn": "MIOpen",
    "cublaslt": "hipBLASLt",
    "nvjpeg": "rocJPEG",
    "npp": "RPP (ROCm Performance Primitives) or HIP kernels",
    "nvml": "AMD SMI",
    "cutlass": "composable_kernel or rocWMMA",
    "cupti": "ROCprofiler-SDK (AMD's profiling and tracing API)",
    "nvshmem": "rocSHMEM",
    "gdrcopy": "HIP's own memory the CPU can reach (no ROCm library keeps GDRCopy's API)",
}
MANUAL_PORT_HEADERS = {"cudnn.h": "cudnn", "cublasLt.h": "cublaslt", "cupti.h": "cupti"}
# Names reported by a more specific hazard are not repeated as unsupported-api.
SPECIFIC = MANAGED | TEXTURE_REFERENCES | COOPERATIVE | MODULE_LOADS | {"asm", "<<<>>>"}


def _report_each(ctx: Context, uses: list[Use], message: str) -> None:
    for use in uses:
        ctx.report(use.span.start_byte, use.span.end_byte, message.format(name=use.name))


@hazard("managed-memory")
def managed_memory(ctx: Context) -> None:
    _report_each(
        ctx,
        ctx.uses_named(MANAGED),
        "`{name}`: managed memory needs XNACK/HMM page migration on AMD GPUs",
    )


@hazard("fp8-format")
def fp8_format(ctx: Context) -> None:
    message = (
        "`{name}` is NVIDIA's (OCP) FP8; its HIP counterpart is FNUZ on MI300 "
        "(gfx940-942) and OCP on gfx950/RDNA4"
    )
    for use in ctx.uses_named(lambda u: FP8_TYPE.fullmatch(u.name) is not None):
        ctx.report(use.span.start_byte, use.span.end_byte, message.format(name=use.name))
    if b"Float8_e" not in ctx.data:
        return
    # The FNUZ types in the same code (FBGEMM's `load(const at::Float8_e4m3fnuz*)` beside
    # `load(const at::Float8_e4m3fn*)`) handle MI300 already; in another branch of an `#if`
    # (`#ifdef USE_ROCM` … `Float8_e4m3fnuz` `#else` … `Float8_e4m3fn`) they are the AMD path.
    fnuz_at = {_innermost_branch(ctx, m.start()) for m in TORCH_FNUZ_TYPE.finditer(ctx.masked)}
    for match in TORCH_FP8_TYPE.finditer(ctx.masked):
        if _innermost_branch(ctx, match.start()) in fnuz_at:
            continue
        ctx.report(
            match.start(),
            match.end(),
            f"`{match.group().decode()}` is the OCP FP8 NVIDIA computes in; MI300 "
            "(gfx940-942) computes in FNUZ (`c10::Float8_e4m3fnuz`), gfx950/RDNA4 in OCP",
        )


def _innermost_branch(ctx: Context, offset: int) -> int:
    """The start of the innermost conditional branch around `offset` (-1: none)."""
    found = -1
    for branch in ctx.preproc.branches:
        if branch.start_byte <= offset < branch.end_byte:
            found = max(found, branch.start_byte)
    return found


@hazard("texture-reference")
def texture_reference(ctx: Context) -> None:
    _report_each(
        ctx,
        ctx.uses_named(TEXTURE_REFERENCES),
        "`{name}`: legacy texture reference API (removed in CUDA 12)",
    )


def _report_per_function(ctx: Context, uses: list[Use], message: str, what: str) -> None:
    """One finding per function (and one for the file's uses outside functions), at its
    first use of `uses`, naming the others: where the port is per function, however many
    names it touches."""
    by_function: dict[tuple[str, int], list[Use]] = {}
    for use in uses:
        function = ctx.function_at(use.span.start_byte)
        # outside functions, one per conditional branch: `#elif __CUDA_ARCH__ >= 800`
        # `using Ttc = wmma::precision::tf32;` in each of a header's type selectors is its
        # own choice, beside its own AMD branch
        branch = -1 if function else _innermost_branch(ctx, use.span.start_byte)
        by_function.setdefault((function, branch), []).append(use)
    for found in by_function.values():
        first = found[0]
        names = [f"`{n}`" for n in sorted({u.name for u in found} - {first.name})]
        listed = ", ".join(names[:4]) + (", …" if len(names) > 4 else "")
        more = f" (with {len(found) - 1} more {what} here: {listed})" if len(found) > 1 else ""
        ctx.report(
            first.span.start_byte,
            first.span.end_byte,
            message.format(name=first.name) + more.replace(" here: )", " here)"),
        )


@hazard("tensor-core-wmma")
def tensor_core_wmma(ctx: Context) -> None:
    """Per function (the include and `using namespace nvcuda;` are the file's own). Not
    the uses through a namespace the file's AMD-only branch makes rocWMMA's (`#if
    defined(__HIP_PLATFORM_AMD__)` `namespace wmma = rocwmma;` `#else` `using namespace
    nvcuda;`): that shared code is the project's port, written once for both."""
    uses = ctx.uses_named(lambda u: u.family == "wmma" or u.name == "mma.h")
    aliases = _rocwmma_aliases(ctx) if uses else frozenset()
    if aliases:
        uses = [u for u in uses if not _through_alias(ctx, u, aliases)]
    _report_per_function(
        ctx,
        uses,
        "`{name}`: NVIDIA tensor-core WMMA; port to rocWMMA and check the shapes",
        "WMMA use(s)",
    )


# `namespace wmma = rocwmma;`: rocWMMA under the name the CUDA code uses for nvcuda::wmma.
ROCWMMA_ALIAS = re.compile(rb"\bnamespace\s+(\w+)\s*=\s*(?:::)?rocwmma\s*;")


def _rocwmma_aliases(ctx: Context) -> frozenset[str]:
    """The namespace names this file's AMD-only branches bind to rocWMMA."""
    if b"rocwmma" not in ctx.data:
        return frozenset()
    found = set()
    for match in ROCWMMA_ALIAS.finditer(ctx.masked):
        if _amd_takes(ctx, match.start()):
            found.add(match.group(1).decode())
    return frozenset(found)


QUALIFIER = re.compile(rb"(\w+)\s*::\s*$")
LEADING_NAME = re.compile(rb"(\w+)\s*::")


def _through_alias(ctx: Context, use: Use, aliases: frozenset[str]) -> bool:
    """Is `use` written `alias::name`, outside any branch an AMD build skips?"""
    start = use.span.start_byte
    written = LEADING_NAME.match(ctx.masked, start, start + 128)
    qualifier = QUALIFIER.search(ctx.masked, max(0, start - 64), start)
    if not (written is not None and written.group(1).decode() in aliases) and not (
        qualifier is not None and qualifier.group(1).decode() in aliases
    ):
        return False  # (the span is `wmma::fill_fragment`, or the name after `wmma::`)
    return not any(
        b.start_byte <= start < b.end_byte and branch_condition_value(b, _amd_build) == 0
        for b in ctx.preproc.branches
    )


@hazard("cooperative-grid-sync")
def cooperative_grid_sync(ctx: Context) -> None:
    """Not at a cooperative launch whose grid its function sizes from the occupancy API
    (`cudaOccupancyMaxActiveBlocksPerMultiprocessor` times the multiprocessor count): that
    is the hazard's own fix, and holds on any GPU. The grid-wide code it launches is still
    reported: what needs the whole grid co-resident."""
    uses = [
        u
        for u in ctx.uses_named(COOPERATIVE)
        if u.name not in COOPERATIVE_LAUNCHES or not _sized_by_occupancy(ctx, u.span.start_byte)
    ]
    _report_each(ctx, uses, "`{name}`: grid-wide cooperation needs the whole grid co-resident")


COOPERATIVE_LAUNCHES = frozenset(n for n in COOPERATIVE if "Launch" in n)


# System-scope synchronization (CUDA's `*_system` atomics and fence), as the rules name it.
SYSTEM_SCOPE = frozenset(
    {
        "__threadfence_system",
        *(
            f"atomic{op}_system"
            for op in ("Add", "Sub", "Exch", "Min", "Max", "CAS", "And", "Or", "Xor")
        ),
    }
)


@hazard("system-scope-sync")
def system_scope_sync(ctx: Context) -> None:
    """Per function: the question is how the memory it synchronizes through is allocated.
    Not in a file written for HIP (it includes hip_runtime.h and no CUDA header): that
    port has been made. Also each `cudaMalloc` whose memory the file exports to other
    processes' GPUs (`cudaIpcGetMemHandle` of the same pointer), when device code near it
    polls memory (ProjectFacts._polled_near): the signal buffers of custom all-reduce and
    expert-parallel kernels, which the AMD ports of vLLM, SGLang, DeepEP and mscclpp
    allocate uncached."""
    if _written_for_hip(ctx):
        return
    uses = ctx.uses_named(SYSTEM_SCOPE)
    if uses:
        _report_per_function(
            ctx,
            uses,
            "`{name}`: system-scope synchronization; on AMD it sees the host's and other "
            "GPUs' writes only in fine-grained memory (hipMalloc's is coarse-grained)",
            "system-scope operation(s)",
        )
    exported = {
        pointer
        for use in ctx.uses_named({"cudaIpcGetMemHandle"})
        if (pointer := _pointer_argument(ctx, use, 1)) is not None
    }
    if not exported:
        return
    for use in ctx.uses_named({"cudaMalloc"}):
        if use.kind != "function" or _pointer_argument(ctx, use, 0, allocated=True) not in exported:
            continue
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            "`cudaMalloc` of memory this file shares with other processes' GPUs "
            "(`cudaIpcGetMemHandle`), beside kernels that poll memory: hipMalloc's "
            "memory is coarse-grained, so a flag a running kernel waits on there is seen "
            "only when kernels end",
            fix="Allocate memory shared for signalling with hipExtMallocWithFlags(…, "
            "hipDeviceMallocUncached) (or hipDeviceMallocFinegrained) on AMD.",
            once_per_line=False,
            polled=True,
        )


def _call_arguments(ctx: Context, use: Use) -> list[bytes] | None:
    """The top-level arguments of the call `use` names (comments and strings blanked), or
    None when no `(` follows the name."""
    masked = ctx.masked
    opening = masked.find(b"(", use.span.end_byte, use.span.end_byte + 64)
    if opening < 0 or masked[use.span.end_byte : opening].strip():
        return None
    return top_level_arguments(masked, opening + 1)


_CAST = re.compile(rb"\(\s*[A-Za-z_][\w:<>\s]*\*+\s*\)|reinterpret_cast\s*<[^<>]*>|\s")


def _pointer_argument(
    ctx: Context, use: Use, index: int, *, allocated: bool = False
) -> bytes | None:
    """The pointer a call's `index`-th argument gives, casts and spaces left out; with
    `allocated`, the pointer an allocation writes through it (`(void**)&buffer` gives
    `buffer`, `&ptrs[rank]` gives `ptrs[rank]`, a `void** out` parameter gives `*out`)."""
    arguments = _call_arguments(ctx, use)
    if arguments is None or len(arguments) <= index:
        return None
    written = _CAST.sub(b"", arguments[index])
    if allocated:
        written = written[1:] if written.startswith(b"&") else b"*" + written
    return written or None


# Device code that waits on memory in a loop: PTX volatile/acquire/relaxed loads (in `asm`
# strings, so read in the raw text), or a `while` whose test reads through `volatile`, an
# atomic or a load helper (`ld_flag_acquire`).
POLLING_ASM = re.compile(rb"\bld(?:\.global|\.gpu|\.sys)*\.(?:volatile|acquire|relaxed)\b")
POLLING_WAIT = re.compile(rb"\bwhile\s*\(([^;{}]{0,300})\)")
POLLING_READ = re.compile(rb"volatile|atomic|\.load\s*\(|\bld_|__ldcv|__ldlu")


def device_polls(ctx: Context) -> bool:
    """Does the file's device code poll memory (see POLLING_ASM, POLLING_WAIT)?"""
    for start, end in ctx.device_ranges:
        if POLLING_ASM.search(ctx.data, start, end):
            return True
        for wait in POLLING_WAIT.finditer(ctx.masked, start, end):
            if POLLING_READ.search(wait.group(1)):
                return True
    return False


def _written_for_hip(ctx: Context) -> bool:
    """Does the file include HIP's runtime and use no CUDA name (`cuda…`, `cu…`, `CU…`,
    CUDA's headers among them)?"""
    return b"hip/hip_runtime" in ctx.data and not any(
        u.name.startswith(("cuda", "cu", "CU")) for u in ctx.uses
    )


OCCUPANCY = re.compile(rb"\b(?:cuda|cu|hip)OccupancyMaxActiveBlocksPerMultiprocessor\w*\s*\(")


def _sized_by_occupancy(ctx: Context, offset: int) -> bool:
    """Does the function around `offset` ask the occupancy API how many blocks fit?"""
    fn = ctx.function_info_at(offset)
    return fn is not None and OCCUPANCY.search(ctx.masked, fn.start, fn.end) is not None


@hazard("cuda-graphs")
def cuda_graphs(ctx: Context) -> None:
    def is_graph_call(use: Use) -> bool:
        if use.kind != "function":
            return False
        if use.name.startswith(("cudaGraphics", "cuGraphics")):
            return False  # graphics interop (OpenGL/Vulkan resources), not CUDA graphs
        return use.name in GRAPH_NAMES or use.name.startswith(GRAPH_PREFIXES)

    _report_per_function(
        ctx,
        [u for u in ctx.uses_named(is_graph_call) if not _gated_for_hip(ctx, u.span.start_byte)],
        "`{name}`: CUDA graph API, only partly available on AMD",
        "graph call(s)",
    )


def _gated_for_hip(ctx: Context, offset: int) -> bool:
    """Is `offset` in a branch whose test names HIP's release (`CUDART_VERSION >= 11030 ||
    HIP_VERSION >= 50221310`, superbenchmark's graph capture)? The project has enabled the
    code for the AMD releases it names: that port is made."""
    return any(
        b.start_byte <= offset < b.end_byte
        and b.test is not None
        and any(n in HIP_RELEASE_MACROS for n in names_in(b.test))
        for b in ctx.preproc.branches
    )


@hazard("ptx-module-load")
def ptx_module_load(ctx: Context) -> None:
    """Also a run-time compilation for an NVIDIA target spelled in the source's strings
    (`"nvcc --fatbin -gencode arch=compute_80,code=sm_80"`, NVRTC's `"-arch=" + sm`): the
    image it makes is one no AMD GPU loads (tutel, microsoft/ark and ccglib build theirs
    so, each with a hipcc or hipRTC command in its AMD branch)."""
    _report_each(
        ctx,
        ctx.uses_named(MODULE_LOADS),
        "`{name}` loads PTX/cubin; AMD GPUs need code objects (hipcc --genco or hipRTC)",
    )
    if not any(word in ctx.data for word in NVIDIA_TARGET_WORDS):
        return
    if os.path.splitext(ctx.path)[1].lower() not in SOURCE_SUFFIXES:
        return  # a build file's flags are the build-system check's
    code = COMMENT.sub(
        lambda m: b" " * len(m.group(0)) if m.group(0)[:1] == b"/" else m.group(0), ctx.data
    )
    for literal in STRING_LITERAL.finditer(code):
        option = NVIDIA_TARGET_OPTION.search(literal.group(0))
        if option is None or len(PROSE_WORD.findall(literal.group(0))) >= 4:
            continue  # (a message that names the flags: "please check -gencode=… in …")
        ctx.report(
            literal.start(),
            literal.end(),
            f"`{option.group(0).decode(errors='replace')}`: a run-time compilation for an "
            "NVIDIA target; AMD GPUs need a code object for their gfx target",
            fix="In the AMD build compile with hipRTC (`--gpu-architecture=gfx…`) or hipcc "
            "(`--genco --offload-arch=gfx…`) and load the code object with hipModuleLoadData.",
        )


SOURCE_SUFFIXES = frozenset(CUDA_SUFFIXES) | frozenset(CPP_SUFFIXES)
# nvcc's and NVRTC's options that name an NVIDIA target, inside a string literal.
NVIDIA_TARGET_WORDS = (
    b"-arch",
    b"-gencode",
    b"arch=compute_",
    b"code=sm_",
    b"-cubin",
    b"--fatbin",
    b'nvcc"',
    b"nvcc -",
)
NVIDIA_TARGET_OPTION = re.compile(
    rb"-gencode\b|\barch=compute_\w*|\bcode=sm_\w*|(?<![\w-])-arch(?:=(?:sm_\w*|compute_\w*)?|\s+(?:sm|compute)_\w*)"
    rb"|--gpu-architecture(?:=|\s+)(?:sm|compute)_\w*|(?<![\w-])-cubin\b|--fatbin\b"
    # nvcc itself, as a program run with options (`"/usr/local/cuda/bin/nvcc"`,
    # `"nvcc --fatbin …"`), not named in a message (`"nvcc not found"`)
    rb'|(?<=/)nvcc(?:\.exe)?(?=")|(?<=[/\s"])nvcc(?:\.exe)?(?=\s+-)'
)
# A word of prose (not an option, a path part or a format): `please`, `architecture`.
PROSE_WORD = re.compile(rb"(?<![-/=_.%\w])[A-Za-z]{2,}(?![-/=_.\w])")
STRING_LITERAL = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
# Comments, and string literals so that a `//` inside one is not taken for a comment.
COMMENT = re.compile(rb'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', re.DOTALL)


@hazard("library-port")
def library_port(ctx: Context) -> None:
    """One finding per library per file, at its first use: the port is per library. For a
    library HIPIFY maps name by name (cuDNN to MIOpen, cuBLASLt to hipBLASLt), also one per
    statement that uses a name with no counterpart there: each such call is ported by hand."""
    counts: Counter[str] = Counter()
    first: dict[str, Use] = {}
    unported: dict[str, list[Use]] = {}  # uses of names the rule set maps to no counterpart
    for use in ctx.uses:
        family = MANUAL_PORT_HEADERS.get(use.name, use.family)
        if family in MANUAL_PORT_FAMILIES:
            counts[family] += 1
            first.setdefault(family, use)
            if (
                use.rule is not None
                and use.kind != "header"
                and use.status.hip is not Status.SUPPORTED
            ):
                unported.setdefault(family, []).append(use)
    for family, use in first.items():
        target = MANUAL_PORT_FAMILIES[family]
        if family not in MAPPED_BY_NAME:
            ctx.report(
                use.span.start_byte,
                use.span.end_byte,
                f"{family} is used {counts[family]} time(s) in this file; it has no drop-in HIP "
                f"equivalent and must be ported to {target}",
            )
            continue
        missing = unported.get(family, [])
        if family == "cublaslt" and not missing:
            continue  # every name used here has its hipBLASLt counterpart: a rename
        names = sorted({u.name for u in missing})
        shown = ", ".join(f"`{n}`" for n in names[:3]) + (", …" if len(names) > 3 else "")
        gap = (
            f"{len(names)} of its names here have no {target} counterpart ({shown}): port "
            "those calls by hand"
            if names
            else f"HIPIFY renames its names to {target}'s; check each call's arguments"
        )
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            f"{family} is used {counts[family]} time(s) in this file; {gap}",
        )
        for statement in _statements(ctx.masked, missing):
            lead = statement[0]
            others = sorted({u.name for u in statement} - {lead.name})
            more = f" (and {', '.join(f'`{n}`' for n in others[:3])})" if others else ""
            ctx.report(
                lead.span.start_byte,
                lead.span.end_byte,
                f"`{lead.name}`{more} has no {target} counterpart: port this statement by hand",
            )


def _statements(text: bytes, uses: list[Use]) -> list[list[Use]]:
    """`uses` grouped by the statement they sit in: a new group wherever the text between
    two uses ends a statement or opens or closes a block."""
    groups: list[list[Use]] = []
    for use in sorted(uses, key=lambda u: u.span.start_byte):
        if groups:
            gap = text[groups[-1][-1].span.end_byte : use.span.start_byte]
            if not any(c in gap for c in b";{}"):
                groups[-1].append(use)
                continue
        groups.append([use])
    return groups


# Libraries whose names the rule set maps one by one from HIPIFY's tables (cuDNN to MIOpen,
# cuBLASLt to hipBLASLt): a statement using a name with no counterpart is reported where it
# is; a cuBLASLt file that uses only mapped names is a rename, not a manual port.
MAPPED_BY_NAME = frozenset({"cudnn", "cublaslt"})


# `cublasDgemm('N', 'N', m, n, k, …)`: the legacy cuBLAS API (cublas.h), which takes no
# handle and passes operations as characters.
LEGACY_BLAS_CALL = re.compile(rb"\s*\(\s*'[A-Za-z]'")


@hazard("unsupported-api")
def unsupported_api(ctx: Context) -> None:
    unsupported: list[Use] = []
    for use in ctx.uses:
        if (
            use.family == "cublas"
            and use.kind == "function"
            and LEGACY_BLAS_CALL.match(ctx.data, use.span.end_byte)
        ):
            _report_unsupported(
                ctx,
                use,
                f"`{use.name}` is called in the legacy cuBLAS form (cublas.h: no handle, "
                "operations as characters); hipBLAS has only the handle-based API",
                "Move the call to the cublas_v2 form (a handle, CUBLAS_OP_N), then translate.",
            )
            continue
        if use.name in HALF_ONLY_LOADS and use.kind == "function":
            pointee = _loaded_type(ctx, use)
            if pointee is not None and pointee not in HALF_TYPES:
                _report_unsupported(
                    ctx,
                    use,
                    f"`{use.name}` loads a `{pointee}`: HIP declares `{use.name}` only for "
                    "`__half` and `__half2` pointers, so hipcc finds no overload for this call",
                    "Load plainly (or with __builtin_nontemporal_load) on AMD.",
                )
            continue
        if use.rule is None or use.status.hip is not Status.UNSUPPORTED or use.name in SPECIFIC:
            continue
        family = MANUAL_PORT_HEADERS.get(use.name, use.family)
        if family in MANUAL_PORT_FAMILIES or family == "wmma":
            continue  # covered by library-port / tensor-core-wmma (`cupti.h` included)
        unsupported.append(use)
    # A name in the statement of a call of the same library already reported (its
    # arguments, its result's type) and a status code checked right after it (`if (result
    # != NVVM_SUCCESS)` under `result = nvvmDestroyProgram(&prog);`) are that call's
    # question, not others.
    calls: dict[tuple[str, str], list[int]] = {}
    for use in unsupported:
        if use.kind == "function":
            where = (use.family, ctx.function_at(use.span.start_byte))
            calls.setdefault(where, []).append(use.span.line)
    for use in unsupported:
        if use.kind != "function":
            lines = calls.get((use.family, ctx.function_at(use.span.start_byte)), ())
            below = STATUS_CHECK_LINES if STATUS_NAME.search(use.name) else 0
            if any(0 <= use.span.line - line <= below for line in lines):
                continue
        _report_unsupported(ctx, use, _why_unsupported(use), _hip_note(use))


def _report_unsupported(ctx: Context, use: Use, message: str, fix: str | None) -> None:
    """An unsupported-api finding at `use`: HIP unsupported, the other routes as its rule
    has them; each use on its own (two on a line are two calls to port)."""
    ctx.report(
        use.span.start_byte,
        use.span.end_byte,
        message,
        fix=fix,
        targets=Verdicts(Status.UNSUPPORTED, use.status.zluda, use.status.scale),
        once_per_line=False,
    )


# Cache-hinted loads HIP declares for `const __half*` and `const __half2*` only (the rules'
# notes and source: amd_hip_fp16.h's load primitives): on any other pointer the call has no
# overload. Their pointee is read from a cast in the argument or from how the enclosing
# function declares the pointer; a template parameter or anything unresolved is left alone.
HALF_ONLY_LOADS = frozenset({"__ldca", "__ldcg", "__ldcs"})
HALF_TYPES = frozenset({"__half", "half", "__half2", "half2"})
_CAST_POINTER = re.compile(
    rb"(?:reinterpret_cast|static_cast)\s*<\s*(?:const\s+)?([A-Za-z_][\w:]*)\s*(?:const\s*)?\*\s*>"
    rb"|\(\s*(?:const\s+)?([A-Za-z_][\w:]*)\s*(?:const\s*)?\*\s*\)"
)
_POINTER_NAME = re.compile(rb"&?\s*\(?\s*([A-Za-z_]\w*)\s*(?:\[|\+|\)|$)")


def _loaded_type(ctx: Context, use: Use) -> str | None:
    """The type a cache-hinted load reads, when the call spells it (`__ldcs((const float4*)p)`,
    `reinterpret_cast<const int4*>(p)`) or loads through a parameter or local (`__ldcs(&x[i])`,
    `__ldcs(x + i)`) whose declared type is not a template parameter; else None."""
    arguments = _call_arguments(ctx, use)
    if arguments is None or len(arguments) != 1:
        return None
    argument = arguments[0]
    cast = _CAST_POINTER.match(argument)
    if cast is not None:
        written = (cast.group(1) or cast.group(2)).decode()
    else:
        pointer = _POINTER_NAME.match(argument)
        fn = ctx.function_info_at(use.span.start_byte)
        if pointer is None or fn is None:
            return None
        found = ctx.declarations(fn).get(pointer.group(1).decode(), ())
        before = [d for start, d in found if start < use.span.start_byte]
        if not before:
            return None
        words = [w for w in before[-1].type.split() if w not in ("const", "volatile")]
        if len(words) != 1:
            return None
        written = words[0]
    if written in ("auto", "void") or re.search(
        rb"\b(?:typename|class)\s+" + re.escape(written.encode()) + rb"\b", ctx.masked
    ):
        return None  # a template's type parameter: whatever a caller makes it
    return written


STATUS_CHECK_LINES = 3  # how far below a call its result is still being checked
STATUS_NAME = re.compile(r"(?i)success|error")


def _hip_note(use: Use) -> str | None:
    """The rule's note on HIP (`RCCL's nccl.h.in at 0cbce2a7 does not declare it: …`), as
    the finding's fix: what the rule set knows about this name on AMD says more than the
    hazard's general advice. None when the rule has none."""
    for part in ((use.rule.notes or "") if use.rule is not None else "").split(" | "):
        if part.startswith("HIP: ") and len(part) > len("HIP: "):
            return part + ("" if part.endswith(".") else ".")
    return None


def _why_unsupported(use: Use) -> str:
    """`cudaX` has no HIP equivalent — or it has one that the chosen ROCm release lacks
    (added later, or removed): the rule set's release view puts that reason first in the
    rule's notes ("HIP in ROCm 5.7: added in ROCm 6.2")."""
    rule = use.rule
    if rule is not None and rule.hip and (rule.notes or "").startswith("HIP in ROCm "):
        reason = (rule.notes or "").split(" | ", 1)[0]
        return f"`{use.name}` (HIP `{rule.hip}`): {reason}"
    if rule is not None and rule.hip and rule.hip_removed:
        # hipTensor 2.x dropped the cuTENSOR 1.x calls it had: a port for an older ROCm
        # release has them (`--rocm`)
        since = f" (present from ROCm {rule.hip_added})" if rule.hip_added else ""
        removed = f"was removed in ROCm {rule.hip_removed}{since}"
        return f"`{use.name}`: its HIP equivalent `{rule.hip}` {removed}"
    return f"`{use.name}` has no HIP equivalent"


UNKNOWN_API = "unknown-api"
PROJECT_CLASS_SHAPE = re.compile(r"[A-Za-z][A-Za-z0-9]*_[A-Z][a-z][A-Za-z0-9]*")
ERROR_CHECK_SHAPE = re.compile(
    r"(?:cuda|cu|cublas(?:Lt)?|cudnn|cufft|curand|cusparse(?:Lt)?|cusolver(?:Dn|Sp)?|nccl"
    r"|nvrtc|nvml|cutensor|nvjpeg|npp)(?:Err(?:or)?)?"
    r"(?:Check|Chk|Assert|SafeCall|Safe|Verify)(?:Errors?|Last(?:Error)?|Kernel|Call)?"
)
MACRO_SHAPED = re.compile(r"_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+_*")


@hazard(UNKNOWN_API)
def unknown_api(ctx: Context) -> None:
    """One finding per unknown CUDA-shaped name per file, at its first use: the question
    ("what is this, and does AMD have it?") is asked once per name, not at every call.
    Names the project itself defines are dropped later, with the whole project's
    definitions (portcheck.scan); here only the file's own scoping has been applied."""
    counts: Counter[str] = Counter()
    first: dict[str, Use] = {}
    unknown = [use for use in ctx.uses if use.rule is None]
    objects = {use.name for use in unknown if _used_as_object(ctx.data, use.span.end_byte)}
    for use in unknown:
        if use.name in objects:
            # `ncclIdPtr = (void *)(new ncclUniqueId);`, `cuCtx->flags`: a name assigned to,
            # stepped or reached through is a variable (a class member declared in a header
            # outside the scanned folder); NVIDIA's APIs are functions, types and constants.
            continue
        if MACRO_SHAPED.fullmatch(use.name):
            # `NCCL_ALLREDUCE`, `CUSPARSE_NEWAPI_VERSION`, `CUDA_KERNEL_ASSERT`: the rule set
            # holds the macros and enumerators of the libraries it covers (from HIPIFY's
            # tables and NVIDIA's headers), so an upper-case name it lacks is the project's
            # own, defined in a header outside the scanned tree (every one labelled in the
            # held-out sets was). It stays in the report's list of unknown names.
            continue
        if ERROR_CHECK_SHAPE.fullmatch(use.name):
            # `cudaCheck()`, `cudaSafeCall(…)`, `cublasErrCheck(…)`: a library prefix and a
            # check word, the shape of a project's error-check helper; NVIDIA's own checks
            # name what they check (`cublasLtMatmulAlgoCheck`, `cudnnOpsVersionCheck`).
            continue
        if PROJECT_CLASS_SHAPE.fullmatch(use.name):
            # `cuTENSOR_PermuteImpl`, `cuTT_PermuteImpl`: a library prefix, an underscore and
            # a CamelCase word is how projects name their classes around a library; NVIDIA's
            # names never take that shape (none of the rule set's thousands does).
            continue
        if use.kind == "header" and ctx.data[use.span.start_byte : use.span.start_byte + 1] == b'"':
            # `#include "cublas_wrappers.h"`: a quoted include names a project file first;
            # NVIDIA's headers the rules do not know are reported when included as <…>.
            continue
        if use.kind == "header" and _hip_twin_included(ctx.data, use.name):
            # `<cuda_buffer_util.hpp>` beside `<hip_buffer_util.hpp>` in the AMD branch: a
            # library's CUDA backend whose HIP backend the project includes too (CPPuddle's),
            # not a toolkit header (ROCm's counterparts of those are known renames)
            continue
        if use.family in MANUAL_PORT_FAMILIES:
            continue  # an unlisted NPP primitive, say: library-port names the library
        if _only_tested_for_definition(ctx.data, use.span.start_byte):
            continue  # `#ifdef CUDA_INIT_D3D9`: a build switch, whoever defines it
        if _pasted_onto(ctx.data, use.span.start_byte, use.span.end_byte):
            continue  # `ncclParam##name` in a macro's body: the start of a name it defines
        if ctx.lookup is not None and _pasted_piece(ctx.data, use, ctx.lookup):
            continue  # `ENUM_ITEM(cudaMem, AdviseSetReadMostly, ...)`: half of a pasted name
        if ctx.lookup is not None and _wraps_a_known_call(ctx.data, use, ctx.lookup):
            continue  # `cudaErrorCheck(cudaProfilerStart(), "…")`: the project's check macro
        counts[use.name] += 1
        first.setdefault(use.name, use)
    for name, use in first.items():
        times = f" ({counts[name]} uses in this file)" if counts[name] > 1 else ""
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            f"`{name}` looks like a CUDA API but portcheck's rule set does not know it{times}; "
            "check what it does and whether ROCm has it",
            once_per_line=False,
        )


def _pasted_piece(data: bytes, use: Use, lookup: Callable[[str], object]) -> bool:
    """Is the name one whole argument of an upper-case macro's call that, joined with
    another argument, spells a name the rule set knows (`ENUM_ITEM(cudaMem,
    AdviseSetReadMostly, cudaMemAdviseSetReadMostly)`, whose body pastes `prefix##name`),
    perhaps with a BLAS type letter between (`ALIAS(cupmXpotrf, cusolverDn, FP_TYPE,
    potrf)` pasting `cusolverDnSpotrf`)? Then it is a fragment of a CUDA name, not a name
    of its own."""
    arguments = _macro_arguments(data, use.span.start_byte)
    if arguments is None or use.name not in arguments:
        return False
    return any(
        lookup(use.name + letter + other) is not None
        for other in arguments
        if other != use.name and _WORD.fullmatch(other)
        for letter in PASTED_TYPE_LETTERS
    )


def _pasted_onto(data: bytes, start: int, end: int) -> bool:
    """Is the name at start..end joined to another by the preprocessor's `##`?"""
    return data[end : end + 8].lstrip(b" \t\\\n").startswith(b"##") or data[
        max(0, start - 8) : start
    ].rstrip(b" \t\\\n").endswith(b"##")


PASTED_TYPE_LETTERS = ("", "S", "D", "C", "Z")  # cuBLAS/cuSOLVER's s/d/c/z variants


_FIRST_ARGUMENT_CALL = re.compile(rb"\s*\(\s*([A-Za-z_]\w*)\s*\(")


def _wraps_a_known_call(data: bytes, use: Use, lookup: Callable[[str], object]) -> bool:
    """Is the name called with a call of a known CUDA API as its first argument
    (`cudaCheck(cudaMemcpy(…))`)? No NVIDIA API takes another's result there (those that
    take an error code are known names); an error-check wrapper of the project's does,
    defined in a header the scan did not see."""
    match = _FIRST_ARGUMENT_CALL.match(data, use.span.end_byte)
    return match is not None and lookup(match.group(1).decode()) is not None


_WORD = re.compile(r"\w+")
_MACRO_NAME = re.compile(rb"\b[A-Z_][A-Z0-9_]*\s*$")
MACRO_REACH = 4096  # bytes searched around a name for the macro call it is an argument of


def _macro_arguments(data: bytes, offset: int) -> list[str] | None:
    """The arguments, as stripped text, of the upper-case macro call whose parentheses
    hold `offset` directly; None when there is none within MACRO_REACH bytes."""
    depth, i, low = 0, offset - 1, max(0, offset - MACRO_REACH)
    while i >= low:
        c = data[i]
        if c == 0x29:  # )
            depth += 1
        elif c == 0x28:  # (
            if depth == 0:
                break
            depth -= 1
        elif c in b";{}" and depth == 0:
            return None
        i -= 1
    else:
        return None
    if not _MACRO_NAME.search(data[max(0, i - 64) : i]):
        return None
    return [a.decode(errors="replace") for a in top_level_arguments(data, i + 1)]


_DEFINITION_TEST = re.compile(rb"(?:^[ \t]*#[ \t]*(?:ifdef|ifndef)|\bdefined[ \t]*\(?)[ \t]*$")


# After a name: `=` (not `==`), a compound assignment, `++`/`--`, or a member access.
_OBJECT_USE = re.compile(rb"[ \t]*(?:=(?!=)|(?:[-+*/%&|^]|<<|>>)=|\+\+|--|->|\.[ \t]*[A-Za-z_])")


def _used_as_object(data: bytes, end: int) -> bool:
    """Is the name ending at `end` written to or reached through as an object?"""
    return _OBJECT_USE.match(data, end) is not None


INCLUDED = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.MULTILINE)
TWIN_WORDS = (("cuda", "hip"), ("CUDA", "HIP"), ("Cuda", "Hip"))


def _hip_twin_included(data: bytes, header: str) -> bool:
    """Does the file also include `header` with `cuda` read as `hip`?"""
    twins = {header.replace(cuda, hip) for cuda, hip in TWIN_WORDS} - {header}
    if not twins:
        return False
    return any(m.group(1).decode("utf-8", "replace") in twins for m in INCLUDED.finditer(data))


def _only_tested_for_definition(data: bytes, offset: int) -> bool:
    """Is the name at `offset` the operand of `#ifdef`/`#ifndef`/`defined`? Such a use
    asks whether some build defines it, not what it is."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    return _DEFINITION_TEST.search(data[line_start:offset]) is not None
