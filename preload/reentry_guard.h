// A thread-local flag that keeps the shim from recording its own work: a CUDA call made while
// the shim is already inside a hook on this thread (by the runtime itself, by cudaGetDevice
// that the shim asks, or by a signal handler that interrupts a hook) passes straight through.
#pragma once

namespace vramtrace::preload {

// initial-exec: the shim is loaded at start-up by LD_PRELOAD, so its TLS lives in the static
// block and an access is one instruction, with no call into the loader.
extern thread_local constinit bool t_inside_shim __attribute__((tls_model("initial-exec")));

class ReentryGuard {
 public:
  ReentryGuard() : outermost_(!t_inside_shim) { t_inside_shim = true; }
  ~ReentryGuard() {
    if (outermost_) t_inside_shim = false;
  }
  ReentryGuard(const ReentryGuard&) = delete;
  ReentryGuard& operator=(const ReentryGuard&) = delete;

  // False when this thread was already inside the shim: the call must not be recorded.
  bool outermost() const { return outermost_; }

 private:
  bool outermost_;
};

}  // namespace vramtrace::preload
