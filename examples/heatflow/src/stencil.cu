// Explicit 2D heat equation step with a shared-memory tile and halo.
#include "check.cuh"

#define TILE 16

__global__ void heatStep(const float* __restrict__ u, float* __restrict__ un, Grid g) {
  __shared__ float tile[TILE + 2][TILE + 2];
  int i = blockIdx.x * TILE + threadIdx.x;
  int j = blockIdx.y * TILE + threadIdx.y;
  int li = threadIdx.x + 1, lj = threadIdx.y + 1;
  if (i < g.nx && j < g.ny) {
    tile[lj][li] = __ldg(&u[j * g.nx + i]);
    if (threadIdx.x == 0 && i > 0) tile[lj][0] = u[j * g.nx + i - 1];
    if (threadIdx.x == TILE - 1 && i < g.nx - 1) tile[lj][TILE + 1] = u[j * g.nx + i + 1];
    if (threadIdx.y == 0 && j > 0) tile[0][li] = u[(j - 1) * g.nx + i];
    if (threadIdx.y == TILE - 1 && j < g.ny - 1) tile[TILE + 1][li] = u[(j + 1) * g.nx + i];
  }
  __syncthreads();
  if (i > 0 && j > 0 && i < g.nx - 1 && j < g.ny - 1) {
    float lap = tile[lj][li - 1] + tile[lj][li + 1] + tile[lj - 1][li] + tile[lj + 1][li] -
                4.0f * tile[lj][li];
    un[j * g.nx + i] = tile[lj][li] + g.alpha * g.dt / (g.dx * g.dx) * lap;
  }
}

void launchHeatStep(const float* u, float* un, const Grid& g, cudaStream_t stream) {
  dim3 block(TILE, TILE);
  dim3 grid((g.nx + TILE - 1) / TILE, (g.ny + TILE - 1) / TILE);
  heatStep<<<grid, block, 0, stream>>>(u, un, g);
  CUDA_CHECK(cudaGetLastError());
}
