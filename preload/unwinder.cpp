#include "unwinder.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>

#include <algorithm>

#include "frame_rule_walk.h"
#include "real_functions.h"

namespace vramtrace::preload {
namespace {

constexpr int kUnwCachePerThread = 2;  // UNW_CACHE_PER_THREAD in libunwind.h

// Any function of the shim: its address tells which loaded object is the shim.
void shim_anchor() {}

// The lowest and highest address of the executable segments of the object containing `addr`.
void object_text_range(uintptr_t addr, uintptr_t* begin, uintptr_t* end) {
  struct Query {
    uintptr_t addr, begin, end;
  } query{addr, 0, 0};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* q = static_cast<Query*>(data);
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || (ph.p_flags & PF_X) == 0) continue;
          lo = std::min<uintptr_t>(lo, info->dlpi_addr + ph.p_vaddr);
          hi = std::max<uintptr_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (q->addr < lo || q->addr >= hi) return 0;
        q->begin = lo;
        q->end = hi;
        return 1;
      },
      &query);
  *begin = query.begin;
  *end = query.end;
}

}  // namespace

void Unwinder::init(bool frame_rules) {
  object_text_range(reinterpret_cast<uintptr_t>(&shim_anchor), &shim_begin_, &shim_end_);
  frame_rules_ = frame_rules;

  void* libunwind = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (libunwind != nullptr) {
    auto bt = reinterpret_cast<BacktraceFn>(real_dlsym(libunwind, "unw_backtrace"));
    auto set_caching = reinterpret_cast<int (*)(void*, int)>(
        real_dlsym(libunwind, "_ULx86_64_set_caching_policy"));
    auto* local_space = static_cast<void**>(real_dlsym(libunwind, "_ULx86_64_local_addr_space"));
    if (bt != nullptr) {
      if (set_caching != nullptr && local_space != nullptr)
        set_caching(*local_space, kUnwCachePerThread);
      backtrace_ = bt;
      name_ = frame_rules_ ? "frame-rules+libunwind" : "libunwind";
      return;
    }
    dlclose(libunwind);
  }
  backtrace_ = &::backtrace;
  name_ = frame_rules_ ? "frame-rules+backtrace" : "backtrace";
}

bool Unwinder::skip_innermost_object(const void* address) {
  if (skipped_count_ == kMaxSkipped || address == nullptr) return false;
  Range range{};
  object_text_range(reinterpret_cast<uintptr_t>(address), &range.begin, &range.end);
  if (range.begin == range.end) return false;
  skipped_[skipped_count_++] = range;
  return true;
}

bool Unwinder::innermost_to_skip(uintptr_t ip) const {
  if (ip >= shim_begin_ && ip < shim_end_) return true;
  for (int i = 0; i < skipped_count_; ++i)
    if (ip >= skipped_[i].begin && ip < skipped_[i].end) return true;
  return false;
}

int Unwinder::capture(uintptr_t* ips, int max, bool* truncated, uint64_t* walk_id) const {
  *truncated = false;
  if (walk_id != nullptr) *walk_id = 0;
  if (backtrace_ == nullptr && !frame_rules_) return 0;
  // The shim's own frames come first (about ten where the compiler inlines little); spare slots
  // keep them from costing the program's frames depth.
  constexpr int kSpare = 32, kMostFrames = 512;
  static_assert(kMostFrames + kSpare <= kMaxRememberedWalk);
  uintptr_t raw[kMostFrames + kSpare];
  const int want = std::min(max, kMostFrames) + kSpare;
  int got = 0;
  bool reached_end = false;
  WalkedStack walked;
  if (frame_rules_ && walk_stack_by_frame_rules(raw, want, &walked)) {
    got = walked.count;
    reached_end = walked.reached_end;
    // The frames given below follow from the walk's and `max` alone.
    if (walk_id != nullptr) *walk_id = walked.walk_id;
  } else if (backtrace_ != nullptr) {
    if (frame_rules_) declined_walks_.fetch_add(1, std::memory_order_relaxed);
    got = backtrace_(reinterpret_cast<void**>(raw), want);
    reached_end = got < want;  // unw_backtrace and backtrace() fill every slot they are given
  }
  int first = 0;
  while (first < got && innermost_to_skip(raw[first])) ++first;
  int count = std::min(got - first, max);
  if (!reached_end || got - first > max) *truncated = true;
  for (int i = 0; i < count; ++i) ips[i] = raw[first + i];
  return count;
}

}  // namespace vramtrace::preload
