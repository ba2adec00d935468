#include "real_functions.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>

namespace vramtrace::preload {
namespace {

// Returns a handle to a loaded libcudart, without loading one: the shim never changes what
// the program has loaded.
void* loaded_cudart() {
  struct Found {
    char path[4096];
    bool found;
  } found{};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* f = static_cast<Found*>(data);
        const char* name = info->dlpi_name;
        if (name == nullptr) return 0;
        const char* base = std::strrchr(name, '/');
        base = base ? base + 1 : name;
        if (std::strncmp(base, "libcudart.so", 12) != 0) return 0;
        std::strncpy(f->path, name, sizeof f->path - 1);
        f->found = true;
        return 1;
      },
      &found);
  if (!found.found) return nullptr;
  return dlopen(found.path, RTLD_LAZY | RTLD_NOLOAD);
}

}  // namespace

void* find_real_function(const char* name) {
  if (void* fn = dlsym(RTLD_NEXT, name)) return fn;
  if (void* cudart = loaded_cudart()) {
    void* fn = dlsym(cudart, name);
    dlclose(cudart);  // balances RTLD_NOLOAD's reference; the library stays loaded
    return fn;
  }
  return nullptr;
}

}  // namespace vramtrace::preload
