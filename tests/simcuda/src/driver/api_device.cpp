// Driver API: initialisation, version and devices. The devices' attributes, PCI location and
// UUID come from device_properties.cpp.

#include <climits>
#include <cstdio>
#include <optional>

#include "api_support.h"
#include "device_properties.h"

using simcuda::driver::Driver;
using simcuda::driver::initialized;

namespace {

CUresult uuid(CUuuid* out, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *out = simcuda::driver::device_uuid(dev);
    return CUDA_SUCCESS;
  });
}

// The bus of a PCI id in any of the documented forms, domain:bus:device.function,
// domain:bus:device and bus:device.function (hexadecimal), if it names device 0, function 0 of
// domain 0 as every simulated GPU is.
std::optional<int> parse_pci_bus(const char* id) {
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int device = 0;
  unsigned int function = 0;
  char end = 0;
  if (std::sscanf(id, "%x:%x:%x.%x%c", &domain, &bus, &device, &function, &end) != 4 &&
      std::sscanf(id, "%x:%x:%x%c", &domain, &bus, &device, &end) != 3) {
    domain = 0;
    function = 0;
    if (std::sscanf(id, "%x:%x.%x%c", &bus, &device, &function, &end) != 3) return std::nullopt;
  }
  if (domain != 0 || device != 0 || function != 0 || bus > INT_MAX) return std::nullopt;
  return static_cast<int>(bus);
}

}  // namespace

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

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib,
                                                    CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    const std::optional<int> value = simcuda::driver::device_attribute(attrib, dev);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    *pi = *value;
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  return initialized([&](Driver& driver) {
    if (pciBusId == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    // domain:bus:device.function, as nvidia-smi prints it; truncated to len - 1 characters.
    std::snprintf(pciBusId, static_cast<std::size_t>(len), "%04x:%02x:%02x.0", 0,
                  simcuda::driver::pci_bus(dev), 0);
    return CUDA_SUCCESS;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetByPCIBusId(CUdevice* dev, const char* pciBusId) {
  return initialized([&](Driver& driver) {
    if (dev == nullptr || pciBusId == nullptr) return CUDA_ERROR_INVALID_VALUE;
    const std::optional<int> bus = parse_pci_bus(pciBusId);
    if (!bus) return CUDA_ERROR_INVALID_VALUE;
    for (int ordinal = 0; ordinal < driver.device_count(); ++ordinal) {
      if (simcuda::driver::pci_bus(ordinal) == *bus) {
        *dev = ordinal;
        return CUDA_SUCCESS;
      }
    }
    return CUDA_ERROR_INVALID_DEVICE;
  });
}

SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid* uuid_out, CUdevice dev) {
  return uuid(uuid_out, dev);
}

// CUDA 9.2's ABI, the same as 11.4's (which only changed what MIG instances report).
SIMCUDA_DRIVER_EXPORT CUresult cuDeviceGetUuid(CUuuid* uuid_out, CUdevice dev) {
  return uuid(uuid_out, dev);
}

// Any two devices are peers: their memory is the same host memory.
SIMCUDA_DRIVER_EXPORT CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev,
                                                     CUdevice peerDev) {
  return initialized([&](Driver& driver) {
    if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (!driver.valid_device(dev) || !driver.valid_device(peerDev)) {
      return CUDA_ERROR_INVALID_DEVICE;
    }
    *canAccessPeer = dev != peerDev ? 1 : 0;
    return CUDA_SUCCESS;
  });
}
