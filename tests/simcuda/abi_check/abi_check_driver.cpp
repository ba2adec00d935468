// abi_check.cpp for the driver API: compiles only if simcuda's cuda.h declares the ABI of the
// toolkit's. It includes the toolkit's cuda.h and then ours, so:
//
// - Our types (the first part of cuda.h) live in namespace simcuda_abi, and static_asserts
//   compare each enumerator of ours with the toolkit's, each real CUresult with ours (ours must
//   have them all), typedefs, and the size, alignment and field offsets of each struct.
// - Our macros (CU_MEMHOSTALLOC_*, CU_STREAM_LEGACY, and cuMemAlloc -> cuMemAlloc_v2 and the
//   other API-name mappings) redefine the toolkit's; a redefinition with different tokens is a
//   diagnostic, an error under -Werror.
// - Each of our functions must name a function of the real header, and our declarations are
//   then compiled after the real ones, with the real types: a difference in any parameter or
//   return type makes them conflicting declarations of one extern "C" function.
//
// abi_check_driver_per_thread.cpp does the same for programs built for per-thread default
// streams, abi_check_driver_internal.cpp for the driver's own view (legacy entry points) and
// for cudaTypedefs.h.

#include <stddef.h>

#include <type_traits>

#include <cuda.h>  // the toolkit's: only its directory is on the include path

#include "same_as_toolkit.h"
#include "simcuda_abi_lists.h"

namespace simcuda_abi {
#define SIMCUDA_CUDA_H_TYPES_ONLY
#include "../include/cuda.h"
#undef SIMCUDA_CUDA_H_TYPES_ONLY
}  // namespace simcuda_abi

// Enumerators: ours have the real values, and every real result code is among ours.
#define SIMCUDA_SAME_VALUE(name)                                                             \
  static_assert(static_cast<long long>(simcuda_abi::name) == static_cast<long long>(::name), \
                #name " differs from the toolkit's");
SIMCUDA_ABI_DRIVER_ENUMERATORS(SIMCUDA_SAME_VALUE)
SIMCUDA_ABI_REAL_RESULTS(SIMCUDA_SAME_VALUE)
#undef SIMCUDA_SAME_VALUE

// Typedefs of plain types are the same types.
#define SIMCUDA_SAME_TYPE(type)                            \
  static_assert(std::is_same_v<simcuda_abi::type, ::type>, \
                #type " is another type than the toolkit's");
SIMCUDA_SAME_TYPE(cuuint32_t)
SIMCUDA_SAME_TYPE(cuuint64_t)
SIMCUDA_SAME_TYPE(CUdeviceptr)
SIMCUDA_SAME_TYPE(CUdeviceptr_v2)
SIMCUDA_SAME_TYPE(CUdevice)
SIMCUDA_SAME_TYPE(CUdevice_v1)
SIMCUDA_SAME_TYPE(CUmemGenericAllocationHandle)
SIMCUDA_SAME_TYPE(CUmemGenericAllocationHandle_v1)
// Handles: pointers to the same incomplete structs (CUstream is the runtime's cudaStream_t).
SIMCUDA_SAME_TYPE(CUcontext)
SIMCUDA_SAME_TYPE(CUstream)
SIMCUDA_SAME_TYPE(CUmemoryPool)
SIMCUDA_SAME_TYPE(CUevent)
SIMCUDA_SAME_TYPE(CUmodule)
SIMCUDA_SAME_TYPE(CUfunction)
SIMCUDA_SAME_TYPE(CUkernel)
SIMCUDA_SAME_TYPE(CUlinkState)
SIMCUDA_SAME_TYPE(CUlibrary)
SIMCUDA_SAME_TYPE(CUgraph)
SIMCUDA_SAME_TYPE(CUgraphNode)
SIMCUDA_SAME_TYPE(CUgraphExec)
// Callbacks: the same function pointer types. (CUstreamCallback takes a CUresult, which is
// another enumeration in this namespace; cuStreamAddCallback's declaration checks it.)
SIMCUDA_SAME_TYPE(CUhostFn)
#undef SIMCUDA_SAME_TYPE

// Enumeration types and structs.
SIMCUDA_SAME_SIZE(CUresult)
SIMCUDA_SAME_SIZE(CUmemAttach_flags)
SIMCUDA_SAME_SIZE(CUstream_flags)
SIMCUDA_SAME_SIZE(CUdriverProcAddress_flags)
SIMCUDA_SAME_SIZE(CUdriverProcAddressQueryResult)
SIMCUDA_SAME_SIZE(CUmemAllocationHandleType)
SIMCUDA_SAME_SIZE(CUmemAccess_flags)
SIMCUDA_SAME_SIZE(CUmemLocationType)
SIMCUDA_SAME_SIZE(CUmemAllocationType)
SIMCUDA_SAME_SIZE(CUmemAllocationGranularity_flags)
SIMCUDA_SAME_SIZE(CUmemAllocationCompType)
SIMCUDA_SAME_SIZE(CUmemLocation)
SIMCUDA_SAME_FIELD(CUmemLocation, type)
SIMCUDA_SAME_FIELD(CUmemLocation, id)
SIMCUDA_SAME_SIZE(CUmemAllocationProp)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, type)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, requestedHandleTypes)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, location)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, win32HandleMetaData)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, allocFlags)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, allocFlags.compressionType)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, allocFlags.gpuDirectRDMACapable)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, allocFlags.usage)
SIMCUDA_SAME_FIELD(CUmemAllocationProp, allocFlags.reserved)
SIMCUDA_SAME_SIZE(CUmemAccessDesc)
SIMCUDA_SAME_FIELD(CUmemAccessDesc, location)
SIMCUDA_SAME_FIELD(CUmemAccessDesc, flags)
SIMCUDA_SAME_SIZE(CUmemPoolProps)
SIMCUDA_SAME_FIELD(CUmemPoolProps, allocType)
SIMCUDA_SAME_FIELD(CUmemPoolProps, handleTypes)
SIMCUDA_SAME_FIELD(CUmemPoolProps, location)
SIMCUDA_SAME_FIELD(CUmemPoolProps, win32SecurityAttributes)
SIMCUDA_SAME_FIELD(CUmemPoolProps, maxSize)
SIMCUDA_SAME_FIELD(CUmemPoolProps, usage)
SIMCUDA_SAME_FIELD(CUmemPoolProps, reserved)
SIMCUDA_SAME_SIZE(CUevent_flags)
SIMCUDA_SAME_SIZE(CUevent_record_flags)
SIMCUDA_SAME_SIZE(CUevent_wait_flags)
SIMCUDA_SAME_SIZE(CUstreamWriteValue_flags)
SIMCUDA_SAME_SIZE(CUctx_flags)
SIMCUDA_SAME_SIZE(CUdevice_attribute)
SIMCUDA_SAME_SIZE(CUpointer_attribute)
SIMCUDA_SAME_SIZE(CUmemorytype)
SIMCUDA_SAME_SIZE(CUmemPool_attribute)
SIMCUDA_SAME_SIZE(CUfunction_attribute)
SIMCUDA_SAME_SIZE(CUfunc_cache)
SIMCUDA_SAME_SIZE(CUjitInputType)
SIMCUDA_SAME_SIZE(CUjit_option)
SIMCUDA_SAME_SIZE(CUtensorMapDataType)
SIMCUDA_SAME_SIZE(CUtensorMapInterleave)
SIMCUDA_SAME_SIZE(CUtensorMapSwizzle)
SIMCUDA_SAME_SIZE(CUtensorMapL2promotion)
SIMCUDA_SAME_SIZE(CUtensorMapFloatOOBfill)
SIMCUDA_SAME_SIZE(CUtensorMap)
SIMCUDA_SAME_FIELD(CUtensorMap, opaque)
SIMCUDA_SAME_SIZE(CUlibraryOption)
SIMCUDA_SAME_SIZE(CUmoduleLoadingMode)
SIMCUDA_SAME_SIZE(CUlimit)
SIMCUDA_SAME_SIZE(CUstreamCaptureStatus)
SIMCUDA_SAME_SIZE(CUstreamCaptureMode)
SIMCUDA_SAME_SIZE(CUgraphNodeType)
SIMCUDA_SAME_SIZE(CUlaunchAttributeID)
SIMCUDA_SAME_SIZE(CUlaunchAttributeValue)
SIMCUDA_SAME_FIELD(CUlaunchAttributeValue, cooperative)
SIMCUDA_SAME_FIELD(CUlaunchAttributeValue, clusterDim)
SIMCUDA_SAME_FIELD(CUlaunchAttributeValue, programmaticEvent)
SIMCUDA_SAME_FIELD(CUlaunchAttributeValue, priority)
SIMCUDA_SAME_SIZE(CUlaunchAttribute)
SIMCUDA_SAME_FIELD(CUlaunchAttribute, id)
SIMCUDA_SAME_FIELD(CUlaunchAttribute, value)
SIMCUDA_SAME_SIZE(CUlaunchConfig)
SIMCUDA_SAME_FIELD(CUlaunchConfig, gridDimX)
SIMCUDA_SAME_FIELD(CUlaunchConfig, blockDimZ)
SIMCUDA_SAME_FIELD(CUlaunchConfig, sharedMemBytes)
SIMCUDA_SAME_FIELD(CUlaunchConfig, hStream)
SIMCUDA_SAME_FIELD(CUlaunchConfig, attrs)
SIMCUDA_SAME_FIELD(CUlaunchConfig, numAttrs)
// CUuuid is defined once per program under CU_UUID_HAS_BEEN_DEFINED, which the toolkit's header
// already defined here, so ours is the toolkit's; its layout is checked where the runtime's
// header is (abi_check.cpp).

// Every function we declare exists in the real header, under the symbol its macros map the API
// name to (cuMemAlloc is cuMemAlloc_v2 in both)...
#define SIMCUDA_DECLARED_BY_TOOLKIT(name) \
  [[maybe_unused]] static constexpr auto* real_##name = &::name;
SIMCUDA_ABI_DRIVER_FUNCTIONS(SIMCUDA_DECLARED_BY_TOOLKIT)
#undef SIMCUDA_DECLARED_BY_TOOLKIT

// ...and our declarations of them agree with it.
#include "../include/cuda.h"

static_assert(CUDA_VERSION >= 13000, "abi_check compares with the CUDA 13 headers");
