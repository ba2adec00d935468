// The main of bench/vs-heaptrack.sh's workloads: `NAME N D` runs N iterations of
// iteration(depth D, size), timing the loop itself. Prints "loop_ns T" (the loop alone: no
// start-up or finishing of the program or of the tool around it), then "exit_realtime_ns T"
// as the program's last act: the wrapper's return less this is the time the tool keeps the
// user waiting after the program is done. Exit status 1 if an iteration failed.
#pragma once

#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

// `iteration(depth, size)` returns the number of calls that failed.
template <class Iteration>
int run_timed_loop(int argc, char** argv, const char* name, Iteration iteration) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s N D\n", name);
    return 2;
  }
  const long n = std::atol(argv[1]);
  const int depth = std::atoi(argv[2]);
  int failures = 0;
  const auto start = std::chrono::steady_clock::now();
  for (long i = 0; i < n; ++i) failures += iteration(depth, 256 + static_cast<size_t>(i % 64) * 64);
  const auto loop = std::chrono::steady_clock::now() - start;
  std::printf(
      "loop_ns %lld\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(loop).count()));
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  std::printf("exit_realtime_ns %lld\n",
              static_cast<long long>(now.tv_sec) * 1000000000LL + now.tv_nsec);
  return failures == 0 ? 0 : 1;
}
