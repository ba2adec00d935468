// The program unloads a library. The shim keeps pointers to the real functions it forwards to
// (real_functions.h); when the library they point into is unloaded, those pointers dangle,
// and a copy of the library loaded again lands elsewhere: a static cudart or a framework that
// dlcloses libcuda and dlopens it again would crash in the shim's next call
// (tests/e2e/programs/dlclose_driver.cpp). So after a dlclose that really unloaded something,
// the shim forgets every such pointer and resolves each again on its next use. The stack walk's
// frame rules are forgotten too: other code may be loaded where the unloaded code was.
//
// dlclose, unlike dlsym, does not depend on its caller, so an ordinary hook is enough.
#include <atomic>

#include "frame_rule_cache.h"
#include "module_map.h"
#include "real_functions.h"

namespace {
std::atomic<void*> g_real_dlclose{nullptr};
}  // namespace

extern "C" __attribute__((visibility("default"))) int dlclose(void* handle) {
  using namespace vramtrace::preload;
  auto real = real_function<int (*)(void*)>(g_real_dlclose, "dlclose", "libc.so");
  if (real == nullptr) return -1;
  const uint64_t unloads_before = loader_unload_count();
  const int result = real(handle);
  const uint64_t unloads = loader_unload_count();
  if (unloads != unloads_before) {
    forget_real_functions();
    forget_frame_rules_after_unloads(unloads);
  }
  return result;
}
