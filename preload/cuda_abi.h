// The part of the CUDA runtime ABI that the shim hooks, declared here so that the shim builds
// without the CUDA toolkit. Names carry a vt_ prefix so that this header can be included next
// to the real one: tests/abi/cuda_abi_check.cpp does exactly that, where the toolkit exists,
// and proves each declaration equal to the real one.
#pragma once

#include <cstddef>
#include <cstdint>

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

// ---- The driver API (cuda.h) ----

// CUresult is an enum with int as its underlying type; the values the shim reads are shared
// with cudaError_t.
using vt_CUresult = int;
inline constexpr vt_CUresult kCudaSuccess = 0;
inline constexpr vt_CUresult kCudaErrorOutOfMemory = 2;

using vt_CUdeviceptr = unsigned long long;
using vt_CUdevice = int;
using vt_CUmemGenericAllocationHandle = unsigned long long;
using vt_cuuint64_t = uint64_t;                  // cuda.h: typedef uint64_t cuuint64_t
using vt_CUmemoryPool = vt_CUmemPoolHandle_st*;  // the runtime's cudaMemPool_t is the same type
using vt_CUstream = vt_CUstream_st*;
// An enum in cuda.h; a distinct type here so that the ABI check can tell it from int.
enum vt_CUdriverProcAddressQueryResult : int {};

struct vt_CUmemLocation {
  int type;  // CUmemLocationType: 1 = device, its `id` the ordinal
  int id;
};
inline constexpr int kMemLocationTypeDevice = 1;

struct vt_CUmemAllocationProp {
  int type;
  int requestedHandleTypes;
  vt_CUmemLocation location;
  void* win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};

// One row per hooked driver entry point: the exported (versioned) name, the toolkit's
// declaration it matches (for the ABI check), and its parameters. The versioned names are
// what the driver hands out for a CUDA 12/13 program; cuGetProcAddress wrappers recognise
// them by name, so an older version with another signature is never wrapped.
#define VRAMTRACE_CUDA_DRIVER_HOOKS(X)                                                          \
  X(cuMemAlloc_v2, cuMemAlloc, (vt_CUdeviceptr * dptr, size_t bytesize))                        \
  X(cuMemAllocPitch_v2, cuMemAllocPitch,                                                        \
    (vt_CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                \
     unsigned int ElementSizeBytes))                                                            \
  X(cuMemFree_v2, cuMemFree, (vt_CUdeviceptr dptr))                                             \
  X(cuMemAllocManaged, cuMemAllocManaged,                                                       \
    (vt_CUdeviceptr * dptr, size_t bytesize, unsigned int flags))                               \
  X(cuMemHostAlloc, cuMemHostAlloc, (void** pp, size_t bytesize, unsigned int Flags))           \
  X(cuMemAllocHost_v2, cuMemAllocHost, (void** pp, size_t bytesize))                            \
  X(cuMemFreeHost, cuMemFreeHost, (void* p))                                                    \
  X(cuMemAllocAsync, cuMemAllocAsync,                                                           \
    (vt_CUdeviceptr * dptr, size_t bytesize, vt_CUstream hStream))                              \
  X(cuMemAllocAsync_ptsz, cuMemAllocAsync,                                                      \
    (vt_CUdeviceptr * dptr, size_t bytesize, vt_CUstream hStream))                              \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync,                                           \
    (vt_CUdeviceptr * dptr, size_t bytesize, vt_CUmemoryPool pool, vt_CUstream hStream))        \
  X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync,                                      \
    (vt_CUdeviceptr * dptr, size_t bytesize, vt_CUmemoryPool pool, vt_CUstream hStream))        \
  X(cuMemFreeAsync, cuMemFreeAsync, (vt_CUdeviceptr dptr, vt_CUstream hStream))                 \
  X(cuMemFreeAsync_ptsz, cuMemFreeAsync, (vt_CUdeviceptr dptr, vt_CUstream hStream))            \
  X(cuMemCreate, cuMemCreate,                                                                   \
    (vt_CUmemGenericAllocationHandle * handle, size_t size, const vt_CUmemAllocationProp* prop, \
     unsigned long long flags))                                                                 \
  X(cuMemRelease, cuMemRelease, (vt_CUmemGenericAllocationHandle handle))                       \
  X(cuMemAddressReserve, cuMemAddressReserve,                                                   \
    (vt_CUdeviceptr * ptr, size_t size, size_t alignment, vt_CUdeviceptr addr,                  \
     unsigned long long flags))                                                                 \
  X(cuMemAddressFree, cuMemAddressFree, (vt_CUdeviceptr ptr, size_t size))                      \
  X(cuMemMap, cuMemMap,                                                                         \
    (vt_CUdeviceptr ptr, size_t size, size_t offset, vt_CUmemGenericAllocationHandle handle,    \
     unsigned long long flags))                                                                 \
  X(cuMemUnmap, cuMemUnmap, (vt_CUdeviceptr ptr, size_t size))

// The resolvers the shim interposes, and the driver functions it calls without hooking.
#define VRAMTRACE_CUDA_DRIVER_RESOLVERS(X)                                 \
  X(cuGetProcAddress_v2, cuGetProcAddress,                                 \
    (const char* symbol, void** pfn, int cudaVersion, vt_cuuint64_t flags, \
     vt_CUdriverProcAddressQueryResult* symbolStatus))
#define VRAMTRACE_CUDA_DRIVER_USED(X) X(cuCtxGetDevice, cuCtxGetDevice, (vt_CUdevice * device))

// cuGetProcAddress as CUDA 11.3 to 11.8 declared it, still exported by the driver.
using vt_cuGetProcAddress_v1_fn = vt_CUresult (*)(const char* symbol, void** pfn, int cudaVersion,
                                                  vt_cuuint64_t flags);

}  // namespace vramtrace::cuda
