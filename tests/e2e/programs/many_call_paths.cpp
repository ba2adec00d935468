// Allocates from 2^LEVELS call paths (default 12: 4096, as many as a thread's table of stack
// names holds, so some evict others), in a shuffled order, ROUNDS times (default 2), on
// THREADS threads at once (default 2). Path p goes left or right at each level by p's bits,
// least significant first, and asks cudaMalloc for p + 1 bytes, freed at once: a test can
// read each allocation's path from its stack and check it against its size.
//
//   e2e_many_call_paths [THREADS [ROUNDS [LEVELS]]]
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

namespace {

int g_levels = 12;

void walk(int level, int path);

// noinline and a use after the call: every level keeps a frame of its own function.
__attribute__((noinline)) void go_left(int level, int path) {
  walk(level + 1, path);
  volatile int keep = level;
  (void)keep;
}

__attribute__((noinline)) void go_right(int level, int path) {
  walk(level + 1, path);
  volatile int keep = level;
  (void)keep;
}

__attribute__((noinline)) void walk(int level, int path) {
  if (level == g_levels) {
    void* p = nullptr;
    if (cudaMalloc(&p, static_cast<size_t>(path) + 1) == cudaSuccess) cudaFree(p);
    return;
  }
  if ((path >> level) & 1)
    go_right(level, path);
  else
    go_left(level, path);
}

void run(unsigned seed, int rounds) {
  std::vector<int> paths(1u << g_levels);
  std::iota(paths.begin(), paths.end(), 0);
  std::mt19937 random(seed);
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(paths.begin(), paths.end(), random);
    for (int path : paths) walk(0, path);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 2;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 2;
  if (argc > 3) g_levels = std::atoi(argv[3]);
  if (threads < 1 || rounds < 1 || g_levels < 1 || g_levels > 20) return 2;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) workers.emplace_back(run, 1234u + unsigned(t), rounds);
  for (std::thread& w : workers) w.join();
  return 0;
}
