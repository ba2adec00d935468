// Helpers the driver's test programs share.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

namespace simcuda_test {

inline void* host_pointer(CUdeviceptr address) {
  return reinterpret_cast<void*>(address);
}

inline CUdeviceptr device_address(const void* ptr) {
  return reinterpret_cast<CUdeviceptr>(ptr);
}

// The per-thread-default-stream variant of an API, as a program built without
// CUDA_API_PER_THREAD_DEFAULT_STREAM reaches it (the header declares the _ptsz names only with).
template <class Function>
Function per_thread(const char* api, int version) {
  void* function = nullptr;
  EXPECT_EQ(cuGetProcAddress(api, &function, version, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,
                             nullptr),
            CUDA_SUCCESS);
  return reinterpret_cast<Function>(function);
}

}  // namespace simcuda_test
