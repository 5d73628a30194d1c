// L2 residual between two iterates: warp-shuffle reduction written for 32-wide warps.
#include "check.cuh"

__inline__ __device__ float warpSum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_down_sync(0xffffffff, v, offset);
  return v;
}

__inline__ __device__ unsigned laneId() {
  unsigned lane;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
  return lane;
}

__global__ void residual(const float* a, const float* b, float* out, int n) {
  __shared__ float perWarp[32];
  int tid = blockIdx.x * blockDim.x + threadIdx.x;
  float d = tid < n ? a[tid] - b[tid] : 0.0f;
  float s = warpSum(d * d);
  unsigned lane = laneId();
  int warp = threadIdx.x >> 5;
  unsigned active = __ballot_sync(0xffffffff, s > 0.0f);
  if (lane == 0 && active) perWarp[warp] = s;
  __syncthreads();
  if (warp == 0) {
    s = (threadIdx.x < blockDim.x / 32) ? perWarp[lane] : 0.0f;
    s = warpSum(s);
    if (lane == 0) atomicAdd(out, s);
  }
}

float l2Residual(const float* a, const float* b, int n, cudaStream_t stream) {
  float* d_sum;
  float h_sum = 0.0f;
  CUDA_CHECK(cudaMallocAsync(&d_sum, sizeof(float), stream));
  CUDA_CHECK(cudaMemsetAsync(d_sum, 0, sizeof(float), stream));
  residual<<<(n + 255) / 256, 256, 0, stream>>>(a, b, d_sum, n);
  CUDA_CHECK(cudaMemcpyAsync(&h_sum, d_sum, sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFreeAsync(d_sum, stream));
  return h_sum;
}
