// Shared by the files that define the driver's exported functions (api_*.cpp).
#pragma once

#include <utility>

#include "cuda.h"
#include "driver.h"

// The exported API. Everything else is hidden (-fvisibility=hidden and driver_exports.map).
#define SIMCUDA_DRIVER_EXPORT extern "C" __attribute__((visibility("default")))

namespace simcuda::driver {

// With SIMCUDA_TRACE_ERRORS set, every driver call that fails says so on stderr: the first
// thing to look at when a library gives up on the simulated GPU.
CUresult traced(CUresult result, const char* function);

// Runs body(driver) once cuInit has succeeded; CUDA_ERROR_NOT_INITIALIZED before.
template <class Body>
CUresult initialized(Body&& body, const char* function = __builtin_FUNCTION()) {
  Driver& driver = Driver::get();
  if (const CUresult result = driver.initialized(); result != CUDA_SUCCESS) {
    return traced(result, function);
  }
  return traced(std::forward<Body>(body)(driver), function);
}

// Runs body(driver, device) in the calling thread's current context, whose device that is.
template <class Body>
CUresult in_context(Body&& body, const char* function = __builtin_FUNCTION()) {
  return initialized(
      [&](Driver& driver) {
        int device = 0;
        if (const CUresult result = driver.context_device(nullptr, &device);
            result != CUDA_SUCCESS) {
          return result;
        }
        return std::forward<Body>(body)(driver, device);
      },
      function);
}

// The device of the calling thread's current context, or -1 when it has none (a kernel passed
// as a function is then not resolved).
inline int current_device_or_none(Driver& driver) {
  int device = -1;
  return driver.context_device(nullptr, &device) == CUDA_SUCCESS ? device : -1;
}

}  // namespace simcuda::driver
