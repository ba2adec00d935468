// Driver API: the stream-ordered allocator and its memory pools.
//
// Every device has a default pool; cuMemPoolCreate makes more (device location, pinned type;
// maxSize, when non-zero, caps what the pool holds). As measured on a real driver, a pool takes
// device memory in 32 MiB granules and keeps what its freed allocations held: at each
// synchronization (context, stream or event) it gives back what it holds beyond its release
// threshold (0 by default; PyTorch sets the largest value, so its pool never shrinks by
// itself), and cuMemPoolTrimTo gives back down to the bytes asked to keep. What a pool holds
// unused counts as taken in cuMemGetInfo. Unlike the real pool, whose placement can leave
// granules partly used, this one packs perfectly: it grows only when its live allocations
// outgrow it. Destroying a pool with live allocations succeeds; the handle becomes invalid at
// once and the pool goes away with its last allocation, as documented for the real one. The
// default pool cannot be destroyed. The _ptsz variants (per-thread default stream) behave as
// the plain ones.
//
// Pool attributes: the reuse flags are kept and reported; the used amount is the bytes the live
// allocations asked for, unrounded, and the reserved amount what the pool holds, each with a
// high water mark that setting it to 0 resets to the current amount. Access: the pool's own
// device always reads and writes; others get what cuMemPoolSetAccess gave them (none at first),
// which is bookkeeping, since every device can read all memory here.

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::initialized;

namespace {

CUresult allocate_async(CUdeviceptr* dptr, std::size_t bytesize, CUstream stream) {
  return in_context([&](Driver& driver, int device) {
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.allocate_async(device, bytesize, stream, dptr);
  });
}

CUresult allocate_from_pool(CUdeviceptr* dptr, std::size_t bytesize, CUmemoryPool pool,
                            CUstream stream) {
  return in_context([&](Driver& driver, int) {
    if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.allocate_from_pool(pool, bytesize, stream, dptr);
  });
}

CUresult free_async(CUdeviceptr dptr, CUstream stream) {
  // The stream is checked first; freeing 0 then does nothing, as cudaFreeAsync(nullptr) does.
  return in_context([&](Driver& driver, int) { return driver.free_async(dptr, stream); });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize,
                                               CUstream hStream) {
  return allocate_async(dptr, bytesize, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                    CUstream hStream) {
  return allocate_async(dptr, bytesize, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize,
                                                       CUmemoryPool pool, CUstream hStream) {
  return allocate_from_pool(dptr, bytesize, pool, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize,
                                                            CUmemoryPool pool, CUstream hStream) {
  return allocate_from_pool(dptr, bytesize, pool, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream) {
  return free_async(dptr, hStream);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolCreate(CUmemoryPool* pool,
                                               const CUmemPoolProps* poolProps) {
  return initialized([&](Driver& driver) {
    if (pool == nullptr || poolProps == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.create_pool(*poolProps, pool);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  return initialized([&](Driver& driver) { return driver.destroy_pool(pool); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep) {
  return initialized([&](Driver& driver) { return driver.trim_pool(pool, minBytesToKeep); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                     void* value) {
  return initialized([&](Driver& driver) {
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.set_pool_attribute(pool, attr, value);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr,
                                                     void* value) {
  return initialized([&](Driver& driver) {
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.pool_attribute(pool, attr, value);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map,
                                                  size_t count) {
  return initialized([&](Driver& driver) {
    if (map == nullptr && count != 0) return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < count; ++i) {
      if (map[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
      if (!driver.valid_device(map[i].location.id)) return CUDA_ERROR_INVALID_DEVICE;
      const CUmemAccess_flags flags = map[i].flags;
      if (flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
          flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE) {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    return driver.set_pool_access(pool, map, count);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool memPool,
                                                  CUmemLocation* location) {
  return initialized([&](Driver& driver) {
    if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (location->type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(location->id)) return CUDA_ERROR_INVALID_DEVICE;
    return driver.pool_access(memPool, location->id, flags);
  });
}
