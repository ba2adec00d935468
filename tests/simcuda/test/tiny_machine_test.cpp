// A machine configured through the environment as a user would write it: three devices of
// "1MiB" each, small enough that single allocations exhaust a device.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "machine_main.h"

namespace {

constexpr std::size_t kKiB = 1024;

TEST(TinyMachine, TakesTheDeviceCountFromTheEnvironment) {
  int count = 0;
  ASSERT_EQ(cudaGetDeviceCount(&count), cudaSuccess);
  EXPECT_EQ(count, 3);
}

TEST(TinyMachine, TakesTheCapacityFromTheEnvironment) {
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaSuccess);
  EXPECT_EQ(total_bytes, 1024 * kKiB);
  EXPECT_EQ(free_bytes, 1024 * kKiB);
}

TEST(TinyMachine, SecondAllocationBeyondCapacityFails) {
  void* first = nullptr;
  ASSERT_EQ(cudaMalloc(&first, 600 * kKiB), cudaSuccess);
  void* const untouched = reinterpret_cast<void*>(std::uintptr_t{0x1000});
  void* second = untouched;
  EXPECT_EQ(cudaMalloc(&second, 600 * kKiB), cudaErrorMemoryAllocation);
  EXPECT_EQ(second, untouched);
  EXPECT_EQ(cudaGetLastError(), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaFree(first), cudaSuccess);
}

TEST(TinyMachine, EveryDeviceHasItsOwnCapacity) {
  void* blocks[3] = {};
  for (int device = 0; device < 3; ++device) {
    ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&blocks[device], 600 * kKiB), cudaSuccess) << "device " << device;
  }
  for (void* block : blocks) EXPECT_EQ(cudaFree(block), cudaSuccess);
  EXPECT_EQ(cudaSetDevice(3), cudaErrorInvalidDevice);
  cudaGetLastError();
  cudaSetDevice(0);
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(
      argc, argv, {{"SIMCUDA_DEVICE_COUNT", "3"}, {"SIMCUDA_DEVICE_MEMORY", "1MiB"}});
}
