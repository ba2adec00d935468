/*
 * simcuda: NVIDIA's cudaTypedefs.h for the driver API subset of cuda.h: one function pointer
 * type per versioned ABI of each function, named PFN_<API name>_v<CUDA version that introduced
 * it>[_ptds|_ptsz]. They are the types to cast cuGetProcAddress's results to; the version in the
 * name is the cudaVersion to ask for. Checked against the toolkit's by abi_check/.
 */
#ifndef CUDATYPEDEFS_H
#define CUDATYPEDEFS_H

#include <cuda.h>

/* Helpers of the real header, spelled the same way (to the spaces, which a redefinition must
 * repeat). */
/* clang-format off */
#if defined(CUDA_API_PER_THREAD_DEFAULT_STREAM)
#define __API_TYPEDEF_PTDS(api, default_version, ptds_version) api ## _v ## ptds_version ## _ptds
#define __API_TYPEDEF_PTSZ(api, default_version, ptds_version) api ## _v ## ptds_version ## _ptsz
#else
#define __API_TYPEDEF_PTDS(api, default_version, ptds_version) api ## _v ## default_version
#define __API_TYPEDEF_PTSZ(api, default_version, ptds_version) api ## _v ## default_version
#endif
/* clang-format on */

#ifdef __cplusplus
extern "C" {
#endif

typedef CUresult(CUDAAPI* PFN_cuGetErrorString_v6000)(CUresult error, const char** pStr);
typedef CUresult(CUDAAPI* PFN_cuGetErrorName_v6000)(CUresult error, const char** pStr);
typedef CUresult(CUDAAPI* PFN_cuInit_v2000)(unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuDriverGetVersion_v2020)(int* driverVersion);
typedef CUresult(CUDAAPI* PFN_cuDeviceGet_v2000)(CUdevice_v1* device, int ordinal);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetCount_v2000)(int* count);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetName_v2000)(char* name, int len, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDeviceTotalMem_v3020)(size_t* bytes, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetDefaultMemPool_v11020)(CUmemoryPool* pool_out,
                                                                CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxRetain_v7000)(CUcontext* pctx, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxRelease_v11000)(CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxReset_v11000)(CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuCtxSetCurrent_v4000)(CUcontext ctx);
typedef CUresult(CUDAAPI* PFN_cuCtxGetCurrent_v4000)(CUcontext* pctx);
typedef CUresult(CUDAAPI* PFN_cuCtxGetDevice_v2000)(CUdevice_v1* device);
typedef CUresult(CUDAAPI* PFN_cuCtxGetDevice_v13000)(CUdevice* device, CUcontext ctx);
typedef CUresult(CUDAAPI* PFN_cuCtxSynchronize_v2000)(void);
typedef CUresult(CUDAAPI* PFN_cuCtxSynchronize_v13000)(CUcontext ctx);
typedef CUresult(CUDAAPI* PFN_cuMemGetInfo_v3020)(size_t* free, size_t* total);
typedef CUresult(CUDAAPI* PFN_cuMemAlloc_v3020)(CUdeviceptr_v2* dptr, size_t bytesize);
typedef CUresult(CUDAAPI* PFN_cuMemAllocPitch_v3020)(CUdeviceptr_v2* dptr, size_t* pPitch,
                                                     size_t WidthInBytes, size_t Height,
                                                     unsigned int ElementSizeBytes);
typedef CUresult(CUDAAPI* PFN_cuMemFree_v3020)(CUdeviceptr_v2 dptr);
typedef CUresult(CUDAAPI* PFN_cuMemAllocHost_v3020)(void** pp, size_t bytesize);
typedef CUresult(CUDAAPI* PFN_cuMemFreeHost_v2000)(void* p);
typedef CUresult(CUDAAPI* PFN_cuMemHostAlloc_v2020)(void** pp, size_t bytesize, unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuMemAllocManaged_v6000)(CUdeviceptr_v2* dptr, size_t bytesize,
                                                       unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuMemcpy_v7000_ptds)(CUdeviceptr_v2 dst, CUdeviceptr_v2 src,
                                                   size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyHtoD_v7000_ptds)(CUdeviceptr_v2 dstDevice,
                                                       const void* srcHost, size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoH_v7000_ptds)(void* dstHost, CUdeviceptr_v2 srcDevice,
                                                       size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoD_v7000_ptds)(CUdeviceptr_v2 dstDevice,
                                                       CUdeviceptr_v2 srcDevice, size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemsetD8_v7000_ptds)(CUdeviceptr_v2 dstDevice, unsigned char uc,
                                                     size_t N);
typedef CUresult(CUDAAPI* PFN_cuMemAddressReserve_v10020)(CUdeviceptr_v2* ptr, size_t size,
                                                          size_t alignment, CUdeviceptr_v2 addr,
                                                          unsigned long long flags);
typedef CUresult(CUDAAPI* PFN_cuMemAddressFree_v10020)(CUdeviceptr_v2 ptr, size_t size);
typedef CUresult(CUDAAPI* PFN_cuMemCreate_v10020)(CUmemGenericAllocationHandle_v1* handle,
                                                  size_t size, const CUmemAllocationProp_v1* prop,
                                                  unsigned long long flags);
typedef CUresult(CUDAAPI* PFN_cuMemRelease_v10020)(CUmemGenericAllocationHandle_v1 handle);
typedef CUresult(CUDAAPI* PFN_cuMemMap_v10020)(CUdeviceptr_v2 ptr, size_t size, size_t offset,
                                               CUmemGenericAllocationHandle_v1 handle,
                                               unsigned long long flags);
typedef CUresult(CUDAAPI* PFN_cuMemUnmap_v10020)(CUdeviceptr_v2 ptr, size_t size);
typedef CUresult(CUDAAPI* PFN_cuMemSetAccess_v10020)(CUdeviceptr_v2 ptr, size_t size,
                                                     const CUmemAccessDesc_v1* desc, size_t count);
typedef CUresult(CUDAAPI* PFN_cuMemGetAllocationGranularity_v10020)(
    size_t* granularity, const CUmemAllocationProp_v1* prop,
    CUmemAllocationGranularity_flags option);
typedef CUresult(CUDAAPI* PFN_cuMemGetAllocationPropertiesFromHandle_v10020)(
    CUmemAllocationProp_v1* prop, CUmemGenericAllocationHandle_v1 handle);
typedef CUresult(CUDAAPI* PFN_cuMemFreeAsync_v11020_ptsz)(CUdeviceptr_v2 dptr, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemAllocAsync_v11020_ptsz)(CUdeviceptr_v2* dptr, size_t bytesize,
                                                           CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemPoolTrimTo_v11020)(CUmemoryPool pool, size_t minBytesToKeep);
typedef CUresult(CUDAAPI* PFN_cuMemPoolCreate_v11020)(CUmemoryPool* pool,
                                                      const CUmemPoolProps_v1* poolProps);
typedef CUresult(CUDAAPI* PFN_cuMemPoolDestroy_v11020)(CUmemoryPool pool);
typedef CUresult(CUDAAPI* PFN_cuMemAllocFromPoolAsync_v11020_ptsz)(CUdeviceptr_v2* dptr,
                                                                   size_t bytesize,
                                                                   CUmemoryPool pool,
                                                                   CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuStreamCreate_v2000)(CUstream* phStream, unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuStreamSynchronize_v7000_ptsz)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuStreamDestroy_v4000)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuGetProcAddress_v11030)(const char* symbol, void** pfn,
                                                       int driverVersion, cuuint64_t flags);
typedef CUresult(CUDAAPI* PFN_cuGetProcAddress_v12000)(const char* symbol, void** pfn,
                                                       int driverVersion, cuuint64_t flags,
                                                       CUdriverProcAddressQueryResult* symbolFound);
typedef CUresult(CUDAAPI* PFN_cuMemcpyHtoD_v3020)(CUdeviceptr_v2 dstDevice, const void* srcHost,
                                                  size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoH_v3020)(void* dstHost, CUdeviceptr_v2 srcDevice,
                                                  size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoD_v3020)(CUdeviceptr_v2 dstDevice,
                                                  CUdeviceptr_v2 srcDevice, size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemsetD8_v3020)(CUdeviceptr_v2 dstDevice, unsigned char uc,
                                                size_t N);
typedef CUresult(CUDAAPI* PFN_cuMemcpy_v4000)(CUdeviceptr_v2 dst, CUdeviceptr_v2 src,
                                              size_t ByteCount);
typedef CUresult(CUDAAPI* PFN_cuStreamSynchronize_v2000)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemFreeAsync_v11020)(CUdeviceptr_v2 dptr, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemAllocAsync_v11020)(CUdeviceptr_v2* dptr, size_t bytesize,
                                                      CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemAllocFromPoolAsync_v11020)(CUdeviceptr_v2* dptr, size_t bytesize,
                                                              CUmemoryPool pool, CUstream hStream);

/* The legacy ABIs, with the 32-bit types that only the driver's own build declares. */
#if defined(__CUDA_API_VERSION_INTERNAL)
typedef CUresult(CUDAAPI* PFN_cuDeviceTotalMem_v2000)(unsigned int* bytes, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuMemGetInfo_v2000)(unsigned int* free, unsigned int* total);
typedef CUresult(CUDAAPI* PFN_cuMemAlloc_v2000)(CUdeviceptr_v1* dptr, unsigned int bytesize);
typedef CUresult(CUDAAPI* PFN_cuMemAllocPitch_v2000)(CUdeviceptr_v1* dptr, unsigned int* pPitch,
                                                     unsigned int WidthInBytes, unsigned int Height,
                                                     unsigned int ElementSizeBytes);
typedef CUresult(CUDAAPI* PFN_cuMemFree_v2000)(CUdeviceptr_v1 dptr);
typedef CUresult(CUDAAPI* PFN_cuMemAllocHost_v2000)(void** pp, unsigned int bytesize);
typedef CUresult(CUDAAPI* PFN_cuMemcpyHtoD_v2000)(CUdeviceptr_v1 dstDevice, const void* srcHost,
                                                  unsigned int ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoH_v2000)(void* dstHost, CUdeviceptr_v1 srcDevice,
                                                  unsigned int ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoD_v2000)(CUdeviceptr_v1 dstDevice,
                                                  CUdeviceptr_v1 srcDevice, unsigned int ByteCount);
typedef CUresult(CUDAAPI* PFN_cuMemsetD8_v2000)(CUdeviceptr_v1 dstDevice, unsigned char uc,
                                                unsigned int N);
typedef CUresult(CUDAAPI* PFN_cuStreamDestroy_v2000)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxRelease_v7000)(CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxReset_v7000)(CUdevice_v1 dev);
#endif

#ifdef __cplusplus
}
#endif

#endif /* CUDATYPEDEFS_H */
