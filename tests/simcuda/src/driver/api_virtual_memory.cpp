// Driver API: virtual memory management (virtual_memory.h has the model).
//
// The granularity is 2 MiB, minimum and recommended, as on current GPUs. Only device memory
// can be created (CU_MEM_LOCATION_TYPE_DEVICE, pinned type); host locations, Windows and fabric
// handles, and the tile-pool and decompression usages are CUDA_ERROR_NOT_SUPPORTED. A request
// for compressible memory gets ordinary memory, which cuMemGetAllocationPropertiesFromHandle
// reports, as the real driver does on devices without compression. These calls need cuInit but
// no current context.
//
// Sharing: a handle created with CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR among its requested
// types exports as a new file descriptor (the caller closes it) of the device's memory file,
// the memfd whose chunks back every handle of the device (physical_memory.h): mapping it shows
// the handle's bytes, at the offsets of its chunks. A handle created without that type is
// CUDA_ERROR_INVALID_VALUE, fabric and Windows handles are CUDA_ERROR_NOT_SUPPORTED (cuMemCreate
// refuses them already, so a program that asks for fabric memory first, as PyTorch does, falls
// back to descriptors). Importing is CUDA_ERROR_NOT_SUPPORTED for every type: a descriptor of
// the whole file does not say which chunks are the handle's. cuMemRetainAllocationHandle gives
// the handle mapped at an address with one more reference, which needs its own cuMemRelease.

#include <cstdint>

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::initialized;
using simcuda::driver::VirtualMemory;

namespace {

// Checks a CUmemAllocationProp as cuMemCreate and cuMemGetAllocationGranularity read it.
CUresult check_properties(const Driver& driver, const CUmemAllocationProp& prop) {
  if (prop.type != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
  switch (prop.location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
      if (!driver.valid_device(prop.location.id)) return CUDA_ERROR_INVALID_DEVICE;
      break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
      return CUDA_ERROR_NOT_SUPPORTED;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  constexpr unsigned int kKnownHandleTypes =
      CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR | CU_MEM_HANDLE_TYPE_WIN32 |
      CU_MEM_HANDLE_TYPE_WIN32_KMT | CU_MEM_HANDLE_TYPE_FABRIC;
  const auto handle_types = static_cast<unsigned int>(prop.requestedHandleTypes);
  if ((handle_types & ~kKnownHandleTypes) != 0) return CUDA_ERROR_INVALID_VALUE;
  if ((handle_types & ~CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  // Only Windows handles take metadata.
  if (prop.win32HandleMetaData != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (prop.allocFlags.compressionType > CU_MEM_ALLOCATION_COMP_GENERIC) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop.allocFlags.usage != 0) return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

bool aligned_to_granularity(std::size_t value) {
  return value % VirtualMemory::kGranularity == 0;
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuMemGetAllocationGranularity(
    size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags option) {
  return initialized([&](Driver& driver) {
    if (granularity == nullptr || prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
        option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (const CUresult result = check_properties(driver, *prop); result != CUDA_SUCCESS) {
      return result;
    }
    *granularity = VirtualMemory::kGranularity;
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                                   CUdeviceptr addr, unsigned long long flags) {
  return initialized([&](Driver& driver) {
    if (ptr == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.reserve(size, alignment, addr, ptr);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  return initialized([&](Driver& driver) { return driver.free_reservation(ptr, size); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                           const CUmemAllocationProp* prop,
                                           unsigned long long flags) {
  return initialized([&](Driver& driver) {
    if (handle == nullptr || prop == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult result = check_properties(driver, *prop); result != CUDA_SUCCESS) {
      return result;
    }
    if (size == 0 || !aligned_to_granularity(size)) return CUDA_ERROR_INVALID_VALUE;
    CUmemAllocationProp granted = *prop;
    granted.allocFlags.compressionType = CU_MEM_ALLOCATION_COMP_NONE;
    return driver.create_physical(prop->location.id, size, granted, handle);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  return initialized([&](Driver& driver) { return driver.release_physical(handle); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                        CUmemGenericAllocationHandle handle,
                                        unsigned long long flags) {
  return initialized([&](Driver& driver) {
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.map(ptr, size, offset, handle);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  return initialized([&](Driver& driver) { return driver.unmap(ptr, size); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                              const CUmemAccessDesc* desc, size_t count) {
  return initialized([&](Driver& driver) {
    if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      // Memory created on a device can be made accessible to devices only.
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      if (!driver.valid_device(desc[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
      const CUmemAccess_flags flags = desc[i].flags;
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
          flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    return driver.set_access(ptr, size, desc, count);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemGetAllocationPropertiesFromHandle(
    CUmemAllocationProp* prop, CUmemGenericAllocationHandle handle) {
  return initialized([&](Driver& driver) {
    if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.physical_properties(handle, prop);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle,
                                                           void* addr) {
  return initialized([&](Driver& driver) {
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.retain_handle(reinterpret_cast<std::uintptr_t>(addr), handle);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemExportToShareableHandle(void* shareableHandle,
                                                            CUmemGenericAllocationHandle handle,
                                                            CUmemAllocationHandleType handleType,
                                                            unsigned long long flags) {
  return initialized([&](Driver& driver) {
    if (shareableHandle == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    switch (handleType) {
      case CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR: {
        int fd = -1;
        if (const CUresult result = driver.export_descriptor(handle, &fd); result != CUDA_SUCCESS) {
          return result;
        }
        *static_cast<int*>(shareableHandle) = fd;
        return CUDA_SUCCESS;
      }
      case CU_MEM_HANDLE_TYPE_WIN32:
      case CU_MEM_HANDLE_TYPE_WIN32_KMT:
      case CU_MEM_HANDLE_TYPE_FABRIC:
        return CUDA_ERROR_NOT_SUPPORTED;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemImportFromShareableHandle(
    CUmemGenericAllocationHandle* handle, void* osHandle, CUmemAllocationHandleType shHandleType) {
  return initialized([&](Driver&) {
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    switch (shHandleType) {
      case CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR:
      case CU_MEM_HANDLE_TYPE_WIN32:
      case CU_MEM_HANDLE_TYPE_WIN32_KMT:
      case CU_MEM_HANDLE_TYPE_FABRIC:
        static_cast<void>(osHandle);
        return CUDA_ERROR_NOT_SUPPORTED;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  });
}
