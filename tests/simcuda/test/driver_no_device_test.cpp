// SIMCUDA_NO_DEVICE=1, seen from the driver: cuInit fails with CUDA_ERROR_NO_DEVICE, as on a
// machine whose driver finds no GPU, and every call that needs cuInit then fails with
// CUDA_ERROR_NOT_INITIALIZED; the calls that need no initialisation keep working.

#include <cuda.h>
#include <gtest/gtest.h>

#include "machine_main.h"

namespace {

TEST(DriverWithoutDevices, InitFindsNoDevice) {
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE);
  EXPECT_EQ(cuInit(0), CUDA_ERROR_NO_DEVICE) << "every time";
  int count = -1;
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_ERROR_NOT_INITIALIZED);
  CUcontext context = nullptr;
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&context, 0), CUDA_ERROR_NOT_INITIALIZED);
  CUdeviceptr ptr = 0;
  EXPECT_EQ(cuMemAlloc(&ptr, 16), CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(cuMemAddressReserve(&ptr, 2 << 20, 0, 0, 0), CUDA_ERROR_NOT_INITIALIZED);

  int version = 0;
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  const char* name = nullptr;
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_NO_DEVICE, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_NO_DEVICE");
  void* function = nullptr;
  EXPECT_EQ(cuGetProcAddress("cuMemAlloc", &function, 13000, 0, nullptr), CUDA_SUCCESS);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(argc, argv, {{"SIMCUDA_NO_DEVICE", "1"}});
}
