// simcuda's libcudart: the exported CUDA runtime entry points.
//
// A stand-in for NVIDIA's libcudart.so so that vramtrace's tests and demo run on machines
// without a GPU. It implements the allocation API with the real ABI and, where the real
// runtime's behaviour is documented or observed, the same results. Like the real runtime it
// holds no device state of its own: every call that reaches the device goes through the driver,
// libcuda.so.1, loaded at the first call (driver_link.h). What stays here is what the real
// runtime keeps: the current device of each thread and its primary context
// (current_device.h), the per-thread last error, the reading of driver results as runtime
// errors (error_translation.h), and the runtime's own conventions, listed below. The device
// semantics (capacity, alignment, pools, streams, copies) are the driver's: see
// ../driver/driver.h and the api_*.cpp files beside it.
//
// Driver. When libcuda.so.1 cannot be loaded, lacks cuGetProcAddress_v2 or any function the
//   runtime needs, or is older than the runtime, every call that needs the device fails with
//   cudaErrorInsufficientDriver (35), and cudaDriverGetVersion reports 0, as documented.
//   cuInit's failure is every device call's error: cudaErrorNoDevice (SIMCUDA_NO_DEVICE=1 or no
//   devices) or cudaErrorInitializationError (a malformed SIMCUDA_* variable). Calls that need
//   no device keep working: cudaGetErrorName/String, cudaGetLastError, cudaPeekAtLastError,
//   cudaRuntimeGetVersion, cudaDriverGetVersion; and cudaGetDeviceCount writes 0.
//
// Contexts. Before a call that needs the device, the thread's current driver context is used
//   if it has one (made current through the driver API, or by an earlier runtime call);
//   otherwise the primary context of the thread's current device (cudaSetDevice's, default 0)
//   is retained and made current. cudaGetDevice reports the current context's device.
//   cudaDeviceReset resets the primary context of the current device
//   (cuDevicePrimaryCtxReset), which frees its device, managed, stream-ordered and pinned
//   memory, its streams and created pools.
//
// Zero bytes. cudaMalloc, cudaMallocHost, cudaHostAlloc, cudaMallocPitch, cudaMalloc3D,
//   cudaMallocAsync and cudaMallocFromPoolAsync succeed and return a null pointer without asking
//   the driver (CUDA 13 behaviour; the driver refuses zero bytes); cudaMallocPitch and
//   cudaMalloc3D report a pitch of 0 then. cudaMallocManaged returns cudaErrorInvalidValue, as
//   documented.
//
// Freeing. cudaFree(nullptr) and cudaFreeHost(nullptr) succeed and do nothing, as documented;
//   everything else is the driver's cuMemFree_v2 / cuMemFreeHost / cuMemFreeAsync.
//
// Pitched memory. cudaMallocPitch is cuMemAllocPitch_v2, and cudaMalloc3D is cuMemAllocPitch_v2
//   of height * depth rows, reported as {ptr, pitch, width, height}.
//
// Copies. cudaMemcpy checks the direction (cudaErrorInvalidMemcpyDirection) and calls
//   cuMemcpyHtoD_v2, cuMemcpyDtoH_v2, cuMemcpyDtoD_v2, or cuMemcpy (unified addressing) for
//   cudaMemcpyHostToHost and cudaMemcpyDefault; cudaMemset is cuMemsetD8_v2.
//
// Per-thread default stream. The _ptsz/_ptds entry points call the driver functions found with
//   CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM; the plain ones those found with
//   CU_GET_PROC_ADDRESS_LEGACY_STREAM.
//
// Driver entry points. cudaGetDriverEntryPoint(ByVersion) forward to cuGetProcAddress_v2 with
//   the runtime's version (or the one given). As documented for the runtime, a symbol the
//   driver does not have is cudaSuccess with a null function and the status saying why.
//
// Errors. Every failing call stores its error as the calling thread's last error;
//   cudaGetLastError returns and clears it, cudaPeekAtLastError only returns it.

#include <cstddef>
#include <cstdint>
#include <limits>

#include "entry_support.h"

namespace {

using simcuda::record;
using simcuda::runtime::allocate_device;
using simcuda::runtime::device_address;
using simcuda::runtime::Driver;
using simcuda::runtime::from_driver;
using simcuda::runtime::host_pointer;
using simcuda::runtime::in_context;
using simcuda::runtime::with_driver;

// The runtime's structs that the driver reads as its own.
static_assert(sizeof(cudaMemPoolProps) == sizeof(CUmemPoolProps) &&
                  offsetof(cudaMemPoolProps, location) == offsetof(CUmemPoolProps, location) &&
                  offsetof(cudaMemPoolProps, maxSize) == offsetof(CUmemPoolProps, maxSize) &&
                  offsetof(cudaMemPoolProps, reserved) == offsetof(CUmemPoolProps, reserved),
              "cudaMemPoolProps is CUmemPoolProps");
static_assert(static_cast<int>(cudaEnablePerThreadDefaultStream) ==
                  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM &&
              static_cast<int>(cudaDriverEntryPointVersionNotSufficent) ==
                  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);

// What cudaMallocPitch and cudaMalloc3D tell cuMemAllocPitch about their accesses: the widest
// the driver accepts, since the runtime knows nothing of the kernels.
constexpr unsigned int kPitchElementSize = 16;

// The shared bodies of entry points that the library exports under two names, so that one
// export does not call the other through the PLT, where an interposer would see it twice.

cudaError_t host_alloc(void** ptr, std::size_t size, unsigned int flags) {
  return in_context([&](const Driver& driver) {
    constexpr unsigned int kKnownFlags =
        cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
    if (ptr == nullptr || (flags & ~kKnownFlags) != 0) return cudaErrorInvalidValue;
    if (size == 0) {
      *ptr = nullptr;
      return cudaSuccess;
    }
    // The runtime's flags have the values of the driver's CU_MEMHOSTALLOC_*.
    return from_driver(flags == cudaHostAllocDefault ? driver.cuMemAllocHost(ptr, size)
                                                     : driver.cuMemHostAlloc(ptr, size, flags));
  });
}

cudaError_t stream_create(cudaStream_t* stream, unsigned int flags) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuStreamCreate(stream, flags)); });
}

cudaError_t memcpy_sync(void* dst, const void* src, std::size_t count, cudaMemcpyKind kind,
                        bool per_thread) {
  return in_context([&](const Driver& driver) {
    const CUdeviceptr to = device_address(dst);
    const CUdeviceptr from = device_address(src);
    // Compared as an int: callers may pass any value, not only the enumerators.
    switch (static_cast<int>(kind)) {
      case cudaMemcpyHostToDevice:
        return from_driver(per_thread ? driver.cuMemcpyHtoD_ptds(to, src, count)
                                      : driver.cuMemcpyHtoD(to, src, count));
      case cudaMemcpyDeviceToHost:
        return from_driver(per_thread ? driver.cuMemcpyDtoH_ptds(dst, from, count)
                                      : driver.cuMemcpyDtoH(dst, from, count));
      case cudaMemcpyDeviceToDevice:
        return from_driver(per_thread ? driver.cuMemcpyDtoD_ptds(to, from, count)
                                      : driver.cuMemcpyDtoD(to, from, count));
      case cudaMemcpyHostToHost:
      case cudaMemcpyDefault:
        return from_driver(per_thread ? driver.cuMemcpy_ptds(to, from, count)
                                      : driver.cuMemcpy(to, from, count));
      default:
        return cudaErrorInvalidMemcpyDirection;
    }
  });
}

cudaError_t memset_sync(void* ptr, int value, std::size_t count, bool per_thread) {
  return in_context([&](const Driver& driver) {
    const auto byte = static_cast<unsigned char>(value);
    return from_driver(per_thread ? driver.cuMemsetD8_ptds(device_address(ptr), byte, count)
                                  : driver.cuMemsetD8(device_address(ptr), byte, count));
  });
}

cudaError_t malloc_async(void** ptr, std::size_t size, cudaStream_t stream, bool per_thread) {
  return in_context([&](const Driver& driver) {
    if (ptr == nullptr) return cudaErrorInvalidValue;
    if (size == 0) {
      *ptr = nullptr;
      return cudaSuccess;
    }
    return allocate_device(ptr, [&](CUdeviceptr* address) {
      return per_thread ? driver.cuMemAllocAsync_ptsz(address, size, stream)
                        : driver.cuMemAllocAsync(address, size, stream);
    });
  });
}

cudaError_t malloc_from_pool_async(void** ptr, std::size_t size, cudaMemPool_t pool,
                                   cudaStream_t stream, bool per_thread) {
  return in_context([&](const Driver& driver) {
    if (ptr == nullptr) return cudaErrorInvalidValue;
    if (size == 0) {
      *ptr = nullptr;
      return cudaSuccess;
    }
    return allocate_device(ptr, [&](CUdeviceptr* address) {
      return per_thread ? driver.cuMemAllocFromPoolAsync_ptsz(address, size, pool, stream)
                        : driver.cuMemAllocFromPoolAsync(address, size, pool, stream);
    });
  });
}

cudaError_t free_async(void* ptr, cudaStream_t stream, bool per_thread) {
  return in_context([&](const Driver& driver) {
    return from_driver(per_thread ? driver.cuMemFreeAsync_ptsz(device_address(ptr), stream)
                                  : driver.cuMemFreeAsync(device_address(ptr), stream));
  });
}

cudaError_t stream_synchronize(cudaStream_t stream, bool per_thread) {
  return in_context([&](const Driver& driver) {
    return from_driver(per_thread ? driver.cuStreamSynchronize_ptsz(stream)
                                  : driver.cuStreamSynchronize(stream));
  });
}

// cudaGetDriverEntryPoint and cudaGetDriverEntryPointByVersion. Needs the driver, not devices.
// `per_thread_default`: the _ptsz export, for programs built for per-thread default streams,
// where cudaEnableDefault means the per-thread variants.
cudaError_t get_driver_entry_point(const char* symbol, void** funcPtr, int cuda_version,
                                   unsigned long long flags,
                                   cudaDriverEntryPointQueryResult* driverStatus,
                                   bool per_thread_default) {
  const Driver& driver = simcuda::runtime::driver();
  if (driver.load_error != cudaSuccess) return record(driver.load_error);
  if (symbol == nullptr || funcPtr == nullptr) return record(cudaErrorInvalidValue);
  if (flags == cudaEnableDefault && per_thread_default) flags = cudaEnablePerThreadDefaultStream;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult result = driver.cuGetProcAddress(symbol, funcPtr, cuda_version, flags, &status);
  if (result != CUDA_SUCCESS && result != CUDA_ERROR_NOT_FOUND) return record(from_driver(result));
  // The driver's flag and status values are the runtime's.
  if (driverStatus != nullptr) *driverStatus = static_cast<cudaDriverEntryPointQueryResult>(status);
  if (result == CUDA_ERROR_NOT_FOUND) *funcPtr = nullptr;
  return cudaSuccess;
}

// A template so that only the call matching the runtime's version of cuCtxSynchronize is
// compiled.
template <class DriverFunctions>
cudaError_t synchronize_context(const DriverFunctions& driver) {
  if constexpr (simcuda::runtime::kRuntimeVersion >= 13000) {
    return from_driver(driver.cuCtxSynchronize(nullptr));
  } else {
    return from_driver(driver.cuCtxSynchronize());
  }
}

}  // namespace

// Device management.

SIMCUDA_EXPORT cudaError_t cudaDeviceReset(void) {
  return in_context([](const Driver& driver) {
    int device = 0;
    if (const cudaError_t error = simcuda::runtime::context_device(driver, &device);
        error != cudaSuccess) {
      return error;
    }
    return from_driver(driver.cuDevicePrimaryCtxReset(device));
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  return in_context([](const Driver& driver) { return synchronize_context(driver); });
}

SIMCUDA_EXPORT cudaError_t cudaGetDeviceCount(int* count) {
  if (count == nullptr) return record(cudaErrorInvalidValue);
  const Driver& driver = simcuda::runtime::driver();
  // Without devices (or a driver) the real runtime still writes 0, and callers rely on it.
  const cudaError_t error = simcuda::runtime::ready(driver);
  *count = error == cudaSuccess ? driver.device_count : 0;
  return record(error);
}

SIMCUDA_EXPORT cudaError_t cudaSetDevice(int device) {
  return with_driver(
      [&](const Driver& driver) { return simcuda::runtime::set_device(driver, device); });
}

SIMCUDA_EXPORT cudaError_t cudaGetDevice(int* device) {
  return with_driver([&](const Driver& driver) {
    if (device == nullptr) return cudaErrorInvalidValue;
    return simcuda::runtime::get_device(driver, device);
  });
}

SIMCUDA_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  return with_driver([&](const Driver& driver) {
    return from_driver(driver.cuDeviceGetDefaultMemPool(memPool, device));
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
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuStreamDestroy(stream)); });
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  return stream_synchronize(stream, false);
}

SIMCUDA_EXPORT cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) {
  return stream_synchronize(stream, true);
}

// Memory.

SIMCUDA_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return in_context([&](const Driver& driver) {
    if (devPtr == nullptr) return cudaErrorInvalidValue;
    if (size == 0) {
      *devPtr = nullptr;
      return cudaSuccess;
    }
    return allocate_device(devPtr,
                           [&](CUdeviceptr* address) { return driver.cuMemAlloc(address, size); });
  });
}

SIMCUDA_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  return in_context([&](const Driver& driver) {
    // Zero bytes are refused here too (documented); the flags have the driver's values.
    if (devPtr == nullptr) return cudaErrorInvalidValue;
    return allocate_device(devPtr, [&](CUdeviceptr* address) {
      return driver.cuMemAllocManaged(address, size, flags);
    });
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
  return in_context([&](const Driver& driver) {
    if (devPtr == nullptr || pitch == nullptr) return cudaErrorInvalidValue;
    if (width == 0 || height == 0) {
      *devPtr = nullptr;
      *pitch = 0;
      return cudaSuccess;
    }
    return allocate_device(devPtr, [&](CUdeviceptr* address) {
      return driver.cuMemAllocPitch(address, pitch, width, height, kPitchElementSize);
    });
  });
}

SIMCUDA_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr,
                                        struct cudaExtent extent) {
  return in_context([&](const Driver& driver) {
    if (pitchedDevPtr == nullptr) return cudaErrorInvalidValue;
    if (extent.depth != 0 &&
        extent.height > std::numeric_limits<std::size_t>::max() / extent.depth) {
      return cudaErrorMemoryAllocation;
    }
    const std::size_t rows = extent.height * extent.depth;
    if (extent.width == 0 || rows == 0) {
      *pitchedDevPtr = {nullptr, 0, extent.width, extent.height};
      return cudaSuccess;
    }
    CUdeviceptr address = 0;
    std::size_t pitch = 0;
    const cudaError_t error = from_driver(
        driver.cuMemAllocPitch(&address, &pitch, extent.width, rows, kPitchElementSize));
    if (error == cudaSuccess) {
      *pitchedDevPtr = {host_pointer(address), pitch, extent.width, extent.height};
    }
    return error;
  });
}

SIMCUDA_EXPORT cudaError_t cudaFree(void* devPtr) {
  return in_context([&](const Driver& driver) {
    return devPtr == nullptr ? cudaSuccess : from_driver(driver.cuMemFree(device_address(devPtr)));
  });
}

SIMCUDA_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  return in_context([&](const Driver& driver) {
    return ptr == nullptr ? cudaSuccess : from_driver(driver.cuMemFreeHost(ptr));
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  return in_context(
      [&](const Driver& driver) { return from_driver(driver.cuMemGetInfo(free, total)); });
}

SIMCUDA_EXPORT cudaError_t cudaMemcpy(void* dst, const void* src, size_t count,
                                      enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, false);
}

SIMCUDA_EXPORT cudaError_t cudaMemcpy_ptds(void* dst, const void* src, size_t count,
                                           enum cudaMemcpyKind kind) {
  return memcpy_sync(dst, src, count, kind, true);
}

SIMCUDA_EXPORT cudaError_t cudaMemset(void* devPtr, int value, size_t count) {
  return memset_sync(devPtr, value, count, false);
}

SIMCUDA_EXPORT cudaError_t cudaMemset_ptds(void* devPtr, int value, size_t count) {
  return memset_sync(devPtr, value, count, true);
}

// Stream-ordered allocator.

SIMCUDA_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(devPtr, size, hStream, false);
}

SIMCUDA_EXPORT cudaError_t cudaMallocAsync_ptsz(void** devPtr, size_t size, cudaStream_t hStream) {
  return malloc_async(devPtr, size, hStream, true);
}

SIMCUDA_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream) {
  return malloc_from_pool_async(ptr, size, memPool, stream, false);
}

SIMCUDA_EXPORT cudaError_t cudaMallocFromPoolAsync_ptsz(void** ptr, size_t size,
                                                        cudaMemPool_t memPool,
                                                        cudaStream_t stream) {
  return malloc_from_pool_async(ptr, size, memPool, stream, true);
}

SIMCUDA_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return free_async(devPtr, hStream, false);
}

SIMCUDA_EXPORT cudaError_t cudaFreeAsync_ptsz(void* devPtr, cudaStream_t hStream) {
  return free_async(devPtr, hStream, true);
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool,
                                             const struct cudaMemPoolProps* poolProps) {
  return with_driver([&](const Driver& driver) {
    return from_driver(
        driver.cuMemPoolCreate(memPool, reinterpret_cast<const CUmemPoolProps*>(poolProps)));
  });
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  return with_driver(
      [&](const Driver& driver) { return from_driver(driver.cuMemPoolDestroy(memPool)); });
}

SIMCUDA_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  return with_driver([&](const Driver& driver) {
    return from_driver(driver.cuMemPoolTrimTo(memPool, minBytesToKeep));
  });
}

// Driver entry points.

SIMCUDA_EXPORT cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** funcPtr,
                                                   unsigned long long flags,
                                                   cudaDriverEntryPointQueryResult* driverStatus) {
  return get_driver_entry_point(symbol, funcPtr, simcuda::runtime::kRuntimeVersion, flags,
                                driverStatus, false);
}

SIMCUDA_EXPORT cudaError_t
cudaGetDriverEntryPoint_ptsz(const char* symbol, void** funcPtr, unsigned long long flags,
                             cudaDriverEntryPointQueryResult* driverStatus) {
  return get_driver_entry_point(symbol, funcPtr, simcuda::runtime::kRuntimeVersion, flags,
                                driverStatus, true);
}

SIMCUDA_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    cudaDriverEntryPointQueryResult* driverStatus) {
  return get_driver_entry_point(symbol, funcPtr, static_cast<int>(cudaVersion), flags, driverStatus,
                                false);
}

SIMCUDA_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(
    const char* symbol, void** funcPtr, unsigned int cudaVersion, unsigned long long flags,
    cudaDriverEntryPointQueryResult* driverStatus) {
  return get_driver_entry_point(symbol, funcPtr, static_cast<int>(cudaVersion), flags, driverStatus,
                                true);
}

// Versions: these need no device.

SIMCUDA_EXPORT cudaError_t cudaDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return record(cudaErrorInvalidValue);
  const Driver& driver = simcuda::runtime::driver();
  // Without a driver the version is 0, and the call still succeeds, as documented.
  if (driver.load_error != cudaSuccess) {
    *driverVersion = 0;
    return cudaSuccess;
  }
  return record(from_driver(driver.cuDriverGetVersion(driverVersion)));
}

SIMCUDA_EXPORT cudaError_t cudaRuntimeGetVersion(int* runtimeVersion) {
  if (runtimeVersion == nullptr) return record(cudaErrorInvalidValue);
  *runtimeVersion = simcuda::runtime::kRuntimeVersion;  // set per build in CMakeLists.txt
  return cudaSuccess;
}
