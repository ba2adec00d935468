// Closes every file descriptor it did not open itself, as daemons and some job launchers do
// (the shim's socket to the collector among them), then goes on allocating; it also makes new
// pipes, whose empty read ends take the closed numbers. Announces every call (announce.h); the
// trace must hold them all, and the program must neither hang nor die.
#include <cuda_runtime_api.h>
#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "announce.h"

namespace {

void* allocate(size_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) std::_Exit(1);
  announce_alloc(p, size);
  return p;
}

// Every descriptor above stderr, as listed by /proc/self/fd.
void close_all_but_stdio() {
  std::vector<int> fds;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(dir)) {
      const int fd = std::atoi(e->d_name);
      if (fd > STDERR_FILENO && fd != dirfd(dir)) fds.push_back(fd);
    }
    closedir(dir);
  }
  for (int fd : fds) close(fd);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 2000;
  void* before = allocate(1 << 20);
  close_all_but_stdio();
  // New descriptors take the lowest free numbers: the ones just closed. An empty pipe is
  // never readable, unlike the socket when its collector goes away.
  std::vector<int> opened;
  for (int i = 0; i < 4; ++i) {
    int ends[2];
    if (pipe(ends) != 0) return 1;
    opened.insert(opened.end(), {ends[0], ends[1]});
  }
  cudaFree(before);
  announce_free(before);
  // Enough events to fill a small ring many times over.
  for (int i = 0; i < rounds; ++i) {
    void* p = allocate(4096 + static_cast<size_t>(i % 5) * 4096);
    if (i % 2 == 0) {
      cudaFree(p);
      announce_free(p);
    }
  }
  for (int fd : opened) close(fd);
  return 0;
}
