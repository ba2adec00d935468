// Forks N children one after another while the parent keeps allocating. Each child
// allocates one buffer of its own size, announces it ("child PID alloc ADDR SIZE"), and exits
// with status I % 100 (allocating where the parent does: see allocate()); the parent reaps each
// before the next fork and announces its own allocations (announce.h). Every process must be in the
// trace with exactly what it announced.
#include <cuda_runtime_api.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "announce.h"

namespace {

// Parent and children allocate through this one call, so every allocation has the same stack:
// a child's first stack is one its parent had already sent by name before the fork, and the
// child must send it whole (its trace is another process's).
__attribute__((noinline)) void* allocate(size_t size) {
  void* p = nullptr;
  return cudaMalloc(&p, size) == cudaSuccess ? p : nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  const int children = argc > 1 ? std::atoi(argv[1]) : 100;
  int failures = 0;
  int child_index = -1;  // in a child: which one it is
  for (int i = 0; i < children; ++i) {
    const size_t size = child_index < 0 ? 1024 : 4096 * static_cast<size_t>(child_index + 1);
    void* mine = allocate(size);
    if (child_index >= 0) {
      if (mine == nullptr) _exit(101);
      char line[128];
      announce_line(line, std::snprintf(line, sizeof line, "child %d alloc %p %zu\n",
                                        static_cast<int>(getpid()), mine, size));
      _exit(child_index % 100);
    }
    if (mine == nullptr) return 1;
    announce_alloc(mine, 1024);
    const pid_t child = fork();
    if (child < 0) return 1;
    if (child == 0) {  // back to the top of the loop, to allocate there and exit
      child_index = i--;
      continue;
    }
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != i % 100)
      ++failures;
    cudaFree(mine);
    announce_free(mine);
  }
  return failures == 0 ? 0 : 1;
}
