// Compile-time proof that simcuda's headers declare the ABI of the real CUDA runtime: this
// file compiles only if they agree. It includes the toolkit's headers and then ours, so:
//
// - Our types live in namespace simcuda_abi, and static_asserts compare each enumerator of
//   ours with the toolkit's, each real error code with ours (ours must have them all), and
//   the size, alignment and field offsets of each struct.
// - Our flag macros (cudaHostAllocMapped, cudaStreamPerThread, ...) redefine the toolkit's;
//   a redefinition with different tokens is a diagnostic, an error under -Werror.
// - Each of our functions must name a function of the real header, and our declarations are
//   then compiled after the real ones: a difference in any parameter or return type makes
//   them conflicting declarations of one extern "C" function, a compile error.
//
// abi_check_per_thread.cpp does the same for the per-thread-default-stream entry points.

#include <stddef.h>

// Deprecated functions (cudaGetDriverEntryPoint) are checked like the others; taking their
// address must not warn.
#define CUDA_ENABLE_DEPRECATED 1

#include <cuda_profiler_api.h>  // the toolkit's: cudaProfilerStart and cudaProfilerStop
#include <cuda_runtime_api.h>   // the toolkit's: only its directory is on the include path

#include "same_as_toolkit.h"
#include "simcuda_abi_lists.h"

namespace simcuda_abi {
#include "../include/driver_types.h"
}  // namespace simcuda_abi

// Enumerators: ours have the real values, and every real error code is among ours.
#define SIMCUDA_SAME_VALUE(name)                                                             \
  static_assert(static_cast<long long>(simcuda_abi::name) == static_cast<long long>(::name), \
                #name " differs from the toolkit's");
SIMCUDA_ABI_ENUMERATORS(SIMCUDA_SAME_VALUE)
SIMCUDA_ABI_REAL_ERRORS(SIMCUDA_SAME_VALUE)
#undef SIMCUDA_SAME_VALUE

// Enumeration types, structs and handles.
SIMCUDA_SAME_SIZE(cudaError_t)
SIMCUDA_SAME_SIZE(cudaMemcpyKind)
SIMCUDA_SAME_SIZE(cudaMemLocationType)
SIMCUDA_SAME_SIZE(cudaMemAllocationType)
SIMCUDA_SAME_SIZE(cudaMemAllocationHandleType)
SIMCUDA_SAME_SIZE(cudaGetDriverEntryPointFlags)
SIMCUDA_SAME_SIZE(cudaDriverEntryPointQueryResult)
SIMCUDA_SAME_SIZE(cudaStream_t)
SIMCUDA_SAME_SIZE(cudaMemPool_t)
SIMCUDA_SAME_SIZE(cudaPitchedPtr)
SIMCUDA_SAME_FIELD(cudaPitchedPtr, ptr)
SIMCUDA_SAME_FIELD(cudaPitchedPtr, pitch)
SIMCUDA_SAME_FIELD(cudaPitchedPtr, xsize)
SIMCUDA_SAME_FIELD(cudaPitchedPtr, ysize)
SIMCUDA_SAME_SIZE(cudaExtent)
SIMCUDA_SAME_FIELD(cudaExtent, width)
SIMCUDA_SAME_FIELD(cudaExtent, height)
SIMCUDA_SAME_FIELD(cudaExtent, depth)
SIMCUDA_SAME_SIZE(cudaMemLocation)
SIMCUDA_SAME_FIELD(cudaMemLocation, type)
SIMCUDA_SAME_FIELD(cudaMemLocation, id)
SIMCUDA_SAME_SIZE(cudaMemPoolProps)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, allocType)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, handleTypes)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, location)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, win32SecurityAttributes)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, maxSize)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, usage)
SIMCUDA_SAME_FIELD(cudaMemPoolProps, reserved)

// The structs and handles of the API that PyTorch's libraries import.
SIMCUDA_SAME_SIZE(cudaDeviceProp)
SIMCUDA_SAME_FIELD(cudaDeviceProp, name)
SIMCUDA_SAME_FIELD(cudaDeviceProp, uuid)
SIMCUDA_SAME_FIELD(cudaDeviceProp, totalGlobalMem)
SIMCUDA_SAME_FIELD(cudaDeviceProp, sharedMemPerBlock)
SIMCUDA_SAME_FIELD(cudaDeviceProp, warpSize)
SIMCUDA_SAME_FIELD(cudaDeviceProp, maxThreadsPerBlock)
SIMCUDA_SAME_FIELD(cudaDeviceProp, maxThreadsDim)
SIMCUDA_SAME_FIELD(cudaDeviceProp, maxGridSize)
SIMCUDA_SAME_FIELD(cudaDeviceProp, major)
SIMCUDA_SAME_FIELD(cudaDeviceProp, minor)
SIMCUDA_SAME_FIELD(cudaDeviceProp, multiProcessorCount)
SIMCUDA_SAME_FIELD(cudaDeviceProp, pciBusID)
SIMCUDA_SAME_FIELD(cudaDeviceProp, l2CacheSize)
SIMCUDA_SAME_FIELD(cudaDeviceProp, maxThreadsPerMultiProcessor)
SIMCUDA_SAME_FIELD(cudaDeviceProp, sharedMemPerMultiprocessor)
SIMCUDA_SAME_FIELD(cudaDeviceProp, managedMemory)
SIMCUDA_SAME_FIELD(cudaDeviceProp, sharedMemPerBlockOptin)
SIMCUDA_SAME_FIELD(cudaDeviceProp, maxBlocksPerMultiProcessor)
SIMCUDA_SAME_FIELD(cudaDeviceProp, memoryPoolsSupported)
SIMCUDA_SAME_FIELD(cudaDeviceProp, memoryPoolSupportedHandleTypes)
SIMCUDA_SAME_FIELD(cudaDeviceProp, hostNumaMultinodeIpcSupported)
SIMCUDA_SAME_FIELD(cudaDeviceProp, reserved)
SIMCUDA_SAME_SIZE(cudaFuncAttributes)
SIMCUDA_SAME_FIELD(cudaFuncAttributes, sharedSizeBytes)
SIMCUDA_SAME_FIELD(cudaFuncAttributes, maxThreadsPerBlock)
SIMCUDA_SAME_FIELD(cudaFuncAttributes, maxDynamicSharedSizeBytes)
SIMCUDA_SAME_FIELD(cudaFuncAttributes, nonPortableClusterSizeAllowed)
SIMCUDA_SAME_FIELD(cudaFuncAttributes, reserved)
SIMCUDA_SAME_SIZE(cudaPointerAttributes)
SIMCUDA_SAME_FIELD(cudaPointerAttributes, type)
SIMCUDA_SAME_FIELD(cudaPointerAttributes, device)
SIMCUDA_SAME_FIELD(cudaPointerAttributes, devicePointer)
SIMCUDA_SAME_FIELD(cudaPointerAttributes, hostPointer)
SIMCUDA_SAME_FIELD(cudaPointerAttributes, reserved)
SIMCUDA_SAME_SIZE(cudaLaunchConfig_t)
SIMCUDA_SAME_FIELD(cudaLaunchConfig_t, gridDim)
SIMCUDA_SAME_FIELD(cudaLaunchConfig_t, blockDim)
SIMCUDA_SAME_FIELD(cudaLaunchConfig_t, dynamicSmemBytes)
SIMCUDA_SAME_FIELD(cudaLaunchConfig_t, stream)
SIMCUDA_SAME_FIELD(cudaLaunchConfig_t, attrs)
SIMCUDA_SAME_FIELD(cudaLaunchConfig_t, numAttrs)
SIMCUDA_SAME_SIZE(cudaIpcMemHandle_t)
SIMCUDA_SAME_FIELD(cudaIpcMemHandle_t, reserved)
SIMCUDA_SAME_SIZE(cudaIpcEventHandle_t)
SIMCUDA_SAME_FIELD(cudaIpcEventHandle_t, reserved)
SIMCUDA_SAME_SIZE(cudaGraphEdgeData)
SIMCUDA_SAME_FIELD(cudaGraphEdgeData, from_port)
SIMCUDA_SAME_FIELD(cudaGraphEdgeData, to_port)
SIMCUDA_SAME_FIELD(cudaGraphEdgeData, type)
SIMCUDA_SAME_FIELD(cudaGraphEdgeData, reserved)
SIMCUDA_SAME_SIZE(cudaMemAccessDesc)
SIMCUDA_SAME_FIELD(cudaMemAccessDesc, location)
SIMCUDA_SAME_FIELD(cudaMemAccessDesc, flags)
SIMCUDA_SAME_SIZE(dim3)
SIMCUDA_SAME_FIELD(dim3, x)
SIMCUDA_SAME_FIELD(dim3, y)
SIMCUDA_SAME_FIELD(dim3, z)
SIMCUDA_SAME_SIZE(cudaUUID_t)
SIMCUDA_SAME_FIELD(cudaUUID_t, bytes)
SIMCUDA_SAME_SIZE(cudaDeviceAttr)
SIMCUDA_SAME_SIZE(cudaFuncAttribute)
SIMCUDA_SAME_SIZE(cudaMemoryType)
SIMCUDA_SAME_SIZE(cudaStreamCaptureStatus)
SIMCUDA_SAME_SIZE(cudaStreamCaptureMode)
SIMCUDA_SAME_SIZE(cudaGraphMemAttributeType)
SIMCUDA_SAME_SIZE(cudaMemPoolAttr)
SIMCUDA_SAME_SIZE(cudaMemAccessFlags)
SIMCUDA_SAME_SIZE(cudaEvent_t)
SIMCUDA_SAME_SIZE(cudaKernel_t)
SIMCUDA_SAME_SIZE(cudaGraph_t)
SIMCUDA_SAME_SIZE(cudaGraphExec_t)
SIMCUDA_SAME_SIZE(cudaGraphConditionalHandle)

// Every function we declare exists in the real header...
#define SIMCUDA_DECLARED_BY_TOOLKIT(name) \
  [[maybe_unused]] static constexpr auto* real_##name = &::name;
SIMCUDA_ABI_PLAIN_FUNCTIONS(SIMCUDA_DECLARED_BY_TOOLKIT)
#undef SIMCUDA_DECLARED_BY_TOOLKIT

// ...and our declarations of them agree with it. Default arguments may not be repeated.
#define SIMCUDA_DEFAULT_ARG(value)
#include "../include/cuda_runtime_api.h"

static_assert(CUDART_VERSION >= 13000, "abi_check compares with the CUDA 13 headers");
