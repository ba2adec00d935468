// The simulated runtime on the simulated driver, with both in one process as in a program that
// calls the two APIs: the runtime reaches the device only through libcuda.so.1, so they share
// one machine (memory, contexts, streams), and the runtime's driver entry points are the
// driver's. Built against libcudart.so.13 and libcudart.so.12, whose versions select different
// ABIs of some driver functions.

// cudaGetDriverEntryPoint is deprecated in favour of cudaGetDriverEntryPointByVersion; both are
// tested.
#define CUDA_ENABLE_DEPRECATED 1

#include <cuda.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "machine_main.h"

namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kGranule = 2 * kMiB;

void* driver_symbol(const char* name) {
  static void* const library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  EXPECT_NE(library, nullptr) << "the driver is not loaded";
  return dlsym(library, name);
}

std::size_t used_on_current_device() {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  return total_bytes - free_bytes;
}

// The handle of a device's primary context, without keeping it retained.
CUcontext primary_context(int device) {
  CUcontext context = nullptr;
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&context, device), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(device), CUDA_SUCCESS);
  return context;
}

class RuntimeOnDriver : public testing::Test {
 protected:
  void SetUp() override {
    // The runtime initialises the driver and makes device 0's primary context current.
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    ASSERT_EQ(used_on_current_device(), 0u);
    cudaGetLastError();
  }

  void TearDown() override {
    for (int device = 0; device < 2; ++device) {
      cudaSetDevice(device);
      cudaDeviceReset();
    }
    cudaSetDevice(0);
    cudaGetLastError();
  }
};

TEST_F(RuntimeOnDriver, TheRuntimeLoadedTheDriver) {
  EXPECT_NE(dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD), nullptr);
  int version = 0;
  ASSERT_EQ(cudaDriverGetVersion(&version), cudaSuccess);
  EXPECT_EQ(version, 13000);
  ASSERT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  EXPECT_EQ(version, SIMCUDA_EXPECTED_RUNTIME_VERSION);
}

TEST_F(RuntimeOnDriver, DriverAllocationsAreVisibleToTheRuntimeAndTheReverse) {
  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary_context(0)) << "the runtime made the primary context current";

  CUdeviceptr from_driver = 0;
  ASSERT_EQ(cuMemAlloc(&from_driver, 3 * kMiB), CUDA_SUCCESS);
  EXPECT_EQ(used_on_current_device(), 3 * kMiB);
  void* from_runtime = nullptr;
  ASSERT_EQ(cudaMalloc(&from_runtime, kMiB), cudaSuccess);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cuMemGetInfo(&free_bytes, &total_bytes), CUDA_SUCCESS);
  EXPECT_EQ(total_bytes - free_bytes, 4 * kMiB);

  ASSERT_EQ(cudaMemset(reinterpret_cast<void*>(from_driver), 0x5a, 16), cudaSuccess);
  unsigned char byte = 0;
  ASSERT_EQ(cuMemcpyDtoH(&byte, from_driver + 15, 1), CUDA_SUCCESS);
  EXPECT_EQ(byte, 0x5a);

  EXPECT_EQ(cudaFree(reinterpret_cast<void*>(from_driver)), cudaSuccess);
  EXPECT_EQ(cuMemFree(reinterpret_cast<CUdeviceptr>(from_runtime)), CUDA_SUCCESS);
  EXPECT_EQ(used_on_current_device(), 0u);
  EXPECT_EQ(cudaFree(from_runtime), cudaErrorInvalidValue) << "freed by the driver";
}

TEST_F(RuntimeOnDriver, TheRuntimeWorksInTheContextTheDriverMadeCurrent) {
  CUcontext device1 = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&device1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(device1), CUDA_SUCCESS);
  int device = -1;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  EXPECT_EQ(device, 1);
  void* ptr = nullptr;
  ASSERT_EQ(cudaMalloc(&ptr, kMiB), cudaSuccess);
  EXPECT_EQ(used_on_current_device(), kMiB) << "on device 1";
  ASSERT_EQ(cudaFree(ptr), cudaSuccess);

  // And cudaSetDevice makes its device's primary context current for the driver.
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  CUcontext current = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, primary_context(0));

  // A thread with a context from the driver API only.
  std::thread([device1] {
    ASSERT_EQ(cuCtxSetCurrent(device1), CUDA_SUCCESS);
    int other = -1;
    EXPECT_EQ(cudaGetDevice(&other), cudaSuccess);
    EXPECT_EQ(other, 1);
  }).join();
  EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
}

TEST_F(RuntimeOnDriver, StreamsAndPoolsAreTheDrivers) {
  cudaStream_t runtime_stream = nullptr;
  ASSERT_EQ(cudaStreamCreate(&runtime_stream), cudaSuccess);
  CUdeviceptr ptr = 0;
  ASSERT_EQ(cuMemAllocAsync(&ptr, kMiB, runtime_stream), CUDA_SUCCESS);
  EXPECT_EQ(cudaFreeAsync(reinterpret_cast<void*>(ptr), runtime_stream), cudaSuccess);
  ASSERT_EQ(cuStreamDestroy(runtime_stream), CUDA_SUCCESS);
  EXPECT_EQ(cudaStreamSynchronize(runtime_stream), cudaErrorInvalidResourceHandle);

  cudaMemPool_t runtime_pool = nullptr;
  ASSERT_EQ(cudaDeviceGetDefaultMemPool(&runtime_pool, 1), cudaSuccess);
  CUmemoryPool driver_pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&driver_pool, 1), CUDA_SUCCESS);
  EXPECT_EQ(runtime_pool, driver_pool);
}

TEST_F(RuntimeOnDriver, VirtualMemoryMappedThroughTheDriverIsDeviceMemoryForTheRuntime) {
  CUdeviceptr base = 0;
  ASSERT_EQ(cuMemAddressReserve(&base, 2 * kGranule, 0, 0, 0), CUDA_SUCCESS);
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  CUmemGenericAllocationHandle handle = 0;
  ASSERT_EQ(cuMemCreate(&handle, kGranule, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(used_on_current_device(), kGranule) << "cudaMemGetInfo counts physical memory";
  ASSERT_EQ(cuMemMap(base, kGranule, 0, handle, 0), CUDA_SUCCESS);
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(cuMemSetAccess(base, kGranule, &access, 1), CUDA_SUCCESS);

  auto* const device = reinterpret_cast<char*>(base);
  const char message[] = "through a mapping";
  ASSERT_EQ(cudaMemcpy(device, message, sizeof message, cudaMemcpyHostToDevice), cudaSuccess);
  char back[sizeof message] = {};
  ASSERT_EQ(cudaMemcpy(back, device, sizeof message, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_STREQ(back, message);
  EXPECT_EQ(cudaMemcpy(device + kGranule, message, 1, cudaMemcpyHostToDevice),
            cudaErrorInvalidValue)
      << "reserved but not mapped";
  EXPECT_EQ(cudaFree(device), cudaErrorInvalidValue) << "not cudaMalloc's";

  ASSERT_EQ(cuMemUnmap(base, kGranule), CUDA_SUCCESS);
  ASSERT_EQ(cuMemRelease(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAddressFree(base, 2 * kGranule), CUDA_SUCCESS);
}

// The driver's result becomes the runtime's error, the same code by number.
TEST_F(RuntimeOnDriver, DriverErrorsBecomeRuntimeErrors) {
  // A context that everyone released: the runtime's primary context of device 1, released by
  // the driver API behind the runtime's back.
  ASSERT_EQ(cudaSetDevice(1), cudaSuccess);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  void* ptr = nullptr;
  EXPECT_EQ(cudaMalloc(&ptr, 512), cudaErrorContextIsDestroyed);
  EXPECT_EQ(cudaGetLastError(), cudaErrorContextIsDestroyed);
  CUcontext context = nullptr;
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&context, 1), CUDA_SUCCESS);
  EXPECT_EQ(cudaMalloc(&ptr, 512), cudaSuccess);
  EXPECT_EQ(cudaFree(ptr), cudaSuccess);
}

TEST_F(RuntimeOnDriver, DriverEntryPointsAreTheDriversFunctions) {
  void* function = nullptr;
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSymbolNotFound;
  ASSERT_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &function, cudaEnableDefault, &status),
            cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSuccess);
  EXPECT_EQ(function, driver_symbol("cuMemAlloc_v2"));
  // The runtime's own version selects the ABI.
  ASSERT_EQ(cudaGetDriverEntryPoint("cuCtxSynchronize", &function, cudaEnableDefault, &status),
            cudaSuccess);
  EXPECT_EQ(function,
            driver_symbol(SIMCUDA_EXPECTED_RUNTIME_VERSION >= 13000 ? "cuCtxSynchronize_v2"
                                                                    : "cuCtxSynchronize"));
  ASSERT_EQ(cudaGetDriverEntryPoint("cuMemAllocAsync", &function, cudaEnablePerThreadDefaultStream,
                                    nullptr),
            cudaSuccess);
  EXPECT_EQ(function, driver_symbol("cuMemAllocAsync_ptsz"));
  // The _ptsz export is what programs built for per-thread default streams call: there the
  // default is the per-thread variant.
  ASSERT_EQ(cudaGetDriverEntryPoint_ptsz("cuMemAllocAsync", &function, cudaEnableDefault, nullptr),
            cudaSuccess);
  EXPECT_EQ(function, driver_symbol("cuMemAllocAsync_ptsz"));
  ASSERT_EQ(cudaGetDriverEntryPointByVersion_ptsz("cuMemFreeAsync", &function, 12000,
                                                  cudaEnableDefault, nullptr),
            cudaSuccess);
  EXPECT_EQ(function, driver_symbol("cuMemFreeAsync_ptsz"));

  ASSERT_EQ(
      cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 3010, cudaEnableDefault, &status),
      cudaSuccess);
  EXPECT_EQ(function, driver_symbol("cuMemAlloc"));
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 13000, cudaEnableLegacyStream,
                                             &status),
            cudaSuccess);
  EXPECT_EQ(function, driver_symbol("cuMemAlloc_v2"));

  // A function pointer that works.
  const auto get_count = reinterpret_cast<CUresult (*)(int*)>(driver_symbol("cuDeviceGetCount"));
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuDeviceGetCount", &function, 13000,
                                             cudaEnableDefault, nullptr),
            cudaSuccess);
  ASSERT_EQ(function, reinterpret_cast<void*>(get_count));
  int count = 0;
  EXPECT_EQ(reinterpret_cast<CUresult (*)(int*)>(function)(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 2);
}

TEST_F(RuntimeOnDriver, MissingDriverEntryPointsAreSuccessWithAStatus) {
  void* function = reinterpret_cast<void*>(1);
  cudaDriverEntryPointQueryResult status = cudaDriverEntryPointSuccess;
  ASSERT_EQ(cudaGetDriverEntryPoint("cuNoSuchFunction", &function, cudaEnableDefault, &status),
            cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointSymbolNotFound);
  EXPECT_EQ(function, nullptr);
  function = reinterpret_cast<void*>(1);
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuMemAllocAsync", &function, 11010, cudaEnableDefault,
                                             &status),
            cudaSuccess);
  EXPECT_EQ(status, cudaDriverEntryPointVersionNotSufficent);
  EXPECT_EQ(function, nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);

  EXPECT_EQ(
      cudaGetDriverEntryPointByVersion("cuMemAlloc", &function, 13010, cudaEnableDefault, &status),
      cudaErrorInvalidValue)
      << "newer than the driver";
  EXPECT_EQ(cudaGetDriverEntryPoint("cuMemAlloc", nullptr, cudaEnableDefault, &status),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetDriverEntryPoint(nullptr, &function, cudaEnableDefault, &status),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetDriverEntryPoint("cuMemAlloc", &function, 0x8, &status), cudaErrorInvalidValue)
      << "unknown flag";
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "2"}, {"SIMCUDA_DEVICE_MEMORY", "64MiB"}});
}
