// The shape every hook shares, runtime and driver alike: forward to the real function and
// return its result unchanged; record around it only when this is the outermost hook on the
// thread and recording is on. Allocations are recorded after the real call returns, frees
// before it (so that the address cannot be handed out again before the collector has seen it
// freed), with a FreeFailed record when the real free then fails.
//
// A call that reaches a hook while the thread is already inside one (the library passing the
// call on, cudaFree → cuMemFree_v2; or a signal handler that interrupted the hook) is not the
// outermost and records nothing of its own, except:
// - a free of another address than the one the outer hook is freeing: recorded at once, before
//   the real free, marked nested (recorder.h), when the thread is not inside write_record; when
//   it is (the ring's lock may be held beneath the handler), deferred (deferred_frees.h) and
//   written as soon as that write ends, before the thread returns to anything else;
// - an allocation while the outer hook is not in its real call: only a signal handler can make
//   it there (the shim's own code allocates nothing through a hook), and it is counted as not
//   recorded. One during the real call cannot be told from the library's own and passes through.
#pragma once

#include <atomic>
#include <cstdint>

#include "recorder.h"
#include "reentry_guard.h"

namespace vramtrace::preload {

// The shim hooks a function whose library is not loaded: only a program that found the hook
// by dlsym without loading the library can get here. Says so once; returns `error`.
int report_missing_function(const char* name, int error);

// Marks AllocEvent::device "ask the library for the current device".
inline constexpr int32_t kAskDevice = INT32_MIN;

// Records an allocation call's outcome. A success that hands out nothing (size 0) is not an
// allocation. The current device is asked only after a success or an out-of-memory error:
// after other failures, asking could set the thread's sticky error, which the program may
// read next (both APIs use 2 for out of memory).
inline void record_alloc_outcome(AllocEvent& e, int32_t (*current_device)()) {
  if (e.result == 0 && e.address == 0) return;
  if (e.device == kAskDevice) e.device = (e.result == 0 || e.result == 2) ? current_device() : -1;
  record_alloc(e);
}

// What the outermost hook on this thread is doing: in its real call, and the address it frees
// there (0: none). Read by hooks nested in it.
struct OuterHookCall {
  bool in_real_call;
  uint64_t freeing;
};
extern thread_local constinit OuterHookCall t_outer_hook_call
    __attribute__((tls_model("initial-exec")));

// Runs a hook's real call, marked as such for the hooks nested in it: the outermost hook's, and
// a signal handler's nested one's (whose library passes its call on too: cudaFree in a handler
// reaches cuMemFree_v2 with the same address).
template <class Real>
auto in_real_call(uint64_t freeing, Real&& real) {
  const OuterHookCall outer = t_outer_hook_call;
  t_outer_hook_call = {true, freeing};
  std::atomic_signal_fence(std::memory_order_seq_cst);
  auto result = real();
  std::atomic_signal_fence(std::memory_order_seq_cst);
  t_outer_hook_call = outer;
  return result;
}

// Keeps a free made in a signal handler while its thread was inside write_record, to be written
// when that write ends (deferred_frees.cpp); counts it as not recorded when there is no room.
void defer_free(const FreeEvent& e);

template <class Result, class Call>
Result nested_free(const FreeEvent& e, Call& call) {
  if (e.address == 0 || !is_recording()) return call();
  // The outer hook's own free, passed on by the library (cudaFree → cuMemFree_v2).
  if (t_outer_hook_call.in_real_call && e.address == t_outer_hook_call.freeing) return call();
  if (!inside_ring_write()) {
    const uint64_t seq = record_nested_free(e);
    const Result result = in_real_call(e.address, [&] { return call(); });
    if (result != 0 && seq != 0) record_nested_free_failed(seq, static_cast<int32_t>(result));
    return result;
  }
  const Result result = in_real_call(e.address, [&] { return call(); });
  if (result == 0) defer_free(e);
  return result;
}

template <class Result, class Real, class Record, class... Args>
Result traced_alloc(Real real, const char* name, Result missing, Record&& record, Args... args) {
  if (real == nullptr) return static_cast<Result>(report_missing_function(name, missing));
  ReentryGuard guard;
  if (!guard.outermost()) {
    if (t_outer_hook_call.in_real_call || !is_recording()) return real(args...);
    count_unrecorded_call();
    return in_real_call(0, [&] { return real(args...); });
  }
  if (!is_recording()) return real(args...);
  prepare_to_record();
  const Result result = in_real_call(0, [&] { return real(args...); });
  record(result);
  return result;
}

// `call()` runs the real free. `e.address` 0 frees nothing and is not recorded.
template <class Result, class Call>
Result traced_free(FreeEvent& e, Call&& call) {
  ReentryGuard guard;
  if (!guard.outermost()) return nested_free<Result>(e, call);
  if (!is_recording() || e.address == 0) return call();
  prepare_to_record();
  const uint64_t seq = record_free(e);
  const Result result = in_real_call(e.address, [&] { return call(); });
  if (result != 0 && seq != 0) record_free_failed(seq, static_cast<int32_t>(result));
  return result;
}

}  // namespace vramtrace::preload
