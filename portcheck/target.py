"""The user's target: which ROCm release and which AMD GPU, and what that changes.

Owns `TargetProfile` (the release and the GPU a team builds for; no GPU means "any AMD
GPU") and the verdicts that depend on it, applied to a scan's findings after the per-file
work (the per-file cache does not depend on the target):

- wavefront width: a 32-wide warp assumption or a 32-bit lane mask is right on a GPU whose
  HIP code runs 32-wide by default (RDNA) — HIP `supported` there, no score lost — and a
  defect on wave64 GPUs (GCN, CDNA): HIP `unsupported` there. ZLUDA compiles with 64-wide
  waves on every GPU, so its verdict does not change. With no GPU chosen, the finding says
  which GPUs it affects.
- managed memory: on a GPU with memory shared with the CPU (an APU: MI300A, Strix Halo)
  `cudaMallocManaged` is plain memory, HIP `supported`; elsewhere it needs XNACK and the
  message says whether the chosen GPU has it.
- FP8: NVIDIA's FP8 types are the OCP encoding, which gfx950 and RDNA4 compute (HIP
  `supported` there); MI300 computes FNUZ (other values for the same bits); older GPUs
  emulate FP8.
- matrix-core code: `nvcuda::wmma` has a rocWMMA port on GPUs with MFMA or WMMA units, and
  none on GPUs without matrix cores (HIP `unsupported` there).
- routes: a route that cannot serve the chosen GPU (ZLUDA on CDNA) is not applicable, with
  the table's reason.
- Triton kernels (Python findings): a warp count that assumes 32 threads per warp is right
  on RDNA; TF32 `tl.dot` inputs compile on MI300 only; NVIDIA's FP8 (`float8e4nv`) is native
  on GPUs with OCP FP8, converted on MI300, missing elsewhere.
The facts come from rules/gpus.yaml (portcheck.gpus), each with its source.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TypeVar

from portcheck.gpus import Fp8, GpuProfile, MatrixKind, describe_unified_memory, describe_wave64
from portcheck.model import TARGETS, ApiRule, Finding, PyFinding, ReportTarget, Status, Target

FindingT = TypeVar("FindingT", Finding, PyFinding)

WAVE_WIDTH_SLUGS = frozenset({"warp-size-assumption", "lane-mask-width"})


@dataclass(frozen=True, slots=True)
class TargetProfile:
    """The ROCm release and AMD GPU a scan judges for (`gpu` None: any AMD GPU)."""

    rocm: str | None = None
    gpu: GpuProfile | None = None

    @property
    def wavefront(self) -> int | None:
        """The width HIP code runs at on the chosen GPU by default; None without a GPU."""
        return None if self.gpu is None else self.gpu.warp_size

    def for_report(self) -> ReportTarget:
        """What the report says of it (the `target` key, the headline)."""
        if self.gpu is None:
            return ReportTarget(rocm=self.rocm)
        return ReportTarget(self.rocm, self.gpu.gfx, self.gpu.name, self.wavefront)

    def digest(self) -> str:
        """What a remembered report's key must include."""
        gpu = "" if self.gpu is None else f"{self.gpu.gfx}:{self.gpu.product or ''}"
        return f"rocm={self.rocm or ''};gpu={gpu}"

    def not_applicable(self, targets: Iterable[Target]) -> dict[str, str]:
        """Routes that cannot serve the chosen GPU, each with the reason (and its source)."""
        if self.gpu is None:
            return {}
        reasons = {}
        for target in targets:
            serves, reason = self.gpu.serves(target)
            if not serves:
                reasons[str(target)] = f"{self.gpu.name}: {reason}"
        return reasons

    def route_limits(self, rule: ApiRule) -> ApiRule:
        """`rule` on the chosen GPU: a route that cannot run there is unsupported for every
        name, with the reason first in the rule's notes."""
        if self.gpu is None:
            return rule
        closed = self.not_applicable(TARGETS)
        if not closed:
            return rule
        status = replace(rule.status, **{route: Status.UNSUPPORTED for route in closed})
        reasons = "; ".join(f"{route}: {why}" for route, why in closed.items())
        notes = f"not applicable on this GPU ({reasons})" + (
            f" | {rule.notes}" if rule.notes else ""
        )
        return replace(rule, status=status, notes=notes)

    def judge(self, finding: Finding) -> Finding:
        """The finding with the verdicts and message this target gives it."""
        gpu = self.gpu
        if finding.slug in WAVE_WIDTH_SLUGS:
            if gpu is None:
                return _note(finding, f"affects {describe_wave64()}")
            if gpu.warp_size == 32:
                return replace(
                    _note(finding, f"not a defect on {gpu.name} (32-wide wavefronts in HIP)"),
                    targets=replace(finding.targets, hip=Status.SUPPORTED),
                )
            return replace(
                _note(finding, f"{gpu.name} runs 64-wide wavefronts"),
                targets=replace(finding.targets, hip=Status.UNSUPPORTED),
            )
        if finding.slug == "managed-memory":
            if gpu is None:
                return _note(finding, f"plain memory on {describe_unified_memory()}")
            if gpu.unified_memory:
                return replace(
                    _note(finding, f"{gpu.name} shares memory with the CPU"),
                    targets=replace(finding.targets, hip=Status.SUPPORTED),
                )
            if gpu.xnack:
                return _note(finding, f"{gpu.name} has XNACK: run with HSA_XNACK=1")
            return _note(finding, f"{gpu.name} has no XNACK: pages do not migrate on demand")
        if finding.slug == "fp8-format" and gpu is not None:
            if gpu.fp8 is Fp8.OCP:
                return replace(
                    _note(finding, f"{gpu.name} computes OCP FP8 like NVIDIA: `__hip_fp8_e4m3`"),
                    targets=replace(finding.targets, hip=Status.SUPPORTED),
                )
            if gpu.fp8 is Fp8.FNUZ:
                return _note(finding, f"{gpu.name} computes FNUZ FP8: values and scales differ")
            return _note(finding, f"{gpu.name} has no FP8 hardware: conversions are emulated")
        if finding.slug == "launch-bounds" and gpu is not None:
            return _note(finding, f"{gpu.name} counts in {gpu.warp_size}-wide wavefronts")
        if finding.slug == "tensor-core-wmma" and gpu is not None:
            if gpu.matrix is MatrixKind.NONE:
                return replace(
                    _note(finding, f"{gpu.name} has no matrix cores: no rocWMMA port"),
                    targets=replace(finding.targets, hip=Status.UNSUPPORTED),
                )
            return _note(finding, f"{gpu.name} has {gpu.matrix.value.upper()} matrix cores")
        return finding

    def judge_python(self, finding: PyFinding) -> PyFinding:
        """A Python finding (a Triton kernel's) with the verdict and message the chosen GPU
        gives it: warp counts by wavefront width, TF32 and FP8 inputs by what the GPU's
        Triton backend accepts (portcheck.gpus)."""
        gpu = self.gpu
        if finding.slug == "triton-warp-count":
            if gpu is None:
                return _note(finding, f"affects {describe_wave64()}")
            if gpu.warp_size == 32:
                return replace(
                    _note(finding, f"not a defect on {gpu.name} (32-wide warps in Triton)"),
                    targets=replace(finding.targets, rocm=Status.SUPPORTED),
                )
            return _note(finding, f"{gpu.name} runs 64-wide wavefronts")
        if gpu is None or finding.targets.rocm is not Status.PARTIAL:
            return finding  # tf32x3 and float8e4b15 are unsupported on every AMD GPU
        if finding.slug == "triton-dot-precision":
            if gpu.gfx in TF32_GFX:
                return replace(
                    _note(finding, f"{gpu.name} computes TF32 (CDNA3)"),
                    targets=replace(finding.targets, rocm=Status.SUPPORTED),
                )
            return replace(
                _note(
                    finding, f"{gpu.name} has no TF32 inputs in Triton: the kernel fails to compile"
                ),
                targets=replace(finding.targets, rocm=Status.UNSUPPORTED),
            )
        if finding.slug == "triton-fp8-type":
            if gpu.fp8 is Fp8.OCP:
                return replace(
                    _note(finding, f"{gpu.name} computes OCP FP8 like NVIDIA"),
                    targets=replace(finding.targets, rocm=Status.SUPPORTED),
                )
            if gpu.fp8 is Fp8.FNUZ:
                return _note(finding, f"{gpu.name} computes FNUZ FP8: values and scales differ")
            return replace(
                _note(finding, f"{gpu.name} has no FP8 hardware: Triton offers only float8e5"),
                targets=replace(finding.targets, rocm=Status.UNSUPPORTED),
            )
        return finding


# Triton's AMD backend allows tf32 `tl.dot` inputs on these targets only (CDNA3).
TF32_GFX = frozenset({"gfx940", "gfx941", "gfx942"})


def _note(finding: FindingT, text: str) -> FindingT:
    return replace(finding, message=f"{finding.message} [{text}]")
