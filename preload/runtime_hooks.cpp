// Hooks for the CUDA runtime's allocation family (DESIGN.md, capture layer 1): plain symbol
// interposition, for programs and libraries that link libcudart.so dynamically.
//
// Each hook forwards to the real function and returns its result unchanged. An allocation is
// recorded after the real call returns (failed calls too, with their error code); a free is
// recorded before the real call, so the address cannot be handed out again before the
// collector has seen it freed.
#include <atomic>

#include "cuda_abi.h"
#include "nanopb/vramtrace.pb.h"
#include "real_functions.h"
#include "recorder.h"
#include "reentry_guard.h"
#include "shim_log.h"

using namespace vramtrace::cuda;
using vramtrace::preload::AllocEvent;
using vramtrace::preload::FreeEvent;
using vramtrace::preload::ReentryGuard;

namespace {

#define VRAMTRACE_DECLARE_REAL(name, same_as, params) \
  std::atomic<void*> g_real_##name{nullptr};          \
  using name##_fn = vt_cudaError_t(*) params;
VRAMTRACE_CUDA_RUNTIME_HOOKS(VRAMTRACE_DECLARE_REAL)
#undef VRAMTRACE_DECLARE_REAL

#define REAL(name) vramtrace::preload::real_function<name##_fn>(g_real_##name, #name)

// No libcudart behind the shim: only a program that found the hook by dlsym without loading
// the runtime can get here. Report what a runtime without a driver would.
vt_cudaError_t no_runtime(const char* name) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    vramtrace::preload::shim_log(name, " called, but no libcudart is loaded");
  return kErrorInitializationError;
}

uint64_t as_int(const void* p) {
  return reinterpret_cast<uint64_t>(p);
}

// Records an allocation call's outcome. `address` is only read when the call succeeded.
void record_alloc(vt_cudaError_t result, void* const* address, uint64_t size, uint64_t requested,
                  int kind, int api, vt_cudaStream_t stream = nullptr,
                  vt_cudaMemPool_t pool = nullptr, unsigned flags = 0) {
  AllocEvent e{};
  e.result = result;
  e.address = (result == kSuccess && address != nullptr) ? as_int(*address) : 0;
  // A successful call that hands out no memory (size 0) allocates nothing to track.
  if (result == kSuccess && e.address == 0) return;
  // The device is asked for only when the runtime certainly has a context: asking it after
  // other failures could set the thread's sticky error, which the program may read next.
  e.device = (result == kSuccess || result == kErrorMemoryAllocation)
                 ? vramtrace::preload::current_device()
                 : -1;
  e.stream = as_int(stream);
  e.kind = kind;
  e.api = api;
  e.size = size;
  e.requested_size = requested;
  e.pool = as_int(pool);
  e.flags = flags;
  vramtrace::preload::record_alloc(e);
}

template <class Real>
vt_cudaError_t traced_free(Real real, void* ptr, int api, vt_cudaStream_t stream) {
  ReentryGuard guard;
  if (!guard.outermost() || !vramtrace::preload::is_recording() || ptr == nullptr)
    return real(ptr, stream);
  FreeEvent e{};
  e.device = -1;  // the collector takes the device from the allocation being freed
  e.stream = as_int(stream);
  e.api = api;
  e.address = as_int(ptr);
  const uint64_t seq = vramtrace::preload::record_free(e);
  const vt_cudaError_t result = real(ptr, stream);
  if (result != kSuccess && seq != 0) vramtrace::preload::record_free_failed(seq, result);
  return result;
}

}  // namespace

namespace {

// The shape of every allocation hook: forward to the real function and return its result
// unchanged; when this is the outermost hook on the thread and recording is on, hand the
// result to `record` first.
template <class Real, class Record, class... Args>
vt_cudaError_t traced_alloc(Real real, const char* name, Record&& record, Args... args) {
  if (real == nullptr) return no_runtime(name);
  ReentryGuard guard;
  if (!guard.outermost() || !vramtrace::preload::is_recording()) return real(args...);
  const vt_cudaError_t result = real(args...);
  record(result);
  return result;
}

}  // namespace

#define VT_HOOK extern "C" __attribute__((visibility("default"))) vt_cudaError_t

VT_HOOK cudaMalloc(void** devPtr, size_t size) {
  return traced_alloc(
      REAL(cudaMalloc), "cudaMalloc",
      [&](vt_cudaError_t r) {
        record_alloc(r, devPtr, size, size, vramtrace_wire_Kind_KIND_DEVICE,
                     vramtrace_wire_Api_API_CUDA_MALLOC);
      },
      devPtr, size);
}

VT_HOOK cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return traced_alloc(
      REAL(cudaMallocManaged), "cudaMallocManaged",
      [&](vt_cudaError_t r) {
        record_alloc(r, devPtr, size, size, vramtrace_wire_Kind_KIND_MANAGED,
                     vramtrace_wire_Api_API_CUDA_MALLOC_MANAGED, nullptr, nullptr, flags);
      },
      devPtr, size, flags);
}

VT_HOOK cudaMallocHost(void** ptr, size_t size) {
  return traced_alloc(
      REAL(cudaMallocHost), "cudaMallocHost",
      [&](vt_cudaError_t r) {
        record_alloc(r, ptr, size, size, vramtrace_wire_Kind_KIND_HOST_PINNED,
                     vramtrace_wire_Api_API_CUDA_MALLOC_HOST);
      },
      ptr, size);
}

VT_HOOK cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return traced_alloc(
      REAL(cudaHostAlloc), "cudaHostAlloc",
      [&](vt_cudaError_t r) {
        record_alloc(r, pHost, size, size, vramtrace_wire_Kind_KIND_HOST_PINNED,
                     vramtrace_wire_Api_API_CUDA_HOST_ALLOC, nullptr, nullptr, flags);
      },
      pHost, size, flags);
}

VT_HOOK cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  return traced_alloc(
      REAL(cudaMallocPitch), "cudaMallocPitch",
      [&](vt_cudaError_t r) {
        const uint64_t requested = uint64_t{width} * height;
        const uint64_t reserved = (r == kSuccess && pitch != nullptr) ? *pitch * height : requested;
        record_alloc(r, devPtr, reserved, requested, vramtrace_wire_Kind_KIND_DEVICE,
                     vramtrace_wire_Api_API_CUDA_MALLOC_PITCH);
      },
      devPtr, pitch, width, height);
}

VT_HOOK cudaMalloc3D(vt_cudaPitchedPtr* pitchedDevPtr, vt_cudaExtent extent) {
  return traced_alloc(
      REAL(cudaMalloc3D), "cudaMalloc3D",
      [&](vt_cudaError_t r) {
        const uint64_t requested = uint64_t{extent.width} * extent.height * extent.depth;
        const bool ok = r == kSuccess && pitchedDevPtr != nullptr;
        const uint64_t reserved =
            ok ? pitchedDevPtr->pitch * extent.height * extent.depth : requested;
        void* address = ok ? pitchedDevPtr->ptr : nullptr;
        record_alloc(r, &address, reserved, requested, vramtrace_wire_Kind_KIND_DEVICE,
                     vramtrace_wire_Api_API_CUDA_MALLOC_3D);
      },
      pitchedDevPtr, extent);
}

VT_HOOK cudaMallocAsync(void** devPtr, size_t size, vt_cudaStream_t hStream) {
  return traced_alloc(
      REAL(cudaMallocAsync), "cudaMallocAsync",
      [&](vt_cudaError_t r) {
        record_alloc(r, devPtr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
                     vramtrace_wire_Api_API_CUDA_MALLOC_ASYNC, hStream);
      },
      devPtr, size, hStream);
}

VT_HOOK cudaMallocAsync_ptsz(void** devPtr, size_t size, vt_cudaStream_t hStream) {
  return traced_alloc(
      REAL(cudaMallocAsync_ptsz), "cudaMallocAsync_ptsz",
      [&](vt_cudaError_t r) {
        record_alloc(r, devPtr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
                     vramtrace_wire_Api_API_CUDA_MALLOC_ASYNC, hStream);
      },
      devPtr, size, hStream);
}

VT_HOOK cudaMallocFromPoolAsync(void** ptr, size_t size, vt_cudaMemPool_t memPool,
                                vt_cudaStream_t stream) {
  return traced_alloc(
      REAL(cudaMallocFromPoolAsync), "cudaMallocFromPoolAsync",
      [&](vt_cudaError_t r) {
        record_alloc(r, ptr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
                     vramtrace_wire_Api_API_CUDA_MALLOC_FROM_POOL_ASYNC, stream, memPool);
      },
      ptr, size, memPool, stream);
}

VT_HOOK cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size, vt_cudaMemPool_t memPool,
                                     vt_cudaStream_t stream) {
  return traced_alloc(
      REAL(cudaMallocFromPoolAsync_ptsz), "cudaMallocFromPoolAsync_ptsz",
      [&](vt_cudaError_t r) {
        record_alloc(r, ptr, size, size, vramtrace_wire_Kind_KIND_ASYNC,
                     vramtrace_wire_Api_API_CUDA_MALLOC_FROM_POOL_ASYNC, stream, memPool);
      },
      ptr, size, memPool, stream);
}

VT_HOOK cudaFree(void* devPtr) {
  auto real = REAL(cudaFree);
  if (real == nullptr) return no_runtime("cudaFree");
  return traced_free([real](void* p, vt_cudaStream_t) { return real(p); }, devPtr,
                     vramtrace_wire_Api_API_CUDA_FREE, nullptr);
}

VT_HOOK cudaFreeHost(void* ptr) {
  auto real = REAL(cudaFreeHost);
  if (real == nullptr) return no_runtime("cudaFreeHost");
  return traced_free([real](void* p, vt_cudaStream_t) { return real(p); }, ptr,
                     vramtrace_wire_Api_API_CUDA_FREE_HOST, nullptr);
}

VT_HOOK cudaFreeAsync(void* devPtr, vt_cudaStream_t hStream) {
  auto real = REAL(cudaFreeAsync);
  if (real == nullptr) return no_runtime("cudaFreeAsync");
  return traced_free(real, devPtr, vramtrace_wire_Api_API_CUDA_FREE_ASYNC, hStream);
}

VT_HOOK cudaFreeAsync_ptsz(void* devPtr, vt_cudaStream_t hStream) {
  auto real = REAL(cudaFreeAsync_ptsz);
  if (real == nullptr) return no_runtime("cudaFreeAsync_ptsz");
  return traced_free(real, devPtr, vramtrace_wire_Api_API_CUDA_FREE_ASYNC, hStream);
}
