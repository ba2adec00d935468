// Driver API: initialisation, version and devices.

#include <climits>
#include <cstdio>

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::initialized;

SIMCUDA_DRIVER_EXPORT CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return Driver::get().init();
}

// Needs no cuInit, as with the real driver: programs ask before deciding to initialise.
SIMCUDA_DRIVER_EXPORT CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = simcuda::driver::kDriverVersion;
  return CUDA_SUCCESS;
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  return initialized([&](Driver& driver) {
    if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetCount(int* count) {
  return initialized([&](Driver& driver) {
    if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *count = driver.device_count();
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    // Truncated to len - 1 characters, and always terminated.
    std::snprintf(name, static_cast<std::size_t>(len), "simcuda GPU %d", dev);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = driver.total_memory(dev);
    return CUDA_SUCCESS;
  });
}

// The CUDA 2.0 ABI: a 32-bit count, clamped as the real one clamps it.
SIMCUDA_DRIVER_EXPORT CUresult cuDeviceTotalMem(unsigned int* bytes, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    const std::size_t total = driver.total_memory(dev);
    *bytes = total > UINT_MAX ? UINT_MAX : static_cast<unsigned int>(total);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool* pool_out, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (pool_out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *pool_out = driver.default_pool(dev);
    return CUDA_SUCCESS;
  });
}
