// SIMCUDA_NO_DEVICE=1: the runtime of a machine whose driver finds no GPU. Calls that need a
// device fail with cudaErrorNoDevice and write no output; the rest keep working.

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>

#include "machine_main.h"

namespace {

void* const kUntouched = reinterpret_cast<void*>(std::uintptr_t{0x1000});

TEST(NoDevice, DeviceCountIsZero) {
  int count = -1;
  EXPECT_EQ(cudaGetDeviceCount(&count), cudaErrorNoDevice);
  EXPECT_EQ(count, 0);
}

TEST(NoDevice, EveryCallThatNeedsADeviceFails) {
  void* ptr = kUntouched;
  EXPECT_EQ(cudaMalloc(&ptr, 16), cudaErrorNoDevice);
  EXPECT_EQ(cudaMallocManaged(&ptr, 16), cudaErrorNoDevice);
  EXPECT_EQ(cudaMallocHost(&ptr, 16), cudaErrorNoDevice);
  EXPECT_EQ(cudaHostAlloc(&ptr, 16, cudaHostAllocDefault), cudaErrorNoDevice);
  EXPECT_EQ(cudaMallocAsync(&ptr, 16, nullptr), cudaErrorNoDevice);
  EXPECT_EQ(cudaMallocAsync_ptsz(&ptr, 16, nullptr), cudaErrorNoDevice);
  std::size_t pitch = 0;
  EXPECT_EQ(cudaMallocPitch(&ptr, &pitch, 16, 16), cudaErrorNoDevice);
  EXPECT_EQ(ptr, kUntouched);
  cudaPitchedPtr pitched{};
  EXPECT_EQ(cudaMalloc3D(&pitched, make_cudaExtent(1, 1, 1)), cudaErrorNoDevice);

  EXPECT_EQ(cudaFree(nullptr), cudaErrorNoDevice);
  EXPECT_EQ(cudaFreeHost(nullptr), cudaErrorNoDevice);
  EXPECT_EQ(cudaFreeAsync(nullptr, nullptr), cudaErrorNoDevice);
  EXPECT_EQ(cudaSetDevice(0), cudaErrorNoDevice);
  int device = -1;
  EXPECT_EQ(cudaGetDevice(&device), cudaErrorNoDevice);
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorNoDevice);
  EXPECT_EQ(cudaDeviceReset(), cudaErrorNoDevice);
  std::size_t free_bytes = 0;
  std::size_t total_bytes = 0;
  EXPECT_EQ(cudaMemGetInfo(&free_bytes, &total_bytes), cudaErrorNoDevice);
  char buffer[16] = {};
  EXPECT_EQ(cudaMemcpy(buffer, buffer + 8, 8, cudaMemcpyHostToHost), cudaErrorNoDevice);
  EXPECT_EQ(cudaMemset(buffer, 0, 8), cudaErrorNoDevice);

  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaErrorNoDevice);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaErrorNoDevice);
  cudaMemPool_t pool = nullptr;
  EXPECT_EQ(cudaDeviceGetDefaultMemPool(&pool, 0), cudaErrorNoDevice);
  EXPECT_EQ(pool, nullptr);
}

TEST(NoDevice, FailuresBecomeTheLastError) {
  void* ptr = nullptr;
  EXPECT_EQ(cudaMalloc(&ptr, 16), cudaErrorNoDevice);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorNoDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorNoDevice);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST(NoDevice, CallsThatNeedNoDeviceStillWork) {
  int version = 0;
  EXPECT_EQ(cudaRuntimeGetVersion(&version), cudaSuccess);
  EXPECT_GT(version, 0);
  EXPECT_EQ(cudaDriverGetVersion(&version), cudaSuccess);
  EXPECT_STREQ(cudaGetErrorString(cudaErrorNoDevice), "no CUDA-capable device is detected");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorNoDevice), "cudaErrorNoDevice");
}

}  // namespace

int main(int argc, char** argv) {
  return simcuda_test::run_on_machine(argc, argv, {{"SIMCUDA_NO_DEVICE", "1"}});
}
