// N threads, each making M cudaMalloc/cudaFree pairs: every allocation must reach the trace.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::atoi(argv[1]) : 8;
  const int pairs = argc > 2 ? std::atoi(argv[2]) : 50000;
  std::vector<std::thread> pool;
  std::vector<int> failures(static_cast<size_t>(threads), 0);
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([t, pairs, &failures] {
      for (int i = 0; i < pairs; ++i) {
        void* p = nullptr;
        if (cudaMalloc(&p, 256 + static_cast<size_t>((i + t) % 64) * 256) != cudaSuccess ||
            cudaFree(p) != cudaSuccess)
          ++failures[static_cast<size_t>(t)];
      }
    });
  }
  for (auto& th : pool) th.join();
  int failed = 0;
  for (int f : failures) failed += f;
  std::printf("thread_storm: %d threads x %d pairs, %d failures\n", threads, pairs, failed);
  return failed == 0 ? 0 : 1;
}
