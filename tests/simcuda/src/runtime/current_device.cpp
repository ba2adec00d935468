#include "current_device.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "error_translation.h"

namespace simcuda::runtime {
namespace {

thread_local int t_current_device = 0;

// The primary context of each device, once retained. The runtime never releases them: they
// live as long as the process, as with the real runtime.
struct PrimaryContexts {
  explicit PrimaryContexts(int count) : retained(new std::atomic<CUcontext>[count]()) {}
  std::unique_ptr<std::atomic<CUcontext>[]> retained;
  std::mutex mutex;
};

PrimaryContexts& primary_contexts(const Driver& driver) {
  static PrimaryContexts* const contexts = new PrimaryContexts(driver.device_count);
  return *contexts;
}

cudaError_t primary_context(const Driver& driver, int device, CUcontext* out) {
  PrimaryContexts& contexts = primary_contexts(driver);
  std::atomic<CUcontext>& retained = contexts.retained[device];
  *out = retained.load(std::memory_order_acquire);
  if (*out != nullptr) return cudaSuccess;
  std::lock_guard lock(contexts.mutex);
  *out = retained.load(std::memory_order_relaxed);
  if (*out != nullptr) return cudaSuccess;
  if (const CUresult result = driver.cuDevicePrimaryCtxRetain(out, device);
      result != CUDA_SUCCESS) {
    return from_driver(result);
  }
  retained.store(*out, std::memory_order_release);
  return cudaSuccess;
}

cudaError_t make_current(const Driver& driver, int device) {
  CUcontext context = nullptr;
  if (const cudaError_t error = primary_context(driver, device, &context); error != cudaSuccess) {
    return error;
  }
  return from_driver(driver.cuCtxSetCurrent(context));
}

// A template so that only the call matching the runtime's version of cuCtxGetDevice is compiled.
template <class DriverFunctions>
CUresult current_context_device(const DriverFunctions& driver, CUdevice* device) {
  if constexpr (kRuntimeVersion >= 13000) {
    return driver.cuCtxGetDevice(device, nullptr);
  } else {
    return driver.cuCtxGetDevice(device);
  }
}

}  // namespace

cudaError_t activate_context(const Driver& driver) {
  CUcontext current = nullptr;
  if (const CUresult result = driver.cuCtxGetCurrent(&current); result != CUDA_SUCCESS) {
    return from_driver(result);
  }
  return current != nullptr ? cudaSuccess : make_current(driver, t_current_device);
}

cudaError_t set_device(const Driver& driver, int device) {
  if (device < 0 || device >= driver.device_count) return cudaErrorInvalidDevice;
  if (const cudaError_t error = make_current(driver, device); error != cudaSuccess) return error;
  t_current_device = device;
  return cudaSuccess;
}

cudaError_t get_device(const Driver& driver, int* device) {
  CUcontext current = nullptr;
  if (const CUresult result = driver.cuCtxGetCurrent(&current); result != CUDA_SUCCESS) {
    return from_driver(result);
  }
  if (current == nullptr) {
    *device = t_current_device;
    return cudaSuccess;
  }
  return context_device(driver, device);
}

cudaError_t context_device(const Driver& driver, int* device) {
  CUdevice ordinal = 0;
  const CUresult result = current_context_device(driver, &ordinal);
  if (result == CUDA_SUCCESS) *device = ordinal;
  return from_driver(result);
}

}  // namespace simcuda::runtime
