#include "frame_rule_walk.h"

#include <pthread.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>

#include "frame_rule_cache.h"
#include "thread_exit_key.h"

namespace vramtrace::preload {
namespace {

// The calling thread's stack, learnt at its first walk: `top` is 0 until then. Where it cannot
// be learnt, the empty range at UINTPTR_MAX holds no stack pointer and the walk always declines.
struct ThreadStack {
  uintptr_t low = 0, top = 0;
};
constinit thread_local ThreadStack t_stack __attribute__((tls_model("initial-exec"))) = {};

// Learnt once per thread. For the main thread glibc reads /proc/self/maps (and allocates) to
// find how far the stack may grow down; for the others it reads the thread's descriptor.
const ThreadStack& thread_stack() {
  if (t_stack.top != 0) return t_stack;
  ThreadStack known{UINTPTR_MAX, UINTPTR_MAX};
  pthread_attr_t attr;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    void* address = nullptr;
    size_t bytes = 0;
    if (pthread_attr_getstack(&attr, &address, &bytes) == 0 && address != nullptr && bytes > 0)
      known = {reinterpret_cast<uintptr_t>(address), reinterpret_cast<uintptr_t>(address) + bytes};
    pthread_attr_destroy(&attr);
  }
  t_stack = known;
  return t_stack;
}

// ---- The last walk of each thread ----------------------------------------------------------
//
// A walk is a function of where it starts (the first frame's pc, sp and %rbp), of the frame
// rules, and of the words it loads from the stack. So when a walk reaches a frame with the same
// pc and sp as a frame of the thread's previous walk (and the same %rbp, where the rest of that
// walk used it), and every word the previous walk loaded from there on still holds what it
// loaded, the rest of the walk is the previous one's: checking those words costs about two
// independent loads a frame, against a dependent chain of a rule lookup and a load for each
// frame walked. A training loop allocates from the same few call paths, so most walks stop
// after the shim's own frames and the first frame that differs.

constexpr int kMaxRemembered = kMaxRememberedWalk;  // what Unwinder asks for at most

enum StepFlags : uint8_t {
  kBpKnown = 1,       // the frame's %rbp is known
  kLoads = 2,         // the step to the caller loaded from the stack (not the outermost frame)
  kUsesBp = 4,        // the frame's CFA is %rbp plus a constant
  kPassesBp = 8,      // the caller's %rbp is this frame's
  kDependsOnBp = 16,  // the walk from this frame on used this frame's %rbp
};

// One frame of a walk and the step from it to its caller.
struct StepRecord {
  uintptr_t pc, sp, bp;           // the frame
  uintptr_t cfa, return_address;  // loaded from cfa - 8 ...
  uintptr_t bp_slot, bp_value;    // ... and the caller's %rbp, where bp_slot is not 0
  uintptr_t lowest_load;          // the lowest address loaded by this step and the next ones
  uint8_t flags;
};

struct LastWalk {
  uint64_t rules_generation;
  uint64_t id;                 // WalkedStack::walk_id of the frames remembered
  uint64_t next_id, id_limit;  // the ids this thread may give next: [next_id, id_limit)
  int count;                   // 0: nothing remembered
  bool reached_end;
  bool busy;  // a walk on this thread is using it (a signal handler's walk leaves it alone)
  StepRecord frames[kMaxRemembered];  // outermost first: frame f is frames[count - 1 - f]
  // What a match reads of each frame of `frames`, by the same position, apart from the rest of
  // the record (link_outwards fills them): the loads to compare and the address to copy. Read
  // in parallel arrays, five words a frame against the record's nine, a match at depth 16
  // takes two thirds of the time (bench/unwind_bench.cpp); pairs of (address, value) measured
  // slower than these.
  uintptr_t pc[kMaxRemembered];
  uintptr_t load_at[kMaxRemembered];  // where the step loaded its return address (cfa - 8); 0: none
  uintptr_t loaded[kMaxRemembered];   // the return address it loaded
  uintptr_t bp_load_at[kMaxRemembered];  // the saved %rbp it loaded, where the walk used it; or 0
  uintptr_t bp_loaded[kMaxRemembered];
  StepRecord scratch[kMaxRemembered];  // the current walk's frames, innermost first
};

// A thread's LastWalk is mapped at its first walk and unmapped when it exits. After that (other
// exit handlers may still allocate) it is kGone, and walks go without.
LastWalk* const kGone = reinterpret_cast<LastWalk*>(uintptr_t(1));
constinit thread_local LastWalk* t_last_walk __attribute__((tls_model("initial-exec"))) = nullptr;

std::atomic<int> g_live_last_walks{0};

void release_last_walk(void* memory) {
  t_last_walk = kGone;
  munmap(memory, sizeof(LastWalk));
  g_live_last_walks.fetch_sub(1, std::memory_order_relaxed);
}

using LastWalkKey = ThreadExitKey<&release_last_walk>;
__attribute__((destructor)) void forget_last_walk_key() {
  LastWalkKey::forget();
}

LastWalk* last_walk() {
  LastWalk* memo = t_last_walk;
  if (memo != nullptr) return memo == kGone ? nullptr : memo;
  t_last_walk = kGone;
  void* memory =
      mmap(nullptr, sizeof(LastWalk), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (memory == MAP_FAILED) return nullptr;
  if (!LastWalkKey::set(memory)) {
    munmap(memory, sizeof(LastWalk));
    return nullptr;
  }
  g_live_last_walks.fetch_add(1, std::memory_order_relaxed);
  t_last_walk = static_cast<LastWalk*>(memory);  // mapped zeroed: count 0, not busy
  return t_last_walk;
}

// Walk ids are given to threads in blocks, so that each is unique in the process without an
// atomic operation per walk; block 0 is never given, so no id is 0.
constexpr uint64_t kWalkIdBlock = uint64_t(1) << 20;
std::atomic<uint64_t> g_next_walk_id_block{1};

uint64_t new_walk_id(LastWalk* memo) {
  if (memo->next_id == memo->id_limit) {
    memo->next_id = g_next_walk_id_block.fetch_add(1, std::memory_order_relaxed) * kWalkIdBlock;
    memo->id_limit = memo->next_id + kWalkIdBlock;
  }
  return memo->next_id++;
}

// Holds the thread's LastWalk for one walk, or nothing where it is missing or in use.
class LastWalkHold {
 public:
  explicit LastWalkHold(int max) {
    if (max > kMaxRemembered) return;
    LastWalk* memo = last_walk();
    if (memo == nullptr || memo->busy) return;
    memo->busy = true;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    memo_ = memo;
  }
  ~LastWalkHold() {
    if (memo_ == nullptr) return;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    memo_->busy = false;
  }
  LastWalk* get() const { return memo_; }

 private:
  LastWalk* memo_ = nullptr;
};

uintptr_t load(uintptr_t address) {
  return *reinterpret_cast<const uintptr_t*>(address);
}

// The dependence on %rbp, the lowest load and the loads a match compares of frames[from, to),
// from the frames outside them.
void link_outwards(LastWalk* memo, int from, int to) {
  for (int position = from; position < to; ++position) {
    StepRecord& step = memo->frames[position];
    const StepRecord* caller = position > 0 ? &memo->frames[position - 1] : nullptr;
    const bool caller_depends = caller != nullptr && (caller->flags & kDependsOnBp);
    if ((step.flags & kUsesBp) || ((step.flags & kPassesBp) && caller_depends))
      step.flags |= kDependsOnBp;
    else
      step.flags &= uint8_t(~kDependsOnBp);
    uintptr_t lowest = caller != nullptr ? caller->lowest_load : UINTPTR_MAX;
    const bool loads = step.flags & kLoads;
    if (loads) {
      if (step.cfa - 8 < lowest) lowest = step.cfa - 8;
      if (step.bp_slot != 0 && step.bp_slot < lowest) lowest = step.bp_slot;
    }
    step.lowest_load = lowest;
    memo->pc[position] = step.pc;
    memo->load_at[position] = loads ? step.cfa - 8 : 0;
    memo->loaded[position] = step.return_address;
    // A saved %rbp that the rest of the walk did not use is not compared: code built without
    // frame pointers keeps anything in %rbp, and its saved value changes from call to call.
    const bool bp_compared = loads && step.bp_slot != 0 && caller_depends;
    memo->bp_load_at[position] = bp_compared ? step.bp_slot : 0;
    memo->bp_loaded[position] = step.bp_value;
  }
}

// Whether the loads of the last walk's step at `position` no longer read what they read.
bool step_changed(const LastWalk& memo, int position) {
  const uintptr_t at = memo.load_at[position];
  if (at == 0) return false;
  if (load(at) != memo.loaded[position]) return true;
  const uintptr_t bp_at = memo.bp_load_at[position];
  return bp_at != 0 && load(bp_at) != memo.bp_loaded[position];
}

// A frame of the last walk, from `first` (innermost first numbering) outwards, whose loads no
// longer read what they read; -1 when none. Stacks that differ mostly differ in their innermost
// frames, so the first few are looked at first; the rest outermost first (the faster order,
// measured), giving the outermost change, past which a later match can succeed. Frames at or
// inside the one returned cannot match later: a walk checks each frame twice at most.
int changed_frame(const LastWalk& memo, int first) {
  constexpr int kInnermostFirst = 4;
  const int quick_end = std::min(memo.count, first + kInnermostFirst);
  for (int c = first; c < quick_end; ++c)
    if (step_changed(memo, memo.count - 1 - c)) return c;
  for (int position = 0; position < memo.count - quick_end; ++position)
    if (step_changed(memo, position)) return memo.count - 1 - position;
  return -1;
}

// The registers of the frame the walk is at.
struct FrameState {
  uintptr_t sp, bp;
  bool bp_known;
};

// Looks in the last walk for the frame the walk is at (frame `f`, whose address is ips[f]); when
// found and unchanged from there on, completes ips and the last walk with it.
class LastWalkMatch {
 public:
  LastWalkMatch(LastWalk* memo, uintptr_t floor) : memo_(memo), floor_(floor) {
    usable_ =
        memo != nullptr && memo->count > 0 && memo->rules_generation == frame_rules_generation();
  }

  bool try_complete(int f, const FrameState& at, uintptr_t* ips, int max, WalkedStack* walked) {
    if (!usable_) return false;
    const int count = memo_->count;
    auto cached = [&](int c) -> const StepRecord& { return memo_->frames[count - 1 - c]; };
    while (cursor_ < count && cached(cursor_).sp < at.sp) ++cursor_;
    if (cursor_ == count) {
      usable_ = false;  // the walk is past the last one's outermost frame
      return false;
    }
    const StepRecord& same = cached(cursor_);
    if (cursor_ <= changed_through_ || same.sp != at.sp || same.pc != ips[f] ||
        (cursor_ == 0) != (f == 0))  // the first frame's rule is its pc's, the others' pc-1's
      return false;
    if ((same.flags & kDependsOnBp) &&
        (!at.bp_known || !(same.flags & kBpKnown) || same.bp != at.bp))
      return false;
    const int total = f + (count - cursor_);
    // A last walk that was cut short gives only as many frames as it was cut at.
    if (total > max || (!memo_->reached_end && total != max)) return false;
    // Its loads were checked against its own floor; this walk's may be higher.
    if (same.lowest_load < floor_) return false;
    const int changed = changed_frame(*memo_, cursor_);
    if (changed >= 0) {
      changed_through_ = changed;  // no frame at or inside it can match now
      return false;
    }
    for (int g = f + 1; g < total; ++g) ips[g] = memo_->pc[total - 1 - g];
    // This walk's own frames take the places of the last walk's inner frames.
    for (int g = 0; g < f; ++g) memo_->frames[total - 1 - g] = memo_->scratch[g];
    link_outwards(memo_, count - cursor_, total);
    // The last walk whole, from its first frame: the same frames, under the same id.
    if (f != 0 || total != count) memo_->id = new_walk_id(memo_);
    memo_->count = total;
    walked->count = total;
    walked->reached_end = memo_->reached_end;
    walked->frames_stepped = f;
    walked->walk_id = memo_->id;
    return true;
  }

 private:
  LastWalk* memo_;
  uintptr_t floor_;
  bool usable_ = false;
  int cursor_ = 0;
  int changed_through_ = -1;
};

// Remembers a walk that went to its end without the last one's help; returns its id.
uint64_t remember_walk(LastWalk* memo, int count, bool reached_end, uint64_t generation) {
  if (memo == nullptr) return 0;
  for (int g = 0; g < count; ++g) memo->frames[count - 1 - g] = memo->scratch[g];
  link_outwards(memo, 0, count);
  memo->count = count;
  memo->reached_end = reached_end;
  memo->rules_generation = generation;
  memo->id = new_walk_id(memo);
  return memo->id;
}

}  // namespace

int live_last_walks_for_testing() {
  return g_live_last_walks.load(std::memory_order_relaxed);
}

__attribute__((noinline)) bool walk_stack_by_frame_rules(uintptr_t* ips, int max,
                                                         WalkedStack* walked) {
  uintptr_t pc, sp, bp;
  // The three registers at one instruction: the frame rule of `pc` is the rule for this `sp`.
  asm volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
               : "=r"(pc), "=r"(sp), "=r"(bp));
  if (max <= 0) return false;
  const ThreadStack& stack = thread_stack();
  if (sp < stack.low || sp >= stack.top) return false;
  // Loads stay in [floor, top): above where this walk's frame is, inside the thread's stack.
  const uintptr_t floor = sp, top = stack.top;
  const uint64_t generation = frame_rules_generation();
  LastWalkHold hold(max);
  LastWalk* memo = hold.get();
  LastWalkMatch match(memo, floor);

  bool bp_known = true;
  uintptr_t lookup_pc = pc;  // the frame's own instruction; for callers, the call's
  int count = 0;
  ips[count++] = pc;
  for (;;) {
    const int f = count - 1;
    if (match.try_complete(f, {sp, bp, bp_known}, ips, max, walked)) return true;
    StepRecord step{ips[f], sp, bp, 0, 0, 0, 0, 0, uint8_t(bp_known ? kBpKnown : 0)};
    auto finish = [&](bool reached_end) {
      if (memo != nullptr) memo->scratch[f] = step;
      walked->walk_id = remember_walk(memo, count, reached_end, generation);
      walked->count = count;
      walked->reached_end = reached_end;
      walked->frames_stepped = count;
      return true;
    };

    const FrameRule rule = cached_frame_rule(lookup_pc);
    uintptr_t cfa;
    switch (rule.kind) {
      case FrameRule::Kind::kOutermost:
        return finish(true);
      case FrameRule::Kind::kCfaFromRsp:
        cfa = sp + uintptr_t(intptr_t(rule.cfa_offset));
        break;
      case FrameRule::Kind::kCfaFromRbp:
        if (!bp_known) return false;
        cfa = bp + uintptr_t(intptr_t(rule.cfa_offset));
        step.flags |= kUsesBp;
        break;
      default:
        return false;
    }
    // The caller's frame is above this one; its return address slot inside the stack.
    if (cfa <= sp || cfa > top || cfa - 8 < floor) return false;
    const uintptr_t return_address = load(cfa - 8);
    step.flags |= kLoads;
    step.cfa = cfa;
    step.return_address = return_address;
    switch (rule.rbp) {
      case FrameRule::SavedRbp::kUnchanged:
        step.flags |= kPassesBp;
        break;
      case FrameRule::SavedRbp::kAtOffset: {
        const uintptr_t slot = cfa + uintptr_t(intptr_t(rule.rbp_offset));
        if (slot < floor || slot > top - 8) return false;
        bp = load(slot);
        bp_known = true;
        step.bp_slot = slot;
        step.bp_value = bp;
        break;
      }
      case FrameRule::SavedRbp::kUnknown:
        bp_known = false;
        break;
    }
    sp = cfa;
    if (return_address == 0) return finish(true);
    if (count == max) return finish(false);
    if (memo != nullptr) memo->scratch[f] = step;
    ips[count++] = return_address;
    lookup_pc = return_address - 1;
  }
}

}  // namespace vramtrace::preload
