// Ensemble of perturbed initial conditions: cuRAND, managed memory, cooperative groups.
#include <curand_kernel.h>
#include <cooperative_groups.h>
#include <thrust/device_vector.h>
#include <thrust/reduce.h>
#include "check.cuh"

namespace cg = cooperative_groups;

__global__ void perturb(float* u, int n, unsigned long long seed, float amp) {
  cg::grid_group grid = cg::this_grid();
  curandState state;
  curand_init(seed, grid.thread_rank(), 0, &state);
  for (int i = grid.thread_rank(); i < n; i += grid.size())
    u[i] += amp * curand_normal(&state);
  grid.sync();
}

float ensembleMean(int members, int n) {
  float* u;
  CUDA_CHECK(cudaMallocManaged(&u, sizeof(float) * n * members));
  CUDA_CHECK(cudaMemAdvise(u, sizeof(float) * n * members, cudaMemAdviseSetPreferredLocation, 0));
  int device = 0;
  CUDA_CHECK(cudaMemPrefetchAsync(u, sizeof(float) * n * members, device));
  void* args[] = {&u, &n};
  unsigned long long seed = 1234;
  float amp = 0.01f;
  void* kargs[] = {&u, &n, &seed, &amp};
  (void)args;
  CUDA_CHECK(cudaLaunchCooperativeKernel((void*)perturb, dim3(80), dim3(256), kargs, 0, 0));
  CUDA_CHECK(cudaDeviceSynchronize());
  thrust::device_vector<float> v(u, u + n * members);
  float mean = thrust::reduce(v.begin(), v.end()) / (n * members);
  CUDA_CHECK(cudaFree(u));
  return mean;
}
