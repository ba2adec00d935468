// The shape every hook shares, runtime and driver alike: forward to the real function and
// return its result unchanged; record around it only when this is the outermost hook on the
// thread and recording is on. Allocations are recorded after the real call returns, frees
// before it (so that the address cannot be handed out again before the collector has seen it
// freed), with a FreeFailed record when the real free then fails.
#pragma once

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
inline void record_alloc_outcome(AllocEvent e, int32_t (*current_device)()) {
  if (e.result == 0 && e.address == 0) return;
  if (e.device == kAskDevice) e.device = (e.result == 0 || e.result == 2) ? current_device() : -1;
  record_alloc(e);
}

template <class Result, class Real, class Record, class... Args>
Result traced_alloc(Real real, const char* name, Result missing, Record&& record, Args... args) {
  if (real == nullptr) return static_cast<Result>(report_missing_function(name, missing));
  ReentryGuard guard;
  if (!guard.outermost() || !is_recording()) return real(args...);
  prepare_to_record();
  const Result result = real(args...);
  record(result);
  return result;
}

// `call()` runs the real free. `e.address` 0 frees nothing and is not recorded.
template <class Result, class Call>
Result traced_free(FreeEvent e, Call&& call) {
  ReentryGuard guard;
  if (!guard.outermost() || !is_recording() || e.address == 0) return call();
  prepare_to_record();
  const uint64_t seq = record_free(e);
  const Result result = call();
  if (result != 0 && seq != 0) record_free_failed(seq, static_cast<int32_t>(result));
  return result;
}

}  // namespace vramtrace::preload
