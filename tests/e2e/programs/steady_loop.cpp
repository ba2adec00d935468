// A training loop's shape without PyTorch: ITERATIONS iterations, each an "iteration" range
// (vramtrace's C API) in which the same temporaries are made and freed (pairs, and two that
// overlap), so that the recording repeats itself. From iteration LEAK_FROM on, each iteration
// keeps one allocation (a leak that begins late); at iteration OOM_AT, one allocation asks for
// more than the device has and fails. A negative LEAK_FROM or OOM_AT: none.
//
//   e2e_steady_loop ITERATIONS [LEAK_FROM [OOM_AT]]
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <cstddef>
#include <cstdlib>
#include <vector>

#include "vramtrace/vramtrace.h"

namespace {

__attribute__((noinline)) void temporaries() {
  for (int j = 0; j < 8; ++j) {
    void* p = nullptr;
    if (cudaMalloc(&p, static_cast<std::size_t>(256) << (j % 4)) == cudaSuccess) cudaFree(p);
  }
  void* a = nullptr;
  void* b = nullptr;
  if (cudaMalloc(&a, 1 << 20) != cudaSuccess) return;
  if (cudaMalloc(&b, 3 << 18) == cudaSuccess) cudaFree(b);
  cudaFree(a);
}

__attribute__((noinline)) void* keep_one() {
  void* p = nullptr;
  return cudaMalloc(&p, 4096) == cudaSuccess ? p : nullptr;
}

__attribute__((noinline)) void ask_too_much() {
  void* p = nullptr;
  if (cudaMalloc(&p, std::size_t{1} << 50) == cudaSuccess) cudaFree(p);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long iterations = std::atol(argv[1]);
  const long leak_from = argc > 2 ? std::atol(argv[2]) : -1;
  const long oom_at = argc > 3 ? std::atol(argv[3]) : -1;
  // The shim's C API, found at run time as a program that may run without it would.
  const auto push =
      reinterpret_cast<vramtrace_range_push_fn>(dlsym(RTLD_DEFAULT, "vramtrace_range_push"));
  const auto pop =
      reinterpret_cast<vramtrace_range_pop_fn>(dlsym(RTLD_DEFAULT, "vramtrace_range_pop"));
  if (push == nullptr || pop == nullptr) return 3;
  std::vector<void*> kept;
  for (long i = 0; i < iterations; ++i) {
    push("iteration");
    temporaries();
    if (leak_from >= 0 && i >= leak_from) kept.push_back(keep_one());
    if (i == oom_at) ask_too_much();
    pop();
  }
  return 0;
}
