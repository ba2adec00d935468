// What every file of exported runtime entry points shares: the export marker, the conversions
// between the runtime's pointers and the driver's addresses, and the wrappers that reach the
// driver (loaded and initialised at the first call) and record the error a call returns as the
// thread's last error.
#pragma once

#include "cuda.h"
#include "cuda_runtime_api.h"
#include "current_device.h"
#include "driver_link.h"
#include "error_translation.h"
#include "errors.h"

// The exported API. Everything else is hidden (-fvisibility=hidden and the version script).
#define SIMCUDA_EXPORT extern "C" __attribute__((visibility("default")))

namespace simcuda::runtime {

inline CUdeviceptr device_address(const void* ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

inline void* host_pointer(CUdeviceptr address) {
  return reinterpret_cast<void*>(address);
}

// The driver, once loaded and initialised; otherwise the error every device call returns.
inline cudaError_t ready(const Driver& driver) {
  return driver.load_error != cudaSuccess ? driver.load_error : driver.init_error;
}

// Runs `body(driver)` once the driver is ready, and records the error it returns.
template <class Body>
cudaError_t with_driver(Body&& body) {
  const Driver& loaded = driver();
  if (const cudaError_t error = ready(loaded); error != cudaSuccess) return record(error);
  return record(body(loaded));
}

// As with_driver, in the thread's current context.
template <class Body>
cudaError_t in_context(Body&& body) {
  return with_driver([&](const Driver& loaded) {
    if (const cudaError_t error = activate_context(loaded); error != cudaSuccess) return error;
    return body(loaded);
  });
}

// Runs an allocation that reports a device address, writing *out only on success.
template <class Allocate>
cudaError_t allocate_device(void** out, Allocate&& allocate) {
  CUdeviceptr address = 0;
  const cudaError_t error = from_driver(allocate(&address));
  if (error == cudaSuccess) *out = host_pointer(address);
  return error;
}

}  // namespace simcuda::runtime
