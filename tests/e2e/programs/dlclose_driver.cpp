// Loads the CUDA driver as a static cudart does (dlopen, dlsym of cuGetProcAddress_v2,
// every function through it), allocates, unloads it with dlclose, fences off the address
// range it occupied so that the next load must land elsewhere, loads it again and allocates
// again. A profiler that kept pointers into the first copy would crash here.
// Argument: the driver library's path. Announces each allocation and free (announce.h).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "announce.h"

namespace {

struct Driver {
  void* handle = nullptr;
  PFN_cuMemAlloc_v3020 alloc = nullptr;
  PFN_cuMemFree_v3020 free = nullptr;
};

template <class Function>
bool resolve(PFN_cuGetProcAddress_v12000 get, const char* name, Function* out) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status{};
  if (get(name, &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS) return false;
  *out = reinterpret_cast<Function>(fn);
  return fn != nullptr;
}

bool load(const char* path, Driver* d) {
  d->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (d->handle == nullptr) return false;
  auto get = reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(d->handle, "cuGetProcAddress_v2"));
  PFN_cuInit_v2000 init = nullptr;
  PFN_cuDevicePrimaryCtxRetain_v7000 retain = nullptr;
  PFN_cuCtxSetCurrent_v4000 set_current = nullptr;
  if (get == nullptr || !resolve(get, "cuInit", &init) ||
      !resolve(get, "cuDevicePrimaryCtxRetain", &retain) ||
      !resolve(get, "cuCtxSetCurrent", &set_current) || !resolve(get, "cuMemAlloc", &d->alloc) ||
      !resolve(get, "cuMemFree", &d->free))
    return false;
  CUcontext context = nullptr;
  return init(0) == CUDA_SUCCESS && retain(&context, 0) == CUDA_SUCCESS &&
         set_current(context) == CUDA_SUCCESS;
}

bool allocate_twice_free_once(const Driver& d, size_t size) {
  CUdeviceptr kept = 0, freed = 0;
  if (d.alloc(&kept, size) != CUDA_SUCCESS || d.alloc(&freed, size / 2) != CUDA_SUCCESS)
    return false;
  announce_alloc(reinterpret_cast<void*>(kept), size);
  announce_alloc(reinterpret_cast<void*>(freed), size / 2);
  if (d.free(freed) != CUDA_SUCCESS) return false;
  announce_free(reinterpret_cast<void*>(freed));
  return true;
}

// The lowest and highest addresses of the loaded object whose path is `path`.
struct Range {
  const char* path;
  uintptr_t low = UINTPTR_MAX, high = 0;
};

Range object_range(const char* path) {
  Range r{path};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* r = static_cast<Range*>(data);
        if (info->dlpi_name == nullptr || std::strcmp(info->dlpi_name, r->path) != 0) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
          const uintptr_t start = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr;
          const uintptr_t end = start + info->dlpi_phdr[i].p_memsz;
          if (start < r->low) r->low = start;
          if (end > r->high) r->high = end;
        }
        return 1;
      },
      &r);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  Driver first;
  if (!load(argv[1], &first) || !allocate_twice_free_once(first, 1 << 20)) return 1;
  const Range range = object_range(argv[1]);
  if (range.high == 0) return 3;
  dlclose(first.handle);
  if (object_range(argv[1]).high != 0) return 4;  // still loaded: the test would prove nothing
  // Nothing may be mapped where the first copy was: calling into it now faults.
  const uintptr_t page = 4096;
  const uintptr_t low = range.low & ~(page - 1);
  const size_t bytes = ((range.high + page - 1) & ~(page - 1)) - low;
  if (mmap(reinterpret_cast<void*>(low), bytes, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
    return 5;
  Driver second;
  if (!load(argv[1], &second) || !allocate_twice_free_once(second, 2 << 20)) return 1;
  std::printf("reloaded elsewhere\n");
  return 0;
}
