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

typedef CUresult(CUDAAPI* PFN_cuDeviceGetAttribute_v2000)(int* pi, CUdevice_attribute attrib,
                                                          CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetPCIBusId_v4010)(char* pciBusId, int len, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetByPCIBusId_v4010)(CUdevice_v1* dev, const char* pciBusId);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetUuid_v9020)(CUuuid* uuid, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDeviceGetUuid_v11040)(CUuuid* uuid, CUdevice_v1 dev);
typedef CUresult(CUDAAPI* PFN_cuDeviceCanAccessPeer_v4000)(int* canAccessPeer, CUdevice_v1 dev,
                                                           CUdevice_v1 peerDev);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxGetState_v7000)(CUdevice_v1 dev,
                                                                unsigned int* flags, int* active);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxSetFlags_v11000)(CUdevice_v1 dev,
                                                                 unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuCtxPushCurrent_v4000)(CUcontext ctx);
typedef CUresult(CUDAAPI* PFN_cuCtxPopCurrent_v4000)(CUcontext* pctx);
typedef CUresult(CUDAAPI* PFN_cuCtxGetApiVersion_v3020)(CUcontext ctx, unsigned int* version);
typedef CUresult(CUDAAPI* PFN_cuCtxGetFlags_v7000)(unsigned int* flags);
typedef CUresult(CUDAAPI* PFN_cuCtxGetStreamPriorityRange_v5050)(int* leastPriority,
                                                                 int* greatestPriority);
typedef CUresult(CUDAAPI* PFN_cuCtxEnablePeerAccess_v4000)(CUcontext peerContext,
                                                           unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuCtxDisablePeerAccess_v4000)(CUcontext peerContext);
typedef CUresult(CUDAAPI* PFN_cuMemsetD32_v3020)(CUdeviceptr_v2 dstDevice, unsigned int ui,
                                                 size_t N);
typedef CUresult(CUDAAPI* PFN_cuMemsetD32_v7000_ptds)(CUdeviceptr_v2 dstDevice, unsigned int ui,
                                                      size_t N);
typedef CUresult(CUDAAPI* PFN_cuMemcpyAsync_v4000)(CUdeviceptr_v2 dst, CUdeviceptr_v2 src,
                                                   size_t ByteCount, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyAsync_v7000_ptsz)(CUdeviceptr_v2 dst, CUdeviceptr_v2 src,
                                                        size_t ByteCount, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyHtoDAsync_v3020)(CUdeviceptr_v2 dstDevice,
                                                       const void* srcHost, size_t ByteCount,
                                                       CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyHtoDAsync_v7000_ptsz)(CUdeviceptr_v2 dstDevice,
                                                            const void* srcHost, size_t ByteCount,
                                                            CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoHAsync_v3020)(void* dstHost, CUdeviceptr_v2 srcDevice,
                                                       size_t ByteCount, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoHAsync_v7000_ptsz)(void* dstHost, CUdeviceptr_v2 srcDevice,
                                                            size_t ByteCount, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoDAsync_v3020)(CUdeviceptr_v2 dstDevice,
                                                       CUdeviceptr_v2 srcDevice, size_t ByteCount,
                                                       CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyDtoDAsync_v7000_ptsz)(CUdeviceptr_v2 dstDevice,
                                                            CUdeviceptr_v2 srcDevice,
                                                            size_t ByteCount, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyPeerAsync_v4000)(CUdeviceptr_v2 dstDevice,
                                                       CUcontext dstContext,
                                                       CUdeviceptr_v2 srcDevice,
                                                       CUcontext srcContext, size_t ByteCount,
                                                       CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemcpyPeerAsync_v7000_ptsz)(CUdeviceptr_v2 dstDevice,
                                                            CUcontext dstContext,
                                                            CUdeviceptr_v2 srcDevice,
                                                            CUcontext srcContext, size_t ByteCount,
                                                            CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemsetD8Async_v3020)(CUdeviceptr_v2 dstDevice, unsigned char uc,
                                                     size_t N, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemsetD8Async_v7000_ptsz)(CUdeviceptr_v2 dstDevice,
                                                          unsigned char uc, size_t N,
                                                          CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemsetD32Async_v3020)(CUdeviceptr_v2 dstDevice, unsigned int ui,
                                                      size_t N, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemsetD32Async_v7000_ptsz)(CUdeviceptr_v2 dstDevice,
                                                           unsigned int ui, size_t N,
                                                           CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuMemHostRegister_v6050)(void* p, size_t bytesize,
                                                       unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuMemHostUnregister_v4000)(void* p);
typedef CUresult(CUDAAPI* PFN_cuMemHostGetDevicePointer_v3020)(CUdeviceptr_v2* pdptr, void* p,
                                                               unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuMemGetAddressRange_v3020)(CUdeviceptr_v2* pbase, size_t* psize,
                                                          CUdeviceptr_v2 dptr);
typedef CUresult(CUDAAPI* PFN_cuPointerGetAttribute_v4000)(void* data,
                                                           CUpointer_attribute attribute,
                                                           CUdeviceptr_v2 ptr);
typedef CUresult(CUDAAPI* PFN_cuPointerGetAttributes_v7000)(unsigned int numAttributes,
                                                            CUpointer_attribute* attributes,
                                                            void** data, CUdeviceptr_v2 ptr);
typedef CUresult(CUDAAPI* PFN_cuMemRetainAllocationHandle_v11000)(
    CUmemGenericAllocationHandle_v1* handle, void* addr);
typedef CUresult(CUDAAPI* PFN_cuMemExportToShareableHandle_v10020)(
    void* shareableHandle, CUmemGenericAllocationHandle_v1 handle,
    CUmemAllocationHandleType handleType, unsigned long long flags);
typedef CUresult(CUDAAPI* PFN_cuMemImportFromShareableHandle_v10020)(
    CUmemGenericAllocationHandle_v1* handle, void* osHandle,
    CUmemAllocationHandleType shHandleType);
typedef CUresult(CUDAAPI* PFN_cuMemPoolSetAttribute_v11020)(CUmemoryPool pool,
                                                            CUmemPool_attribute attr, void* value);
typedef CUresult(CUDAAPI* PFN_cuMemPoolGetAttribute_v11020)(CUmemoryPool pool,
                                                            CUmemPool_attribute attr, void* value);
typedef CUresult(CUDAAPI* PFN_cuMemPoolSetAccess_v11020)(CUmemoryPool pool,
                                                         const CUmemAccessDesc_v1* map,
                                                         size_t count);
typedef CUresult(CUDAAPI* PFN_cuMemPoolGetAccess_v11020)(CUmemAccess_flags* flags,
                                                         CUmemoryPool memPool,
                                                         CUmemLocation_v1* location);
typedef CUresult(CUDAAPI* PFN_cuStreamCreateWithPriority_v5050)(CUstream* phStream,
                                                                unsigned int flags, int priority);
typedef CUresult(CUDAAPI* PFN_cuStreamGetPriority_v5050)(CUstream hStream, int* priority);
typedef CUresult(CUDAAPI* PFN_cuStreamGetPriority_v7000_ptsz)(CUstream hStream, int* priority);
typedef CUresult(CUDAAPI* PFN_cuStreamGetFlags_v5050)(CUstream hStream, unsigned int* flags);
typedef CUresult(CUDAAPI* PFN_cuStreamGetFlags_v7000_ptsz)(CUstream hStream, unsigned int* flags);
typedef CUresult(CUDAAPI* PFN_cuStreamGetCtx_v9020)(CUstream hStream, CUcontext* pctx);
typedef CUresult(CUDAAPI* PFN_cuStreamGetCtx_v9020_ptsz)(CUstream hStream, CUcontext* pctx);
typedef CUresult(CUDAAPI* PFN_cuStreamWaitEvent_v3020)(CUstream hStream, CUevent hEvent,
                                                       unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuStreamWaitEvent_v7000_ptsz)(CUstream hStream, CUevent hEvent,
                                                            unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuStreamAddCallback_v5000)(CUstream hStream,
                                                         CUstreamCallback callback, void* userData,
                                                         unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuStreamAddCallback_v7000_ptsz)(CUstream hStream,
                                                              CUstreamCallback callback,
                                                              void* userData, unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuStreamQuery_v2000)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuStreamQuery_v7000_ptsz)(CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuStreamBeginCapture_v10010)(CUstream hStream,
                                                           CUstreamCaptureMode mode);
typedef CUresult(CUDAAPI* PFN_cuStreamEndCapture_v10000)(CUstream hStream, CUgraph* phGraph);
typedef CUresult(CUDAAPI* PFN_cuStreamIsCapturing_v10000)(CUstream hStream,
                                                          CUstreamCaptureStatus* captureStatus);
typedef CUresult(CUDAAPI* PFN_cuStreamGetCaptureInfo_v11030)(
    CUstream hStream, CUstreamCaptureStatus* captureStatus_out, cuuint64_t* id_out,
    CUgraph* graph_out, const CUgraphNode** dependencies_out, size_t* numDependencies_out);
typedef CUresult(CUDAAPI* PFN_cuThreadExchangeStreamCaptureMode_v10010)(CUstreamCaptureMode* mode);
typedef CUresult(CUDAAPI* PFN_cuGraphInstantiateWithFlags_v11040)(CUgraphExec* phGraphExec,
                                                                  CUgraph hGraph,
                                                                  unsigned long long flags);
typedef CUresult(CUDAAPI* PFN_cuGraphLaunch_v10000)(CUgraphExec hGraph, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuGraphDestroy_v10000)(CUgraph hGraph);
typedef CUresult(CUDAAPI* PFN_cuGraphExecDestroy_v10000)(CUgraphExec hGraphExec);
typedef CUresult(CUDAAPI* PFN_cuGraphGetNodes_v10000)(CUgraph hGraph, CUgraphNode* nodes,
                                                      size_t* numNodes);
typedef CUresult(CUDAAPI* PFN_cuStreamWriteValue32_v8000)(CUstream stream, CUdeviceptr_v2 addr,
                                                          cuuint32_t value, unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuStreamWriteValue32_v8000_ptsz)(CUstream stream, CUdeviceptr_v2 addr,
                                                               cuuint32_t value,
                                                               unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuStreamWriteValue32_v11070)(CUstream stream, CUdeviceptr_v2 addr,
                                                           cuuint32_t value, unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuStreamWriteValue32_v11070_ptsz)(CUstream stream,
                                                                CUdeviceptr_v2 addr,
                                                                cuuint32_t value,
                                                                unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuLaunchHostFunc_v10000)(CUstream hStream, CUhostFn fn,
                                                       void* userData);
typedef CUresult(CUDAAPI* PFN_cuLaunchHostFunc_v10000_ptsz)(CUstream hStream, CUhostFn fn,
                                                            void* userData);
typedef CUresult(CUDAAPI* PFN_cuEventCreate_v2000)(CUevent* phEvent, unsigned int Flags);
typedef CUresult(CUDAAPI* PFN_cuEventRecord_v2000)(CUevent hEvent, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuEventRecord_v7000_ptsz)(CUevent hEvent, CUstream hStream);
typedef CUresult(CUDAAPI* PFN_cuEventRecordWithFlags_v11010)(CUevent hEvent, CUstream hStream,
                                                             unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuEventRecordWithFlags_v11010_ptsz)(CUevent hEvent, CUstream hStream,
                                                                  unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuEventQuery_v2000)(CUevent hEvent);
typedef CUresult(CUDAAPI* PFN_cuEventSynchronize_v2000)(CUevent hEvent);
typedef CUresult(CUDAAPI* PFN_cuEventDestroy_v4000)(CUevent hEvent);
typedef CUresult(CUDAAPI* PFN_cuEventElapsedTime_v2000)(float* pMilliseconds, CUevent hStart,
                                                        CUevent hEnd);
typedef CUresult(CUDAAPI* PFN_cuEventElapsedTime_v12080)(float* pMilliseconds, CUevent hStart,
                                                         CUevent hEnd);
typedef CUresult(CUDAAPI* PFN_cuModuleLoad_v2000)(CUmodule* module, const char* fname);
typedef CUresult(CUDAAPI* PFN_cuModuleLoadData_v2000)(CUmodule* module, const void* image);
typedef CUresult(CUDAAPI* PFN_cuModuleLoadDataEx_v2010)(CUmodule* module, const void* image,
                                                        unsigned int numOptions,
                                                        CUjit_option* options, void** optionValues);
typedef CUresult(CUDAAPI* PFN_cuModuleUnload_v2000)(CUmodule hmod);
typedef CUresult(CUDAAPI* PFN_cuModuleGetFunction_v2000)(CUfunction* hfunc, CUmodule hmod,
                                                         const char* name);
typedef CUresult(CUDAAPI* PFN_cuFuncGetAttribute_v2020)(int* pi, CUfunction_attribute attrib,
                                                        CUfunction hfunc);
typedef CUresult(CUDAAPI* PFN_cuFuncSetAttribute_v9000)(CUfunction hfunc,
                                                        CUfunction_attribute attrib, int value);
typedef CUresult(CUDAAPI* PFN_cuFuncSetCacheConfig_v3000)(CUfunction hfunc, CUfunc_cache config);
typedef CUresult(CUDAAPI* PFN_cuKernelGetAttribute_v12000)(int* pi, CUfunction_attribute attrib,
                                                           CUkernel kernel, CUdevice dev);
typedef CUresult(CUDAAPI* PFN_cuLaunchKernel_v4000)(CUfunction f, unsigned int gridDimX,
                                                    unsigned int gridDimY, unsigned int gridDimZ,
                                                    unsigned int blockDimX, unsigned int blockDimY,
                                                    unsigned int blockDimZ,
                                                    unsigned int sharedMemBytes, CUstream hStream,
                                                    void** kernelParams, void** extra);
typedef CUresult(CUDAAPI* PFN_cuLaunchKernel_v7000_ptsz)(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams, void** extra);
typedef CUresult(CUDAAPI* PFN_cuLaunchCooperativeKernel_v9000)(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams);
typedef CUresult(CUDAAPI* PFN_cuLaunchCooperativeKernel_v9000_ptsz)(
    CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,
    unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,
    unsigned int sharedMemBytes, CUstream hStream, void** kernelParams);
typedef CUresult(CUDAAPI* PFN_cuOccupancyMaxActiveBlocksPerMultiprocessor_v6050)(
    int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize);
typedef CUresult(CUDAAPI* PFN_cuLinkCreate_v6050)(unsigned int numOptions, CUjit_option* options,
                                                  void** optionValues, CUlinkState* stateOut);
typedef CUresult(CUDAAPI* PFN_cuLinkAddData_v6050)(CUlinkState state, CUjitInputType type,
                                                   void* data, size_t size, const char* name,
                                                   unsigned int numOptions, CUjit_option* options,
                                                   void** optionValues);
typedef CUresult(CUDAAPI* PFN_cuLinkComplete_v5050)(CUlinkState state, void** cubinOut,
                                                    size_t* sizeOut);
typedef CUresult(CUDAAPI* PFN_cuTensorMapEncodeTiled_v12000)(
    CUtensorMap* tensorMap, CUtensorMapDataType tensorDataType, cuuint32_t tensorRank,
    void* globalAddress, const cuuint64_t* globalDim, const cuuint64_t* globalStrides,
    const cuuint32_t* boxDim, const cuuint32_t* elementStrides, CUtensorMapInterleave interleave,
    CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
    CUtensorMapFloatOOBfill oobFill);

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
typedef CUresult(CUDAAPI* PFN_cuCtxPushCurrent_v2000)(CUcontext ctx);
typedef CUresult(CUDAAPI* PFN_cuCtxPopCurrent_v2000)(CUcontext* pctx);
typedef CUresult(CUDAAPI* PFN_cuDevicePrimaryCtxSetFlags_v7000)(CUdevice_v1 dev,
                                                                unsigned int flags);
typedef CUresult(CUDAAPI* PFN_cuEventDestroy_v2000)(CUevent hEvent);
typedef CUresult(CUDAAPI* PFN_cuMemHostRegister_v4000)(void* p, size_t bytesize,
                                                       unsigned int Flags);
#endif

#ifdef __cplusplus
}
#endif

#endif /* CUDATYPEDEFS_H */
