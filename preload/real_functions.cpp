#include "real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <algorithm>
#include <cstring>

namespace vramtrace::preload {
namespace {

using DlsymFn = void* (*)(void*, const char*);

DlsymFn glibc_dlsym() {
  static std::atomic<DlsymFn> cached{nullptr};
  DlsymFn fn = cached.load(std::memory_order_acquire);
  if (fn == nullptr) {
    // dlvsym is not interposed. GLIBC_2.34 is the current dlsym, GLIBC_2.2.5 the one before
    // libdl moved into libc; both are the same function.
    fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34"));
    if (fn == nullptr) fn = reinterpret_cast<DlsymFn>(dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"));
    cached.store(fn, std::memory_order_release);
  }
  return fn;
}

// A handle to a loaded object whose file name starts with `library`, without loading one:
// the shim never changes what the program has loaded.
void* loaded_library(const char* library) {
  struct Search {
    const char* prefix;
    char path[4096];
    bool found;
  } search{library, {}, false};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* s = static_cast<Search*>(data);
        const char* name = info->dlpi_name;
        if (name == nullptr) return 0;
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, s->prefix, std::strlen(s->prefix)) != 0) return 0;
        std::strncpy(s->path, name, sizeof s->path - 1);
        s->found = true;
        return 1;
      },
      &search);
  if (!search.found) return nullptr;
  return dlopen(search.path, RTLD_LAZY | RTLD_NOLOAD);
}

// Every slot real_function() or a wrapper ever filled; a few dozen in all.
constexpr int kMaxSlots = 512;
std::atomic<std::atomic<void*>*> g_slots[kMaxSlots];
std::atomic<int> g_slot_count{0};

}  // namespace

void remember_real_function(std::atomic<void*>& slot) {
  const int known = std::min(g_slot_count.load(std::memory_order_acquire), kMaxSlots);
  for (int i = 0; i < known; ++i)
    if (g_slots[i].load(std::memory_order_acquire) == &slot) return;
  const int i = g_slot_count.fetch_add(1, std::memory_order_acq_rel);
  if (i < kMaxSlots) g_slots[i].store(&slot, std::memory_order_release);
}

void forget_real_functions() {
  const int known = std::min(g_slot_count.load(std::memory_order_acquire), kMaxSlots);
  for (int i = 0; i < known; ++i)
    if (std::atomic<void*>* slot = g_slots[i].load(std::memory_order_acquire))
      slot->store(nullptr, std::memory_order_release);
}

void* real_dlsym(void* handle, const char* name) {
  DlsymFn fn = glibc_dlsym();
  return fn ? fn(handle, name) : nullptr;
}

void* find_real_function(const char* name, const char* library) {
  if (void* fn = real_dlsym(RTLD_NEXT, name)) return fn;
  if (void* handle = loaded_library(library)) {
    void* fn = real_dlsym(handle, name);
    dlclose(handle);  // balances RTLD_NOLOAD's reference; the library stays loaded
    return fn;
  }
  return nullptr;
}

}  // namespace vramtrace::preload
