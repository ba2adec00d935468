// A training loop over a PyTorch-shaped caching allocator (tests/simcuda's libc10_cuda_sim.so),
// for the allocator level of vramtrace: blocks (tensors) inside segments (cudaMalloc).
//
// Each of 3 iterations allocates activations and frees them, and appends its "loss" to a list
// that is never freed: the planted leak, marked  LEAK(kind, count, bytes)  on its line. The
// activations' segments stay cached at exit (no empty_cache): cache, not leaks. One request
// far beyond the device fails, marked  OOM(bytes)  with its rounded size; before failing, the
// allocator gives its wholly free segments back and retries, as PyTorch's does. An evaluation
// step after it caches a large segment again.
//
// Prints the allocator's totals at the end: "allocated=N reserved=N segments=N".
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "c10_cuda_sim.h"

namespace {

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kTooMuch = size_t{64} << 30;  // 64 GiB

void* must_alloc(size_t bytes) {
  void* p = sim_alloc(bytes, 0);
  if (p == nullptr) {
    std::fprintf(stderr, "torch_like: sim_alloc(%zu) failed\n", bytes);
    std::exit(1);
  }
  return p;
}

__attribute__((noinline)) void train_step(std::vector<void*>& losses) {
  void* weights_grad = must_alloc(3 * kMiB);  // large pool: a 4 MiB segment
  std::vector<void*> activations;
  for (int i = 0; i < 4; ++i) activations.push_back(must_alloc(256 * kKiB));  // small pool
  losses.push_back(sim_alloc(4, 0));  // LEAK(block, 3, 1536)
  for (void* a : activations) sim_free(a);
  sim_free(weights_grad);
}

__attribute__((noinline)) void oversized_batch() {
  void* p = sim_alloc(kTooMuch, 0);  // OOM(68719476736)
  if (p != nullptr) {
    std::fprintf(stderr, "torch_like: the oversized request succeeded\n");
    std::exit(1);
  }
}

__attribute__((noinline)) void eval_step() {
  void* activations = must_alloc(3 * kMiB);
  sim_free(activations);
}

}  // namespace

int main() {
  std::vector<void*> losses;  // kept for "logging": the tensors never die
  for (int iteration = 0; iteration < 3; ++iteration) train_step(losses);
  oversized_batch();
  eval_step();
  sim_allocator_stats stats{};
  sim_stats(0, &stats);
  std::printf("allocated=%llu reserved=%llu segments=%llu\n",
              static_cast<unsigned long long>(stats.allocated_bytes),
              static_cast<unsigned long long>(stats.reserved_bytes),
              static_cast<unsigned long long>(stats.segments));
  return 0;
}
