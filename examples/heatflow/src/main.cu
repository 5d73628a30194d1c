// heatflow: 2D heat diffusion with spectral smoothing and an ensemble mean.
#include <cstdio>
#include <vector>
#include "check.cuh"

void launchHeatStep(const float* u, float* un, const Grid& g, cudaStream_t stream);
float l2Residual(const float* a, const float* b, int n, cudaStream_t stream);
void smooth(float* field, int nx, int ny, float k, cudaStream_t stream);
float ensembleMean(int members, int n);

int main(int argc, char** argv) {
  Grid g{512, 512, 1.0f / 512, 1e-6f, 1.0f};
  int n = g.nx * g.ny;
  cudaDeviceProp prop;
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s (sm_%d%d, warp %d)\n", prop.name, prop.major, prop.minor, prop.warpSize);

  std::vector<float> host(n, 0.0f);
  host[n / 2 + g.nx / 2] = 1000.0f;
  float *u, *un;
  CUDA_CHECK(cudaMalloc(&u, n * sizeof(float)));
  CUDA_CHECK(cudaMalloc(&un, n * sizeof(float)));
  CUDA_CHECK(cudaMemcpy(u, host.data(), n * sizeof(float), cudaMemcpyHostToDevice));

  cudaStream_t stream;
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  CUDA_CHECK(cudaEventRecord(start, stream));
  for (int step = 0; step < 1000; ++step) {
    launchHeatStep(u, un, g, stream);
    std::swap(u, un);
    if (step % 100 == 0) std::printf("step %d residual %g\n", step, l2Residual(u, un, n, stream));
  }
  smooth(u, g.nx, g.ny, 0.05f, stream);
  CUDA_CHECK(cudaEventRecord(stop, stream));
  CUDA_CHECK(cudaEventSynchronize(stop));
  float ms = 0.0f;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
  std::printf("1000 steps in %.1f ms; ensemble mean %g\n", ms, ensembleMean(8, 4096));

  CUDA_CHECK(cudaEventDestroy(start));
  CUDA_CHECK(cudaEventDestroy(stop));
  CUDA_CHECK(cudaStreamDestroy(stream));
  CUDA_CHECK(cudaFree(u));
  CUDA_CHECK(cudaFree(un));
  return 0;
}
