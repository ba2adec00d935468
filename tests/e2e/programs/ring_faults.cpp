// Counts the page faults of a run of allocations: prints "faults N", the minor faults between
// the first allocation and the last (the shim faults its ring in ahead of its writes, so a
// lap of records takes none page by page), then "ring R of S": how many bytes of the shim's
// ring are resident, of its size (a ring costs memory only as far as its writes have come).
// With --say-first, first prints "first event" once its first allocation is made, so that a test
// can act on a program that is in its loop. With --leak-at-end, allocates 64 MiB after its loop
// and never frees it: a leak the trace holds only if recording lasted that long.
// Usage: ring_faults ITERATIONS [--say-first] [--leak-at-end].
#include <cuda_runtime_api.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

long minor_faults() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// The shim's ring, as /proc/self/maps names its memfd: resident bytes and size.
void print_ring_residency() {
  FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    if (std::strstr(line, "memfd:vramtrace-ring") == nullptr) continue;
    unsigned long start = 0, end = 0;
    if (std::sscanf(line, "%lx-%lx", &start, &end) != 2) continue;
    const long page = sysconf(_SC_PAGESIZE);
    std::vector<unsigned char> resident((end - start) / static_cast<unsigned long>(page));
    if (mincore(reinterpret_cast<void*>(start), end - start, resident.data()) != 0) continue;
    unsigned long count = 0;
    for (unsigned char r : resident) count += r & 1;
    std::printf("ring %lu of %lu\n", count * static_cast<unsigned long>(page), end - start);
    break;
  }
  std::fclose(maps);
}

bool alloc_and_free() {
  void* p = nullptr;
  if (cudaMalloc(&p, 256) != cudaSuccess) return false;
  return cudaFree(p) == cudaSuccess;
}

}  // namespace

int main(int argc, char** argv) {
  bool say_first = false, leak_at_end = false, usage = argc < 2;
  for (int i = 2; i < argc; ++i) {
    if (std::strcmp(argv[i], "--say-first") == 0)
      say_first = true;
    else if (std::strcmp(argv[i], "--leak-at-end") == 0)
      leak_at_end = true;
    else
      usage = true;
  }
  if (usage) {
    std::fprintf(stderr, "usage: ring_faults ITERATIONS [--say-first] [--leak-at-end]\n");
    return 2;
  }
  const long iterations = std::atol(argv[1]);
  if (!alloc_and_free()) return 1;
  if (say_first) {
    std::printf("first event\n");
    std::fflush(stdout);
  }
  const long before = minor_faults();
  for (long i = 0; i < iterations; ++i)
    if (!alloc_and_free()) return 1;
  const long faults = minor_faults() - before;
  if (leak_at_end) {
    void* kept = nullptr;
    if (cudaMalloc(&kept, 64ul << 20) != cudaSuccess) return 1;
  }
  std::printf("faults %ld\n", faults);
  print_ring_residency();
  return 0;
}
