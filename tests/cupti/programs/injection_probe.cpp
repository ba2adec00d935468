// Stands in for CUDA's driver where there is none: loads the library that CUDA_INJECTION64_PATH
// names and calls its InitializeInjection, as cuInit does, then runs on. Prints what it got.
// Built with PROBE_ALLOCATES, it then allocates and frees through the (simulated) runtime, which
// the shim records when it is preloaded.
#include <dlfcn.h>
#ifdef PROBE_ALLOCATES
#include <cuda_runtime_api.h>
#endif

#include <cstdio>
#include <cstdlib>

int main() {
  const char* path = std::getenv("CUDA_INJECTION64_PATH");
  if (path == nullptr) {
    std::printf("no CUDA_INJECTION64_PATH\n");
    return 0;
  }
  void* library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    std::fprintf(stderr, "injection_probe: %s\n", dlerror());
    return 4;
  }
  auto initialize = reinterpret_cast<int (*)()>(dlsym(library, "InitializeInjection"));
  if (initialize == nullptr) return 5;
  std::printf("InitializeInjection returned %d\n", initialize());
#ifdef PROBE_ALLOCATES
  void* p = nullptr;
  if (cudaMalloc(&p, 1 << 20) != cudaSuccess || cudaFree(p) != cudaSuccess) return 6;
  void* kept = nullptr;
  if (cudaMalloc(&kept, 4096) != cudaSuccess) return 7;
  std::printf("allocated\n");
#endif
  return 0;
}
