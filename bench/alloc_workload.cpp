// The side-by-side workload (bench/vs-heaptrack.sh): N iterations, each at stack depth D, of
// one host malloc/free pair and one cudaMalloc/cudaFree pair on the simulated GPU. heaptrack
// records the former, vramtrace the latter: each tool pays for the same number of events, at
// the same depth, in the same run. Usage: alloc_workload N D. Prints "loop_ns T": the loop's
// own time, without the start-up and the finishing of the program or of the tool around it.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

// noinline and a use after the call: each level is a real frame to unwind.
__attribute__((noinline)) int at_depth(int levels, size_t size) {
  if (levels > 0) {
    volatile int keep = levels;
    return at_depth(levels - 1, size) + keep - levels;
  }
  void* host = std::malloc(size);
  void* device = nullptr;
  if (host == nullptr || cudaMalloc(&device, size) != cudaSuccess) return 1;
  static_cast<volatile char*>(host)[0] = 1;
  cudaFree(device);
  std::free(host);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: alloc_workload N D\n");
    return 2;
  }
  const long n = std::atol(argv[1]);
  const int depth = std::atoi(argv[2]);
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) failures += at_depth(depth, 256 + static_cast<size_t>(i % 64) * 64);
  const auto loop = std::chrono::steady_clock::now() - start;
  std::printf(
      "loop_ns %lld\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(loop).count()));
  return failures == 0 ? 0 : 1;
}
