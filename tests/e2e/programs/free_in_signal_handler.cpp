// Allocates COUNT blocks of 12345 bytes, then has a fast SIGALRM handler free all of them while
// the main loop stays inside the shim's hooks (markers through its C API, which take no lock of
// the simulated GPU's, so that a handler's cudaFree cannot wait on one held beneath it). The
// handler's frees interrupt the hooks anywhere: their record path and the ring's lock included.
// The main loop spends most of its time inside them.
// Prints "handler freed N failed F"; exits 1 if a free failed.
// Usage: free_in_signal_handler COUNT
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <signal.h>
#include <sys/time.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace {

void** g_blocks = nullptr;
long g_count = 0;
std::atomic<long> g_next{0};
std::atomic<long> g_failed{0};

void free_some(int) {
  for (int k = 0; k < 4; ++k) {
    const long i = g_next.load(std::memory_order_relaxed);
    if (i >= g_count) return;
    g_next.store(i + 1, std::memory_order_relaxed);
    if (cudaFree(g_blocks[i]) != cudaSuccess) g_failed.fetch_add(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: free_in_signal_handler COUNT\n");
    return 2;
  }
  g_count = std::atol(argv[1]);
  g_blocks = new void*[static_cast<size_t>(g_count)];
  for (long i = 0; i < g_count; ++i)
    if (cudaMalloc(&g_blocks[i], 12345) != cudaSuccess) return 1;
  using MarkFn = void (*)(const char*);
  auto mark = reinterpret_cast<MarkFn>(dlsym(RTLD_DEFAULT, "vramtrace_mark"));

  struct sigaction action {};
  action.sa_handler = &free_some;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  sigaction(SIGALRM, &action, nullptr);
  itimerval every{{0, 100}, {0, 100}};
  setitimer(ITIMER_REAL, &every, nullptr);
  // A little work between marks, so that the markers do not fill the ring: a handler's frees
  // during a write that waits on a full ring are deferred, and only 16 of them fit.
  while (g_next.load(std::memory_order_relaxed) < g_count) {
    if (mark != nullptr) mark("between frees");
    for (volatile int spin = 0; spin < 3000; spin = spin + 1) {
    }
  }
  itimerval off{};
  setitimer(ITIMER_REAL, &off, nullptr);

  std::printf("handler freed %ld failed %ld\n", g_count, g_failed.load());
  return g_failed.load() == 0 ? 0 : 1;
}
