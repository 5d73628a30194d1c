// Loads the hand-tuned boundary kernel from PTX at run time (driver API).
#include <cuda.h>
#include <fstream>
#include <sstream>
#include <string>

static std::string readFile(const char* path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

int applyBoundary(CUdeviceptr field, int nx, int ny) {
  CUmodule module;
  CUfunction kernel;
  std::string ptx = readFile("kernels/boundary.ptx");
  if (cuModuleLoadData(&module, ptx.c_str()) != CUDA_SUCCESS) return -1;
  cuModuleGetFunction(&kernel, module, "boundary");
  void* args[] = {&field, &nx, &ny};
  CUresult r = cuLaunchKernel(kernel, (nx + 127) / 128, 1, 1, 128, 1, 1, 0, nullptr, args, nullptr);
  cuCtxSynchronize();
  cuModuleUnload(module);
  return r == CUDA_SUCCESS ? 0 : -1;
}
