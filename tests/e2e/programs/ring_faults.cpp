// Counts the page faults of a run of allocations that fills the shim's ring more than once
// over: prints "faults N", the minor faults between the first allocation and the last (the
// shim faults its ring in at the process's first event, so a lap of records takes none).
// Usage: ring_faults ITERATIONS.
#include <cuda_runtime_api.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

bool alloc_and_free() {
  void* p = nullptr;
  if (cudaMalloc(&p, 256) != cudaSuccess) return false;
  return cudaFree(p) == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ring_faults ITERATIONS\n");
    return 2;
  }
  const long iterations = std::atol(argv[1]);
  if (!alloc_and_free()) return 1;
  const long before = minor_faults();
  for (long i = 0; i < iterations; ++i)
    if (!alloc_and_free()) return 1;
  std::printf("faults %ld\n", minor_faults() - before);
  return 0;
}
