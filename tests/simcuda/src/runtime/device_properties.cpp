// The runtime's view of a device: its properties and attributes, read from the driver
// (cuDeviceGetAttribute, cuDeviceGetName, cuDeviceTotalMem, cuDeviceGetUuid), which holds the
// one description of the simulated device; peer access and stream priorities the same way.
//
// cudaGetDeviceProperties fills every field of cudaDeviceProp that has a device attribute; the
// texture and surface limits, which nothing here uses, and luid (Windows only) stay 0.
// Graph memory: no graph is ever instantiated here, so its attributes are 0, and the high
// water marks can be reset (to 0) as documented.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "entry_support.h"

namespace {

using simcuda::record;
using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::in_context;
using simcuda::runtime::with_driver;

static_assert(sizeof(cudaUUID_t) == sizeof(CUuuid));

// A field of cudaDeviceProp and the attribute it reports.
struct PropertyField {
  std::size_t offset;
  std::size_t size;  // sizeof(int) or sizeof(size_t)
  cudaDeviceAttr attribute;
};

#define SIMCUDA_FIELD(field, attr)                                       \
  PropertyField {                                                        \
    offsetof(cudaDeviceProp, field), sizeof(cudaDeviceProp::field), attr \
  }
#define SIMCUDA_ELEMENT(field, index, attr)                                    \
  PropertyField {                                                              \
    offsetof(cudaDeviceProp, field) + (index) * sizeof(int), sizeof(int), attr \
  }

// clang-format off
constexpr PropertyField kPropertyFields[] = {
  SIMCUDA_FIELD(sharedMemPerBlock, cudaDevAttrMaxSharedMemoryPerBlock),
  SIMCUDA_FIELD(regsPerBlock, cudaDevAttrMaxRegistersPerBlock),
  SIMCUDA_FIELD(warpSize, cudaDevAttrWarpSize),
  SIMCUDA_FIELD(memPitch, cudaDevAttrMaxPitch),
  SIMCUDA_FIELD(maxThreadsPerBlock, cudaDevAttrMaxThreadsPerBlock),
  SIMCUDA_ELEMENT(maxThreadsDim, 0, cudaDevAttrMaxBlockDimX),
  SIMCUDA_ELEMENT(maxThreadsDim, 1, cudaDevAttrMaxBlockDimY),
  SIMCUDA_ELEMENT(maxThreadsDim, 2, cudaDevAttrMaxBlockDimZ),
  SIMCUDA_ELEMENT(maxGridSize, 0, cudaDevAttrMaxGridDimX),
  SIMCUDA_ELEMENT(maxGridSize, 1, cudaDevAttrMaxGridDimY),
  SIMCUDA_ELEMENT(maxGridSize, 2, cudaDevAttrMaxGridDimZ),
  SIMCUDA_FIELD(totalConstMem, cudaDevAttrTotalConstantMemory),
  SIMCUDA_FIELD(major, cudaDevAttrComputeCapabilityMajor),
  SIMCUDA_FIELD(minor, cudaDevAttrComputeCapabilityMinor),
  SIMCUDA_FIELD(textureAlignment, cudaDevAttrTextureAlignment),
  SIMCUDA_FIELD(texturePitchAlignment, cudaDevAttrTexturePitchAlignment),
  SIMCUDA_FIELD(multiProcessorCount, cudaDevAttrMultiProcessorCount),
  SIMCUDA_FIELD(integrated, cudaDevAttrIntegrated),
  SIMCUDA_FIELD(canMapHostMemory, cudaDevAttrCanMapHostMemory),
  SIMCUDA_FIELD(concurrentKernels, cudaDevAttrConcurrentKernels),
  SIMCUDA_FIELD(ECCEnabled, cudaDevAttrEccEnabled),
  SIMCUDA_FIELD(pciBusID, cudaDevAttrPciBusId),
  SIMCUDA_FIELD(pciDeviceID, cudaDevAttrPciDeviceId),
  SIMCUDA_FIELD(pciDomainID, cudaDevAttrPciDomainId),
  SIMCUDA_FIELD(tccDriver, cudaDevAttrTccDriver),
  SIMCUDA_FIELD(asyncEngineCount, cudaDevAttrAsyncEngineCount),
  SIMCUDA_FIELD(unifiedAddressing, cudaDevAttrUnifiedAddressing),
  SIMCUDA_FIELD(memoryBusWidth, cudaDevAttrGlobalMemoryBusWidth),
  SIMCUDA_FIELD(l2CacheSize, cudaDevAttrL2CacheSize),
  SIMCUDA_FIELD(persistingL2CacheMaxSize, cudaDevAttrMaxPersistingL2CacheSize),
  SIMCUDA_FIELD(maxThreadsPerMultiProcessor, cudaDevAttrMaxThreadsPerMultiProcessor),
  SIMCUDA_FIELD(streamPrioritiesSupported, cudaDevAttrStreamPrioritiesSupported),
  SIMCUDA_FIELD(globalL1CacheSupported, cudaDevAttrGlobalL1CacheSupported),
  SIMCUDA_FIELD(localL1CacheSupported, cudaDevAttrLocalL1CacheSupported),
  SIMCUDA_FIELD(sharedMemPerMultiprocessor, cudaDevAttrMaxSharedMemoryPerMultiprocessor),
  SIMCUDA_FIELD(regsPerMultiprocessor, cudaDevAttrMaxRegistersPerMultiprocessor),
  SIMCUDA_FIELD(managedMemory, cudaDevAttrManagedMemory),
  SIMCUDA_FIELD(isMultiGpuBoard, cudaDevAttrIsMultiGpuBoard),
  SIMCUDA_FIELD(multiGpuBoardGroupID, cudaDevAttrMultiGpuBoardGroupID),
  SIMCUDA_FIELD(hostNativeAtomicSupported, cudaDevAttrHostNativeAtomicSupported),
  SIMCUDA_FIELD(pageableMemoryAccess, cudaDevAttrPageableMemoryAccess),
  SIMCUDA_FIELD(concurrentManagedAccess, cudaDevAttrConcurrentManagedAccess),
  SIMCUDA_FIELD(computePreemptionSupported, cudaDevAttrComputePreemptionSupported),
  SIMCUDA_FIELD(canUseHostPointerForRegisteredMem, cudaDevAttrCanUseHostPointerForRegisteredMem),
  SIMCUDA_FIELD(cooperativeLaunch, cudaDevAttrCooperativeLaunch),
  SIMCUDA_FIELD(sharedMemPerBlockOptin, cudaDevAttrMaxSharedMemoryPerBlockOptin),
  SIMCUDA_FIELD(pageableMemoryAccessUsesHostPageTables, cudaDevAttrPageableMemoryAccessUsesHostPageTables),
  SIMCUDA_FIELD(directManagedMemAccessFromHost, cudaDevAttrDirectManagedMemAccessFromHost),
  SIMCUDA_FIELD(maxBlocksPerMultiProcessor, cudaDevAttrMaxBlocksPerMultiprocessor),
  SIMCUDA_FIELD(accessPolicyMaxWindowSize, cudaDevAttrMaxAccessPolicyWindowSize),
  SIMCUDA_FIELD(reservedSharedMemPerBlock, cudaDevAttrReservedSharedMemoryPerBlock),
  SIMCUDA_FIELD(hostRegisterSupported, cudaDevAttrHostRegisterSupported),
  SIMCUDA_FIELD(sparseCudaArraySupported, cudaDevAttrSparseCudaArraySupported),
  SIMCUDA_FIELD(hostRegisterReadOnlySupported, cudaDevAttrHostRegisterReadOnlySupported),
  SIMCUDA_FIELD(timelineSemaphoreInteropSupported, cudaDevAttrTimelineSemaphoreInteropSupported),
  SIMCUDA_FIELD(memoryPoolsSupported, cudaDevAttrMemoryPoolsSupported),
  SIMCUDA_FIELD(gpuDirectRDMASupported, cudaDevAttrGPUDirectRDMASupported),
  SIMCUDA_FIELD(gpuDirectRDMAFlushWritesOptions, cudaDevAttrGPUDirectRDMAFlushWritesOptions),
  SIMCUDA_FIELD(gpuDirectRDMAWritesOrdering, cudaDevAttrGPUDirectRDMAWritesOrdering),
  SIMCUDA_FIELD(memoryPoolSupportedHandleTypes, cudaDevAttrMemoryPoolSupportedHandleTypes),
  SIMCUDA_FIELD(deferredMappingCudaArraySupported, cudaDevAttrDeferredMappingCudaArraySupported),
  SIMCUDA_FIELD(ipcEventSupported, cudaDevAttrIpcEventSupport),
  SIMCUDA_FIELD(clusterLaunch, cudaDevAttrClusterLaunch),
  SIMCUDA_FIELD(deviceNumaConfig, cudaDevAttrNumaConfig),
  SIMCUDA_FIELD(deviceNumaId, cudaDevAttrNumaId),
  SIMCUDA_FIELD(mpsEnabled, cudaDevAttrMpsEnabled),
  SIMCUDA_FIELD(hostNumaId, cudaDevAttrHostNumaId),
  SIMCUDA_FIELD(gpuPciDeviceID, cudaDevAttrGpuPciDeviceId),
  SIMCUDA_FIELD(gpuPciSubsystemID, cudaDevAttrGpuPciSubsystemId),
  SIMCUDA_FIELD(hostNumaMultinodeIpcSupported, cudaDevAttrHostNumaMultinodeIpcSupported),
};
// clang-format on
#undef SIMCUDA_FIELD
#undef SIMCUDA_ELEMENT

cudaError_t fill_properties(const Driver& driver, cudaDeviceProp* prop, int device) {
  cudaDeviceProp filled{};
  if (const CUresult result = driver.cuDeviceGetName(filled.name, sizeof filled.name, device);
      result != CUDA_SUCCESS) {
    return from_driver(result);
  }
  CUuuid uuid{};
  if (const CUresult result = driver.cuDeviceGetUuid(&uuid, device); result != CUDA_SUCCESS) {
    return from_driver(result);
  }
  std::memcpy(&filled.uuid, &uuid, sizeof uuid);
  std::size_t total = 0;
  if (const CUresult result = driver.cuDeviceTotalMem(&total, device); result != CUDA_SUCCESS) {
    return from_driver(result);
  }
  filled.totalGlobalMem = total;
  auto* bytes = reinterpret_cast<unsigned char*>(&filled);
  for (const PropertyField& field : kPropertyFields) {
    int value = 0;
    const CUresult result = driver.cuDeviceGetAttribute(
        &value, static_cast<CUdevice_attribute>(field.attribute), device);
    if (result != CUDA_SUCCESS) return from_driver(result);
    if (field.size == sizeof(int)) {
      std::memcpy(bytes + field.offset, &value, sizeof value);
    } else {
      // Sizes are reported as int attributes; none here is negative.
      const auto wide = static_cast<std::size_t>(static_cast<unsigned int>(value));
      std::memcpy(bytes + field.offset, &wide, sizeof wide);
    }
  }
  *prop = filled;
  return cudaSuccess;
}

}  // namespace

SIMCUDA_EXPORT cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
  return with_driver([&](const Driver& driver) {
    if (prop == nullptr) return cudaErrorInvalidValue;
    if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
    return fill_properties(driver, prop, device);
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr,
                                                  int device) {
  return with_driver([&](const Driver& driver) {
    if (value == nullptr) return cudaErrorInvalidValue;
    if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
    return from_driver(
        driver.cuDeviceGetAttribute(value, static_cast<CUdevice_attribute>(attr), device));
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetPCIBusId(char* pciBusId, int len, int device) {
  return with_driver([&](const Driver& driver) {
    if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
    return from_driver(driver.cuDeviceGetPCIBusId(pciBusId, len, device));
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceCanAccessPeer(int* canAccessPeer, int device, int peerDevice) {
  return with_driver([&](const Driver& driver) {
    if (canAccessPeer == nullptr) return cudaErrorInvalidValue;
    if (device < 0 || device >= driver.device_count || peerDevice < 0 ||
        peerDevice >= driver.device_count) {
      return cudaErrorInvalidDevice;
    }
    return from_driver(driver.cuDeviceCanAccessPeer(canAccessPeer, device, peerDevice));
  });
}

// Enables access from the current device's context to the peer device's primary context,
// which is retained for it (once per process, as the runtime's own contexts are).
SIMCUDA_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags) {
  return in_context([&](const Driver& driver) {
    if (flags != 0) return cudaErrorInvalidValue;
    if (peerDevice < 0 || peerDevice >= driver.device_count) return cudaErrorInvalidDevice;
    CUcontext peer = nullptr;
    if (const CUresult result = driver.cuDevicePrimaryCtxRetain(&peer, peerDevice);
        result != CUDA_SUCCESS) {
      return from_driver(result);
    }
    return from_driver(driver.cuCtxEnablePeerAccess(peer, flags));
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetStreamPriorityRange(int* leastPriority,
                                                            int* greatestPriority) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuCtxGetStreamPriorityRange(leastPriority, greatestPriority));
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetGraphMemAttribute(int device,
                                                          enum cudaGraphMemAttributeType attr,
                                                          void* value) {
  return with_driver([&](const Driver& driver) {
    if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
    if (value == nullptr || static_cast<int>(attr) < cudaGraphMemAttrUsedMemCurrent ||
        static_cast<int>(attr) > cudaGraphMemAttrReservedMemHigh) {
      return cudaErrorInvalidValue;
    }
    *static_cast<std::uint64_t*>(value) = 0;
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceSetGraphMemAttribute(int device,
                                                          enum cudaGraphMemAttributeType attr,
                                                          void* value) {
  return with_driver([&](const Driver& driver) {
    if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
    // Only the high water marks can be set, and only back to 0.
    const bool high =
        attr == cudaGraphMemAttrUsedMemHigh || attr == cudaGraphMemAttrReservedMemHigh;
    if (!high || value == nullptr || *static_cast<const std::uint64_t*>(value) != 0) {
      return cudaErrorInvalidValue;
    }
    return cudaSuccess;
  });
}
