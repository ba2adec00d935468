// The part of the CUDA runtime ABI that the shim hooks, declared here so that the shim builds
// without the CUDA toolkit. Names carry a vt_ prefix so that this header can be included next
// to the real one: tests/abi/cuda_abi_check.cpp does exactly that, where the toolkit exists,
// and proves each declaration equal to the real one.
#pragma once

#include <cstddef>

namespace vramtrace::cuda {

// cudaError_t is an enum with int as its underlying type.
using vt_cudaError_t = int;
inline constexpr vt_cudaError_t kSuccess = 0;
inline constexpr vt_cudaError_t kErrorMemoryAllocation = 2;
inline constexpr vt_cudaError_t kErrorInitializationError = 3;

struct vt_CUstream_st;
using vt_cudaStream_t = vt_CUstream_st*;
struct vt_CUmemPoolHandle_st;
using vt_cudaMemPool_t = vt_CUmemPoolHandle_st*;

struct vt_cudaExtent {
  size_t width;
  size_t height;
  size_t depth;
};

struct vt_cudaPitchedPtr {
  void* ptr;
  size_t pitch;
  size_t xsize;
  size_t ysize;
};

// One X-macro row per hooked runtime function: its name, the real function whose signature
// it shares (itself, or the default-stream twin of a _ptsz variant), and its parameters. The
// hook definitions and the ABI check are both generated from this one list.
#define VRAMTRACE_CUDA_RUNTIME_HOOKS(X)                                                            \
  X(cudaMalloc, cudaMalloc, (void** devPtr, size_t size))                                          \
  X(cudaFree, cudaFree, (void* devPtr))                                                            \
  X(cudaMallocManaged, cudaMallocManaged, (void** devPtr, size_t size, unsigned int flags))        \
  X(cudaMallocHost, cudaMallocHost, (void** ptr, size_t size))                                     \
  X(cudaHostAlloc, cudaHostAlloc, (void** pHost, size_t size, unsigned int flags))                 \
  X(cudaFreeHost, cudaFreeHost, (void* ptr))                                                       \
  X(cudaMallocPitch, cudaMallocPitch, (void** devPtr, size_t* pitch, size_t width, size_t height)) \
  X(cudaMalloc3D, cudaMalloc3D, (vt_cudaPitchedPtr * pitchedDevPtr, vt_cudaExtent extent))         \
  X(cudaMallocAsync, cudaMallocAsync, (void** devPtr, size_t size, vt_cudaStream_t hStream))       \
  X(cudaMallocAsync_ptsz, cudaMallocAsync, (void** devPtr, size_t size, vt_cudaStream_t hStream))  \
  X(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync,                                              \
    (void** ptr, size_t size, vt_cudaMemPool_t memPool, vt_cudaStream_t stream))                   \
  X(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync,                                         \
    (void** ptr, size_t size, vt_cudaMemPool_t memPool, vt_cudaStream_t stream))                   \
  X(cudaFreeAsync, cudaFreeAsync, (void* devPtr, vt_cudaStream_t hStream))                         \
  X(cudaFreeAsync_ptsz, cudaFreeAsync, (void* devPtr, vt_cudaStream_t hStream))

// Functions the shim calls but does not hook, in the same form.
#define VRAMTRACE_CUDA_RUNTIME_USED(X) X(cudaGetDevice, cudaGetDevice, (int* device))

}  // namespace vramtrace::cuda
