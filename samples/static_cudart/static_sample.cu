// A CUDA program built by nvcc with its default, statically linked cudart. Such a program
// calls no libcudart.so function that a preload could interpose: its runtime is inside the
// executable and reaches the driver through dlopen("libcuda.so.1") and cuGetProcAddress. So
// vramtrace sees it at the driver level (cuMemAlloc_v2, cuMemAllocAsync, ...).
//
// It prints the driver's view of device memory (cudaMemGetInfo) before and after, so that
// samples/gpu/check.sh can compare it with what vramtrace recorded. What it leaves behind:
// 64 MiB of device memory, 16 MiB from the stream-ordered pool, and 4 MiB of pinned host
// memory; 32 MiB of device and 8 MiB of managed memory are freed.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr size_t kMiB = size_t{1} << 20;

void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) {
    std::printf("static_sample: %s failed: %d %s\n", what, static_cast<int>(r),
                cudaGetErrorName(r));
    std::exit(1);
  }
}

}  // namespace

int main() {
  size_t free_before = 0, total = 0;
  check(cudaMemGetInfo(&free_before, &total), "cudaMemGetInfo");

  void* weights = nullptr;
  check(cudaMalloc(&weights, 64 * kMiB), "cudaMalloc");  // left behind
  void* scratch = nullptr;
  check(cudaMalloc(&scratch, 32 * kMiB), "cudaMalloc");
  check(cudaMemset(scratch, 0, 32 * kMiB), "cudaMemset");
  check(cudaFree(scratch), "cudaFree");

  cudaStream_t stream = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  void* staged = nullptr;
  check(cudaMallocAsync(&staged, 16 * kMiB, stream), "cudaMallocAsync");  // left behind
  check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");

  void* managed = nullptr;
  check(cudaMallocManaged(&managed, 8 * kMiB), "cudaMallocManaged");
  check(cudaFree(managed), "cudaFree");
  void* pinned = nullptr;
  check(cudaMallocHost(&pinned, 4 * kMiB), "cudaMallocHost");  // left behind
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  size_t free_after = 0;
  check(cudaMemGetInfo(&free_after, &total), "cudaMemGetInfo");
  std::printf("static_sample: driver_device_bytes_used_delta=%lld total=%zu\n",
              static_cast<long long>(free_before) - static_cast<long long>(free_after), total);
  return 0;
}
