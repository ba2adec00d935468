#include "driver_link.h"

#include <dlfcn.h>

#include <cstdlib>
#include <string>

#include "error_translation.h"

namespace simcuda::runtime {
namespace {

constexpr const char* kDriver = "libcuda.so.1";

// SIMCUDA_DRIVER_PATH, for tests only: a file to dlopen instead of libcuda.so.1. It lets a test
// run the runtime as on a machine without a driver (a path that does not exist) or with a
// library that is no driver (libm), without changing the library search path.
const char* driver_override() {
  const char* path = std::getenv("SIMCUDA_DRIVER_PATH");
  return (path != nullptr && *path != '\0') ? path : nullptr;
}

// dlopen("libcuda.so.1") finds the simulated driver beside the runtime through the runtime's
// RUNPATH ($ORIGIN). Under AddressSanitizer it does not: the sanitizer intercepts dlopen, and the
// loader then searches the RUNPATH of the interceptor's library instead of ours. So when the
// plain dlopen finds nothing, the runtime opens the driver in its own directory, where $ORIGIN
// would have found it. (It is then searched last rather than second, which matters only under a
// sanitizer on a machine with a driver installed.)
void* open_driver() {
  // The driver's symbols are reached through cuGetProcAddress, never by name, so they stay
  // out of the global scope (RTLD_LOCAL).
  constexpr int kFlags = RTLD_NOW | RTLD_LOCAL;
  if (const char* path = driver_override()) return dlopen(path, kFlags);
  if (void* library = dlopen(kDriver, kFlags)) return library;
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&open_driver), &self) == 0 || self.dli_fname == nullptr) {
    return nullptr;
  }
  std::string beside(self.dli_fname);
  const std::size_t slash = beside.rfind('/');
  if (slash == std::string::npos) return nullptr;
  beside.replace(slash + 1, std::string::npos, kDriver);
  return dlopen(beside.c_str(), kFlags);
}

template <class Function>
bool resolve(PFN_cuGetProcAddress_v12000 get_proc_address, const char* api, cuuint64_t flags,
             Function* out) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (get_proc_address(api, &function, kRuntimeVersion, flags, &status) != CUDA_SUCCESS ||
      status != CU_GET_PROC_ADDRESS_SUCCESS || function == nullptr) {
    return false;
  }
  *out = reinterpret_cast<Function>(function);
  return true;
}

// Finds the driver and every function of it; false when it is missing or too old.
bool bind(Driver& driver) {
  void* const library = open_driver();
  if (library == nullptr) return false;
  driver.cuGetProcAddress =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
  if (driver.cuGetProcAddress == nullptr) return false;
  int version = 0;
  bool complete = true;
#define SIMCUDA_RESOLVE(member, api, type, flag) \
  complete = complete &&                         \
             resolve(driver.cuGetProcAddress, #api, CU_GET_PROC_ADDRESS_##flag, &driver.member);
  SIMCUDA_DRIVER_FUNCTIONS(SIMCUDA_RESOLVE)
#undef SIMCUDA_RESOLVE
  // A driver older than the runtime cannot run it (cudaErrorInsufficientDriver).
  return complete && driver.cuDriverGetVersion(&version) == CUDA_SUCCESS &&
         version >= kRuntimeVersion;
}

Driver load() {
  Driver driver;
  if (!bind(driver)) return Driver{};
  driver.load_error = cudaSuccess;
  driver.init_error = from_driver(driver.cuInit(0));
  if (driver.init_error == cudaSuccess &&
      driver.cuDeviceGetCount(&driver.device_count) != CUDA_SUCCESS) {
    driver.init_error = cudaErrorInitializationError;
  }
  return driver;
}

}  // namespace

const Driver& driver() {
  // Never destroyed: runtime calls made from static destructors still find the driver.
  static const Driver* const instance = new Driver(load());
  return *instance;
}

}  // namespace simcuda::runtime
