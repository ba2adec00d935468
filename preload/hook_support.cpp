#include "hook_support.h"

#include <atomic>

#include "shim_log.h"

namespace vramtrace::preload {

constinit thread_local OuterHookCall t_outer_hook_call
    __attribute__((tls_model("initial-exec"))) = {false, 0};

int report_missing_function(const char* name, int error) {
  static std::atomic<bool> said{false};
  if (!said.exchange(true))
    shim_log(name, " called, but the library that defines it is not loaded");
  return error;
}

}  // namespace vramtrace::preload
