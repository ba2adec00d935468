// For the test that kills the collector mid-run: allocates FIRST buffers (announced), says
// "waiting", waits until its parent (vramtrace, which the test kills) is gone, then makes
// SECOND more allocations, enough to fill a small ring, and exits with status 7. It must
// neither hang on the full ring nor die with the collector.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdlib>

#include "announce.h"

namespace {

void allocate_and_free(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = nullptr;
    const size_t size = 4096 + static_cast<size_t>(i % 9) * 1024;
    if (cudaMalloc(&p, size) != cudaSuccess) std::_Exit(1);
    announce_alloc(p, size);
    if (i % 2 == 1) {
      cudaFree(p);
      announce_free(p);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int first = argc > 1 ? std::atoi(argv[1]) : 100;
  const int second = argc > 2 ? std::atoi(argv[2]) : 20000;
  const pid_t collector = getppid();
  allocate_and_free(first);
  announce_line("waiting\n", 8);
  for (int waited_ms = 0; getppid() == collector && waited_ms < 30000; waited_ms += 5) usleep(5000);
  if (getppid() == collector) return 1;  // the test never killed it
  allocate_and_free(second);
  return 7;
}
