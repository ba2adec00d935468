// The driver's allocation family: wrappers with the real signatures (cuda_abi.h), each
// exported under the driver's versioned name and also handed out by the shim's dlsym and
// cuGetProcAddress (proc_address.cpp). hook_support.h holds what every hook does around the
// real call; this file says, per function, what the call allocated or freed.
//
// A runtime call that enters the driver on the same thread (cudaMalloc -> cuMemAlloc_v2) is
// recorded once, by the runtime's hook: the re-entrancy guard makes the driver's wrapper pass
// straight through.
#include "driver_hooks.h"

#include <atomic>
#include <cstring>

#include "cuda_abi.h"
#include "hook_support.h"
#include "nanopb/vramtrace.pb.h"
#include "real_functions.h"

using namespace vramtrace::cuda;
using vramtrace::preload::AllocEvent;
using vramtrace::preload::FreeEvent;
using vramtrace::preload::kAskDevice;

namespace {

// The driver's own functions, once known: from a cuGetProcAddress or dlsym the shim saw, or
// looked up by name in the loaded libcuda.
#define VRAMTRACE_DECLARE_REAL(name, same_as, params) \
  std::atomic<void*> g_real_##name{nullptr};          \
  using name##_fn = vt_CUresult(*) params;
VRAMTRACE_CUDA_DRIVER_HOOKS(VRAMTRACE_DECLARE_REAL)
VRAMTRACE_CUDA_DRIVER_USED(VRAMTRACE_DECLARE_REAL)
#undef VRAMTRACE_DECLARE_REAL

#define REAL(name) vramtrace::preload::real_function<name##_fn>(g_real_##name, #name, "libcuda.so")

int32_t context_device() {
  auto get = REAL(cuCtxGetDevice);
  vt_CUdevice device = -1;
  if (get == nullptr || get(&device) != kCudaSuccess) return -1;
  return device;
}

AllocEvent event(vt_CUresult result, uint64_t address, uint64_t size, int kind, int api) {
  AllocEvent e{};
  e.result = result;
  e.address = result == kCudaSuccess ? address : 0;
  e.device = kAskDevice;
  e.kind = kind;
  e.api = api;
  e.size = size;
  e.requested_size = size;
  return e;
}

void record(AllocEvent& e) {
  vramtrace::preload::record_alloc_outcome(e, &context_device);
}
void record(AllocEvent&& e) {
  record(e);
}

uint64_t as_int(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

template <class Real, class Record, class... Args>
vt_CUresult traced(Real real, const char* name, Record&& on_return, Args... args) {
  constexpr vt_CUresult kErrorNotInitialized = 3;  // CUDA_ERROR_NOT_INITIALIZED
  return vramtrace::preload::traced_alloc<vt_CUresult>(real, name, kErrorNotInitialized, on_return,
                                                       args...);
}

template <class Call>
vt_CUresult freed(uint64_t address, int api, uint64_t stream, uint64_t size, Call&& call) {
  FreeEvent e{};
  e.device = -1;
  e.stream = stream;
  e.api = api;
  e.address = address;
  e.size = size;
  return vramtrace::preload::traced_free<vt_CUresult>(e, call);
}

vt_CUresult missing(const char* name) {
  return vramtrace::preload::report_missing_function(name, 3);
}

}  // namespace

#define VT_HOOK extern "C" __attribute__((visibility("default"))) vt_CUresult

VT_HOOK cuMemAlloc_v2(vt_CUdeviceptr* dptr, size_t bytesize) {
  return traced(
      REAL(cuMemAlloc_v2), "cuMemAlloc_v2",
      [&](vt_CUresult r) {
        record(event(r, dptr ? *dptr : 0, bytesize, vramtrace_wire_Kind_KIND_DEVICE,
                     vramtrace_wire_Api_API_CU_MEM_ALLOC));
      },
      dptr, bytesize);
}

VT_HOOK cuMemAllocPitch_v2(vt_CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                           unsigned int ElementSizeBytes) {
  return traced(
      REAL(cuMemAllocPitch_v2), "cuMemAllocPitch_v2",
      [&](vt_CUresult r) {
        const uint64_t requested = uint64_t{WidthInBytes} * Height;
        const bool ok = r == kCudaSuccess && pPitch != nullptr && dptr != nullptr;
        AllocEvent e =
            event(r, ok ? *dptr : 0, ok ? *pPitch * Height : requested,
                  vramtrace_wire_Kind_KIND_DEVICE, vramtrace_wire_Api_API_CU_MEM_ALLOC_PITCH);
        e.requested_size = requested;
        record(e);
      },
      dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

VT_HOOK cuMemAllocManaged(vt_CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  return traced(
      REAL(cuMemAllocManaged), "cuMemAllocManaged",
      [&](vt_CUresult r) {
        AllocEvent e = event(r, dptr ? *dptr : 0, bytesize, vramtrace_wire_Kind_KIND_MANAGED,
                             vramtrace_wire_Api_API_CU_MEM_ALLOC_MANAGED);
        e.flags = flags;
        record(e);
      },
      dptr, bytesize, flags);
}

VT_HOOK cuMemHostAlloc(void** pp, size_t bytesize, unsigned int Flags) {
  return traced(
      REAL(cuMemHostAlloc), "cuMemHostAlloc",
      [&](vt_CUresult r) {
        AllocEvent e =
            event(r, pp ? as_int(*pp) : 0, bytesize, vramtrace_wire_Kind_KIND_HOST_PINNED,
                  vramtrace_wire_Api_API_CU_MEM_HOST_ALLOC);
        e.flags = Flags;
        record(e);
      },
      pp, bytesize, Flags);
}

VT_HOOK cuMemAllocHost_v2(void** pp, size_t bytesize) {
  return traced(
      REAL(cuMemAllocHost_v2), "cuMemAllocHost_v2",
      [&](vt_CUresult r) {
        record(event(r, pp ? as_int(*pp) : 0, bytesize, vramtrace_wire_Kind_KIND_HOST_PINNED,
                     vramtrace_wire_Api_API_CU_MEM_ALLOC_HOST));
      },
      pp, bytesize);
}

namespace {
AllocEvent async_event(vt_CUresult r, const vt_CUdeviceptr* dptr, size_t bytesize,
                       vt_CUmemoryPool pool, vt_CUstream stream, int api) {
  AllocEvent e = event(r, dptr ? *dptr : 0, bytesize, vramtrace_wire_Kind_KIND_ASYNC, api);
  e.stream = as_int(stream);
  e.pool = as_int(pool);
  return e;
}
}  // namespace

VT_HOOK cuMemAllocAsync(vt_CUdeviceptr* dptr, size_t bytesize, vt_CUstream hStream) {
  return traced(
      REAL(cuMemAllocAsync), "cuMemAllocAsync",
      [&](vt_CUresult r) {
        record(async_event(r, dptr, bytesize, nullptr, hStream,
                           vramtrace_wire_Api_API_CU_MEM_ALLOC_ASYNC));
      },
      dptr, bytesize, hStream);
}

VT_HOOK cuMemAllocAsync_ptsz(vt_CUdeviceptr* dptr, size_t bytesize, vt_CUstream hStream) {
  return traced(
      REAL(cuMemAllocAsync_ptsz), "cuMemAllocAsync_ptsz",
      [&](vt_CUresult r) {
        record(async_event(r, dptr, bytesize, nullptr, hStream,
                           vramtrace_wire_Api_API_CU_MEM_ALLOC_ASYNC));
      },
      dptr, bytesize, hStream);
}

VT_HOOK cuMemAllocFromPoolAsync(vt_CUdeviceptr* dptr, size_t bytesize, vt_CUmemoryPool pool,
                                vt_CUstream hStream) {
  return traced(
      REAL(cuMemAllocFromPoolAsync), "cuMemAllocFromPoolAsync",
      [&](vt_CUresult r) {
        record(async_event(r, dptr, bytesize, pool, hStream,
                           vramtrace_wire_Api_API_CU_MEM_ALLOC_FROM_POOL_ASYNC));
      },
      dptr, bytesize, pool, hStream);
}

VT_HOOK cuMemAllocFromPoolAsync_ptsz(vt_CUdeviceptr* dptr, size_t bytesize, vt_CUmemoryPool pool,
                                     vt_CUstream hStream) {
  return traced(
      REAL(cuMemAllocFromPoolAsync_ptsz), "cuMemAllocFromPoolAsync_ptsz",
      [&](vt_CUresult r) {
        record(async_event(r, dptr, bytesize, pool, hStream,
                           vramtrace_wire_Api_API_CU_MEM_ALLOC_FROM_POOL_ASYNC));
      },
      dptr, bytesize, pool, hStream);
}

VT_HOOK cuMemCreate(vt_CUmemGenericAllocationHandle* handle, size_t size,
                    const vt_CUmemAllocationProp* prop, unsigned long long flags) {
  return traced(
      REAL(cuMemCreate), "cuMemCreate",
      [&](vt_CUresult r) {
        AllocEvent e = event(r, handle ? *handle : 0, size, vramtrace_wire_Kind_KIND_VMM_HANDLE,
                             vramtrace_wire_Api_API_CU_MEM_CREATE);
        // The physical memory's device is the one the properties name, not the context's.
        if (prop != nullptr && prop->location.type == kMemLocationTypeDevice)
          e.device = prop->location.id;
        e.flags = static_cast<uint32_t>(flags);
        record(e);
      },
      handle, size, prop, flags);
}

VT_HOOK cuMemAddressReserve(vt_CUdeviceptr* ptr, size_t size, size_t alignment, vt_CUdeviceptr addr,
                            unsigned long long flags) {
  return traced(
      REAL(cuMemAddressReserve), "cuMemAddressReserve",
      [&](vt_CUresult r) {
        AllocEvent e = event(r, ptr ? *ptr : 0, size, vramtrace_wire_Kind_KIND_VMM_RESERVATION,
                             vramtrace_wire_Api_API_CU_MEM_ADDRESS_RESERVE);
        e.flags = static_cast<uint32_t>(flags);
        record(e);
      },
      ptr, size, alignment, addr, flags);
}

VT_HOOK cuMemMap(vt_CUdeviceptr ptr, size_t size, size_t offset,
                 vt_CUmemGenericAllocationHandle handle, unsigned long long flags) {
  return traced(
      REAL(cuMemMap), "cuMemMap",
      [&](vt_CUresult r) {
        AllocEvent e = event(r, ptr, size, vramtrace_wire_Kind_KIND_VMM_MAPPING,
                             vramtrace_wire_Api_API_CU_MEM_MAP);
        e.vmm_handle = handle;
        e.vmm_offset = offset;
        e.flags = static_cast<uint32_t>(flags);
        record(e);
      },
      ptr, size, offset, handle, flags);
}

VT_HOOK cuMemFree_v2(vt_CUdeviceptr dptr) {
  auto real = REAL(cuMemFree_v2);
  if (real == nullptr) return missing("cuMemFree_v2");
  return freed(dptr, vramtrace_wire_Api_API_CU_MEM_FREE, 0, 0, [&] { return real(dptr); });
}

VT_HOOK cuMemFreeHost(void* p) {
  auto real = REAL(cuMemFreeHost);
  if (real == nullptr) return missing("cuMemFreeHost");
  return freed(as_int(p), vramtrace_wire_Api_API_CU_MEM_FREE_HOST, 0, 0, [&] { return real(p); });
}

VT_HOOK cuMemFreeAsync(vt_CUdeviceptr dptr, vt_CUstream hStream) {
  auto real = REAL(cuMemFreeAsync);
  if (real == nullptr) return missing("cuMemFreeAsync");
  return freed(dptr, vramtrace_wire_Api_API_CU_MEM_FREE_ASYNC, as_int(hStream), 0,
               [&] { return real(dptr, hStream); });
}

VT_HOOK cuMemFreeAsync_ptsz(vt_CUdeviceptr dptr, vt_CUstream hStream) {
  auto real = REAL(cuMemFreeAsync_ptsz);
  if (real == nullptr) return missing("cuMemFreeAsync_ptsz");
  return freed(dptr, vramtrace_wire_Api_API_CU_MEM_FREE_ASYNC, as_int(hStream), 0,
               [&] { return real(dptr, hStream); });
}

VT_HOOK cuMemRelease(vt_CUmemGenericAllocationHandle handle) {
  auto real = REAL(cuMemRelease);
  if (real == nullptr) return missing("cuMemRelease");
  return freed(handle, vramtrace_wire_Api_API_CU_MEM_RELEASE, 0, 0, [&] { return real(handle); });
}

VT_HOOK cuMemAddressFree(vt_CUdeviceptr ptr, size_t size) {
  auto real = REAL(cuMemAddressFree);
  if (real == nullptr) return missing("cuMemAddressFree");
  return freed(ptr, vramtrace_wire_Api_API_CU_MEM_ADDRESS_FREE, 0, size,
               [&] { return real(ptr, size); });
}

VT_HOOK cuMemUnmap(vt_CUdeviceptr ptr, size_t size) {
  auto real = REAL(cuMemUnmap);
  if (real == nullptr) return missing("cuMemUnmap");
  return freed(ptr, vramtrace_wire_Api_API_CU_MEM_UNMAP, 0, size, [&] { return real(ptr, size); });
}

namespace vramtrace::preload {

void* wrap_driver_function(const char* versioned_name, void* real) {
  struct Entry {
    const char* name;
    void* wrapper;
    std::atomic<void*>* real;
  };
#define VRAMTRACE_ENTRY(name, same_as, params) \
  {#name, reinterpret_cast<void*>(&::name), &g_real_##name},
  static const Entry kEntries[] = {VRAMTRACE_CUDA_DRIVER_HOOKS(VRAMTRACE_ENTRY)};
#undef VRAMTRACE_ENTRY
  for (const Entry& entry : kEntries) {
    if (std::strcmp(entry.name, versioned_name) != 0) continue;
    // Never take one of our own wrappers for the real function: that would loop. The
    // driver's latest answer wins: after a dlclose and a new dlopen, the first pointer points
    // into the unloaded copy (tests/e2e/programs/dlclose_driver.cpp).
    if (real != nullptr && real != entry.wrapper) {
      entry.real->store(real, std::memory_order_release);
      remember_real_function(*entry.real);
    }
    return entry.wrapper;
  }
  return nullptr;
}

}  // namespace vramtrace::preload
