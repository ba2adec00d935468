// The runtime where libcuda.so.1 cannot be used: SIMCUDA_DRIVER_PATH points the runtime's dlopen
// at SIMCUDA_TEST_DRIVER_PATH, a file that does not exist or a library that is no driver (it has
// no cuGetProcAddress_v2). As with the real runtime on a machine without the driver, every call
// that needs the device fails with cudaErrorInsufficientDriver and writes no output, and the
// calls that need no device keep working.

#define CUDA_ENABLE_DEPRECATED 1

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "machine_main.h"

namespace {

void* const kUntouched = reinterpret_cast<void*>(std::uintptr_t{0x1000});

TEST(NoDriver, DeviceCallsFailWithInsufficientDriver) {
  void* ptr = kUntouched;
  EXPECT_EQ(cudaMalloc(&ptr, 16), cudaErrorInsufficientDriver);
  EXPECT_EQ(cudaMallocManaged(&ptr, 16), cudaErrorInsufficientDriver);
  EXPECT_EQ(cudaMallocHost(&ptr, 16), cudaErrorInsufficientDriver);
  EXPECT_EQ(cudaMallocAsync(&ptr, 16, nullptr), cudaErrorInsufficientDriver);
  EXPECT_EQ(ptr, kUntouched);
  EXPECT_EQ(cudaFree(nullptr), cudaErrorInsufficientDriver);
  EXPECT_EQ(cudaSetDevice(0), cudaErrorInsufficientDriver);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaErrorInsufficientDriver);
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaErrorInsufficientDriver);
  void* function = kUntouched;
  EXPECT_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &function, cudaEnableDefault, nullptr),
            cudaErrorInsufficientDriver);
  EXPECT_EQ(
      cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 13000, cudaEnableDefault, nullptr),
      cudaErrorInsufficientDriver);
  EXPECT_EQ(function, kUntouched);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInsufficientDriver);
}

TEST(NoDriver, DeviceCountIsZero) {
  int count = -1;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaErrorInsufficientDriver);
  EXPECT_EQ(count, 0);
}

TEST(NoDriver, CallsThatNeedNoDeviceStillWork) {
  cudaGetLastError();  // what earlier tests left
  // No driver is version 0, and not an error, as documented.
  int version = -1;
  EXPECT_EQ(cudaDriverGetVersion(&version), cudaSuccess);
  EXPECT_EQ(version, 0);
  EXPECT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  EXPECT_GT(version, 0);
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInsufficientDriver), "cudaErrorInsufficientDriver");
  EXPECT_STREQ(cudaGetErrorString(cudaErrorInsufficientDriver),
               "CUDA driver version is insufficient for CUDA runtime version");
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(argc, argv,
                                      {{"SIMCUDA_DRIVER_PATH", SIMCUDA_TEST_DRIVER_PATH}});
}
