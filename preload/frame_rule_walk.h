// The calling thread's return addresses, walked with frame rules (frame_rule_cache.h): per
// frame, one cache lookup and one or two loads from the stack. libunwind's cached
// unw_backtrace takes about 6.7 ns a frame on the machine of docs/performance.md; this walk is
// there because a training job's native stacks are 50 to 100 frames deep.
//
// Each thread remembers its last walk (in a mapping of its own, unmapped when it exits): where a
// walk meets a frame of the last one and every word the last one loaded from there on is
// unchanged, the rest of the stack is the last one's, checked rather than walked again.
//
// Every load is from the thread's own stack, between the walk's stack pointer and the top of
// the stack, so a wrong rule can give a wrong frame but never a fault. Where the walk cannot
// go on (a rule it does not follow, a signal frame, a stack it does not know the bounds of:
// an alternate signal stack, a coroutine's), it says so and the caller asks libunwind.
#pragma once

#include <cstdint>

namespace vramtrace::preload {

// The deepest walk that is remembered for the next one; deeper asks are walked without it.
inline constexpr int kMaxRememberedWalk = 544;

struct WalkedStack {
  int count = 0;
  bool reached_end = false;  // the outermost frame was reached: nothing left out at the bottom
  int frames_stepped = 0;    // frames stepped with rules; the rest were the last walk's
  // Non-zero: names this walk's frames. A later walk on the thread with the same id found the
  // same frames (the whole last walk, checked unchanged); a walk with other frames never gets
  // an id given before, on any thread. 0: the walk went without the last one (a signal
  // handler's, a deep one).
  uint64_t walk_id = 0;
};

// Fills `ips` with at most `max` return addresses, innermost first, starting inside this
// function. False when the walk could not be completed (the contents of ips are then unused).
bool walk_stack_by_frame_rules(uintptr_t* ips, int max, WalkedStack* walked);

// How many threads hold a remembered walk now.
int live_last_walks_for_testing();

}  // namespace vramtrace::preload
