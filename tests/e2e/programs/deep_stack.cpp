// Allocates once at the bottom of a recursion DEPTH calls deep (default 1000), deeper than
// the shim's stack limit, and announces it (announce.h). The allocation must be in the
// trace with its stack cut at the limit, innermost frames kept.
#include <cuda_runtime_api.h>

#include <cstdlib>

#include "announce.h"

namespace {

// noinline and a use after the call: every level keeps a real frame.
__attribute__((noinline)) int descend(int levels_left) {
  if (levels_left == 0) {
    void* p = nullptr;
    if (cudaMalloc(&p, 12345) != cudaSuccess) return -1000000;
    announce_alloc(p, 12345);
    return 0;
  }
  volatile int here = levels_left;
  return descend(levels_left - 1) + here - levels_left;
}

}  // namespace

int main(int argc, char** argv) {
  const int depth = argc > 1 ? std::atoi(argv[1]) : 1000;
  return descend(depth) == 0 ? 0 : 1;
}
