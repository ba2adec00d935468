// Finds the real implementation of a function the shim interposes.
#pragma once

#include <atomic>

namespace vramtrace::preload {

// The next definition of `name` after the shim in the lookup order. When the CUDA runtime
// was loaded with dlopen(RTLD_LOCAL), as frameworks do, RTLD_NEXT cannot see it; then the
// loaded libcudart is found by name among the loaded objects. Null when nothing defines it.
void* find_real_function(const char* name);

// Resolves once and caches in `slot`; safe to race (every racer stores the same pointer).
template <class Fn>
Fn real_function(std::atomic<void*>& slot, const char* name) {
  void* fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = find_real_function(name);
    slot.store(fn, std::memory_order_release);
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace vramtrace::preload
