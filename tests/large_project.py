"""A generated CUDA project of any size, for the reports' tests at scale.

Each module is a small reduction/stencil library of the kind real projects carry: kernels
that assume 32-wide warps, full-warp shuffles with 32-bit masks, a bit of PTX, managed
memory and launch bounds. (Its block reduction works in logical groups of 32 throughout,
right on wave64: only its masks are findings.) Every module yields the same findings
(FINDINGS_PER_MODULE), so `write_large_project(root, 5000)` writes a tree with at least
5,000 findings, spread over folders and kernels as a real tree's are.
"""

from __future__ import annotations

from pathlib import Path

MODULE = """\
// {name}: block-wide reductions and a 5-point stencil for the {area} solver.
#include <cuda_runtime.h>
#include <cstdint>

namespace {area} {{

__device__ float warp_sum_{name}(float v) {{
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffff, v, offset);
  return v;
}}

__device__ float warp_max_{name}(float v) {{
  for (int offset = 16; offset > 0; offset >>= 1)
    v = fmaxf(v, __shfl_down_sync(0xffffffff, v, offset));
  return v;
}}

__device__ unsigned lane_id_{name}() {{
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}}

__global__ void __launch_bounds__(256, 2) reduce_{name}(const float* in, float* out, int n) {{
  __shared__ float partial[32];
  int lane = threadIdx.x % 32;
  int warp = threadIdx.x / 32;
  float acc = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    acc += in[i];
  acc = warp_sum_{name}(acc);
  if (lane == 0) partial[warp] = acc;
  __syncthreads();
  if (warp == 0) {{
    acc = lane < (blockDim.x >> 5) ? partial[lane] : 0.f;
    acc = warp_sum_{name}(acc);
    if (lane == 0) atomicAdd(out, acc);
  }}
}}

__global__ void peak_{name}(const float* in, float* out, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = i < n ? in[i] : -1e30f;
  v = warp_max_{name}(v);
  unsigned voters = __ballot_sync(0xffffffff, v > 0.f);
  if ((threadIdx.x & 31) == 0) out[i >> 5] = v + __popc(voters);
}}

__global__ void stencil_{name}(const float* u, float* v, int nx, int ny) {{
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x < 1 || y < 1 || x >= nx - 1 || y >= ny - 1) return;
#if __CUDA_ARCH__ >= 800
  float c = __ldg(&u[y * nx + x]);
#else
  float c = u[y * nx + x];
#endif
  v[y * nx + x] = 0.25f * (u[y * nx + x - 1] + u[y * nx + x + 1] + u[(y - 1) * nx + x] +
                           u[(y + 1) * nx + x]) - c + lane_id_{name}() * 0.f;
}}

float* alloc_{name}(size_t n) {{
  float* p = nullptr;
  cudaMallocManaged(&p, n * sizeof(float));
  cudaMemAdvise(p, n * sizeof(float), cudaMemAdviseSetPreferredLocation, 0);
  return p;
}}

}}  // namespace {area}
"""
AREAS = ("fluid", "thermal", "mesh", "optics", "acoustics", "particles", "chem", "grid")
FINDINGS_PER_MODULE = 11  # what one module yields (checked by the tests that use it)


def write_module(path: Path, name: str, area: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(MODULE.format(name=name, area=area), encoding="utf-8")


def write_large_project(root: Path, findings: int) -> int:
    """Write a tree with at least `findings` findings; returns how many modules it has."""
    modules = -(-findings // FINDINGS_PER_MODULE)
    for index in range(modules):
        area = AREAS[index % len(AREAS)]
        name = f"{area}_{index:04d}"
        write_module(root / "src" / area / f"part{index // 40}" / f"{name}.cu", name, area)
    return modules
