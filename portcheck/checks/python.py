"""Checks over Python code and dependency manifests: the Python hazards (ids PY…), and
the CUDA hazards that Python code can have itself (32-wide warp arithmetic and 32-bit lane
masks in numba.cuda kernels). Each reads the sites portcheck.python.code collected in one
file's PythonContext and reports through it; a CUDA hazard's findings are CUDA findings,
attributed to the kernel."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from portcheck.checks import hazard
from portcheck.checks.syntax import text
from portcheck.model import Language, Status
from portcheck.python import deps
from portcheck.python.code import (
    CUDA_SOURCE_SUFFIXES,
    EXTENSION_BUILDERS,
    INLINE_BUILDER,
    KERNEL_STRINGS,
    NUMBA_KERNEL_DECORATORS,
    PythonContext,
    walk,
)

PYTHON = Language.PYTHON
EXTENSION_KINDS = {name.rsplit(".", 1)[1] for name in EXTENSION_BUILDERS}  # CUDAExtension, load
INLINE_KIND = INLINE_BUILDER.rsplit(".", 1)[1]  # load_inline
CUPY_KINDS = frozenset(KERNEL_STRINGS.values())  # RawKernel, RawModule, …
CUPYX_JIT = "cupyx.jit.rawkernel"
# `lane % 32`, `tid // 32`, `tid & 31`, `tid >> 5`: the warp width taken to be 32.
WARP_ARITHMETIC = frozenset({("%", "32"), ("//", "32"), ("&", "31"), (">>", "5")})
LANE_MASK = re.compile(r"0[xX][fF]{8}[uUlL]*")
HIP_CHECK = re.compile(r"hip|rocm", re.IGNORECASE)


@hazard("torch-version-cuda", language=PYTHON)
def torch_version_cuda(ctx: PythonContext) -> None:
    for node, name in ctx.attributes:
        if name == "torch.version.cuda" and not _guarded_by_hip_check(node):
            ctx.report(
                node.start_byte,
                node.end_byte,
                "`torch.version.cuda` is None on ROCm builds of PyTorch (they set "
                "`torch.version.hip`)",
            )


@hazard("nvidia-smi", language=PYTHON)
def nvidia_smi(ctx: PythonContext) -> None:
    for node, content in ctx.string_literals:
        if b"nvidia-smi" in content:
            ctx.report(
                node.start_byte,
                node.end_byte,
                "runs `nvidia-smi`, which does not exist on AMD systems",
            )


@hazard("compute-capability", language=PYTHON)
def compute_capability(ctx: PythonContext) -> None:
    for node, _ in ctx.attributes:  # imported or not: `props.compute_capability`
        if text(node.child_by_field_name("attribute")) == "compute_capability":
            ctx.report(
                node.start_byte,
                node.end_byte,
                "compute capability read: on ROCm it is the gfx version, not an NVIDIA sm_XY",
            )
    for node, name in ctx.calls:
        if name == "torch.cuda.get_device_capability":
            ctx.report(
                node.start_byte,
                node.end_byte,
                "`torch.cuda.get_device_capability()` returns the gfx version on ROCm; "
                "comparisons with NVIDIA capabilities such as (8, 0) pick the wrong path",
            )


@hazard("cuda-extension", language=PYTHON)
def cuda_extension(ctx: PythonContext) -> None:
    for node, build in ctx.builds:
        if build.kind in EXTENSION_KINDS:
            cuda_sources = [s for s in build.sources if s.endswith(CUDA_SOURCE_SUFFIXES)]
            listed = ", ".join(PurePosixPath(s).name for s in cuda_sources) or "computed sources"
            message = f"`{build.kind}` builds CUDA code ({listed}) into the Python package"
        elif build.kind == INLINE_KIND:
            message = "`load_inline` compiles CUDA source strings at run time"
            message += _scanned(build.scanned_lines)
        else:
            continue
        ctx.report(node.start_byte, node.end_byte, message)


@hazard("cuda-kernel-string", language=PYTHON)
def cuda_kernel_string(ctx: PythonContext) -> None:
    for node, build in ctx.builds:
        if build.kind in CUPY_KINDS:
            message = f"CuPy `{build.kind}` compiles CUDA C++ at run time"
            ctx.report(node.start_byte, node.end_byte, message + _scanned(build.scanned_lines))
    for decorator, name in ctx.decorators:
        if name == CUPYX_JIT:
            ctx.report(
                decorator.start_byte,
                decorator.end_byte,
                "a `cupyx.jit` kernel: compiled through CuPy's CUDA/HIP backend",
            )


@hazard("numba-cuda-kernel", language=PYTHON)
def numba_cuda_kernel(ctx: PythonContext) -> None:
    for decorator, name in ctx.decorators:
        if name in NUMBA_KERNEL_DECORATORS:
            ctx.report(
                decorator.start_byte,
                decorator.end_byte,
                "a `numba.cuda` kernel: upstream Numba has no AMD GPU target",
            )


@hazard("cuda-wheel-index", language=PYTHON)
def cuda_wheel_index(ctx: PythonContext) -> None:
    for requirement, _ in ctx.requirements:
        local = deps.CUDA_LOCAL_VERSION.search(requirement.spec)
        if local:
            start, end = ctx.lines.line_bounds(requirement.line)
            ctx.report(
                start,
                end,
                f"`{requirement.spec}` pins a CUDA build ({local.group(1)}) of the wheel",
            )
    for url, line in ctx.indexes:
        start, end = ctx.lines.line_bounds(line)
        cuda = deps.CUDA_INDEX.search(url)
        if cuda:
            ctx.report(
                start,
                end,
                f"the package index {url} serves CUDA ({cuda.group(1)}) builds of PyTorch",
            )
        elif url.startswith("conda:nvidia"):
            ctx.report(start, end, "the conda channel `nvidia` provides CUDA runtime packages")


@hazard("cuda-only-package", language=PYTHON)
def cuda_only_package(ctx: PythonContext) -> None:
    for requirement, rule in ctx.requirements:
        start, end = ctx.lines.line_bounds(requirement.line)
        extras = deps.EXTRAS.search(requirement.spec)
        cuda_extras = [
            e.strip() for e in (extras.group(1).split(",") if extras else ()) if "cuda" in e
        ]
        if cuda_extras:
            ctx.report(
                start,
                end,
                f"the `{cuda_extras[0]}` extra of `{requirement.name}` installs NVIDIA-only "
                "packages",
                fix=rule.replacement or rule.note if rule is not None else "",
            )
        elif rule is not None and rule.status.rocm in (Status.UNSUPPORTED, Status.PARTIAL):
            instead = f"; on ROCm: {rule.replacement}" if rule.replacement else ""
            ctx.report(
                start,
                end,
                f"`{requirement.name}` is {rule.status.rocm} on ROCm{instead}",
                fix=rule.note,
                targets=rule.status,
            )


@hazard("warp-size-assumption", language=PYTHON)
def numba_warp_width(ctx: PythonContext) -> None:
    """AMD CDNA wavefronts are 64 wide: `% 32` and friends in a numba.cuda kernel."""
    for definition, kernel in ctx.numba_kernels:
        kernel_ctx = ctx.kernel_context(kernel)
        for node in walk(definition):
            if node.type != "binary_operator":
                continue
            operator = text(node.child_by_field_name("operator"))
            right = text(node.child_by_field_name("right"))
            if (operator, right) in WARP_ARITHMETIC:
                message = f"numba.cuda kernel: `{operator} {right}` assumes 32 threads per warp"
                kernel_ctx.report(node.start_byte, node.end_byte, message)
        ctx.cuda_findings.extend(kernel_ctx.findings)


@hazard("lane-mask-width", language=PYTHON)
def numba_lane_mask(ctx: PythonContext) -> None:
    """A 32-bit all-lanes mask (`0xffffffff`) in a numba.cuda kernel."""
    for definition, kernel in ctx.numba_kernels:
        kernel_ctx = ctx.kernel_context(kernel)
        for node in walk(definition):
            if node.type == "integer" and LANE_MASK.fullmatch(text(node)):
                message = "numba.cuda kernel: a 32-bit lane mask; AMD wavefronts can have 64 lanes"
                kernel_ctx.report(node.start_byte, node.end_byte, message)
        ctx.cuda_findings.extend(kernel_ctx.findings)


def _scanned(lines: int) -> str:
    return f" ({lines} lines scanned as CUDA)" if lines else ""


def _guarded_by_hip_check(node: Node) -> bool:
    """Is this code under a condition that already tells ROCm apart (`if torch.version.hip:
    … else: <here>`, `x if is_rocm else <here>`)? Then the author has handled ROCm."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in (
            "if_statement",
            "elif_clause",
            "conditional_expression",
            "while_statement",
        ):
            condition = (
                parent.child_by_field_name("condition")
                if parent.type != "conditional_expression"
                else parent.named_children[1]
                if len(parent.named_children) > 1
                else None
            )
            if condition is not None and condition != child and HIP_CHECK.search(text(condition)):
                return True
        child, parent = parent, parent.parent
    return False
