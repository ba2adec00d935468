// The simulated GPU's properties: what cuDeviceGetAttribute answers, and through it the runtime's
// cudaGetDeviceProperties and cudaDeviceGetAttribute. Every device of the machine is the same
// model, an H100-like GPU of compute capability 9.0 (device_properties.cpp has the values); only
// the PCI location and the UUID tell devices apart.
#pragma once

#include <optional>

#include "cuda.h"

namespace simcuda::driver {

// The value of `attribute` for device `ordinal`, or nullopt for an attribute the toolkit's
// CUdevice_attribute does not have (cuDeviceGetAttribute: CUDA_ERROR_INVALID_VALUE).
std::optional<int> device_attribute(CUdevice_attribute attribute, int ordinal);

// The device's PCI location: domain 0, bus ordinal + 1, device 0, function 0.
int pci_bus(int ordinal);
// A UUID that is the same for a device ordinal in every process.
CUuuid device_uuid(int ordinal);

}  // namespace simcuda::driver
