// Driver API: what an address is (cuPointerGetAttribute, cuPointerGetAttributes) and the
// allocation that holds it (cuMemGetAddressRange).
//
// Known addresses are those of live device, managed and stream-ordered allocations (within
// their requested size), pinned and registered host memory, and cuMemMap mappings. Device
// memory of any kind is CU_MEMORYTYPE_DEVICE (managed memory too, with IS_MANAGED 1), host memory
// CU_MEMORYTYPE_HOST. The range of an address is its allocation, registration or mapping.
// Device memory has no host pointer (CUDA_ERROR_INVALID_VALUE; null from
// cuPointerGetAttributes), as on a GPU, although here it is host memory. cuMemMap's memory
// belongs to no context (CONTEXT is null). An address the driver does not know is
// CUDA_ERROR_INVALID_VALUE for cuPointerGetAttribute and CUDA_ERROR_NOT_FOUND for
// cuMemGetAddressRange; cuPointerGetAttributes answers for it as documented, with zeros (memory
// type 0, unregistered) and success. P2P tokens are CUDA_ERROR_NOT_SUPPORTED; the attributes
// this driver does not know, CUDA_ERROR_INVALID_VALUE.

#include <cstdint>
#include <cstring>
#include <optional>

#include "api_support.h"

using simcuda::driver::AllocationKind;
using simcuda::driver::Driver;
using simcuda::driver::initialized;
using simcuda::driver::PointerInfo;

namespace {

template <class T>
void store(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
}

bool is_host(AllocationKind kind) {
  return kind == AllocationKind::PinnedHost || kind == AllocationKind::Registered;
}

// Writes one attribute of a known address (`info`) or of an unknown one (nullopt, when
// `unknown_is_error` is false: cuPointerGetAttributes' defaults).
CUresult answer(void* data, CUpointer_attribute attribute, CUdeviceptr ptr,
                const std::optional<PointerInfo>& info, bool unknown_is_error) {
  if (attribute == CU_POINTER_ATTRIBUTE_P2P_TOKENS) return CUDA_ERROR_NOT_SUPPORTED;
  if (!info && unknown_is_error) return CUDA_ERROR_INVALID_VALUE;
  const bool known = info.has_value();
  const bool host = known && is_host(info->kind);
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      store<CUcontext>(data, known ? info->context : nullptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      store<unsigned int>(data, !known ? 0u
                                : host ? static_cast<unsigned int>(CU_MEMORYTYPE_HOST)
                                       : static_cast<unsigned int>(CU_MEMORYTYPE_DEVICE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
      store<CUdeviceptr>(data, known ? ptr : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: {
      const bool has_host_pointer = host || (known && info->kind == AllocationKind::Managed);
      if (!has_host_pointer && unknown_is_error) return CUDA_ERROR_INVALID_VALUE;
      store<void*>(data, has_host_pointer ? reinterpret_cast<void*>(ptr) : nullptr);
      return CUDA_SUCCESS;
    }
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
      // Every operation is synchronous.
      store<unsigned int>(data, known ? 1u : 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
      store<unsigned long long>(data, known ? info->buffer_id : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
      store<unsigned int>(data, known && info->kind == AllocationKind::Managed ? 1u : 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      store<int>(data, known ? info->device : -2);  // CU_DEVICE_INVALID
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
      store<unsigned int>(
          data, known && info->kind == AllocationKind::Device && !info->mapped_by_vmm ? 1u : 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
      store<CUdeviceptr>(data, known ? info->start : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
      store<std::size_t>(data, known ? info->size : 0);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MAPPED:
      store<unsigned int>(data, known ? 1u : 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
      store<unsigned int>(data, known ? info->handle_types : 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
      store<unsigned int>(data, 0u);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
      store<CUmemoryPool>(data, known ? info->pool : nullptr);
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID:
      store<unsigned long long>(data, known ? info->buffer_id : 0);
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuPointerGetAttribute(void* data, CUpointer_attribute attribute,
                                                     CUdeviceptr ptr) {
  return initialized([&](Driver& driver) {
    if (data == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return answer(data, attribute, ptr, driver.pointer_info(ptr), true);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuPointerGetAttributes(unsigned int numAttributes,
                                                      CUpointer_attribute* attributes, void** data,
                                                      CUdeviceptr ptr) {
  return initialized([&](Driver& driver) {
    if (numAttributes == 0 || attributes == nullptr || data == nullptr) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    const std::optional<PointerInfo> info = driver.pointer_info(ptr);
    for (unsigned int i = 0; i < numAttributes; ++i) {
      if (data[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      if (const CUresult result = answer(data[i], attributes[i], ptr, info, false);
          result != CUDA_SUCCESS) {
        return result;
      }
    }
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize,
                                                       CUdeviceptr dptr) {
  return initialized([&](Driver& driver) {
    const std::optional<PointerInfo> info = driver.pointer_info(dptr);
    if (!info) return CUDA_ERROR_NOT_FOUND;
    // Either output may be null, as documented.
    if (pbase != nullptr) *pbase = info->start;
    if (psize != nullptr) *psize = info->size;
    return CUDA_SUCCESS;
  });
}
