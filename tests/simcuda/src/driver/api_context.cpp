// Driver API: primary contexts, the calling thread's context stack, and peer access.
//
// The simulated driver has one context per device, its primary context; the legacy entry
// points (cuDevicePrimaryCtxRelease, ...Reset, ...SetFlags, cuCtxPushCurrent, cuCtxPopCurrent
// without _v2) behave as the current ones, since the differences (contexts retained by a CUDA
// 4.0 runtime, flags of an active context) cannot arise or do not matter here.
//
// Each thread has a stack of contexts whose top is its current context: cuCtxPushCurrent and
// cuCtxPopCurrent push and pop, cuCtxSetCurrent replaces the top (null pops it). Flags of a
// primary context are kept and reported, and change nothing: nothing waits. Peer access is
// bookkeeping, since every device can already read every other's memory (it is host memory);
// it ends when either context is reset or released for the last time.

#include <array>
#include <map>
#include <mutex>

#include "api_support.h"
#include "capture.h"
#include "export_tables.h"

using simcuda::driver::Driver;
using simcuda::driver::in_context;
using simcuda::driver::initialized;

namespace {

// cuCtxSetLimit's values, by device (each device has its one context); what was never set has
// the default of a real H100 context.
using Limits = std::array<size_t, CU_LIMIT_MAX>;
constexpr Limits kDefaultLimits = {
    1024,     // CU_LIMIT_STACK_SIZE, per thread
    1 << 20,  // CU_LIMIT_PRINTF_FIFO_SIZE
    8 << 20,  // CU_LIMIT_MALLOC_HEAP_SIZE
    2,        // CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH
    2048,     // CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT
    64,       // CU_LIMIT_MAX_L2_FETCH_GRANULARITY
    0,        // CU_LIMIT_PERSISTING_L2_CACHE_SIZE
    0,        // CU_LIMIT_SHMEM_SIZE: 0, no limit, outside a green (CIG) context
    0,        // CU_LIMIT_CIG_ENABLED: never
    0};       // CU_LIMIT_CIG_SHMEM_FALLBACK_ENABLED
std::mutex limits_mutex;
std::map<int, Limits> set_limits;

Limits limits_of(int device) {
  std::lock_guard lock(limits_mutex);
  const auto found = set_limits.find(device);
  return found != set_limits.end() ? found->second : kDefaultLimits;
}

void forget_limits(int device) {
  std::lock_guard lock(limits_mutex);
  set_limits.erase(device);
}

CUresult release_primary(CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    return driver.release_primary(dev);
  });
}

CUresult reset_primary(CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    // Frees what the context holds; the retain count stays, as documented.
    driver.reset_primary(dev);
    forget_limits(dev);
    simcuda::driver::reset_context_local_storage(driver.primary_context(dev));
    return CUDA_SUCCESS;
  });
}

CUresult context_device(CUdevice* device, CUcontext ctx) {
  return initialized([&](Driver& driver) {
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.context_device(ctx, device);
  });
}

// Every flag cuDevicePrimaryCtxSetFlags may set: one scheduling mode and the others.
constexpr unsigned int kContextFlags = CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST |
                                       CU_CTX_LMEM_RESIZE_TO_MAX | CU_CTX_COREDUMP_ENABLE |
                                       CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS;

CUresult set_primary_flags(CUdevice dev, unsigned int flags) {
  return initialized([&](Driver& driver) {
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    const unsigned int schedule = flags & CU_CTX_SCHED_MASK;
    if ((flags & ~kContextFlags) != 0 ||
        (schedule != CU_CTX_SCHED_AUTO && schedule != CU_CTX_SCHED_SPIN &&
         schedule != CU_CTX_SCHED_YIELD && schedule != CU_CTX_SCHED_BLOCKING_SYNC)) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    driver.set_primary_flags(dev, flags);
    return CUDA_SUCCESS;
  });
}

CUresult push_current(CUcontext ctx) {
  return initialized([&](Driver& driver) {
    CUctx_st* const context = driver.find_context(ctx);
    if (context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    Driver::push_current_context(context);
    return CUDA_SUCCESS;
  });
}

CUresult pop_current(CUcontext* pctx) {
  return initialized([&](Driver&) {
    CUctx_st* const popped = Driver::pop_current_context();
    if (popped == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    if (pctx != nullptr) *pctx = popped;
    return CUDA_SUCCESS;
  });
}

CUresult synchronize(CUcontext ctx) {
  // Nothing runs asynchronously: the context is checked, and the pools trimmed as at any
  // synchronization.
  return initialized([&](Driver& driver) {
    int device = 0;
    CUresult result = driver.context_device(ctx, &device);
    // Waiting for the whole context is unsafe during a capture (capture.h).
    if (result == CUDA_SUCCESS) result = simcuda::driver::Captures::get().check_unsafe_call();
    if (result == CUDA_SUCCESS) driver.release_pools_over_threshold();
    return result;
  });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pctx = driver.retain_primary(dev);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  return release_primary(dev);
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev) {
  return release_primary(dev);
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  return reset_primary(dev);
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxReset(CUdevice dev) {
  return reset_primary(dev);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  return initialized([&](Driver& driver) {
    // Null unbinds the thread's context. A context that all released may still be bound:
    // calls made in it then fail with CUDA_ERROR_CONTEXT_IS_DESTROYED.
    CUctx_st* const context = ctx == nullptr ? nullptr : driver.find_context(ctx);
    if (ctx != nullptr && context == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    Driver::set_current_context(context);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetCurrent(CUcontext* pctx) {
  return initialized([&](Driver&) {
    if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pctx = Driver::current_context();
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetDevice(CUdevice* device) {
  return context_device(device, nullptr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetDevice_v2(CUdevice* device, CUcontext ctx) {
  return context_device(device, ctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxSynchronize(void) {
  return synchronize(nullptr);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  return synchronize(ctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags,
                                                          int* active) {
  return initialized([&](Driver& driver) {
    if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    driver.primary_state(dev, flags, active);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  return set_primary_flags(dev, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags) {
  return set_primary_flags(dev, flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  return push_current(ctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxPushCurrent(CUcontext ctx) {
  return push_current(ctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  return pop_current(pctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxPopCurrent(CUcontext* pctx) {
  return pop_current(pctx);
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  return initialized([&](Driver& driver) {
    if (version == nullptr) return CUDA_ERROR_INVALID_VALUE;
    int device = 0;
    if (const CUresult result = driver.context_device(ctx, &device); result != CUDA_SUCCESS) {
      return result;
    }
    // The context API has not changed since CUDA 3.2, and real drivers report 3020 for the
    // contexts of every later release.
    *version = 3020;
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetFlags(unsigned int* flags) {
  return in_context([&](Driver& driver, int device) {
    if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *flags = driver.context_flags(device);
    return CUDA_SUCCESS;
  });
}

// The range of real GPUs: 0 is the least priority and the default, -5 the greatest.
SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetStreamPriorityRange(int* leastPriority,
                                                           int* greatestPriority) {
  return in_context([&](Driver&, int) {
    // Either output may be null, as documented.
    if (leastPriority != nullptr) *leastPriority = simcuda::driver::kLeastStreamPriority;
    if (greatestPriority != nullptr) *greatestPriority = simcuda::driver::kGreatestStreamPriority;
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  return in_context([&](Driver& driver, int device) {
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.enable_peer_access(device, peerContext);
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  return in_context(
      [&](Driver& driver, int device) { return driver.disable_peer_access(device, peerContext); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxGetLimit(size_t* pvalue, CUlimit limit) {
  return in_context([&](Driver&, int device) {
    if (pvalue == nullptr || limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_INVALID_VALUE;
    *pvalue = limits_of(device)[limit];
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  return in_context([&](Driver&, int device) {
    if (limit < 0 || limit >= CU_LIMIT_MAX) return CUDA_ERROR_INVALID_VALUE;
    // The shared memory limit and CIG are properties of the context, not settings.
    if (limit == CU_LIMIT_SHMEM_SIZE || limit == CU_LIMIT_CIG_ENABLED) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (limit == CU_LIMIT_MAX_L2_FETCH_GRANULARITY && value > 128) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard lock(limits_mutex);
    set_limits.try_emplace(device, kDefaultLimits).first->second[limit] = value;
    return CUDA_SUCCESS;
  });
}
