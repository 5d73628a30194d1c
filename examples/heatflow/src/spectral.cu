// Spectral smoothing of the field with cuFFT and a cuBLAS rescale.
#include <cufft.h>
#include <cublas_v2.h>
#include "check.cuh"

__global__ void damp(cufftComplex* spec, int nx, int ny, float k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int total = ny * (nx / 2 + 1);
  if (i < total) {
    float f = expf(-k * (float)(i % (nx / 2 + 1)));
    spec[i].x *= f;
    spec[i].y *= f;
  }
}

void smooth(float* field, int nx, int ny, float k, cudaStream_t stream) {
  cufftHandle fwd, inv;
  cufftComplex* spec;
  CUDA_CHECK(cudaMalloc(&spec, sizeof(cufftComplex) * ny * (nx / 2 + 1)));
  cufftPlan2d(&fwd, ny, nx, CUFFT_R2C);
  cufftPlan2d(&inv, ny, nx, CUFFT_C2R);
  cufftSetStream(fwd, stream);
  cufftSetStream(inv, stream);
  cufftExecR2C(fwd, field, spec);
  int total = ny * (nx / 2 + 1);
  damp<<<(total + 255) / 256, 256, 0, stream>>>(spec, nx, ny, k);
  cufftExecC2R(inv, spec, field);

  cublasHandle_t handle;
  cublasCreate(&handle);
  cublasSetStream(handle, stream);
  const float scale = 1.0f / (nx * ny);
  cublasSscal(handle, nx * ny, &scale, field, 1);
  cublasDestroy(handle);
  cufftDestroy(fwd);
  cufftDestroy(inv);
  CUDA_CHECK(cudaFree(spec));
}
