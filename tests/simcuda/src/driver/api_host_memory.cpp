// Driver API: registering the program's own host memory (cuMemHostRegister), and the device
// address of host memory the driver knows.
//
// Registration records the range in the current context (it goes with the context, as pinned
// memory does) and changes nothing about the memory itself: it is already as good as pinned.
// CU_MEMHOSTREGISTER_PORTABLE, _DEVICEMAP, _IOMEMORY and _READ_ONLY are accepted. A range that
// overlaps pinned or registered memory is CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, device
// memory CUDA_ERROR_INVALID_VALUE; cuMemHostUnregister of anything but the start of a
// registration is CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED. With unified addressing, the device
// pointer of pinned or registered memory is its host address. The legacy cuMemHostRegister
// (before _v2) behaves as the current one.

#include "api_support.h"

using simcuda::driver::Driver;
using simcuda::driver::in_context;

namespace {

constexpr unsigned int kRegisterFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                        CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

CUresult register_host(void* p, std::size_t bytesize, unsigned int flags) {
  return in_context([&](Driver& driver, int device) {
    if ((flags & ~kRegisterFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.register_host(device, p, bytesize);
  });
}

}  // namespace

SIMCUDA_DRIVER_EXPORT CUresult cuMemHostRegister_v2(void* p, size_t bytesize, unsigned int Flags) {
  return register_host(p, bytesize, Flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemHostRegister(void* p, size_t bytesize, unsigned int Flags) {
  return register_host(p, bytesize, Flags);
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemHostUnregister(void* p) {
  return in_context([&](Driver& driver, int) { return driver.unregister_host(p); });
}

SIMCUDA_DRIVER_EXPORT CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p,
                                                            unsigned int Flags) {
  return in_context([&](Driver& driver, int) {
    // Flags is reserved: 0.
    if (pdptr == nullptr || Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    return driver.host_device_pointer(p, pdptr);
  });
}
