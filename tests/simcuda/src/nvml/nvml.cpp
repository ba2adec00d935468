// simcuda's libnvidia-ml.so.1: NVML for the simulated GPUs. The management library comes with
// every NVIDIA driver, and PyTorch relies on it being there once a driver is: its expandable
// segments ask NVML whether the device is part of a GPU fabric before choosing a handle type,
// and call NVML without checking that it loaded. So the simulated driver has its NVML too.
//
// It describes the devices the simulated driver has, read from the driver itself (loaded with
// dlopen, as NVML is loaded beside it, never linked): their number, PCI bus ids
// ("00000000:01:00.0", from the driver's PCI attributes) and UUIDs ("GPU-" and the driver's
// cuDeviceGetUuid). Peers are reachable over PCIe (NVML_P2P_STATUS_OK); no device has NVLink
// (NVML_ERROR_NOT_SUPPORTED for its links) or belongs to a fabric (state
// NVML_GPU_FABRIC_STATE_NOT_SUPPORTED, as a PCIe H100 reports). The running processes are
// reported as none: the simulation keeps no per-process accounting, so PyTorch's
// out-of-memory message omits its per-process lines.
//
// nvmlInit succeeds once the driver's cuInit does (NVML_ERROR_DRIVER_NOT_LOADED when there is
// no simulated driver, or cuInit fails); every device call before it is
// NVML_ERROR_UNINITIALIZED.

#include "nvml.h"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "cuda.h"

#define SIMCUDA_EXPORT extern "C" __attribute__((visibility("default")))

struct nvmlDevice_st {
  unsigned int index;
  unsigned int pci_domain;
  unsigned int pci_bus;
  unsigned int pci_device;
  std::string uuid;  // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
};

namespace {

struct Machine {
  std::mutex lock;
  bool initialised = false;
  int driver_version = 0;
  std::vector<nvmlDevice_st> devices;
};

Machine& machine() {
  static auto* instance = new Machine;
  return *instance;
}

std::string uuid_text(const CUuuid& uuid) {
  std::string text = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(uuid.bytes[i]));
    text += hex;
  }
  return text;
}

// Reads the devices from the simulated driver. Called under the lock.
nvmlReturn_t discover(Machine& state) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return NVML_ERROR_DRIVER_NOT_LOADED;
  auto init = reinterpret_cast<CUresult (*)(unsigned int)>(dlsym(driver, "cuInit"));
  auto version = reinterpret_cast<CUresult (*)(int*)>(dlsym(driver, "cuDriverGetVersion"));
  auto count = reinterpret_cast<CUresult (*)(int*)>(dlsym(driver, "cuDeviceGetCount"));
  auto attribute = reinterpret_cast<CUresult (*)(int*, CUdevice_attribute, CUdevice)>(
      dlsym(driver, "cuDeviceGetAttribute"));
  auto uuid =
      reinterpret_cast<CUresult (*)(CUuuid*, CUdevice)>(dlsym(driver, "cuDeviceGetUuid_v2"));
  if (init == nullptr || version == nullptr || count == nullptr || attribute == nullptr ||
      uuid == nullptr || init(0) != CUDA_SUCCESS ||
      version(&state.driver_version) != CUDA_SUCCESS) {
    return NVML_ERROR_DRIVER_NOT_LOADED;
  }
  int devices = 0;
  if (count(&devices) != CUDA_SUCCESS) return NVML_ERROR_DRIVER_NOT_LOADED;
  state.devices.clear();
  for (int device = 0; device < devices; ++device) {
    int domain = 0;
    int bus = 0;
    int slot = 0;
    CUuuid id{};
    if (attribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, device) != CUDA_SUCCESS ||
        attribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, device) != CUDA_SUCCESS ||
        attribute(&slot, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, device) != CUDA_SUCCESS ||
        uuid(&id, device) != CUDA_SUCCESS) {
      return NVML_ERROR_UNKNOWN;
    }
    state.devices.push_back({static_cast<unsigned int>(device), static_cast<unsigned int>(domain),
                             static_cast<unsigned int>(bus), static_cast<unsigned int>(slot),
                             uuid_text(id)});
  }
  return NVML_SUCCESS;
}

nvmlReturn_t initialise() {
  Machine& state = machine();
  const std::scoped_lock guard(state.lock);
  if (state.initialised) return NVML_SUCCESS;
  const nvmlReturn_t result = discover(state);
  state.initialised = result == NVML_SUCCESS;
  return result;
}

// The devices, once nvmlInit succeeded; nullptr before.
const std::vector<nvmlDevice_st>* devices() {
  Machine& state = machine();
  const std::scoped_lock guard(state.lock);
  return state.initialised ? &state.devices : nullptr;
}

bool known(nvmlDevice_t device) {
  const std::vector<nvmlDevice_st>* all = devices();
  if (all == nullptr || device == nullptr) return false;
  for (const nvmlDevice_st& each : *all) {
    if (&each == device) return true;
  }
  return false;
}

// Runs `body` on a device handle that nvmlInit handed out.
template <class Body>
nvmlReturn_t with_device(nvmlDevice_t device, Body&& body) {
  if (devices() == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!known(device)) return NVML_ERROR_INVALID_ARGUMENT;
  return body(*device);
}

}  // namespace

SIMCUDA_EXPORT nvmlReturn_t nvmlInit_v2(void) {
  return initialise();
}

SIMCUDA_EXPORT nvmlReturn_t nvmlInit(void) {
  return initialise();
}

// The devices stay described: handles taken before may still be used by other threads, as the
// real library's stay valid across init and shutdown pairs.
SIMCUDA_EXPORT nvmlReturn_t nvmlShutdown(void) {
  return devices() == nullptr ? NVML_ERROR_UNINITIALIZED : NVML_SUCCESS;
}

SIMCUDA_EXPORT const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS:
      return "Success";
    case NVML_ERROR_UNINITIALIZED:
      return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT:
      return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED:
      return "Not Supported";
    case NVML_ERROR_NOT_FOUND:
      return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE:
      return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED:
      return "Driver Not Loaded";
    default:
      return "Unknown Error";
  }
}

SIMCUDA_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* cudaDriverVersion) {
  if (devices() == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (cudaDriverVersion == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *cudaDriverVersion = machine().driver_version;
  return NVML_SUCCESS;
}

SIMCUDA_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int* cudaDriverVersion) {
  return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  const std::vector<nvmlDevice_st>* all = devices();
  if (all == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (deviceCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  *deviceCount = static_cast<unsigned int>(all->size());
  return NVML_SUCCESS;
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                          nvmlDevice_t* device) {
  std::vector<nvmlDevice_st>* all = const_cast<std::vector<nvmlDevice_st>*>(devices());
  if (all == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (device == nullptr || index >= all->size()) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &(*all)[index];
  return NVML_SUCCESS;
}

// Accepts the forms NVML prints and takes: "00000000:01:00.0" and the legacy "0000:01:00.0",
// hexadecimal, case-insensitive.
SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                                             nvmlDevice_t* device) {
  std::vector<nvmlDevice_st>* all = const_cast<std::vector<nvmlDevice_st>*>(devices());
  if (all == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (pciBusId == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  unsigned int domain = 0;
  unsigned int bus = 0;
  unsigned int slot = 0;
  unsigned int function = 0;
  char rest = 0;
  if (std::sscanf(pciBusId, "%x:%x:%x.%x%c", &domain, &bus, &slot, &function, &rest) != 4) {
    return NVML_ERROR_INVALID_ARGUMENT;
  }
  for (nvmlDevice_st& each : *all) {
    if (each.pci_domain == domain && each.pci_bus == bus && each.pci_device == slot &&
        function == 0) {
      *device = &each;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  std::vector<nvmlDevice_st>* all = const_cast<std::vector<nvmlDevice_st>*>(devices());
  if (all == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (uuid == nullptr || device == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  for (nvmlDevice_st& each : *all) {
    if (each.uuid == uuid) {
      *device = &each;
      return NVML_SUCCESS;
    }
  }
  return NVML_ERROR_NOT_FOUND;
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid,
                                              unsigned int length) {
  return with_device(device, [&](const nvmlDevice_st& each) {
    if (uuid == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (length < each.uuid.size() + 1) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(uuid, each.uuid.c_str(), each.uuid.size() + 1);
    return NVML_SUCCESS;
  });
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  return with_device(device, [&](const nvmlDevice_st& each) {
    if (index == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *index = each.index;
    return NVML_SUCCESS;
  });
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  return with_device(device, [&](const nvmlDevice_st& each) {
    if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlPciInfo_t info{};
    info.domain = each.pci_domain;
    info.bus = each.pci_bus;
    info.device = each.pci_device;
    std::snprintf(info.busIdLegacy, sizeof info.busIdLegacy, "%04X:%02X:%02X.0", each.pci_domain,
                  each.pci_bus, each.pci_device);
    std::snprintf(info.busId, sizeof info.busId, "%08X:%02X:%02X.0", each.pci_domain, each.pci_bus,
                  each.pci_device);
    *pci = info;
    return NVML_SUCCESS;
  });
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1, nvmlDevice_t device2,
                                                   nvmlGpuP2PCapsIndex_t p2pIndex,
                                                   nvmlGpuP2PStatus_t* p2pStatus) {
  return with_device(device1, [&](const nvmlDevice_st&) {
    if (!known(device2) || p2pStatus == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    // Over PCIe: reads, writes and atomics between the devices; no NVLink.
    *p2pStatus =
        p2pIndex == NVML_P2P_CAPS_INDEX_NVLINK ? NVML_P2P_STATUS_NOT_SUPPORTED : NVML_P2P_STATUS_OK;
    return NVML_SUCCESS;
  });
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device,
                                                                unsigned int link,
                                                                nvmlPciInfo_t* pci) {
  static_cast<void>(link);
  static_cast<void>(pci);
  return with_device(device, [](const nvmlDevice_st&) { return NVML_ERROR_NOT_SUPPORTED; });
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(
    nvmlDevice_t device, unsigned int link, nvmlIntNvLinkDeviceType_t* pNvLinkDeviceType) {
  static_cast<void>(link);
  static_cast<void>(pNvLinkDeviceType);
  return with_device(device, [](const nvmlDevice_st&) { return NVML_ERROR_NOT_SUPPORTED; });
}

// None reported (see the top of this file): the count is 0 and the array is not written, so
// any version of the process struct a caller passes is left as it was.
SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device,
                                                                    unsigned int* infoCount,
                                                                    nvmlProcessInfo_t* infos) {
  static_cast<void>(infos);
  return with_device(device, [&](const nvmlDevice_st&) {
    if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *infoCount = 0;
    return NVML_SUCCESS;
  });
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device,
                                                                 unsigned int* infoCount,
                                                                 nvmlProcessInfo_t* infos) {
  return nvmlDeviceGetComputeRunningProcesses_v3(device, infoCount, infos);
}

SIMCUDA_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device,
                                                        nvmlGpuFabricInfoV_t* gpuFabricInfo) {
  return with_device(device, [&](const nvmlDevice_st&) {
    if (gpuFabricInfo == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    gpuFabricInfo->state = NVML_GPU_FABRIC_STATE_NOT_SUPPORTED;
    gpuFabricInfo->status = NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
  });
}
