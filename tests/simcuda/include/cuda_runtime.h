/*
 * simcuda: the host-side part of NVIDIA's cuda_runtime.h for the allocation subset: the C API
 * plus the C++ overloads that let callers pass typed pointers (cudaMalloc(&float_ptr, n)), and
 * the make_cuda* helpers of driver_functions.h. These are inline wrappers, as in the real
 * header: they add no exported symbols.
 */
#ifndef SIMCUDA_CUDA_RUNTIME_H
#define SIMCUDA_CUDA_RUNTIME_H

#include "cuda_runtime_api.h"

static inline struct cudaExtent make_cudaExtent(size_t w, size_t h, size_t d) {
  struct cudaExtent e;
  e.width = w;
  e.height = h;
  e.depth = d;
  return e;
}

static inline struct cudaPitchedPtr make_cudaPitchedPtr(void* d, size_t p, size_t xsz, size_t ysz) {
  struct cudaPitchedPtr s;
  s.ptr = d;
  s.pitch = p;
  s.xsize = xsz;
  s.ysize = ysz;
  return s;
}

#ifdef __cplusplus

static inline cudaError_t cudaMallocHost(void** ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc(ptr, size, flags);
}

template <class T>
static inline cudaError_t cudaMallocHost(T** ptr, size_t size, unsigned int flags = 0) {
  return cudaMallocHost(static_cast<void**>(static_cast<void*>(ptr)), size, flags);
}

template <class T>
static inline cudaError_t cudaHostAlloc(T** ptr, size_t size, unsigned int flags) {
  return ::cudaHostAlloc(static_cast<void**>(static_cast<void*>(ptr)), size, flags);
}

template <class T>
static inline cudaError_t cudaMallocManaged(T** devPtr, size_t size,
                                            unsigned int flags = cudaMemAttachGlobal) {
  return ::cudaMallocManaged(static_cast<void**>(static_cast<void*>(devPtr)), size, flags);
}

template <class T>
static inline cudaError_t cudaMalloc(T** devPtr, size_t size) {
  return ::cudaMalloc(static_cast<void**>(static_cast<void*>(devPtr)), size);
}

template <class T>
static inline cudaError_t cudaMallocPitch(T** devPtr, size_t* pitch, size_t width, size_t height) {
  return ::cudaMallocPitch(static_cast<void**>(static_cast<void*>(devPtr)), pitch, width, height);
}

/* An alternate spelling of cudaMallocFromPoolAsync, as in the real header. */
static inline cudaError_t cudaMallocAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                          cudaStream_t stream) {
  return ::cudaMallocFromPoolAsync(ptr, size, memPool, stream);
}

template <class T>
static inline cudaError_t cudaMallocAsync(T** ptr, size_t size, cudaMemPool_t memPool,
                                          cudaStream_t stream) {
  return ::cudaMallocFromPoolAsync(static_cast<void**>(static_cast<void*>(ptr)), size, memPool,
                                   stream);
}

template <class T>
static inline cudaError_t cudaMallocAsync(T** ptr, size_t size, cudaStream_t stream) {
  return ::cudaMallocAsync(static_cast<void**>(static_cast<void*>(ptr)), size, stream);
}

template <class T>
static inline cudaError_t cudaMallocFromPoolAsync(T** ptr, size_t size, cudaMemPool_t memPool,
                                                  cudaStream_t stream) {
  return ::cudaMallocFromPoolAsync(static_cast<void**>(static_cast<void*>(ptr)), size, memPool,
                                   stream);
}

#endif /* __cplusplus */

#endif /* SIMCUDA_CUDA_RUNTIME_H */
