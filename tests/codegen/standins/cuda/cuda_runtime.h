/* STAND-IN, NOT NVIDIA'S HEADER: a test-only `cuda_runtime.h` for tests/codegen/test_host_cuda.py and the
 * gpu backend's emulated device (tests/backends/gpu_emulator.py).
 *
 * There is no GPU or nvcc here. This declares the few CUDA runtime names the generated main.cu uses, so
 * g++ can compile main.cu and kernel.cu as C++; with SM_STANDIN_RUN defined it also gives them host
 * definitions (device memory is host memory, a launch runs every thread of every block in turn), so the
 * host program's logic (buffers, ping-pong, masks, NaN) and the kernels can be run and checked against the
 * reference.
 * It says nothing about how nvcc or a GPU behaves. */
#ifndef SM_STANDIN_CUDA_RUNTIME_H
#define SM_STANDIN_CUDA_RUNTIME_H
#include <stddef.h>

#define __global__
#define __device__
typedef int cudaError_t;
enum { cudaSuccess = 0 };
enum cudaMemcpyKind { cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2 };
struct dim3 {
  unsigned x, y, z;
  dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};
extern dim3 blockIdx, blockDim, threadIdx, gridDim;
float __int_as_float(int bits);
cudaError_t cudaMalloc(void **p, size_t bytes);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemset(void *p, int value, size_t bytes);
cudaError_t cudaGetLastError(void);
cudaError_t cudaDeviceSynchronize(void);
const char *cudaGetErrorString(cudaError_t e);

/* g++ has no <<< >>>: every thread of every block, one after another (the kernels write disjoint points
 * and never synchronise); blocks and threads x fastest, as CUDA numbers them */
#define SM_LAUNCH(kernel, grid, block, ...)                                         \
  do {                                                                              \
    gridDim = dim3(grid);                                                           \
    blockDim = dim3(block);                                                         \
    for (blockIdx.z = 0; blockIdx.z < gridDim.z; ++blockIdx.z)                      \
      for (blockIdx.y = 0; blockIdx.y < gridDim.y; ++blockIdx.y)                    \
        for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)                  \
          for (threadIdx.z = 0; threadIdx.z < blockDim.z; ++threadIdx.z)            \
            for (threadIdx.y = 0; threadIdx.y < blockDim.y; ++threadIdx.y)          \
              for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)        \
                kernel(__VA_ARGS__);                                                \
  } while (0)

#ifdef SM_STANDIN_RUN
#include <stdlib.h>
#include <string.h>
dim3 blockIdx, blockDim, threadIdx, gridDim;
float __int_as_float(int bits) { float f; memcpy(&f, &bits, sizeof f); return f; }
cudaError_t cudaMalloc(void **p, size_t bytes) { *p = malloc(bytes); return *p ? 0 : 2; }
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind) { memcpy(dst, src, bytes); return 0; }
cudaError_t cudaMemset(void *p, int value, size_t bytes) { memset(p, value, bytes); return 0; }
cudaError_t cudaGetLastError(void) { return 0; }
cudaError_t cudaDeviceSynchronize(void) { return 0; }
const char *cudaGetErrorString(cudaError_t) { return "stand-in error"; }
#endif
#endif
