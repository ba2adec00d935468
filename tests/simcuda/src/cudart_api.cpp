// simcuda's libcudart: the exported CUDA runtime entry points.
//
// A stand-in for NVIDIA's libcudart.so so that vramtrace's tests and demo run on machines
// without a GPU. It implements the allocation API with the real ABI and, where the real
// runtime's behaviour is documented or observed, the same results. Semantics:
//
// Machine. SIMCUDA_DEVICE_COUNT devices (default 2), each with SIMCUDA_DEVICE_MEMORY bytes
//   (default 16GiB; plain bytes or K/M/G/T/KiB/MiB/GiB/TiB, all binary; rounded down to 512).
//   The environment is read on the first call. A malformed variable is reported on stderr and
//   every call that needs a device then fails with cudaErrorInitializationError.
//   SIMCUDA_NO_DEVICE=1 (or a device count of 0) simulates a driver that sees no GPU: every
//   call that needs a device returns cudaErrorNoDevice, and cudaGetDeviceCount reports 0.
//   Calls that need no device keep working, as in the real runtime: cudaGetErrorName/String,
//   cudaGetLastError, cudaPeekAtLastError, cudaRuntimeGetVersion, cudaDriverGetVersion.
//
// Device memory. Each device owns an arena: one reserved range of address space (see arena.h)
//   from which cudaMalloc, cudaMallocPitch, cudaMalloc3D, cudaMallocManaged and the
//   stream-ordered allocator all take memory, so they share the device's capacity. Pointers
//   are 512-byte aligned and sizes are rounded up to 512 bytes. Beyond capacity, or when no
//   free range is large enough, a call fails with cudaErrorMemoryAllocation and leaves its
//   output untouched. The memory is ordinary host memory, so tests can read it back, and
//   cudaMemGetInfo reports the current device's arena: total = capacity, free = capacity minus
//   what live allocations hold.
//
// Zero bytes. cudaMalloc, cudaMallocHost, cudaHostAlloc, cudaMallocPitch, cudaMalloc3D,
//   cudaMallocAsync and cudaMallocFromPoolAsync succeed and return a null pointer (CUDA 13
//   behaviour; some 11.x runtimes left the pointer unchanged). cudaMallocManaged returns
//   cudaErrorInvalidValue, as documented.
//
// Pitched memory. The pitch is the width rounded up to 512; cudaMallocPitch allocates
//   pitch * height, cudaMalloc3D pitch * height * depth and reports {ptr, pitch, width, height}.
//
// Pinned host memory (cudaMallocHost, cudaHostAlloc) is page-aligned anonymous memory outside
//   every arena; it does not count against device capacity. cudaHostAlloc accepts the
//   Portable, Mapped and WriteCombined flags and rejects other bits.
//
// Freeing. cudaFree(nullptr) and cudaFreeHost(nullptr) succeed and do nothing. An address that
//   is not the start of a live allocation of the right family (device memory for cudaFree and
//   cudaFreeAsync, pinned memory for cudaFreeHost), including a second free of the same
//   pointer, gives cudaErrorInvalidValue. cudaFree and cudaFreeAsync take any device, managed
//   or stream-ordered allocation, as the real ones do.
//
// Stream-ordered allocator. Every device has a default pool; cudaMemPoolCreate makes more
//   (device location, pinned type; maxSize, when non-zero, caps what the pool holds). Nothing
//   runs asynchronously: memory is taken and returned at the call, and pools cache nothing,
//   so cudaMemPoolTrimTo has nothing to release. cudaMallocAsync takes from the default pool
//   of the stream's device (the current device for the implicit streams). Destroying a pool
//   with live allocations succeeds; the handle becomes invalid at once and the pool goes away
//   with its last allocation, as documented for the real one. The default pool cannot be
//   destroyed (cudaErrorInvalidValue).
//
// Streams are handles only: there is no work to order. 0, cudaStreamLegacy and
//   cudaStreamPerThread are always valid; created streams until destroyed. Any other handle
//   gives cudaErrorInvalidResourceHandle. The _ptsz/_ptds entry points behave as the plain
//   ones.
//
// Copies and memset check that the device side of the transfer lies within one live device,
//   managed or stream-ordered allocation (within its requested size), and that no pointer
//   into an arena refers to freed memory; otherwise cudaErrorInvalidValue.
//
// Errors. Every failing call stores its error as the calling thread's last error;
//   cudaGetLastError returns and clears it, cudaPeekAtLastError only returns it.
//
// Devices. The current device is per thread (default 0), as in the real runtime.
//   cudaDeviceReset frees every allocation of the current device (device, managed,
//   stream-ordered, and pinned memory allocated while it was current), its streams and its
//   created pools.
//
// Thread safety: one lock serialises all state (runtime.h).

#include <cstddef>
#include <limits>
#include <optional>

#include "cuda_runtime_api.h"
#include "errors.h"
#include "runtime.h"

// The exported API. Everything else is hidden (-fvisibility=hidden and exports.map).
#define SIMCUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using simcuda::AllocationKind;
using simcuda::record;
using simcuda::Runtime;

// What the simulated driver reports: it supports the CUDA 13.0 API, so both the .so.12 and
// the .so.13 builds of this library run on it.
constexpr int kDriverVersion = 13000;

// The current device of the calling thread.
thread_local int t_current_device = 0;

// Runs `body(runtime)` if the machine has devices, and records the error it returns, or the
// machine's initialisation error without running it.
template <class Body>
cudaError_t with_devices(Body&& body) {
  Runtime& runtime = Runtime::get();
  if (const cudaError_t error = runtime.init_error(); error != cudaSuccess) return record(error);
  return record(body(runtime));
}

// `width` rounded up to the pitch alignment, times `rows`; nullopt on overflow.
std::optional<std::size_t> pitched_bytes(std::size_t width, std::size_t rows, std::size_t* pitch) {
  const std::optional<std::size_t> rounded = simcuda::Arena::round_up(width);
  if (!rounded) return std::nullopt;
  *pitch = *rounded;
  if (rows != 0 && *rounded > std::numeric_limits<std::size_t>::max() / rows) return std::nullopt;
  return *rounded * rows;
}

// The shared bodies of entry points that the library exports under two names, so that one
// export does not call the other through the PLT, where an interposer would see it twice.

cudaError_t host_alloc(void** ptr, std::size_t size, unsigned int flags) {
  return with_devices([&](Runtime& runtime) {
    constexpr unsigned int kKnownFlags =
        cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
    if (ptr == nullptr || (flags & ~kKnownFlags) != 0) return cudaErrorInvalidValue;
    return runtime.allocate_host(t_current_device, size, ptr);
  });
}

cudaError_t stream_create(cudaStream_t* stream, unsigned int flags) {
  return with_devices([&](Runtime& runtime) {
    if (stream == nullptr || (flags & ~cudaStreamNonBlocking) != 0) return cudaErrorInvalidValue;
    return runtime.create_stream(t_current_device, flags, stream);
  });
}

cudaError_t stream_synchronize(cudaStream_t stream) {
  return with_devices([&](Runtime& runtime) { return runtime.check_stream(stream); });
}

cudaError_t memcpy_sync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind) {
  return with_devices([&](Runtime& runtime) { return runtime.copy(dst, src, count, kind); });
}

cudaError_t memset_sync(void* ptr, int value, std::size_t count) {
  return with_devices([&](Runtime& runtime) { return runtime.fill(ptr, value, count); });
}

cudaError_t malloc_async(void** ptr, std::size_t size, cudaStream_t stream) {
  return with_devices([&](Runtime& runtime) {
    if (ptr == nullptr) return cudaErrorInvalidValue;
    return runtime.allocate_async(t_current_device, size, stream, ptr);
  });
}

cudaError_t malloc_from_pool_async(void** ptr, std::size_t size, cudaMemPool_t pool,
                                   cudaStream_t stream) {
  return with_devices([&](Runtime& runtime) {
    if (ptr == nullptr) return cudaErrorInvalidValue;
    return runtime.allocate_from_pool(pool, size, stream, ptr);
  });
}

cudaError_t free_async(void* ptr, cudaStream_t stream) {
  return with_devices([&](Runtime& runtime) { return runtime.free_async(ptr, stream); });
}

}  // namespace

// Device management.

SIMCUDA_EXPORT cudaError_t cudaDeviceReset(void) {
  return with_devices([](Runtime& runtime) {
    runtime.reset_device(t_current_device);
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  return with_devices([](Runtime&) { return cudaSuccess; });
}

SIMCUDA_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  Runtime& runtime = Runtime::get();
  // Without devices the real runtime still writes 0, and callers rely on it.
  *count = runtime.init_error() == cudaSuccess ? runtime.device_count() : 0;
  return record(runtime.init_error());
}

SIMCUDA_EXPORT cudaError_t cudaSetDevice(int device) {
  return with_devices([&](Runtime& runtime) {
    if (!runtime.valid_device(device)) return cudaErrorInvalidDevice;
    t_current_device = device;
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaGetDevice(int* device) {
  return with_devices([&](Runtime&) {
    if (device == nullptr) return cudaErrorInvalidValue;
    *device = t_current_device;
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  return with_devices([&](Runtime& runtime) {
    if (memPool == nullptr) return cudaErrorInvalidValue;
    if (!runtime.valid_device(device)) return cudaErrorInvalidDevice;
    *memPool = runtime.default_pool(device);
    return cudaSuccess;
  });
}

// Errors: these need no device.

SIMCUDA_EXPORT cudaError_t cudaGetLastError(void) {
  return simcuda::take_last_error();
}

SIMCUDA_EXPORT cudaError_t cudaPeekAtLastError(void) {
  return simcuda::peek_last_error();
}

SIMCUDA_EXPORT const char* cudaGetErrorName(cudaError_t error) {
  return simcuda::error_name(error);
}

SIMCUDA_EXPORT const char* cudaGetErrorString(cudaError_t error) {
  return simcuda::error_string(error);
}

// Streams.

SIMCUDA_EXPORT cudaError_t cudaStreamCreate(cudaStream_t* pStream) {
  return stream_create(pStream, cudaStreamDefault);
}

SIMCUDA_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t* pStream, unsigned int flags) {
  return stream_create(pStream, flags);
}

SIMCUDA_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  return with_devices([&](Runtime& runtime) { return runtime.destroy_stream(stream); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return stream_synchronize(stream);
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return stream_synchronize(stream);
}

// Memory.

SIMCUDA_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return with_devices([&](Runtime& runtime) {
    if (devPtr == nullptr) return cudaErrorInvalidValue;
    return runtime.allocate(t_current_device, size, AllocationKind::Device, devPtr);
  });
}

SIMCUDA_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return with_devices([&](Runtime& runtime) {
    if (devPtr == nullptr || size == 0) return cudaErrorInvalidValue;
    if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) return cudaErrorInvalidValue;
    return runtime.allocate(t_current_device, size, AllocationKind::Managed, devPtr);
  });
}

SIMCUDA_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return host_alloc(ptr, size, cudaHostAllocDefault);
}

SIMCUDA_EXPORT cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  return host_alloc(pHost, size, flags);
}

SIMCUDA_EXPORT cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width,
                                           size_t height) {
  return with_devices([&](Runtime& runtime) {
    if (devPtr == nullptr || pitch == nullptr) return cudaErrorInvalidValue;
    std::size_t row_pitch = 0;
    const std::optional<std::size_t> bytes = pitched_bytes(width, height, &row_pitch);
    if (!bytes) return cudaErrorMemoryAllocation;
    const cudaError_t error =
        runtime.allocate(t_current_device, *bytes, AllocationKind::Device, devPtr);
    if (error == cudaSuccess) *pitch = row_pitch;
    return error;
  });
}

SIMCUDA_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr,
                                        struct cudaExtent extent) {
  return with_devices([&](Runtime& runtime) {
    if (pitchedDevPtr == nullptr) return cudaErrorInvalidValue;
    if (extent.depth != 0 &&
        extent.height > std::numeric_limits<std::size_t>::max() / extent.depth) {
      return cudaErrorMemoryAllocation;
    }
    std::size_t row_pitch = 0;
    const std::optional<std::size_t> bytes =
        pitched_bytes(extent.width, extent.height * extent.depth, &row_pitch);
    if (!bytes) return cudaErrorMemoryAllocation;
    void* ptr = nullptr;
    const cudaError_t error =
        runtime.allocate(t_current_device, *bytes, AllocationKind::Device, &ptr);
    if (error == cudaSuccess) *pitchedDevPtr = {ptr, row_pitch, extent.width, extent.height};
    return error;
  });
}

SIMCUDA_EXPORT cudaError_t cudaFree(void* devPtr) {
  return with_devices([&](Runtime& runtime) {
    return devPtr == nullptr ? cudaSuccess : runtime.free_device_memory(devPtr);
  });
}

SIMCUDA_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  return with_devices([&](Runtime& runtime) {
    return ptr == nullptr ? cudaSuccess : runtime.free_host_memory(ptr);
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return with_devices([&](Runtime& runtime) {
    if (free == nullptr || total == nullptr) return cudaErrorInvalidValue;
    runtime.memory_info(t_current_device, free, total);
    return cudaSuccess;
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind);
}

SIMCUDA_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind);
}

SIMCUDA_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return memset_sync(devPtr, value, count);
}

SIMCUDA_EXPORT cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return memset_sync(devPtr, value, count);
}

// Stream-ordered allocator.

SIMCUDA_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(devPtr, size, hStream);
}

SIMCUDA_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(devPtr, size, hStream);
}

SIMCUDA_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream) {
  return malloc_from_pool_async(ptr, size, memPool, stream);
}

SIMCUDA_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size,
                                                        cudaMemPool_t memPool,
                                                        cudaStream_t stream) {
  return malloc_from_pool_async(ptr, size, memPool, stream);
}

SIMCUDA_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return free_async(devPtr, hStream);
}

SIMCUDA_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return free_async(devPtr, hStream);
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool,
                                             const struct cudaMemPoolProps* poolProps) {
  return with_devices([&](Runtime& runtime) {
    if (memPool == nullptr || poolProps == nullptr) return cudaErrorInvalidValue;
    return runtime.create_pool(*poolProps, memPool);
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  return with_devices([&](Runtime& runtime) { return runtime.destroy_pool(memPool); });
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t /*minBytesToKeep*/) {
  // Pools hand memory back to the arena at every free, so there is never anything to trim;
  // what remains is checking the handle.
  return with_devices([&](Runtime& runtime) { return runtime.check_pool(memPool); });
}

// Versions: these need no device.

SIMCUDA_EXPORT cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  *driverVersion = kDriverVersion;
  return cudaSuccess;
}

SIMCUDA_EXPORT cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = SIMCUDA_RUNTIME_VERSION;  // 13000 or 12080, set per build in CMakeLists.txt
  return cudaSuccess;
}
