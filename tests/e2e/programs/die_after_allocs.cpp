// Allocates, announcing each call (announce.h), then dies as told:
//   segv N          N allocations, then a null-pointer write (SIGSEGV)
//   abort N         N allocations, then abort() (SIGABRT)
//   handler-exit N  N allocations, then raise(SIGUSR1), whose handler calls exit(42)
//   timer-exit MS   allocates and frees without end; after MS milliseconds a SIGALRM
//                   handler calls exit(43), wherever it interrupts the program (the shim too)
// The trace must hold every announced allocation and free.
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/time.h>

#include <cstdlib>
#include <cstring>

#include "announce.h"

namespace {

void exit_42(int) {
  std::exit(42);
}
void exit_43(int) {
  std::exit(43);
}

void* allocate(size_t size) {
  void* p = nullptr;
  if (cudaMalloc(&p, size) != cudaSuccess) std::_Exit(1);
  announce_alloc(p, size);
  return p;
}

void allocate_n(int n) {
  for (int i = 0; i < n; ++i) {
    void* p = allocate(4096 + static_cast<size_t>(i % 7) * 512);
    if (i % 3 == 1) {
      cudaFree(p);
      announce_free(p);
    }
  }
}

void on_signal(int sig, void (*handler)(int)) {
  struct sigaction sa {};
  sa.sa_handler = handler;
  sigaction(sig, &sa, nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const char* mode = argv[1];
  const int n = std::atoi(argv[2]);
  if (std::strcmp(mode, "timer-exit") == 0) {
    // One allocation and free before the timer: a process's first event does its one-time
    // work (the shim faults its ring in), and the timer is to interrupt the steady loop.
    void* first = allocate(256);
    cudaFree(first);
    announce_free(first);
    on_signal(SIGALRM, &exit_43);
    itimerval timer{};
    timer.it_value.tv_sec = n / 1000;
    timer.it_value.tv_usec = (n % 1000) * 1000;
    setitimer(ITIMER_REAL, &timer, nullptr);
    // A fixed ring of live buffers: no malloc that the handler's exit() could find locked.
    static void* live[64] = {};
    for (unsigned i = 0;; ++i) {
      void*& slot = live[i % 64];
      if (slot != nullptr) {
        cudaFree(slot);
        announce_free(slot);
      }
      slot = allocate(256 + (i % 64) * 256);
    }
  }
  allocate_n(n);
  if (std::strcmp(mode, "segv") == 0) {
    volatile int* nowhere = nullptr;
    *nowhere = 1;
  }
  if (std::strcmp(mode, "abort") == 0) std::abort();
  if (std::strcmp(mode, "handler-exit") == 0) {
    on_signal(SIGUSR1, &exit_42);
    raise(SIGUSR1);
  }
  return 3;  // not reached in the modes above
}
