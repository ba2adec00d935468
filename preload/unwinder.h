// Native stack capture inside the target: return addresses only; the collector symbolizes.
//
// Stacks are walked with the frame rules of the objects' call frame information, cached by
// address (frame_rule_walk.h), several times faster than libunwind per frame; libunwind takes
// the stacks that walk cannot follow, and all of them with VRAMTRACE_UNWINDER=libunwind.
//
// libunwind is loaded privately (dlopen RTLD_LOCAL) rather than linked: its shared library
// exports _Unwind_* and a weak `backtrace`, and linking it would let it take over the host's
// exception handling. Where libunwind is missing, glibc's backtrace() is the fallback.
#pragma once

#include <atomic>
#include <cstdint>

namespace vramtrace::preload {

class Unwinder {
 public:
  // Loads the unwinder and learns the shim's own address range. Call once, at start-up. With
  // `frame_rules`, stacks are walked with cached frame rules (frame_rule_walk.h) and libunwind
  // (or glibc's backtrace) takes only the stacks that walk declines.
  void init(bool frame_rules = true);

  // Frames of the loaded object that holds `address` are left out too where they come first (as
  // the shim's own are): the CUPTI library's callbacks run under CUDA's frames, which are not
  // the program's. Call before the first capture(). False when the object is not found or too
  // many were given.
  bool skip_innermost_object(const void* address);

  // Fills `ips` with return addresses, innermost first, leaving out the shim's own frames.
  // Returns the count; *truncated is set when the stack was deeper than `max`. *walk_id, where
  // given, is the walk's WalkedStack::walk_id (frame_rule_walk.h), 0 when libunwind walked:
  // two captures with the same non-zero id and `max` gave the same frames.
  int capture(uintptr_t* ips, int max, bool* truncated, uint64_t* walk_id = nullptr) const;

  // "frame-rules+libunwind", "frame-rules+backtrace", "libunwind", "backtrace" or "none".
  const char* name() const { return name_; }

  // Whether stacks are walked by frame rules first (the walk libunwind takes over from).
  bool walks_by_frame_rules() const { return frame_rules_; }

  // Stacks the walk by frame rules declined and libunwind (or backtrace()) walked, so far.
  uint64_t declined_walks() const { return declined_walks_.load(std::memory_order_relaxed); }
  // A forked child counts its own.
  void forget_declined_walks() { declined_walks_.store(0, std::memory_order_relaxed); }

 private:
  using BacktraceFn = int (*)(void**, int);
  BacktraceFn backtrace_ = nullptr;
  const char* name_ = "none";
  bool frame_rules_ = true;
  mutable std::atomic<uint64_t> declined_walks_{0};
  uintptr_t shim_begin_ = 0;
  uintptr_t shim_end_ = 0;
  struct Range {
    uintptr_t begin, end;
  };
  static constexpr int kMaxSkipped = 4;
  Range skipped_[kMaxSkipped] = {};
  int skipped_count_ = 0;

  bool innermost_to_skip(uintptr_t ip) const;
};

}  // namespace vramtrace::preload
