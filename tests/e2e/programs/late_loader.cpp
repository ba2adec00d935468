// Allocates from its own code first, so that the shim has walked its stacks and asked the
// loader for objects; then loads a library (argv[1], late_loaded_library.cpp) and allocates
// from its own code and through the library; then forks, and the child makes the same calls
// from the same call sites, whose stacks the parent's walks met already. Announces each
// allocation (announce.h), "late" before those the library made. Sizes, in order: 500 three
// times, then 1000 and 2000 (library) from the parent, 3000 and 4000 (library) from the child.
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "announce.h"

namespace {

using LateAlloc = int (*)(void**, size_t);

int alloc_from_program(size_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) return 1;
  announce_alloc(p, size);
  return 0;
}

int alloc_from_library(LateAlloc late_alloc, size_t size) {
  void* p = nullptr;
  if (late_alloc(&p, size) != 0) return 1;
  announce_line("late ", 5);
  announce_alloc(p, size);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: late_loader LIBRARY\n");
    return 2;
  }
  int failures = 0;
  for (int i = 0; i < 3; ++i) failures += alloc_from_program(500);
  void* library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "late_loader: %s\n", dlerror());
    return 2;
  }
  auto late_alloc = reinterpret_cast<LateAlloc>(dlsym(library, "late_library_alloc"));
  if (late_alloc == nullptr) return 2;
  pid_t child = -1;
  for (int round = 0; round < 2; ++round) {
    // The child makes the second round: the same call sites as the parent's first.
    if (round == 1 && (child = fork()) != 0) break;
    failures += alloc_from_program(round == 0 ? 1000 : 3000);
    failures += alloc_from_library(late_alloc, round == 0 ? 2000 : 4000);
  }
  if (child == 0) _exit(failures == 0 ? 0 : 1);
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    ++failures;
  return failures == 0 ? 0 : 1;
}
