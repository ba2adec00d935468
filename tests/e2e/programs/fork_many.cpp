// Forks N children one after another while the parent keeps allocating. Each child
// allocates one buffer of its own size, announces it ("child PID alloc ADDR SIZE"), and exits
// with status I % 100; the parent reaps each before the next fork and announces its own
// allocations (announce.h). Every process must be in the trace with exactly what it announced.
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "announce.h"

int main(int argc, char** argv) {
  const int children = argc > 1 ? std::atoi(argv[1]) : 100;
  int failures = 0;
  for (int i = 0; i < children; ++i) {
    void* mine = nullptr;
    if (cudaMalloc(&mine, 1024) != cudaSuccess) return 1;
    announce_alloc(mine, 1024);
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {
      const size_t size = 4096 * static_cast<size_t>(i + 1);
      void* p = nullptr;
      if (cudaMalloc(&p, size) != cudaSuccess) _exit(101);
      char line[128];
      announce_line(line, std::snprintf(line, sizeof line, "child %d alloc %p %zu\n",
                                        static_cast<int>(getpid()), p, size));
      _exit(i % 100);
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != i % 100)
      ++failures;
    cudaFree(mine);
    announce_free(mine);
  }
  return failures == 0 ? 0 : 1;
}
