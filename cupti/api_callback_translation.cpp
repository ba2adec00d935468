#include "api_callback_translation.h"

// cupti.h declares CUDA's parameter structs (generated_cuda_meta.h and
// generated_cuda_runtime_api_meta.h), with stand-ins for the obsolete types the driver's file
// names: those files must be included through it.
#include <cupti.h>

#include <array>

#include "hook_support.h"
#include "nanopb/vramtrace.pb.h"

namespace vramtrace::cupti {
namespace {

using preload::AllocEvent;
using preload::FreeEvent;
using Action = CallbackOutcome::Action;

constexpr std::array<CUpti_CallbackId, 14> kRuntimeIds{
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020,
    CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020,
};
// Pools themselves (create, trim, destroy) are not allocations: MEMORY_POOL activity records
// report them (activity_translation.h).

constexpr std::array<CUpti_CallbackId, 19> kDriverIds{
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemCreate,
    CUPTI_DRIVER_TRACE_CBID_cuMemRelease,
    CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve,
    CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap,
    CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
};

// The per-thread-stream (_ptsz) entries take the same parameters as the plain ones, and are
// read through the plain ones' structs.
static_assert(sizeof(cudaMallocAsync_ptsz_v11020_params) == sizeof(cudaMallocAsync_v11020_params));
static_assert(sizeof(cudaMallocFromPoolAsync_ptsz_v11020_params) ==
              sizeof(cudaMallocFromPoolAsync_v11020_params));
static_assert(sizeof(cudaFreeAsync_ptsz_v11020_params) == sizeof(cudaFreeAsync_v11020_params));
static_assert(sizeof(cuMemAllocAsync_ptsz_params) == sizeof(cuMemAllocAsync_params));
static_assert(sizeof(cuMemAllocFromPoolAsync_ptsz_params) ==
              sizeof(cuMemAllocFromPoolAsync_params));
static_assert(sizeof(cuMemFreeAsync_ptsz_params) == sizeof(cuMemFreeAsync_params));

uint64_t as_int(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// The function's return value: cudaError_t and CUresult are both int-sized enums. Only valid on
// exit; CUPTI passes null where it has none.
int32_t returned(const CUpti_CallbackData& data) {
  if (data.functionReturnValue == nullptr) return 0;
  return *static_cast<const int32_t*>(data.functionReturnValue);
}

// The value an output parameter received, once the call succeeded.
template <class T>
uint64_t output(int32_t result, T* const* out) {
  return (result == 0 && out != nullptr && *out != nullptr) ? as_int(*out) : 0;
}
uint64_t output(int32_t result, const unsigned long long* out) {
  return (result == 0 && out != nullptr) ? *out : 0;
}

// What an allocation call made, as its parameters say it. `requested` 0: the same as `size`.
struct Allocated {
  int kind;
  int api;
  uint64_t address;  // read from the output parameter: 0 unless the call succeeded
  uint64_t size;
  uint64_t requested = 0;
  uint64_t stream = 0;
  uint64_t pool = 0;
  uint64_t flags = 0;
  uint64_t vmm_handle = 0;
  uint64_t vmm_offset = 0;
  int32_t device = preload::kAskDevice;
};

class Translator {
 public:
  explicit Translator(const CUpti_CallbackData& data)
      : data_(data), exit_(data.callbackSite == CUPTI_API_EXIT) {}

  // An allocation: recorded on exit.
  CallbackOutcome alloc(const Allocated& a) const {
    CallbackOutcome out;
    if (!exit_) return out;
    out.action = Action::kRecordAlloc;
    AllocEvent& e = out.alloc;
    e.device = a.device;
    e.kind = a.kind;
    e.api = a.api;
    e.result = result();
    e.address = e.result == 0 ? a.address : 0;
    e.size = a.size;
    e.requested_size = a.requested != 0 ? a.requested : a.size;
    e.stream = a.stream;
    e.pool = a.pool;
    e.flags = static_cast<uint32_t>(a.flags);
    e.vmm_handle = a.vmm_handle;
    e.vmm_offset = a.vmm_offset;
    e.correlation_id = data_.correlationId;
    return out;
  }

  // A free: recorded on entry; its failure on exit.
  CallbackOutcome free(int api, uint64_t address, uint64_t stream = 0, uint64_t size = 0) const {
    CallbackOutcome out;
    if (address == 0) return out;  // frees nothing, as the shim's hooks skip it
    if (exit_) {
      if (result() != 0) {
        out.action = Action::kFreeFailed;
        out.free_result = result();
      }
      return out;
    }
    out.action = Action::kRecordFree;
    FreeEvent& e = out.free;
    e.device = -1;
    e.stream = stream;
    e.api = api;
    e.address = address;
    e.size = size;
    e.correlation_id = data_.correlationId;
    return out;
  }

  int32_t result() const { return exit_ ? returned(data_) : 0; }
  template <class Params>
  const Params& params() const {
    return *static_cast<const Params*>(data_.functionParams);
  }

 private:
  const CUpti_CallbackData& data_;
  bool exit_;
};

#define PARAMS(name) t.params<name##_params>()

CallbackOutcome runtime_callback(CUpti_CallbackId cbid, const Translator& t) {
  const int32_t r = t.result();
  switch (cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020: {
      auto& p = PARAMS(cudaMalloc_v3020);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_DEVICE,
                      .api = vramtrace_wire_Api_API_CUDA_MALLOC,
                      .address = output(r, p.devPtr),
                      .size = p.size});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocPitch_v3020: {
      auto& p = PARAMS(cudaMallocPitch_v3020);
      const uint64_t requested = uint64_t{p.width} * p.height;
      const bool ok = r == 0 && p.pitch != nullptr;
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_DEVICE,
                      .api = vramtrace_wire_Api_API_CUDA_MALLOC_PITCH,
                      .address = output(r, p.devPtr),
                      .size = ok ? *p.pitch * p.height : requested,
                      .requested = requested});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMalloc3D_v3020: {
      auto& p = PARAMS(cudaMalloc3D_v3020);
      const uint64_t requested = uint64_t{p.extent.width} * p.extent.height * p.extent.depth;
      const bool ok = r == 0 && p.pitchedDevPtr != nullptr;
      return t.alloc(
          {.kind = vramtrace_wire_Kind_KIND_DEVICE,
           .api = vramtrace_wire_Api_API_CUDA_MALLOC_3D,
           .address = ok ? as_int(p.pitchedDevPtr->ptr) : 0,
           .size = ok ? p.pitchedDevPtr->pitch * p.extent.height * p.extent.depth : requested,
           .requested = requested});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000: {
      auto& p = PARAMS(cudaMallocManaged_v6000);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_MANAGED,
                      .api = vramtrace_wire_Api_API_CUDA_MALLOC_MANAGED,
                      .address = output(r, p.devPtr),
                      .size = p.size,
                      .flags = p.flags});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020: {
      auto& p = PARAMS(cudaMallocHost_v3020);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_HOST_PINNED,
                      .api = vramtrace_wire_Api_API_CUDA_MALLOC_HOST,
                      .address = output(r, p.ptr),
                      .size = p.size});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaHostAlloc_v3020: {
      auto& p = PARAMS(cudaHostAlloc_v3020);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_HOST_PINNED,
                      .api = vramtrace_wire_Api_API_CUDA_HOST_ALLOC,
                      .address = output(r, p.pHost),
                      .size = p.size,
                      .flags = p.flags});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocAsync_ptsz_v11020: {
      auto& p = PARAMS(cudaMallocAsync_v11020);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_ASYNC,
                      .api = vramtrace_wire_Api_API_CUDA_MALLOC_ASYNC,
                      .address = output(r, p.devPtr),
                      .size = p.size,
                      .stream = as_int(p.hStream)});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaMallocFromPoolAsync_ptsz_v11020: {
      auto& p = PARAMS(cudaMallocFromPoolAsync_v11020);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_ASYNC,
                      .api = vramtrace_wire_Api_API_CUDA_MALLOC_FROM_POOL_ASYNC,
                      .address = output(r, p.ptr),
                      .size = p.size,
                      .stream = as_int(p.stream),
                      .pool = as_int(p.memPool)});
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020:
      return t.free(vramtrace_wire_Api_API_CUDA_FREE, as_int(PARAMS(cudaFree_v3020).devPtr));
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020:
      return t.free(vramtrace_wire_Api_API_CUDA_FREE_HOST, as_int(PARAMS(cudaFreeHost_v3020).ptr));
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_v11020:
    case CUPTI_RUNTIME_TRACE_CBID_cudaFreeAsync_ptsz_v11020: {
      auto& p = PARAMS(cudaFreeAsync_v11020);
      return t.free(vramtrace_wire_Api_API_CUDA_FREE_ASYNC, as_int(p.devPtr), as_int(p.hStream));
    }
    default:
      return {};
  }
}

CallbackOutcome driver_callback(CUpti_CallbackId cbid, const Translator& t) {
  const int32_t r = t.result();
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2: {
      auto& p = PARAMS(cuMemAlloc_v2);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_DEVICE,
                      .api = vramtrace_wire_Api_API_CU_MEM_ALLOC,
                      .address = output(r, p.dptr),
                      .size = p.bytesize});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      auto& p = PARAMS(cuMemAllocPitch_v2);
      const uint64_t requested = uint64_t{p.WidthInBytes} * p.Height;
      const bool ok = r == 0 && p.pPitch != nullptr;
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_DEVICE,
                      .api = vramtrace_wire_Api_API_CU_MEM_ALLOC_PITCH,
                      .address = output(r, p.dptr),
                      .size = ok ? *p.pPitch * p.Height : requested,
                      .requested = requested});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged: {
      auto& p = PARAMS(cuMemAllocManaged);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_MANAGED,
                      .api = vramtrace_wire_Api_API_CU_MEM_ALLOC_MANAGED,
                      .address = output(r, p.dptr),
                      .size = p.bytesize,
                      .flags = p.flags});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc: {
      auto& p = PARAMS(cuMemHostAlloc);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_HOST_PINNED,
                      .api = vramtrace_wire_Api_API_CU_MEM_HOST_ALLOC,
                      .address = output(r, p.pp),
                      .size = p.bytesize,
                      .flags = p.Flags});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2: {
      auto& p = PARAMS(cuMemAllocHost_v2);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_HOST_PINNED,
                      .api = vramtrace_wire_Api_API_CU_MEM_ALLOC_HOST,
                      .address = output(r, p.pp),
                      .size = p.bytesize});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz: {
      auto& p = PARAMS(cuMemAllocAsync);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_ASYNC,
                      .api = vramtrace_wire_Api_API_CU_MEM_ALLOC_ASYNC,
                      .address = output(r, p.dptr),
                      .size = p.bytesize,
                      .stream = as_int(p.hStream)});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz: {
      auto& p = PARAMS(cuMemAllocFromPoolAsync);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_ASYNC,
                      .api = vramtrace_wire_Api_API_CU_MEM_ALLOC_FROM_POOL_ASYNC,
                      .address = output(r, p.dptr),
                      .size = p.bytesize,
                      .stream = as_int(p.hStream),
                      .pool = as_int(p.pool)});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemCreate: {
      auto& p = PARAMS(cuMemCreate);
      // The physical memory's device is the one the properties name, not the context's.
      const bool on_device =
          p.prop != nullptr && p.prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE;
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_VMM_HANDLE,
                      .api = vramtrace_wire_Api_API_CU_MEM_CREATE,
                      .address = output(r, p.handle),
                      .size = p.size,
                      .flags = p.flags,
                      .device = on_device ? p.prop->location.id : preload::kAskDevice});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressReserve: {
      auto& p = PARAMS(cuMemAddressReserve);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_VMM_RESERVATION,
                      .api = vramtrace_wire_Api_API_CU_MEM_ADDRESS_RESERVE,
                      .address = output(r, p.ptr),
                      .size = p.size,
                      .flags = p.flags});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {
      auto& p = PARAMS(cuMemMap);
      return t.alloc({.kind = vramtrace_wire_Kind_KIND_VMM_MAPPING,
                      .api = vramtrace_wire_Api_API_CU_MEM_MAP,
                      .address = p.ptr,
                      .size = p.size,
                      .flags = p.flags,
                      .vmm_handle = p.handle,
                      .vmm_offset = p.offset});
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      return t.free(vramtrace_wire_Api_API_CU_MEM_FREE, PARAMS(cuMemFree_v2).dptr);
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost:
      return t.free(vramtrace_wire_Api_API_CU_MEM_FREE_HOST, as_int(PARAMS(cuMemFreeHost).p));
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz: {
      auto& p = PARAMS(cuMemFreeAsync);
      return t.free(vramtrace_wire_Api_API_CU_MEM_FREE_ASYNC, p.dptr, as_int(p.hStream));
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemRelease:
      return t.free(vramtrace_wire_Api_API_CU_MEM_RELEASE, PARAMS(cuMemRelease).handle);
    case CUPTI_DRIVER_TRACE_CBID_cuMemAddressFree: {
      auto& p = PARAMS(cuMemAddressFree);
      return t.free(vramtrace_wire_Api_API_CU_MEM_ADDRESS_FREE, p.ptr, 0, p.size);
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      auto& p = PARAMS(cuMemUnmap);
      return t.free(vramtrace_wire_Api_API_CU_MEM_UNMAP, p.ptr, 0, p.size);
    }
    default:
      return {};
  }
}

#undef PARAMS

}  // namespace

std::span<const CUpti_CallbackId> memory_callback_ids(CUpti_CallbackDomain domain) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return kRuntimeIds;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return kDriverIds;
  return {};
}

CallbackOutcome translate_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const CUpti_CallbackData& data) {
  if (data.functionParams == nullptr) return {};
  const Translator t(data);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) return runtime_callback(cbid, t);
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API) return driver_callback(cbid, t);
  return {};
}

}  // namespace vramtrace::cupti
