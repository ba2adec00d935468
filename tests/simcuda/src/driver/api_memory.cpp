// Driver API: device, pitched, managed and pinned host memory.
//
// The legacy entry points (cuMemAlloc, cuMemGetInfo, ... without _v2) have the 32-bit ABI of
// CUDA 3.1 and earlier: 32-bit sizes and 32-bit device addresses. Sizes above 4 GiB are clamped
// where they are reported. Device addresses of the simulation lie above 4 GiB (they are host
// addresses), so a legacy allocation has no 32-bit address to report and fails with
// CUDA_ERROR_OUT_OF_MEMORY, as a driver that has no 32-bit addressable memory left would, and no
// 32-bit address names device memory.

#include <climits>
#include <limits>
#include <optional>

#include "api_support.h"
#include "capture.h"

using simcuda::Arena;
using simcuda::driver::AllocationKind;
using simcuda::driver::Captures;
using simcuda::driver::Driver;
using simcuda::driver::in_context;

namespace {

unsigned int clamp_to_32_bits(std::size_t value) {
  return value > UINT_MAX ? UINT_MAX : static_cast<unsigned int>(value);
}

// Allocating and freeing are "potentially unsafe" during a capture (capture.h).
CUresult allocate(CUdeviceptr* dptr, std::size_t bytesize) {
  return in_context([&](Driver& driver, int device) {
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult unsafe = Captures::get().check_unsafe_call(); unsafe != CUDA_SUCCESS) {
      return unsafe;
    }
    return driver.allocate(device, bytesize, AllocationKind::Device, dptr);
  });
}

// A legacy allocation keeps its memory only if the address fits the 32-bit output.
template <class Allocate>
CUresult allocate_32_bit(unsigned int* dptr, Allocate&& allocate_64_bit) {
  CUdeviceptr address = 0;
  if (const CUresult result = allocate_64_bit(&address); result != CUDA_SUCCESS) return result;
  if (address > UINT_MAX) {
    Driver::get().free_device_memory(address);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = static_cast<unsigned int>(address);
  return CUDA_SUCCESS;
}

CUresult allocate_pitch(CUdeviceptr* dptr, std::size_t* pitch, std::size_t width,
                        std::size_t height, unsigned int element_size) {
  return in_context([&](Driver& driver, int device) {
    if (dptr == nullptr || pitch == nullptr || width == 0 || height == 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (element_size != 4 && element_size != 8 && element_size != 16) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (const CUresult unsafe = Captures::get().check_unsafe_call(); unsafe != CUDA_SUCCESS) {
      return unsafe;
    }
    // Rows start on the allocation alignment, so the pitch is the width rounded up to it.
    const std::optional<std::size_t> row = Arena::round_up(width);
    if (!row || *row > std::numeric_limits<std::size_t>::max() / height) {
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    const CUresult result = driver.allocate(device, *row * height, AllocationKind::Device, dptr);
    if (result == CUDA_SUCCESS) *pitch = *row;
    return result;
  });
}

CUresult free_memory(CUdeviceptr dptr) {
  return in_context([&](Driver& driver, int) {
    // Freeing 0 does nothing and succeeds, as with free(): NVIDIA's runtime frees 0 to make
    // sure a context exists (cudaFree(0) inside cuBLAS) and gives up if the driver refuses.
    if (dptr == 0) return CUDA_SUCCESS;
    if (const CUresult unsafe = Captures::get().check_unsafe_call(); unsafe != CUDA_SUCCESS) {
      return unsafe;
    }
    return driver.free_device_memory(dptr);
  });
}

CUresult memory_info(std::size_t* free, std::size_t* total) {
  return in_context([&](Driver& driver, int device) {
    if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
    driver.memory_info(device, free, total);
    return CUDA_SUCCESS;
  });
}

CUresult host_alloc(void** pp, std::size_t bytesize, unsigned int flags) {
  return in_context([&](Driver& driver, int device) {
    constexpr unsigned int kKnownFlags =
        CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
    if (pp == nullptr || bytesize == 0 || (flags & ~kKnownFlags) != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (const CUresult unsafe = Captures::get().check_unsafe_call(); unsafe != CUDA_SUCCESS) {
      return unsafe;
    }
    return driver.allocate_host(device, bytesize, pp);
  });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  return memory_info(free, total);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemGetInfo(unsigned int* free, unsigned int* total) {
  if (free == nullptr || total == nullptr) return memory_info(nullptr, nullptr);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  const CUresult result = memory_info(&free_bytes, &total_bytes);
  if (result == CUDA_SUCCESS) {
    *free = clamp_to_32_bits(free_bytes);
    *total = clamp_to_32_bits(total_bytes);
  }
  return result;
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  return allocate(dptr, bytesize);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAlloc(CUdeviceptr_v1* dptr, unsigned int bytesize) {
  if (dptr == nullptr) return allocate(nullptr, bytesize);
  return allocate_32_bit(dptr, [&](CUdeviceptr* address) { return allocate(address, bytesize); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch,
                                                  size_t WidthInBytes, size_t Height,
                                                  unsigned int ElementSizeBytes) {
  return allocate_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocPitch(CUdeviceptr_v1* dptr, unsigned int* pPitch,
                                               unsigned int WidthInBytes, unsigned int Height,
                                               unsigned int ElementSizeBytes) {
  if (dptr == nullptr || pPitch == nullptr) {
    return allocate_pitch(nullptr, nullptr, WidthInBytes, Height, ElementSizeBytes);
  }
  std::size_t pitch = 0;
  const CUresult result = allocate_32_bit(dptr, [&](CUdeviceptr* address) {
    return allocate_pitch(address, &pitch, WidthInBytes, Height, ElementSizeBytes);
  });
  if (result == CUDA_SUCCESS) *pPitch = clamp_to_32_bits(pitch);
  return result;
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  return free_memory(dptr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemFree(CUdeviceptr_v1 dptr) {
  return free_memory(dptr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return host_alloc(pp, bytesize, 0);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocHost(void** pp, unsigned int bytesize) {
  return host_alloc(pp, bytesize, 0);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return host_alloc(pp, bytesize, Flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemFreeHost(void* p) {
  return in_context([&](Driver& driver, int) {
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (const CUresult unsafe = Captures::get().check_unsafe_call(); unsafe != CUDA_SUCCESS) {
      return unsafe;
    }
    return driver.free_host_memory(p);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize,
                                                 unsigned int flags) {
  return in_context([&](Driver& driver, int device) {
    // Zero bytes and CU_MEM_ATTACH_SINGLE are refused, as documented.
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (const CUresult unsafe = Captures::get().check_unsafe_call(); unsafe != CUDA_SUCCESS) {
      return unsafe;
    }
    return driver.allocate(device, bytesize, AllocationKind::Managed, dptr);
  });
}
