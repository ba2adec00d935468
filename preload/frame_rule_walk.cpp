#include "frame_rule_walk.h"

#include <pthread.h>

#include "frame_rule_cache.h"

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

}  // namespace

__attribute__((noinline)) bool walk_stack_by_frame_rules(uintptr_t* ips, int max,
                                                         WalkedStack* walked) {
  uintptr_t pc, sp, bp;
  // The three registers at one instruction: the frame rule of `pc` is the rule for this `sp`.
  asm volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2"
               : "=r"(pc), "=r"(sp), "=r"(bp));
  const ThreadStack& stack = thread_stack();
  if (sp < stack.low || sp >= stack.top) return false;
  // Loads stay in [floor, top): above where this walk's frame is, inside the thread's stack.
  const uintptr_t floor = sp, top = stack.top;
  bool bp_known = true;
  uintptr_t lookup_pc = pc;  // the frame's own instruction; for callers, the call's
  int count = 0;
  if (max <= 0) return false;
  ips[count++] = pc;
  for (;;) {
    const FrameRule rule = cached_frame_rule(lookup_pc);
    uintptr_t cfa;
    switch (rule.kind) {
      case FrameRule::Kind::kOutermost:
        walked->count = count;
        walked->reached_end = true;
        return true;
      case FrameRule::Kind::kCfaFromRsp:
        cfa = sp + uintptr_t(intptr_t(rule.cfa_offset));
        break;
      case FrameRule::Kind::kCfaFromRbp:
        if (!bp_known) return false;
        cfa = bp + uintptr_t(intptr_t(rule.cfa_offset));
        break;
      default:
        return false;
    }
    // The caller's frame is above this one; its return address slot inside the stack.
    if (cfa <= sp || cfa > top || cfa - 8 < floor) return false;
    const uintptr_t return_address = *reinterpret_cast<const uintptr_t*>(cfa - 8);
    switch (rule.rbp) {
      case FrameRule::SavedRbp::kUnchanged:
        break;
      case FrameRule::SavedRbp::kAtOffset: {
        const uintptr_t slot = cfa + uintptr_t(intptr_t(rule.rbp_offset));
        if (slot < floor || slot > top - 8) return false;
        bp = *reinterpret_cast<const uintptr_t*>(slot);
        bp_known = true;
        break;
      }
      case FrameRule::SavedRbp::kUnknown:
        bp_known = false;
        break;
    }
    sp = cfa;
    if (return_address == 0) {
      walked->count = count;
      walked->reached_end = true;
      return true;
    }
    if (count == max) {
      walked->count = count;
      walked->reached_end = false;
      return true;
    }
    ips[count++] = return_address;
    lookup_pc = return_address - 1;
  }
}

}  // namespace vramtrace::preload
