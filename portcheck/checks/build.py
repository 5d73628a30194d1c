"""Build-system hazards: CMake, Makefile and setup.py settings that assume nvcc."""

from __future__ import annotations

import re

from portcheck.checks import Context, hazard
from portcheck.model import Language

# (pattern, message, fix) — each match in a build file is one finding at its line.
BUILD_RULES: tuple[tuple[re.Pattern[bytes], str, str], ...] = (
    (
        re.compile(rb"\bLANGUAGES\b[^)\n]*\bCUDA\b|enable_language\s*\(\s*CUDA\s*\)", re.I),
        "CMake enables the CUDA language",
        "Use `LANGUAGES HIP` (CMake >= 3.21) and build the .cu sources as HIP "
        "(`set_source_files_properties(... LANGUAGE HIP)`).",
    ),
    (
        re.compile(rb"\bCMAKE_CUDA_ARCHITECTURES\b|\bCUDA_ARCHITECTURES\b"),
        "NVIDIA architecture list (CMAKE_CUDA_ARCHITECTURES)",
        "Set `CMAKE_HIP_ARCHITECTURES` to AMD targets, e.g. `gfx90a;gfx1030`.",
    ),
    (
        re.compile(rb"(?:-arch[= ]|--gpu-architecture[= ]|-gencode[= ])\S*(?:sm|compute)_\d+"),
        "nvcc GPU architecture flag (sm_XX / compute_XX)",
        "Use `--offload-arch=gfx90a` (one per AMD target).",
    ),
    (
        re.compile(rb"--use_fast_math|-use_fast_math"),
        "nvcc-only flag --use_fast_math",
        "Use `-ffast-math` with hipcc.",
    ),
    (
        re.compile(rb"-Xptxas|--ptxas-options"),
        "ptxas options have no AMD equivalent",
        "Drop them; tune with `-mllvm` options if needed.",
    ),
    (
        re.compile(rb"--expt-extended-lambda|--extended-lambda|--expt-relaxed-constexpr"),
        "nvcc-only language flag",
        "Drop it: hipcc (clang) accepts device lambdas and constexpr.",
    ),
    (
        re.compile(rb"(?<![\w-])-rdc[= ]true|--relocatable-device-code[= ]true"),
        "relocatable device code flag",
        "Use `-fgpu-rdc` with hipcc.",
    ),
    (
        re.compile(rb"-Xcompiler\b"),
        "nvcc host-compiler pass-through",
        "Pass the flag to hipcc directly.",
    ),
    (
        re.compile(rb"\bCUDAExtension\s*\("),
        "PyTorch CUDAExtension",
        "Keep it: ROCm builds of PyTorch hipify CUDAExtension sources automatically; check the "
        "nvcc flags in `extra_compile_args`.",
    ),
    (
        re.compile(rb"(?<![\w./-])nvcc\b(?!\.)"),
        "the build calls nvcc",
        "Call hipcc (HIP_PLATFORM=amd) instead.",
    ),
)
COMMENT = {Language.CMAKE: b"#", Language.MAKE: b"#", Language.PYTHON: b"#"}


@hazard("build-system")
def build_system(ctx: Context) -> None:
    if ctx.language not in COMMENT:
        return
    data = ctx.data
    comment = COMMENT[ctx.language]
    hits: list[tuple[int, int, int, str, str]] = []  # (start, end, rule, message, fix)
    seen: set[tuple[int, int]] = set()  # (rule, line start): the first match per line counts
    for number, (pattern, message, fix) in enumerate(BUILD_RULES):
        for match in pattern.finditer(data):
            line_start = data.rfind(b"\n", 0, match.start()) + 1
            if data.find(comment, line_start, match.end()) != -1:
                continue  # commented out
            if (number, line_start) in seen:
                continue
            seen.add((number, line_start))
            hits.append((match.start(), match.end(), number, message, fix))
    for start, end, _, message, fix in sorted(hits, key=lambda h: (h[0], h[2])):
        ctx.report(start, end, message, fix=fix, once_per_line=False)
