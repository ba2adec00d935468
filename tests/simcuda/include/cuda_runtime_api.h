/*
 * simcuda: the C API of NVIDIA's cuda_runtime_api.h, restricted to the allocation subset that
 * libcudart.so from tests/simcuda implements. Names, argument types and order, and exported
 * symbol names are those of the real CUDA 13 runtime, so that a program compiled against this
 * header also runs against the real libcudart, and the reverse. When the real toolkit is
 * installed, abi_check/ verifies every declaration here against it.
 *
 * Plain C, like the real one; C++ programs get the template overloads from cuda_runtime.h.
 */
#ifndef SIMCUDA_CUDA_RUNTIME_API_H
#define SIMCUDA_CUDA_RUNTIME_API_H

#include "driver_types.h"

/* The runtime version these declarations follow (1000 * major + 10 * minor). */
#define CUDART_VERSION 13000

/* Calling convention marker of the real header; empty on Linux. */
#ifndef CUDARTAPI
#define CUDARTAPI
#endif

/* Default arguments exist only in C++, as in the real header. abi_check/ predefines this as
 * empty, because a redeclaration may not repeat a default argument. */
#ifndef SIMCUDA_DEFAULT_ARG
#ifdef __cplusplus
#define SIMCUDA_DEFAULT_ARG(value) = value
#else
#define SIMCUDA_DEFAULT_ARG(value)
#endif
#endif

/* The real header marks deprecated functions unless CUDA_ENABLE_DEPRECATED is defined. */
#ifndef SIMCUDA_DEPRECATED
#if defined(CUDA_ENABLE_DEPRECATED)
#define SIMCUDA_DEPRECATED
#elif defined(__GNUC__)
#define SIMCUDA_DEPRECATED __attribute__((deprecated))
#else
#define SIMCUDA_DEPRECATED
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Device management. */
extern cudaError_t CUDARTAPI cudaDeviceReset(void);
extern cudaError_t CUDARTAPI cudaDeviceSynchronize(void);
extern cudaError_t CUDARTAPI cudaGetDeviceCount(int* count);
extern cudaError_t CUDARTAPI cudaSetDevice(int device);
extern cudaError_t CUDARTAPI cudaGetDevice(int* device);
extern cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device);

/* Error handling. */
extern cudaError_t CUDARTAPI cudaGetLastError(void);
extern cudaError_t CUDARTAPI cudaPeekAtLastError(void);
extern const char* CUDARTAPI cudaGetErrorName(cudaError_t error);
extern const char* CUDARTAPI cudaGetErrorString(cudaError_t error);

/* Streams. */
extern cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t* pStream);
extern cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags);
extern cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream);

/* Memory. */
extern cudaError_t CUDARTAPI cudaMallocManaged(
    void** devPtr, size_t size, unsigned int flags SIMCUDA_DEFAULT_ARG(cudaMemAttachGlobal));
extern cudaError_t CUDARTAPI cudaMalloc(void** devPtr, size_t size);
extern cudaError_t CUDARTAPI cudaMallocHost(void** ptr, size_t size);
extern cudaError_t CUDARTAPI cudaMallocPitch(void** devPtr, size_t* pitch, size_t width,
                                             size_t height);
extern cudaError_t CUDARTAPI cudaFree(void* devPtr);
extern cudaError_t CUDARTAPI cudaFreeHost(void* ptr);
extern cudaError_t CUDARTAPI cudaHostAlloc(void** pHost, size_t size, unsigned int flags);
extern cudaError_t CUDARTAPI cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr,
                                          struct cudaExtent extent);
extern cudaError_t CUDARTAPI cudaMemGetInfo(size_t* free, size_t* total);
extern cudaError_t CUDARTAPI cudaMemcpy(void* dst, const void* src, size_t count,
                                        enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI cudaMemset(void* devPtr, int value, size_t count);

/* Stream-ordered allocator. */
extern cudaError_t CUDARTAPI cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaFreeAsync(void* devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep);
extern cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t* memPool,
                                               const struct cudaMemPoolProps* poolProps);
extern cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool);
extern cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                     cudaStream_t stream);

/* Versions. */
extern cudaError_t CUDARTAPI cudaDriverGetVersion(int* driverVersion);
extern cudaError_t CUDARTAPI cudaRuntimeGetVersion(int* runtimeVersion);

/* Driver entry points: driver functions by API name, through the driver's cuGetProcAddress.
 * cudaGetDriverEntryPoint uses the runtime's own version and is deprecated, as in the real
 * header, in favour of cudaGetDriverEntryPointByVersion. */
extern SIMCUDA_DEPRECATED cudaError_t CUDARTAPI cudaGetDriverEntryPoint(
    const char* symbol, void** funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));
extern cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));

/*
 * The per-thread-default-stream entry points, exported by the real library next to the plain
 * ones. The real header declares them only under CUDA_API_PER_THREAD_DEFAULT_STREAM (nvcc
 * --default-stream per-thread); here they are always declared so that interposers can name
 * them. The _ptds/_ptsz suffixes follow the real exports.
 */
extern cudaError_t CUDARTAPI cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                             enum cudaMemcpyKind kind);
extern cudaError_t CUDARTAPI cudaMemset_ptds(void* devPtr, int value, size_t count);
extern cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream);
extern cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream);
extern cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size,
                                                          cudaMemPool_t memPool,
                                                          cudaStream_t stream);
extern SIMCUDA_DEPRECATED cudaError_t CUDARTAPI cudaGetDriverEntryPoint_ptsz(
    const char* symbol, void** funcPtr, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));
extern cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult* driverStatus SIMCUDA_DEFAULT_ARG(NULL));

#ifdef __cplusplus
}
#endif

/* With per-thread default streams, calls go to the suffixed symbols, as with the real header. */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define cudaMemcpy cudaMemcpy_ptds
#define cudaMemset cudaMemset_ptds
#define cudaStreamSynchronize cudaStreamSynchronize_ptsz
#define cudaMallocAsync cudaMallocAsync_ptsz
#define cudaFreeAsync cudaFreeAsync_ptsz
#define cudaMallocFromPoolAsync cudaMallocFromPoolAsync_ptsz
#define cudaGetDriverEntryPoint cudaGetDriverEntryPoint_ptsz
#define cudaGetDriverEntryPointByVersion cudaGetDriverEntryPointByVersion_ptsz
#endif

#endif /* SIMCUDA_CUDA_RUNTIME_API_H */
