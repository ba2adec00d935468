// The side-by-side workload (bench/vs-heaptrack.sh): N iterations, each at stack depth D, of
// one host malloc/free pair and one cudaMalloc/cudaFree pair on the simulated GPU. heaptrack
// records the former, vramtrace the latter: each tool pays for the same number of events, at
// the same depth, in the same run. Usage: alloc_workload N D; what it prints: timed_loop.h.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdlib>

#include "timed_loop.h"

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
  return run_timed_loop(argc, argv, "alloc_workload", at_depth);
}
