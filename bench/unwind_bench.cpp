// One native stack capture, as the shim takes it for each allocation: the walk by frame rules
// (preload/frame_rule_walk.h) against libunwind's cached unw_backtrace, the walk's fallback and
// what the shim used alone before it. Args: {stack depth below the benchmark, frame rules}.
// Run: build/release/bin/vramtrace_unwind_bench (see docs/performance.md).
#include <benchmark/benchmark.h>

#include "unwinder.h"

namespace {

__attribute__((noinline)) void capture_at_depth(int depth, const vramtrace::preload::Unwinder& u,
                                                benchmark::State& state) {
  if (depth > 1) {
    capture_at_depth(depth - 1, u, state);
    benchmark::ClobberMemory();  // keeps the recursion from becoming a tail call
    return;
  }
  uintptr_t ips[256];
  bool truncated = false;
  int frames = 0;
  for (auto _ : state) {
    frames = u.capture(ips, 256, &truncated);
    benchmark::DoNotOptimize(ips);
  }
  state.counters["frames"] = frames;
}

void BM_Unwind(benchmark::State& state) {
  vramtrace::preload::Unwinder unwinder;
  unwinder.init(state.range(1) != 0);
  state.SetLabel(unwinder.name());
  capture_at_depth(static_cast<int>(state.range(0)), unwinder, state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Unwind)->ArgsProduct({{16, 64, 128}, {1, 0}});

}  // namespace

BENCHMARK_MAIN();
