// Shared by the files that define the driver's exported functions (api_*.cpp).
#pragma once

#include <utility>

#include "cuda.h"
#include "driver.h"

// The exported API. Everything else is hidden (-fvisibility=hidden and driver_exports.map).
#define SIMCUDA_DRIVER_EXPORT extern "C" __attribute__((visibility("default")))

namespace simcuda::driver {

// Runs body(driver) once cuInit has succeeded; CUDA_ERROR_NOT_INITIALIZED before.
template <class Body>
CUresult initialized(Body&& body) {
  Driver& driver = Driver::get();
  if (const CUresult result = driver.initialized(); result != CUDA_SUCCESS) return result;
  return std::forward<Body>(body)(driver);
}

// Runs body(driver, device) in the calling thread's current context, whose device that is.
template <class Body>
CUresult in_context(Body&& body) {
  return initialized([&](Driver& driver) {
    int device = 0;
    if (const CUresult result = driver.context_device(nullptr, &device); result != CUDA_SUCCESS) {
      return result;
    }
    return std::forward<Body>(body)(driver, device);
  });
}

}  // namespace simcuda::driver
