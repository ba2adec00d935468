// Allocates once, then ends as told: "exit N", "signal N" (raise), "abort".
#include <cuda_runtime_api.h>

#include <csignal>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  void* p = nullptr;
  cudaMalloc(&p, 1 << 20);
  if (argc < 3) return 0;
  const int n = std::atoi(argv[2]);
  if (std::strcmp(argv[1], "exit") == 0) std::exit(n);
  if (std::strcmp(argv[1], "signal") == 0) std::raise(n);
  if (std::strcmp(argv[1], "abort") == 0) std::abort();
  return 0;
}
