"""Device-code hazards: inline PTX, arch conditionals, launch bounds, device-side launches."""

from __future__ import annotations

import re

from portcheck.checks import Context, hazard
from portcheck.checks.syntax import preproc_conditions, text

COMPARE = r"\s*(?:[<>]=?|==|!=)\s*"
ARCH_COMPARISON = re.compile(rf"__CUDA_ARCH__{COMPARE}\d+|\d+{COMPARE}__CUDA_ARCH__")


@hazard("inline-ptx")
def inline_ptx(ctx: Context) -> None:
    for use in ctx.uses_named(["asm"]):
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            "inline PTX assembly in device code cannot be compiled for AMD GPUs",
        )


@hazard("arch-conditional")
def arch_conditional(ctx: Context) -> None:
    if ctx.root is None or b"__CUDA_ARCH__" not in ctx.data:
        return
    for condition in preproc_conditions(ctx.root):
        match = ARCH_COMPARISON.search(text(condition))
        if match:
            directive = condition.parent
            start = directive.start_byte if directive is not None else condition.start_byte
            ctx.report(
                start,
                condition.end_byte,
                f"`{match.group()}` selects code by NVIDIA compute capability",
            )


@hazard("launch-bounds")
def launch_bounds(ctx: Context) -> None:
    if ctx.root is None or b"__launch_bounds__" not in ctx.data:
        return
    for node in ctx.device_nodes("bounds"):
        arguments = [c for c in node.named_children]
        if len(arguments) >= 2:
            ctx.report(
                node.start_byte,
                node.end_byte,
                f"`{text(node)}`: on AMD the second argument means minimum waves per "
                "execution unit, not blocks per multiprocessor",
            )


@hazard("dynamic-parallelism")
def dynamic_parallelism(ctx: Context) -> None:
    for use in ctx.uses_named(lambda u: u.name == "<<<>>>" and u.in_device_code):
        ctx.report(
            use.span.start_byte,
            use.span.end_byte,
            "kernel launched from device code (dynamic parallelism)",
        )
