// Finds the real implementation of a function the shim interposes.
#pragma once

#include <atomic>

namespace vramtrace::preload {

// glibc's dlsym, never the shim's own (the shim interposes dlsym: see proc_address.cpp).
// Called from the shim, so RTLD_NEXT means "after the shim".
void* real_dlsym(void* handle, const char* name);

// The next definition of `name` after the shim in the lookup order. When the library was
// loaded with dlopen(RTLD_LOCAL), as frameworks do with libcudart and as a static cudart does
// with libcuda, RTLD_NEXT cannot see it; then the loaded object whose file name starts with
// `library` ("libcudart.so", "libcuda.so") is asked. Null when nothing defines it.
void* find_real_function(const char* name, const char* library);

// Remembers `slot` as holding a pointer into a loaded library, for forget_real_functions().
void remember_real_function(std::atomic<void*>& slot);

// The program unloaded a library (dlclose_hook.cpp): any remembered pointer may point into
// it, and a copy loaded again lands elsewhere. Clears them all; each is resolved again on its
// next use.
void forget_real_functions();

// Resolves once and caches in `slot` until a library is unloaded; safe to race (every racer
// stores the same pointer).
template <class Fn>
Fn real_function(std::atomic<void*>& slot, const char* name, const char* library) {
  void* fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = find_real_function(name, library);
    slot.store(fn, std::memory_order_release);
    if (fn != nullptr) remember_real_function(slot);
  }
  return reinterpret_cast<Fn>(fn);
}

}  // namespace vramtrace::preload
