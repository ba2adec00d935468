// How the runtime reaches the device: through libcuda.so.1, found and bound as the real
// libcudart binds it. At first use it dlopens "libcuda.so.1", looks up cuGetProcAddress_v2 with
// dlsym, asks it for every driver function it needs by API name and with the runtime's own CUDA
// version, and calls cuInit. It never links the driver, so a program that has the runtime but no
// driver starts, and its calls fail with cudaErrorInsufficientDriver.
#pragma once

#include <type_traits>

#include "cuda.h"
#include "cudaTypedefs.h"
#include "cuda_runtime_api.h"

namespace simcuda::runtime {

// The CUDA version of this build of the runtime (13000 or 12080): what it asks the driver for.
inline constexpr int kRuntimeVersion = SIMCUDA_RUNTIME_VERSION;

// cuCtxGetDevice and cuCtxSynchronize took a context argument in CUDA 13.0, so which ABI the
// driver hands out depends on the version asked for.
using CtxGetDeviceFn = std::conditional_t<(kRuntimeVersion >= 13000), PFN_cuCtxGetDevice_v13000,
                                          PFN_cuCtxGetDevice_v2000>;
using CtxSynchronizeFn = std::conditional_t<(kRuntimeVersion >= 13000), PFN_cuCtxSynchronize_v13000,
                                            PFN_cuCtxSynchronize_v2000>;

// Every driver function the runtime calls: X(member, API name, type, stream flag). The type
// names the ABI the runtime expects for its version; the _ptds/_ptsz members are those found with
// CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, for the runtime's per-thread entry points.
// The API name is stringized as written ("cuMemAlloc"); as a member name it goes through cuda.h's
// macros like every other use of it (driver.cuMemAlloc is the member cuMemAlloc_v2).
// clang-format off
#define SIMCUDA_DRIVER_FUNCTIONS(X) \
  X(cuInit, cuInit, PFN_cuInit_v2000, LEGACY_STREAM) \
  X(cuDriverGetVersion, cuDriverGetVersion, PFN_cuDriverGetVersion_v2020, LEGACY_STREAM) \
  X(cuDeviceGetCount, cuDeviceGetCount, PFN_cuDeviceGetCount_v2000, LEGACY_STREAM) \
  X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, PFN_cuDeviceGetDefaultMemPool_v11020, LEGACY_STREAM) \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, PFN_cuDevicePrimaryCtxRetain_v7000, LEGACY_STREAM) \
  X(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, PFN_cuDevicePrimaryCtxReset_v11000, LEGACY_STREAM) \
  X(cuCtxGetCurrent, cuCtxGetCurrent, PFN_cuCtxGetCurrent_v4000, LEGACY_STREAM) \
  X(cuCtxSetCurrent, cuCtxSetCurrent, PFN_cuCtxSetCurrent_v4000, LEGACY_STREAM) \
  X(cuCtxGetDevice, cuCtxGetDevice, CtxGetDeviceFn, LEGACY_STREAM) \
  X(cuCtxSynchronize, cuCtxSynchronize, CtxSynchronizeFn, LEGACY_STREAM) \
  X(cuMemGetInfo, cuMemGetInfo, PFN_cuMemGetInfo_v3020, LEGACY_STREAM) \
  X(cuMemAlloc, cuMemAlloc, PFN_cuMemAlloc_v3020, LEGACY_STREAM) \
  X(cuMemAllocPitch, cuMemAllocPitch, PFN_cuMemAllocPitch_v3020, LEGACY_STREAM) \
  X(cuMemFree, cuMemFree, PFN_cuMemFree_v3020, LEGACY_STREAM) \
  X(cuMemAllocManaged, cuMemAllocManaged, PFN_cuMemAllocManaged_v6000, LEGACY_STREAM) \
  X(cuMemHostAlloc, cuMemHostAlloc, PFN_cuMemHostAlloc_v2020, LEGACY_STREAM) \
  X(cuMemAllocHost, cuMemAllocHost, PFN_cuMemAllocHost_v3020, LEGACY_STREAM) \
  X(cuMemFreeHost, cuMemFreeHost, PFN_cuMemFreeHost_v2000, LEGACY_STREAM) \
  X(cuMemcpy, cuMemcpy, PFN_cuMemcpy_v4000, LEGACY_STREAM) \
  X(cuMemcpyHtoD, cuMemcpyHtoD, PFN_cuMemcpyHtoD_v3020, LEGACY_STREAM) \
  X(cuMemcpyDtoH, cuMemcpyDtoH, PFN_cuMemcpyDtoH_v3020, LEGACY_STREAM) \
  X(cuMemcpyDtoD, cuMemcpyDtoD, PFN_cuMemcpyDtoD_v3020, LEGACY_STREAM) \
  X(cuMemsetD8, cuMemsetD8, PFN_cuMemsetD8_v3020, LEGACY_STREAM) \
  X(cuMemAllocAsync, cuMemAllocAsync, PFN_cuMemAllocAsync_v11020, LEGACY_STREAM) \
  X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020, LEGACY_STREAM) \
  X(cuMemFreeAsync, cuMemFreeAsync, PFN_cuMemFreeAsync_v11020, LEGACY_STREAM) \
  X(cuMemPoolCreate, cuMemPoolCreate, PFN_cuMemPoolCreate_v11020, LEGACY_STREAM) \
  X(cuMemPoolDestroy, cuMemPoolDestroy, PFN_cuMemPoolDestroy_v11020, LEGACY_STREAM) \
  X(cuMemPoolTrimTo, cuMemPoolTrimTo, PFN_cuMemPoolTrimTo_v11020, LEGACY_STREAM) \
  X(cuStreamCreate, cuStreamCreate, PFN_cuStreamCreate_v2000, LEGACY_STREAM) \
  X(cuStreamDestroy, cuStreamDestroy, PFN_cuStreamDestroy_v4000, LEGACY_STREAM) \
  X(cuStreamSynchronize, cuStreamSynchronize, PFN_cuStreamSynchronize_v2000, LEGACY_STREAM) \
  X(cuMemcpy_ptds, cuMemcpy, PFN_cuMemcpy_v7000_ptds, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemcpyHtoD_ptds, cuMemcpyHtoD, PFN_cuMemcpyHtoD_v7000_ptds, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemcpyDtoH_ptds, cuMemcpyDtoH, PFN_cuMemcpyDtoH_v7000_ptds, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemcpyDtoD_ptds, cuMemcpyDtoD, PFN_cuMemcpyDtoD_v7000_ptds, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemsetD8_ptds, cuMemsetD8, PFN_cuMemsetD8_v7000_ptds, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemAllocAsync_ptsz, cuMemAllocAsync, PFN_cuMemAllocAsync_v11020_ptsz, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, PFN_cuMemAllocFromPoolAsync_v11020_ptsz, PER_THREAD_DEFAULT_STREAM) \
  X(cuMemFreeAsync_ptsz, cuMemFreeAsync, PFN_cuMemFreeAsync_v11020_ptsz, PER_THREAD_DEFAULT_STREAM) \
  X(cuStreamSynchronize_ptsz, cuStreamSynchronize, PFN_cuStreamSynchronize_v7000_ptsz, PER_THREAD_DEFAULT_STREAM) \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, PFN_cuDeviceGetAttribute_v2000, LEGACY_STREAM) \
  X(cuDeviceGetName, cuDeviceGetName, PFN_cuDeviceGetName_v2000, LEGACY_STREAM) \
  X(cuDeviceTotalMem, cuDeviceTotalMem, PFN_cuDeviceTotalMem_v3020, LEGACY_STREAM) \
  X(cuDeviceGetUuid, cuDeviceGetUuid, PFN_cuDeviceGetUuid_v11040, LEGACY_STREAM) \
  X(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, PFN_cuDeviceGetPCIBusId_v4010, LEGACY_STREAM) \
  X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, PFN_cuDeviceCanAccessPeer_v4000, LEGACY_STREAM) \
  X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, PFN_cuCtxEnablePeerAccess_v4000, LEGACY_STREAM) \
  X(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, PFN_cuCtxGetStreamPriorityRange_v5050, LEGACY_STREAM) \
  X(cuStreamCreateWithPriority, cuStreamCreateWithPriority, PFN_cuStreamCreateWithPriority_v5050, LEGACY_STREAM) \
  X(cuStreamGetPriority, cuStreamGetPriority, PFN_cuStreamGetPriority_v5050, LEGACY_STREAM) \
  X(cuStreamQuery, cuStreamQuery, PFN_cuStreamQuery_v2000, LEGACY_STREAM) \
  X(cuStreamGetFlags, cuStreamGetFlags, PFN_cuStreamGetFlags_v5050, LEGACY_STREAM) \
  X(cuStreamBeginCapture, cuStreamBeginCapture, PFN_cuStreamBeginCapture_v10010, LEGACY_STREAM) \
  X(cuStreamEndCapture, cuStreamEndCapture, PFN_cuStreamEndCapture_v10000, LEGACY_STREAM) \
  X(cuStreamIsCapturing, cuStreamIsCapturing, PFN_cuStreamIsCapturing_v10000, LEGACY_STREAM) \
  X(cuStreamGetCaptureInfo, cuStreamGetCaptureInfo, PFN_cuStreamGetCaptureInfo_v11030, LEGACY_STREAM) \
  X(cuThreadExchangeStreamCaptureMode, cuThreadExchangeStreamCaptureMode, PFN_cuThreadExchangeStreamCaptureMode_v10010, LEGACY_STREAM) \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, PFN_cuGraphInstantiateWithFlags_v11040, LEGACY_STREAM) \
  X(cuGraphLaunch, cuGraphLaunch, PFN_cuGraphLaunch_v10000, LEGACY_STREAM) \
  X(cuGraphDestroy, cuGraphDestroy, PFN_cuGraphDestroy_v10000, LEGACY_STREAM) \
  X(cuGraphExecDestroy, cuGraphExecDestroy, PFN_cuGraphExecDestroy_v10000, LEGACY_STREAM) \
  X(cuGraphGetNodes, cuGraphGetNodes, PFN_cuGraphGetNodes_v10000, LEGACY_STREAM) \
  X(cuStreamWaitEvent, cuStreamWaitEvent, PFN_cuStreamWaitEvent_v3020, LEGACY_STREAM) \
  X(cuStreamAddCallback, cuStreamAddCallback, PFN_cuStreamAddCallback_v5000, LEGACY_STREAM) \
  X(cuLaunchHostFunc, cuLaunchHostFunc, PFN_cuLaunchHostFunc_v10000, LEGACY_STREAM) \
  X(cuEventCreate, cuEventCreate, PFN_cuEventCreate_v2000, LEGACY_STREAM) \
  X(cuEventRecord, cuEventRecord, PFN_cuEventRecord_v2000, LEGACY_STREAM) \
  X(cuEventRecordWithFlags, cuEventRecordWithFlags, PFN_cuEventRecordWithFlags_v11010, LEGACY_STREAM) \
  X(cuEventQuery, cuEventQuery, PFN_cuEventQuery_v2000, LEGACY_STREAM) \
  X(cuEventSynchronize, cuEventSynchronize, PFN_cuEventSynchronize_v2000, LEGACY_STREAM) \
  X(cuEventDestroy, cuEventDestroy, PFN_cuEventDestroy_v4000, LEGACY_STREAM) \
  X(cuEventElapsedTime, cuEventElapsedTime, PFN_cuEventElapsedTime_v12080, LEGACY_STREAM) \
  X(cuMemcpyAsync, cuMemcpyAsync, PFN_cuMemcpyAsync_v4000, LEGACY_STREAM) \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync, PFN_cuMemcpyHtoDAsync_v3020, LEGACY_STREAM) \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync, PFN_cuMemcpyDtoHAsync_v3020, LEGACY_STREAM) \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync, PFN_cuMemcpyDtoDAsync_v3020, LEGACY_STREAM) \
  X(cuMemsetD8Async, cuMemsetD8Async, PFN_cuMemsetD8Async_v3020, LEGACY_STREAM) \
  X(cuMemHostRegister, cuMemHostRegister, PFN_cuMemHostRegister_v6050, LEGACY_STREAM) \
  X(cuMemHostUnregister, cuMemHostUnregister, PFN_cuMemHostUnregister_v4000, LEGACY_STREAM) \
  X(cuPointerGetAttributes, cuPointerGetAttributes, PFN_cuPointerGetAttributes_v7000, LEGACY_STREAM) \
  X(cuMemPoolSetAttribute, cuMemPoolSetAttribute, PFN_cuMemPoolSetAttribute_v11020, LEGACY_STREAM) \
  X(cuMemPoolGetAttribute, cuMemPoolGetAttribute, PFN_cuMemPoolGetAttribute_v11020, LEGACY_STREAM) \
  X(cuMemPoolSetAccess, cuMemPoolSetAccess, PFN_cuMemPoolSetAccess_v11020, LEGACY_STREAM)
// clang-format on

struct Driver {
  // cudaSuccess, or cudaErrorInsufficientDriver when libcuda.so.1 could not be loaded, lacks
  // cuGetProcAddress_v2, is older than the runtime or lacks one of the functions.
  cudaError_t load_error = cudaErrorInsufficientDriver;
  // What cuInit returned, as a runtime error; cudaErrorInsufficientDriver when not loaded.
  cudaError_t init_error = cudaErrorInsufficientDriver;
  int device_count = 0;  // once initialised
  PFN_cuGetProcAddress_v12000 cuGetProcAddress = nullptr;
#define SIMCUDA_DRIVER_MEMBER(member, api, type, flag) type member = nullptr;
  SIMCUDA_DRIVER_FUNCTIONS(SIMCUDA_DRIVER_MEMBER)
#undef SIMCUDA_DRIVER_MEMBER
};

// The driver, loaded and initialised at the first call. Never unloaded.
const Driver& driver();

}  // namespace simcuda::runtime
