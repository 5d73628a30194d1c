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
        # (not `"nvcc": [...]`, the extra_compile_args key PyTorch hands to hipcc on ROCm)
        re.compile(rb"(?<![\w./-])nvcc\b(?!\.)(?![\"']\s*:)"),
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
    arms = vendor_arms(data, ctx.language) if hits else []
    for start, end, _, message, fix in sorted(hits, key=lambda h: (h[0], h[2])):
        around = [arm for arm in arms if arm[0] <= start < arm[1]]
        if any(kind == AMD_ARM for _, _, kind in around):
            continue  # the project's own build for AMD
        alternative = any(kind == NVIDIA_ARM for _, _, kind in around)
        ctx.report(start, end, message, fix=fix, once_per_line=False, amd_alternative=alternative)


# A condition's word that names a build for AMD (`USE_ROCM`, `GMX_GPU_HIP`, `HIP_FOUND`,
# `"HIP"`), split at underscores; and one that names NVIDIA's.
AMD_WORD = re.compile(rb"(?<![A-Za-z0-9])(?:HIP|ROCM|ROCm|Rocm|hip|rocm|AMD|AMDGPU)(?![A-Za-z0-9])")
NVIDIA_WORD = re.compile(rb"(?<![A-Za-z0-9])(?:CUDA|Cuda|cuda|NVIDIA|NVCC|nvcc)(?![A-Za-z0-9])")
NEGATED = re.compile(rb"\b(?:NOT|not)\s+[$({\s]*[\w\".]*$")
AMD_ARM, NVIDIA_ARM = "amd", "nvidia"
CMAKE_BRANCH = re.compile(
    rb"^[ \t]*(if|elseif|else|endif)[ \t]*\(((?:[^()]|\([^()]*\))*)\)", re.I | re.M
)
MAKE_BRANCH = re.compile(rb"^[ \t]*(ifeq|ifneq|ifdef|ifndef|else|endif)\b(.*)$", re.M)


def vendor_arms(data: bytes, language: Language) -> list[tuple[int, int, str]]:
    """The arms of a build file's conditionals that choose the GPU vendor: (start, end,
    AMD_ARM) for an arm taken only when building for AMD (`if(USE_ROCM)`, `ifeq
    ($(HIP),1)`), (start, end, NVIDIA_ARM) for the other arms of such a conditional and
    for an arm taken only when not building for AMD (`if(NOT USE_HIP)`)."""
    if language is Language.CMAKE:
        branches = [
            (m.start(), m.end(), m.group(1).lower().decode(), m.group(2))
            for m in CMAKE_BRANCH.finditer(data)
        ]
    elif language is Language.MAKE:
        branches = []
        for m in MAKE_BRANCH.finditer(data):
            word, rest = m.group(1).decode(), m.group(2)
            if word == "else" and re.match(rb"\s*if", rest):  # `else ifeq (...)`
                inner = re.match(rb"\s*(ifeq|ifneq|ifdef|ifndef)\b(.*)", rest)
                word, rest = (
                    "elif-" + inner.group(1).decode() if inner else "else",
                    (inner.group(2) if inner else b""),
                )
            branches.append((m.start(), m.end(), word, rest))
    elif language is Language.PYTHON:
        return _python_arms(data)
    else:
        return []
    found: list[tuple[int, int, str]] = []
    stack: list[list[tuple[int, str]]] = []  # per open conditional: (arm start, kind)
    for _, end, word, condition in branches:
        if word in ("if", "ifeq", "ifneq", "ifdef", "ifndef"):
            stack.append([(end, _arm_kind(word, condition))])
        elif word in ("elseif", "else") or word.startswith("elif-"):
            if stack:
                test = word[5:] if word.startswith("elif-") else word
                stack[-1].append((end, _arm_kind(test, condition) if word != "else" else ""))
        elif word == "endif" and stack:
            found.extend(_chain_arms(stack.pop(), end))
    return found


def _chain_arms(chain: list[tuple[int, str]], end: int) -> list[tuple[int, int, str]]:
    """One conditional's arms (each from its start to the next's, the last to `end`) that
    choose the vendor: its AMD arms, and its other arms when it has one (or when an arm
    tests for not building for AMD)."""
    bounds = [arm_start for arm_start, _ in chain[1:]] + [end]
    has_amd = any(kind == AMD_ARM for _, kind in chain)
    found = []
    for (arm_start, kind), arm_end in zip(chain, bounds, strict=True):
        if kind == AMD_ARM:
            found.append((arm_start, arm_end, AMD_ARM))
        elif kind == NVIDIA_ARM or (has_amd and kind != "both"):
            found.append((arm_start, arm_end, NVIDIA_ARM))
    return found


PYTHON_BRANCH = re.compile(rb"([ \t]*)(if|elif|else)\b(.*):[ \t]*(?:#.*)?$")
# `torch.version.hip is None`: the AMD word tested for absence
ABSENT = re.compile(rb"^\w*\s*(?:is\s+None|==\s*None|is\s+False|==\s*False)")


def _python_arms(data: bytes) -> list[tuple[int, int, str]]:
    """vendor_arms for a setup.py: `if IS_ROCM:` / `elif torch.version.hip:` / `else:`
    blocks, bounded by indentation."""
    lines: list[tuple[int, int, bytes]] = []  # (offset, indent or -1 if blank, text)
    offset = 0
    for line in data.split(b"\n"):
        stripped = line.lstrip(b" \t")
        blank = not stripped or stripped.startswith(b"#")
        lines.append((offset, -1 if blank else len(line) - len(stripped), line))
        offset += len(line) + 1
    found: list[tuple[int, int, str]] = []
    for i, (_, indent, line) in enumerate(lines):
        head = PYTHON_BRANCH.fullmatch(line) if indent >= 0 and b"if" in line else None
        if head is None or head.group(2) != b"if":
            continue
        arms: list[tuple[int, str]] = [
            (lines[i + 1][0] if i + 1 < len(lines) else len(data), _arm_kind("if", head.group(3)))
        ]
        end = len(data)
        for start, other, text_ in lines[i + 1 :]:
            if other < 0 or other > indent:
                continue
            nested = PYTHON_BRANCH.fullmatch(text_) if other == indent else None
            if nested is not None and nested.group(2) in (b"elif", b"else"):
                kind = _arm_kind("elif", nested.group(3)) if nested.group(2) == b"elif" else ""
                arms.append((start, kind))
                continue
            end = start
            break
        found.extend(_chain_arms(arms, end))
    return found


def _arm_kind(word: str, condition: bytes) -> str:
    """AMD_ARM, NVIDIA_ARM (a negated AMD test), "both" (names both vendors) or ""."""
    amd = list(AMD_WORD.finditer(condition))
    if not amd:
        return ""
    negated = word in ("ifndef",) or any(
        NEGATED.search(condition[: m.start()]) or ABSENT.match(condition[m.end() :]) for m in amd
    )
    if word == "ifneq":  # `ifneq ($(HIP),)`: set; `ifneq ($(HIP),1)`: not the AMD build
        negated = not re.search(rb",\s*\)\s*$", condition.strip())
    if negated:  # `if(NOT USE_ROCM AND USE_CUDA)`: taken only when not building for AMD
        return NVIDIA_ARM if len(amd) == 1 else ""
    if NVIDIA_WORD.search(condition):
        return "both"  # `if(USE_CUDA OR USE_HIP)`: any GPU
    return AMD_ARM
