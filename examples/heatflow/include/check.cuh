#pragma once
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

// Abort with file/line on any runtime API error.
#define CUDA_CHECK(call)                                                    \
  do {                                                                      \
    cudaError_t err_ = (call);                                              \
    if (err_ != cudaSuccess) {                                              \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,               \
                   cudaGetErrorString(err_));                               \
      std::exit(1);                                                         \
    }                                                                       \
  } while (0)

struct Grid {
  int nx, ny;
  float dx, dt, alpha;
};
