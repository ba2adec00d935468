// Driver API: primary contexts and the calling thread's current context.
//
// The simulated driver has one context per device, its primary context; the legacy entry
// points (cuDevicePrimaryCtxRelease, ...Reset without _v2) behave as the current ones, since
// the difference (contexts retained by a CUDA 4.0 runtime) cannot arise.

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::initialized;

namespace {

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
    return CUDA_SUCCESS;
  });
}

CUresult context_device(CUdevice* device, CUcontext ctx) {
  return initialized([&](Driver& driver) {
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return driver.context_device(ctx, device);
  });
}

CUresult synchronize(CUcontext ctx) {
  // Nothing runs asynchronously: only the context is checked.
  return initialized([&](Driver& driver) {
    int device = 0;
    return driver.context_device(ctx, &device);
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
