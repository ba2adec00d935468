// For the SIGKILL test: allocates and frees for ever, and after each call has returned says
// so on stdout ("alloc ADDR" / "free ADDR"), so that the test knows what the trace must hold
// at whatever moment it kills the process.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

int main() {
  std::printf("pid %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  std::vector<void*> live;
  for (unsigned i = 0;; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 4096 + (i % 13) * 512) != cudaSuccess) return 1;
    std::printf("alloc %p\n", p);
    std::fflush(stdout);
    live.push_back(p);
    if (i % 3 == 2) {
      void* q = live[live.size() / 2];
      live.erase(live.begin() + static_cast<long>(live.size() / 2));
      if (cudaFree(q) != cudaSuccess) return 1;
      std::printf("free %p\n", q);
      std::fflush(stdout);
    }
    if (live.size() > 5000) {
      for (void* q : live) cudaFree(q);
      live.clear();
      std::printf("reset\n");
      std::fflush(stdout);
    }
  }
}
