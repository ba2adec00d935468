// The storm of bench/vs-heaptrack.sh: N back-to-back cudaMalloc/cudaFree pairs at stack depth
// D and nothing else, as a caching allocator's burst of small blocks or a loop of temporaries
// looks to a tool. Linked against bench/malloc_cudart.cpp, whose cudaMalloc is one malloc:
// heaptrack and vramtrace record the same number of events. Usage: storm_workload N D; what it
// prints: timed_loop.h.
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
  void* device = nullptr;
  if (cudaMalloc(&device, size) != cudaSuccess) return 1;
  static_cast<volatile char*>(device)[0] = 1;
  return cudaFree(device) == cudaSuccess ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  return run_timed_loop(argc, argv, "storm_workload", at_depth);
}
