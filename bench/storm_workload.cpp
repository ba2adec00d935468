// The storm of bench/vs-heaptrack.sh: N back-to-back cudaMalloc/cudaFree pairs at stack depth
// D and nothing else, as a caching allocator's burst of small blocks or a loop of temporaries
// looks to a tool. Linked against bench/malloc_cudart.cpp, whose cudaMalloc is one malloc:
// heaptrack and vramtrace record the same number of events. Usage: storm_workload N D. Prints
// "loop_ns T", the loop's own time (no start-up or finishing of the program or the tool), and
// last "exit_realtime_ns T", when the program is about to exit: the wrapper's return less this
// is the time the tool keeps the user waiting after the program is done.
#include <cuda_runtime_api.h>

#include <time.h>

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
  void* device = nullptr;
  if (cudaMalloc(&device, size) != cudaSuccess) return 1;
  static_cast<volatile char*>(device)[0] = 1;
  return cudaFree(device) == cudaSuccess ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: storm_workload N D\n");
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
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::printf("exit_realtime_ns %lld\n",
              static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
  return failures == 0 ? 0 : 1;
}
