// A malformed SIMCUDA_* variable: the driver says so on stderr and, rather than guessing a
// machine, fails cuInit with CUDA_ERROR_NOT_INITIALIZED ("initialization has failed"), which the
// runtime reports as cudaErrorInitializationError from every call that needs a device.

#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "machine_main.h"

namespace {

TEST(BadEnvironment, CallsFailWithInitializationError) {
  void* ptr = nullptr;
  EXPECT_EQ(cudaMalloc(&ptr, 16), cudaErrorInitializationError);
  int count = -1;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaErrorInitializationError);
  EXPECT_EQ(count, 0);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInitializationError);
  int version = 0;
  EXPECT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
}

TEST(BadEnvironment, DriverInitFails) {
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NOT_INITIALIZED);
  int count = -1;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(argc, argv, {{"SIMCUDA_DEVICE_MEMORY", "16 gigs"}});
}
