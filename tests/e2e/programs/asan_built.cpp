// A program built with AddressSanitizer (GCC's, whose runtime is a shared library that checks it
// comes first in the process): allocates `count` blocks, frees every other one, says "done".
// Usage: asan_built COUNT.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int count = argc > 1 ? std::atoi(argv[1]) : 10;
  std::vector<void*> blocks;
  for (int i = 0; i < count; ++i) {
    void* p = nullptr;
    if (cudaMalloc(&p, 4096 * (i + 1)) != cudaSuccess) return 1;
    blocks.push_back(p);
  }
  for (int i = 0; i < count; i += 2)
    if (cudaFree(blocks[i]) != cudaSuccess) return 1;
  std::printf("done\n");
  return 0;
}
