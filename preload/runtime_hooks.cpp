// Hooks for the CUDA runtime's allocation family (docs/architecture.md, "Layer 1"): plain symbol
// interposition, for programs and libraries that link libcudart.so dynamically.
// hook_support.h holds what every hook does around the real call.
#include <atomic>

#include "cuda_abi.h"
#include "hook_support.h"
#include "nanopb/vramtrace.pb.h"
#include "real_functions.h"

using namespace vramtrace::cuda;
using vramtrace::preload::AllocEvent;
using vramtrace::preload::FreeEvent;
using vramtrace::preload::kAskDevice;

namespace {

#define VRAMTRACE_DECLARE_REAL(name, same_as, params) \
  std::atomic<void*> g_real_##name{nullptr};          \
  using name##_fn = vt_cudaError_t(*) params;
VRAMTRACE_CUDA_RUNTIME_HOOKS(VRAMTRACE_DECLARE_REAL)
#undef VRAMTRACE_DECLARE_REAL

#define REAL(name) \
  vramtrace::preload::real_function<name##_fn>(g_real_##name, #name, "libcudart.so")

uint64_t as_int(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// The runtime's outcome of an allocation call. `address` is read only on success.
void record(vt_cudaError_t result, void* const* address, uint64_t size, uint64_t requested,
            int kind, int api, vt_cudaStream_t stream = nullptr, vt_cudaMemPool_t pool = nullptr,
            unsigned flags = 0) {
  AllocEvent e{};
  e.result = result;
  e.address = (result == kSuccess && address != nullptr) ? as_int(*address) : 0;
  e.device = kAskDevice;
  e.stream = as_int(stream);
  e.kind = kind;
  e.api = api;
  e.size = size;
  e.requested_size = requested;
  e.pool = as_int(pool);
  e.flags = flags;
  vramtrace::preload::record_alloc_outcome(e, &vramtrace::preload::current_device);
}

template <class Real, class Record, class... Args>
vt_cudaError_t traced(Real real, const char* name, Record&& on_return, Args... args) {
  return vramtrace::preload::traced_alloc<vt_cudaError_t>(real, name, kErrorInitializationError,
                                                          on_return, args...);
}

template <class Call>
vt_cudaError_t freed(void* address, int api, vt_cudaStream_t stream, Call&& call) {
  FreeEvent e{};
  e.device = -1;  // the collector takes the device from the allocation being freed
  e.stream = as_int(stream);
  e.api = api;
  e.address = as_int(address);
  return vramtrace::preload::traced_free<vt_cudaError_t>(e, call);
}

}  // namespace

#define VT_HOOK extern "C" __attribute__((visibility("default"))) vt_cudaError_t

VT_HOOK cudaMalloc(void** devPtr, size_t size) {
  return traced(
      REAL(cudaMalloc), "cudaMalloc",
      [&](vt_cudaError_t r) {
        record(r, devPtr, size, size, vramtrace_wire_Kind_KIND_DEVICE,
               vramtrace_wire_Api_API_CUDA_MALLOC);
      },
      devPtr, size);
}

VT_HOOK cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return traced(
      REAL(cudaMallocManaged), "cudaMallocManaged",
      [&](vt_cudaError_t r) {
        record(r, devPtr, size, size, vramtrace_wire_Kind_KIND_MANAGED,
               vramtrace_wire_Api_API_CUDA_MALLOC_MANAGED, nullptr, nullptr, flags);
      },
      devPtr, size, flags);
}

VT_HOOK cudaMallocHost(void** ptr, size_t size) {
  return traced(
      REAL(cudaMallocHost), "cudaMallocHost",
      [&](vt_cudaError_t r) {
        record(r, ptr, size, size, vramtrace_wire_Kind_KIND_HOST_PINNED,
               vramtrace_wire_Api_API_CUDA_MALLOC_HOST);
      },
      ptr, size);
}

VT_HOOK cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return traced(
      REAL(cudaHostAlloc), "cudaHostAlloc",
      [&](vt_cudaError_t r) {
        record(r, pHost, size, size, vramtrace_wire_Kind_KIND_HOST_PINNED,
               vramtrace_wire_Api_API_CUDA_HOST_ALLOC, nullptr, nullptr, flags);
      },
      pHost, size, flags);
}

VT_HOOK cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  return traced(
      REAL(cudaMallocPitch), "cudaMallocPitch",
      [&](vt_cudaError_t r) {
        const uint64_t requested = uint64_t{width} * height;
        const uint64_t reserved = (r == kSuccess && pitch != nullptr) ? *pitch * height : requested;
        record(r, devPtr, reserved, requested, vramtrace_wire_Kind_KIND_DEVICE,
               vramtrace_wire_Api_API_CUDA_MALLOC_PITCH);
      },
      devPtr, pitch, width, height);
}

VT_HOOK cudaMalloc3D(vt_cudaPitchedPtr* pitchedDevPtr, vt_cudaExtent extent) {
  return traced(
      REAL(cudaMalloc3D), "cudaMalloc3D",
      [&](vt_cudaError_t r) {
        const uint64_t requested = uint64_t{extent.width} * extent.height * extent.depth;
        const bool ok = r == kSuccess && pitchedDevPtr != nullptr;
        const uint64_t reserved =
            ok ? pitchedDevPtr->pitch * extent.height * extent.depth : requested;
        void* address = ok ? pitchedDevPtr->ptr : nullptr;
        record(r, &address, reserved, requested, vramtrace_wire_Kind_KIND_DEVICE,
               vramtrace_wire_Api_API_CUDA_MALLOC_3D);
      },
      pitchedDevPtr, extent);
}

VT_HOOK cudaMallocAsync(void** devPtr, size_t size, vt_cudaStream_t hStream) {
  return traced(
      REAL(cudaMallocAsync), "cudaMallocAsync",
      [&](vt_cudaError_t r) {
        record(r, devPtr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
               vramtrace_wire_Api_API_CUDA_MALLOC_ASYNC, hStream);
      },
      devPtr, size, hStream);
}

VT_HOOK cudaMallocAsync_ptsz(void** devPtr, size_t size, vt_cudaStream_t hStream) {
  return traced(
      REAL(cudaMallocAsync_ptsz), "cudaMallocAsync_ptsz",
      [&](vt_cudaError_t r) {
        record(r, devPtr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
               vramtrace_wire_Api_API_CUDA_MALLOC_ASYNC, hStream);
      },
      devPtr, size, hStream);
}

VT_HOOK cudaMallocFromPoolAsync(void** ptr, size_t size, vt_cudaMemPool_t memPool,
                                vt_cudaStream_t stream) {
  return traced(
      REAL(cudaMallocFromPoolAsync), "cudaMallocFromPoolAsync",
      [&](vt_cudaError_t r) {
        record(r, ptr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
               vramtrace_wire_Api_API_CUDA_MALLOC_FROM_POOL_ASYNC, stream, memPool);
      },
      ptr, size, memPool, stream);
}

VT_HOOK cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, vt_cudaMemPool_t memPool,
                                     vt_cudaStream_t stream) {
  return traced(
      REAL(cudaMallocFromPoolAsync_ptsz), "cudaMallocFromPoolAsync_ptsz",
      [&](vt_cudaError_t r) {
        record(r, ptr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
               vramtrace_wire_Api_API_CUDA_MALLOC_FROM_POOL_ASYNC, stream, memPool);
      },
      ptr, size, memPool, stream);
}

VT_HOOK cudaFree(void* devPtr) {
  auto real = REAL(cudaFree);
  if (real == nullptr)
    return vramtrace::preload::report_missing_function("cudaFree", kErrorInitializationError);
  return freed(devPtr, vramtrace_wire_Api_API_CUDA_FREE, nullptr, [&] { return real(devPtr); });
}

VT_HOOK cudaFreeHost(void* ptr) {
  auto real = REAL(cudaFreeHost);
  if (real == nullptr)
    return vramtrace::preload::report_missing_function("cudaFreeHost", kErrorInitializationError);
  return freed(ptr, vramtrace_wire_Api_API_CUDA_FREE_HOST, nullptr, [&] { return real(ptr); });
}

VT_HOOK cudaFreeAsync(void* devPtr, vt_cudaStream_t hStream) {
  auto real = REAL(cudaFreeAsync);
  if (real == nullptr)
    return vramtrace::preload::report_missing_function("cudaFreeAsync", kErrorInitializationError);
  return freed(devPtr, vramtrace_wire_Api_API_CUDA_FREE_ASYNC, hStream,
               [&] { return real(devPtr, hStream); });
}

VT_HOOK cudaFreeAsync_ptsz(void* devPtr, vt_cudaStream_t hStream) {
  auto real = REAL(cudaFreeAsync_ptsz);
  if (real == nullptr)
    return vramtrace::preload::report_missing_function("cudaFreeAsync_ptsz",
                                                       kErrorInitializationError);
  return freed(devPtr, vramtrace_wire_Api_API_CUDA_FREE_ASYNC, hStream,
               [&] { return real(devPtr, hStream); });
}
