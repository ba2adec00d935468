// One native stack capture, as the shim takes it for each allocation: the walk by frame rules
// (preload/frame_rule_walk.h) against libunwind's cached unw_backtrace, the walk's fallback and
// what the shim used alone before it. Run: build/release/bin/vramtrace_unwind_bench
// (see docs/performance.md).
//
//   BM_Unwind/D/R            Unwinder::capture at depth D, one call path again and again (what a
//                            training loop does); R=1 the walk by frame rules, R=0 libunwind.
//   BM_UnwindTwoPaths/D      the walk, two call paths in turn that differ in the innermost
//                            frames: the last walk is reused from where they meet.
//   BM_WalkWithoutReuse/D    the walk by frame rules alone, the last walk never reused (a stack
//                            met for the first time, its rules already cached).
#include <benchmark/benchmark.h>

#include "frame_rule_walk.h"
#include "unwinder.h"

namespace {

using vramtrace::preload::Unwinder;

__attribute__((noinline)) int capture(const Unwinder& u) {
  uintptr_t ips[256];
  bool truncated = false;
  const int frames = u.capture(ips, 256, &truncated);
  benchmark::DoNotOptimize(ips);
  return frames;
}

// Two call sites, so that two stacks differ in their innermost frames only.
__attribute__((noinline)) int via_first(const Unwinder& u) {
  const int frames = capture(u);
  benchmark::ClobberMemory();
  return frames;
}
__attribute__((noinline)) int via_second(const Unwinder& u) {
  const int frames = capture(u) + 0;
  benchmark::ClobberMemory();
  return frames;
}

enum class Mode { kOnePath, kTwoPaths, kWithoutReuse };

__attribute__((noinline)) void at_depth(int depth, const Unwinder& u, Mode mode,
                                        benchmark::State& state) {
  if (depth > 1) {
    at_depth(depth - 1, u, mode, state);
    benchmark::ClobberMemory();  // keeps the recursion from becoming a tail call
    return;
  }
  int frames = 0;
  bool second = false;
  for (auto _ : state) {
    switch (mode) {
      case Mode::kOnePath:
        frames = capture(u);
        break;
      case Mode::kTwoPaths:
        frames = second ? via_second(u) : via_first(u);
        second = !second;
        break;
      case Mode::kWithoutReuse: {
        // One frame more than a remembered walk may have: walked without the last walk.
        static uintptr_t ips[vramtrace::preload::kMaxRememberedWalk + 1];
        vramtrace::preload::WalkedStack walked;
        if (vramtrace::preload::walk_stack_by_frame_rules(ips, int(std::size(ips)), &walked))
          frames = walked.count;
        benchmark::DoNotOptimize(ips);
        break;
      }
    }
  }
  state.counters["frames"] = frames;
}

// The walk by frame rules at depth state.range(0), in `mode`.
void walk_in(benchmark::State& state, Mode mode) {
  Unwinder unwinder;
  unwinder.init(true);
  at_depth(static_cast<int>(state.range(0)), unwinder, mode, state);
  state.SetItemsProcessed(state.iterations());
}

void BM_Unwind(benchmark::State& state) {
  Unwinder unwinder;
  unwinder.init(state.range(1) != 0);
  state.SetLabel(unwinder.name());
  at_depth(static_cast<int>(state.range(0)), unwinder, Mode::kOnePath, state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_Unwind)->ArgsProduct({{16, 64, 128}, {1, 0}});

void BM_UnwindTwoPaths(benchmark::State& state) {
  walk_in(state, Mode::kTwoPaths);
}
BENCHMARK(BM_UnwindTwoPaths)->Arg(16)->Arg(64)->Arg(128);

void BM_WalkWithoutReuse(benchmark::State& state) {
  walk_in(state, Mode::kWithoutReuse);
}
BENCHMARK(BM_WalkWithoutReuse)->Arg(16)->Arg(64)->Arg(128);

}  // namespace

BENCHMARK_MAIN();
