// Allocates inside a signal handler three times (4321, 4322 and 4323 bytes), then once outside
// it. The handler's stack holds the kernel's signal frame, which the shim's walk by frame rules
// leaves to libunwind: those allocations must still have their whole stacks, through the
// handler and the signal frame down to main, and the trace must count three stacks walked by
// libunwind (the first said when it happens, the other two at exit).
#include <cuda_runtime_api.h>

#include <csignal>

namespace {

void* g_from_handler[3] = {};
int g_signals = 0;

__attribute__((noinline)) void allocate_in_handler(int) {
  void** slot = &g_from_handler[g_signals];
  if (cudaMalloc(slot, size_t(4321 + g_signals)) != cudaSuccess) *slot = nullptr;
  ++g_signals;
}

__attribute__((noinline)) bool allocate_outside_handler() {
  void* p = nullptr;
  if (cudaMalloc(&p, 1234) != cudaSuccess) return false;
  return cudaFree(p) == cudaSuccess;
}

}  // namespace

int main() {
  for (int i = 0; i < 3; ++i) {
    std::signal(SIGUSR1, &allocate_in_handler);  // reinstalled where signal() resets it
    std::raise(SIGUSR1);
  }
  if (!allocate_outside_handler()) return 1;
  for (void* p : g_from_handler)
    if (p == nullptr || cudaFree(p) != cudaSuccess) return 1;
  return 0;
}
