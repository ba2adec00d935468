// Stream-ordered copies and memsets, host memory registration, pointer attributes, and memory
// pools' attributes and access: each the driver's call of the same meaning. The copies check
// their direction as cudaMemcpy does; the driver checks the pointers. Nothing runs
// asynchronously, so each completes before it returns.

#include <cstddef>
#include <cstdint>

#include "entry_support.h"

namespace {

using simcuda::runtime::device_address;
using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::host_pointer;
using simcuda::runtime::in_context;

static_assert(sizeof(cudaMemAccessDesc) == sizeof(CUmemAccessDesc) &&
                  offsetof(cudaMemAccessDesc, flags) == offsetof(CUmemAccessDesc, flags),
              "cudaMemAccessDesc is CUmemAccessDesc");

CUresult copy_async(const Driver& driver, void* dst, const void* src, std::size_t count, int kind,
                    cudaStream_t stream, bool* known_kind) {
  const CUdeviceptr to = device_address(dst);
  const CUdeviceptr from = device_address(src);
  *known_kind = true;
  switch (kind) {
    case cudaMemcpyHostToDevice:
      return driver.cuMemcpyHtoDAsync(to, src, count, stream);
    case cudaMemcpyDeviceToHost:
      return driver.cuMemcpyDtoHAsync(dst, from, count, stream);
    case cudaMemcpyDeviceToDevice:
      return driver.cuMemcpyDtoDAsync(to, from, count, stream);
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault:
      return driver.cuMemcpyAsync(to, from, count, stream);
    default:
      *known_kind = false;
      return CUDA_SUCCESS;
  }
}

cudaError_t memcpy_async(const Driver& driver, void* dst, const void* src, std::size_t count,
                         cudaMemcpyKind kind, cudaStream_t stream) {
  bool known_kind = false;
  // Compared as an int: callers may pass any value, not only the enumerators.
  const CUresult result =
      copy_async(driver, dst, src, count, static_cast<int>(kind), stream, &known_kind);
  return known_kind ? from_driver(result) : cudaErrorInvalidMemcpyDirection;
}

}  // namespace

SIMCUDA_EXPORT cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind, cudaStream_t stream) {
  return in_context([&](const Driver& driver) {
    if (count == 0) return cudaSuccess;
    return memcpy_async(driver, dst, src, count, kind, stream);
  });
}

// Row by row: each row is one copy of `width` bytes, checked by the driver like any other.
SIMCUDA_EXPORT cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src,
                                             size_t spitch, size_t width, size_t height,
                                             enum cudaMemcpyKind kind, cudaStream_t stream) {
  return in_context([&](const Driver& driver) {
    if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
    if (width == 0 || height == 0) return cudaSuccess;
    auto* to = static_cast<unsigned char*>(dst);
    const auto* from = static_cast<const unsigned char*>(src);
    for (std::size_t row = 0; row < height; ++row) {
      const cudaError_t error =
          memcpy_async(driver, to + row * dpitch, from + row * spitch, width, kind, stream);
      if (error != cudaSuccess) return error;
    }
    return cudaSuccess;
  });
}

// Unified addressing names every device's memory in one space, so a peer copy is a copy.
SIMCUDA_EXPORT cudaError_t cudaMemcpyPeerAsync(void* dst, int dstDevice, const void* src,
                                               int srcDevice, size_t count, cudaStream_t stream) {
  return in_context([&](const Driver& driver) {
    if (dstDevice < 0 || dstDevice >= driver.device_count || srcDevice < 0 ||
        srcDevice >= driver.device_count) {
      return cudaErrorInvalidDevice;
    }
    if (count == 0) return cudaSuccess;
    return from_driver(
        driver.cuMemcpyAsync(device_address(dst), device_address(src), count, stream));
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemsetAsync(void* devPtr, int value, size_t count,
                                           cudaStream_t stream) {
  return in_context([&](const Driver& driver) {
    if (count == 0) return cudaSuccess;
    return from_driver(driver.cuMemsetD8Async(device_address(devPtr),
                                              static_cast<unsigned char>(value), count, stream));
  });
}

SIMCUDA_EXPORT cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  return in_context([&](const Driver& driver) {
    // The runtime's flag values are the driver's (CU_MEMHOSTREGISTER_*).
    return from_driver(driver.cuMemHostRegister(ptr, size, flags));
  });
}

SIMCUDA_EXPORT cudaError_t cudaHostUnregister(void* ptr) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuMemHostUnregister(ptr)); });
}

// The driver's attributes of the pointer, read as the runtime's struct. Memory the driver does
// not know is cudaMemoryTypeUnregistered, with no device and no device address.
SIMCUDA_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes,
                                                    const void* ptr) {
  return in_context([&](const Driver& driver) {
    if (attributes == nullptr) return cudaErrorInvalidValue;
    unsigned int memory_type = 0;
    int device = -1;
    CUdeviceptr device_pointer = 0;
    void* host = nullptr;
    unsigned int managed = 0;
    CUpointer_attribute names[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
        CU_POINTER_ATTRIBUTE_DEVICE_POINTER, CU_POINTER_ATTRIBUTE_HOST_POINTER,
        CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void* values[] = {&memory_type, &device, &device_pointer, &host, &managed};
    const CUresult result =
        driver.cuPointerGetAttributes(static_cast<unsigned int>(sizeof names / sizeof names[0]),
                                      names, values, device_address(ptr));
    if (result != CUDA_SUCCESS) return from_driver(result);
    cudaPointerAttributes filled{};
    if (managed != 0) {
      filled.type = cudaMemoryTypeManaged;
    } else if (memory_type == CU_MEMORYTYPE_DEVICE) {
      filled.type = cudaMemoryTypeDevice;
    } else if (memory_type == CU_MEMORYTYPE_HOST) {
      filled.type = cudaMemoryTypeHost;
    } else {
      filled.type = cudaMemoryTypeUnregistered;
    }
    filled.device = filled.type == cudaMemoryTypeUnregistered ? -1 : device;
    filled.devicePointer = host_pointer(device_pointer);
    filled.hostPointer = host;
    *attributes = filled;
    return cudaSuccess;
  });
}

// The runtime's attribute values are the driver's (CU_MEMPOOL_ATTR_*).
SIMCUDA_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                                   void* value) {
  return in_context([&](const Driver& driver) {
    return from_driver(
        driver.cuMemPoolGetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                                   void* value) {
  return in_context([&](const Driver& driver) {
    return from_driver(
        driver.cuMemPoolSetAttribute(memPool, static_cast<CUmemPool_attribute>(attr), value));
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                                const struct cudaMemAccessDesc* descList,
                                                size_t count) {
  return in_context([&](const Driver& driver) {
    return from_driver(driver.cuMemPoolSetAccess(
        memPool, reinterpret_cast<const CUmemAccessDesc*>(descList), count));
  });
}
