/* portcheck's stand-in for the CUDA headers, for the libclang front end.
 *
 * clang parses CUDA with -nocudainc: without a CUDA install it knows the language
 * (__global__ and friends are attributes it understands) but none of the runtime's
 * declarations. This header declares just enough for the facts portcheck reads to be
 * right: the execution-space qualifiers, the built-in index variables, the launch
 * configuration call that `<<<...>>>` lowers to, and the warp intrinsics whose arguments
 * the checks look at. Everything else the code calls stays undeclared; clang recovers,
 * and portcheck's own rule set classifies those names.
 *
 * Written for portcheck from the CUDA C++ Programming Guide's descriptions of these
 * names (execution-space specifiers, built-in variables, warp shuffle and vote
 * functions); no CUDA header text is reproduced.
 */
#pragma once

#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __host__ __attribute__((host))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __restrict__ __restrict
#define __grid_constant__

struct __portcheck_uint3 { unsigned x, y, z; };
struct dim3 {
  unsigned x, y, z;
  __host__ __device__ dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  __host__ __device__ dim3(__portcheck_uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
extern const __device__ __portcheck_uint3 threadIdx, blockIdx, blockDim, gridDim;
extern const __device__ int warpSize;
typedef struct CUstream_st* cudaStream_t;
typedef int cudaError_t;

extern "C" unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, unsigned long shared = 0,
                                                cudaStream_t stream = 0);

__device__ void __syncthreads();
__device__ void __syncwarp(unsigned long long mask = ~0ull);
__device__ void __threadfence();
__device__ void __threadfence_block();
__device__ unsigned long long __activemask();
__device__ unsigned long long __ballot_sync(unsigned long long mask, int predicate);
__device__ int __any_sync(unsigned long long mask, int predicate);
__device__ int __all_sync(unsigned long long mask, int predicate);
__device__ unsigned long long __ballot(int predicate);
__device__ int __popc(unsigned x);
__device__ int __popcll(unsigned long long x);
__device__ int __ffs(int x);
__device__ int __clz(int x);
template <typename T> __device__ T __shfl_sync(unsigned long long mask, T v, int lane, int width = 32);
template <typename T> __device__ T __shfl_up_sync(unsigned long long mask, T v, unsigned d, int width = 32);
template <typename T> __device__ T __shfl_down_sync(unsigned long long mask, T v, unsigned d, int width = 32);
template <typename T> __device__ T __shfl_xor_sync(unsigned long long mask, T v, int m, int width = 32);
template <typename T> __device__ T __shfl(T v, int lane, int width = 32);
template <typename T> __device__ T __shfl_up(T v, unsigned d, int width = 32);
template <typename T> __device__ T __shfl_down(T v, unsigned d, int width = 32);
template <typename T> __device__ T __shfl_xor(T v, int m, int width = 32);
template <typename T> __device__ T atomicAdd(T* address, T v);
template <typename T> __device__ T atomicMax(T* address, T v);
template <typename T> __device__ T atomicMin(T* address, T v);
template <typename T> __device__ T atomicExch(T* address, T v);
template <typename T> __device__ T atomicCAS(T* address, T compare, T v);
