// Asks the collector a live query after the collector is gone: makes a checkpoint, says "ready",
// waits until its parent is gone (the test kills `vramtrace run`, which takes this program's
// parent, a shell, with it), then asks what is live since the checkpoint, allowing 30 s, and
// prints "status S after N ms".
#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "vramtrace/vramtrace.h"

int main() {
  const auto checkpoint =
      reinterpret_cast<unsigned long long (*)()>(dlsym(RTLD_DEFAULT, "vramtrace_checkpoint"));
  const auto live_since = reinterpret_cast<decltype(&vramtrace_live_since)>(
      dlsym(RTLD_DEFAULT, "vramtrace_live_since"));
  if (checkpoint == nullptr || live_since == nullptr) return 3;
  const unsigned long long point = checkpoint();
  const pid_t parent = getppid();
  std::printf("ready\n");
  std::fflush(stdout);
  while (getppid() == parent) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto asked = std::chrono::steady_clock::now();
  vramtrace_live_summary summary{};
  const long status = live_since(point, &summary, nullptr, 0, 30000);
  const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - asked);
  std::printf("status %ld after %lld ms\n", status, static_cast<long long>(waited.count()));
  return 0;
}
