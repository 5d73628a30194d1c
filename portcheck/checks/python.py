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
from portcheck.model import Language, RouteVerdicts, Status
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


# A file that names HIP or ROCm already tells the two builds apart.
ROCM_AWARE = re.compile(rb"version\.hip|\bhip\b|rocm", re.IGNORECASE)
CONDITIONS = ("if_statement", "elif_clause", "while_statement")


@hazard("torch-version-cuda", language=PYTHON)
def torch_version_cuda(ctx: PythonContext) -> None:
    rocm_aware = ROCM_AWARE.search(ctx.data) is not None
    for node, name in ctx.attributes:
        method = name is not None and name.startswith("torch.version.cuda.")  # `.split(".")`
        if (name != "torch.version.cuda" and not method) or _guarded_by_hip_check(node):
            continue
        if _after_presence_test(node) or (not method and (_is_assigned(node) or _is_shown(node))):
            continue  # set (a test double), printed or recorded, or read once known not None
        if not method and _tests_presence(node):
            if not rocm_aware:  # `if torch.version.cuda:` with no HIP branch anywhere
                ctx.report(
                    node.start_byte,
                    node.end_byte,
                    "testing `torch.version.cuda` takes the no-CUDA path on ROCm builds of "
                    "PyTorch (it is None there; they set `torch.version.hip`)",
                )
            continue
        ctx.report(
            node.start_byte,
            node.end_byte,
            "`torch.version.cuda` is None on ROCm builds of PyTorch (they set "
            "`torch.version.hip`): parsing it fails there",
        )


def _is_assigned(node: Node) -> bool:
    parent = node.parent
    return (
        parent is not None
        and parent.type == "assignment"
        and parent.child_by_field_name("left") == node
    )


def _is_shown(node: Node) -> bool:
    """Printed, logged, formatted into text or recorded in a dict: None is shown as None."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in ("interpolation", "pair"):
        return True
    if parent.type == "argument_list" and parent.parent is not None:
        function = text(parent.parent.child_by_field_name("function"))
        return function == "str" or MESSAGE_CALLS.search(function) is not None
    return False


def _tests_presence(node: Node) -> bool:
    """Is the value only tested (truthiness, `is None`, `== None`)?"""
    parent = node.parent
    if parent is None:
        return False
    if parent.type in ("not_operator", "boolean_operator"):
        return True
    if parent.type == "comparison_operator":
        return any(c.type == "none" for c in parent.named_children)
    if parent.type in CONDITIONS and parent.child_by_field_name("condition") == node:
        return True
    return parent.type == "conditional_expression" and parent.named_children[1:2] == [node]


def _after_presence_test(node: Node) -> bool:
    """Read where a test of `torch.version.cuda` has already ruled out None: inside
    `if torch.version.cuda:`, or right of `torch.version.cuda is not None and …`."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in CONDITIONS:
            condition = parent.child_by_field_name("condition")
            if (
                condition is not None
                and condition != child
                and b"version.cuda" in (condition.text or b"")
            ):
                return True
        if parent.type == "boolean_operator":  # `x is not None and f(x)`, `x is None or f(x)`
            left = parent.child_by_field_name("left")
            if left is not None and left != child and b"version.cuda" in (left.text or b""):
                return True
        if parent.type == "conditional_expression" and len(parent.named_children) > 1:
            condition = parent.named_children[1]
            if child == parent.named_children[0] and b"version.cuda" in (condition.text or b""):
                return True
        if parent.type in ("function_definition", "module"):
            return False
        child, parent = parent, parent.parent
    return False


AMD_SMI_TOOLS = (b"amd-smi", b"rocm-smi", b"rocminfo", b"amdsmi")
# A string that names the command (`nvidia-smi -L`, `/usr/bin/nvidia-smi`), not prose about it.
NVIDIA_SMI_COMMAND = re.compile(rb"\s*(?:\S*[/\\])?nvidia-smi(?:\.exe)?(?:\s|$)")
# Calls whose string arguments are messages, not commands.
MESSAGE_CALLS = re.compile(
    r"(?:Error|Exception|Warning|print|warn(?:ing)?|info|debug|error|exception|critical|log)$"
)


@hazard("nvidia-smi", language=PYTHON)
def nvidia_smi(ctx: PythonContext) -> None:
    if any(tool in ctx.data for tool in AMD_SMI_TOOLS):
        return  # the file asks AMD's tools as well: it has its AMD path
    for node, content in ctx.string_literals:
        if NVIDIA_SMI_COMMAND.match(content) and not _is_docstring(node) and not _is_message(node):
            ctx.report(
                node.start_byte,
                node.end_byte,
                "runs `nvidia-smi`, which does not exist on AMD systems",
            )
    for line, command in ctx.shell_commands:  # a notebook's `!nvidia-smi`
        if "nvidia-smi" in command:
            start, end = ctx.lines.line_bounds(line)
            ctx.report(start, end, "runs `nvidia-smi`, which does not exist on AMD systems")


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
            listed = (
                ", ".join(PurePosixPath(s).name for s in cuda_sources[:4]) or "computed sources"
            )
            if len(cuda_sources) > 4:
                listed += f" and {len(cuda_sources) - 4} more"
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
            written = requirement.spec.split(";")[0].strip() or requirement.name
            ctx.report(
                start,
                end,
                f"`{written}` is {rule.status.rocm} on ROCm{instead}",
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


# -- Triton kernels --------------------------------------------------------------------------

TRITON_CONFIG = "triton.Config"
TRITON_DOT = "triton.language.dot"
TRITON_INLINE_ASM = "triton.language.inline_asm_elementwise"
AMD_TUNING_OPTIONS = (b"waves_per_eu", b"matrix_instr_nonkdim", b"kpack")
WAVE64_WORKGROUP_LIMIT = 1024  # threads per workgroup on AMD GPUs
# PTX mnemonics and syntax that AMDGCN assembly never has.
PTX = re.compile(
    r"\b(?:cvt|mov|lop3|prmt|shfl|ld|st|mma|cp\.async|ex2|rcp|fma)\.[a-z0-9.]+|%r\d|\.reg\b"
)


def _keyword(call: Node, name: str) -> Node | None:
    """The value of keyword argument `name` of a call."""
    arguments = call.child_by_field_name("arguments")
    for child in arguments.named_children if arguments is not None else ():
        if child.type == "keyword_argument" and text(child.child_by_field_name("name")) == name:
            return child.child_by_field_name("value")
    return None


def _int_values(value: Node | None) -> list[tuple[int, Node]]:
    """The integers a keyword value can take, each with the literal that says it: a literal,
    or the literal list a comprehension variable runs over (`num_warps=w … for w in [4, 8]`)."""
    if value is None:
        return []
    if value.type == "integer":
        try:
            return [(int(text(value), 0), value)]
        except ValueError:
            return []
    if value.type != "identifier":
        return []
    name = text(value)
    parent = value.parent
    while parent is not None:
        if parent.type in ("list_comprehension", "generator_expression"):
            if any(c.type == "if_clause" for c in parent.named_children):
                return []  # the values are filtered (`if w * warp_size <= 1024`): not known
            for clause in (c for c in parent.named_children if c.type == "for_in_clause"):
                if text(clause.child_by_field_name("left")) == name:
                    values = clause.child_by_field_name("right")
                    if values is not None and values.type in ("list", "tuple"):
                        return [v for item in values.named_children for v in _int_values(item)]
        parent = parent.parent
    return []


def _warp_options(ctx: PythonContext) -> list[Node]:
    """Every `num_warps=` value: of kernel launches and of `triton.Config(...)`."""
    found = [
        kw.child_by_field_name("value")
        for kw in ctx.launch_options
        if text(kw.child_by_field_name("name")) == "num_warps"
    ]
    found += [_keyword(call, "num_warps") for call, name in ctx.calls if name == TRITON_CONFIG]
    return [value for value in found if value is not None]


def _uses_triton(ctx: PythonContext) -> bool:
    return any(name.startswith("triton") for _, name in (*ctx.calls, *ctx.decorators)) or bool(
        ctx.triton_kernels
    )


@hazard("triton-warp-count", language=PYTHON)
def triton_warp_count(ctx: PythonContext) -> None:
    for value in _warp_options(ctx):
        too_many = [(w, n) for w, n in _int_values(value) if w * 64 > WAVE64_WORKGROUP_LIMIT]
        if too_many and not _guarded_by_hip_check(value):
            warps, literal = max(too_many, key=lambda item: item[0])
            ctx.report(
                literal.start_byte,
                literal.end_byte,
                f"`num_warps={warps}` asks for {warps * 64:,} threads per program on 64-wide "
                f"wavefronts ({warps * 32:,} on NVIDIA); an AMD workgroup has at most "
                f"{WAVE64_WORKGROUP_LIMIT:,}",
                targets=RouteVerdicts(Status.UNSUPPORTED, Status.UNSUPPORTED),
            )
    if ctx.root is None or not _uses_triton(ctx):
        return
    for node in walk(ctx.root):
        if node.type != "binary_operator" or text(node.child_by_field_name("operator")) != "*":
            continue
        operands = (node.child_by_field_name("left"), node.child_by_field_name("right"))
        names = [text(o) for o in operands]
        warps = any("warp" in n.lower() for n in names if n != "32")
        if "32" in names and warps and not _guarded_by_hip_check(node):
            ctx.report(
                node.start_byte,
                node.end_byte,
                f"`{text(node)}` counts 32 threads per warp; Triton's AMD backend uses "
                "64-thread warps on CDNA and GCN",
            )


@hazard("triton-dot-precision", language=PYTHON)
def triton_dot_precision(ctx: PythonContext) -> None:
    for call, name in ctx.calls:
        if name != TRITON_DOT or _guarded_by_hip_check(call):
            continue
        precision = _keyword(call, "input_precision")
        allow = _keyword(call, "allow_tf32")
        asked = text(precision).strip("'\"") if precision is not None else ""
        if asked == "tf32x3":
            ctx.report(
                call.start_byte,
                call.end_byte,
                '`tl.dot(..., input_precision="tf32x3")`: AMD\'s Triton has no tf32x3 inputs',
                targets=RouteVerdicts(Status.UNSUPPORTED, Status.UNSUPPORTED),
            )
        elif asked == "tf32" or (allow is not None and text(allow) == "True"):
            ctx.report(
                call.start_byte,
                call.end_byte,
                "`tl.dot` asks for TF32 inputs: AMD's Triton allows them on MI300 (gfx940-gfx942) "
                "only",
            )


@hazard("triton-fp8-type", language=PYTHON)
def triton_fp8_type(ctx: PythonContext) -> None:
    for node, name in ctx.attributes:
        if name not in ("triton.language.float8e4nv", "triton.language.float8e4b15"):
            continue
        if _guarded_by_hip_check(node):
            continue
        if name.endswith("e4b15"):
            ctx.report(
                node.start_byte,
                node.end_byte,
                "`float8e4b15` is an NVIDIA-only FP8 format: AMD's Triton does not have it",
                targets=RouteVerdicts(Status.UNSUPPORTED, Status.UNSUPPORTED),
            )
        else:
            ctx.report(
                node.start_byte,
                node.end_byte,
                "`float8e4nv` is NVIDIA's (OCP) FP8: AMD's Triton accepts it on MI300 only, "
                "where the hardware computes FNUZ FP8 (`float8e4b8`)",
            )


@hazard("triton-nvidia-tuning", language=PYTHON)
def triton_nvidia_tuning(ctx: PythonContext) -> None:
    if any(option in ctx.data for option in AMD_TUNING_OPTIONS):
        return  # the file tunes for AMD as well
    configs = [
        (call, [stages for stages, _ in _int_values(_keyword(call, "num_stages"))])
        for call, name in ctx.calls
        if name == TRITON_CONFIG and not _guarded_by_hip_check(call)
    ]
    deep = [(call, stages) for call, stages in configs if any(s >= 3 or s == 0 for s in stages)]
    if not deep:
        return
    call = deep[0][0]
    worst = max(s for _, stages in deep for s in stages)
    ctx.report(
        call.start_byte,
        call.end_byte,
        f"{len(deep)} of {len(configs)} autotune config(s) tuned for NVIDIA "
        f"(num_stages={worst}) and none sets waves_per_eu or matrix_instr_nonkdim: "
        "AMD's guide uses num_stages 1-2",
    )


@hazard("triton-inline-asm", language=PYTHON)
def triton_inline_asm(ctx: PythonContext) -> None:
    for call, name in ctx.calls:
        if name != TRITON_INLINE_ASM or _guarded_by_hip_check(call):
            continue
        asm = _keyword(call, "asm")
        if asm is None:
            arguments = call.child_by_field_name("arguments")
            positional = [
                c
                for c in (arguments.named_children if arguments else ())
                if c.type != "keyword_argument"
            ]
            asm = positional[0] if positional else None
        if asm is not None and asm.type == "string" and not PTX.search(text(asm)):
            continue  # not PTX (AMDGCN, or built elsewhere)
        ctx.report(
            call.start_byte,
            call.end_byte,
            "`tl.inline_asm_elementwise` with PTX: AMD GPUs compile AMDGCN, not PTX",
        )


def _is_message(node: Node) -> bool:
    """A string handed to an exception, a warning, a log or print call."""
    parent = node.parent
    if parent is not None and parent.type == "argument_list" and parent.parent is not None:
        function = parent.parent.child_by_field_name("function")
        return function is not None and MESSAGE_CALLS.search(text(function)) is not None
    return False


def _is_docstring(node: Node) -> bool:
    """A string that is a statement of its own (a docstring, or text nobody runs)."""
    parent = node.parent
    return (
        parent is not None
        and parent.type == "expression_statement"
        and parent.named_child_count == 1
    )


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
