// Loads the CUDA driver as a static cudart does (dlopen, dlsym of cuGetProcAddress_v2,
// every function through it), allocates, unloads it with dlclose, fences off the address
// range it occupied so that the next load must land elsewhere, loads it again and allocates
// again. A profiler that kept pointers into the first copy would crash here.
// Arguments: the driver library's path; or the path of a library linked to the CUDA runtime
// (programs/runtime_user.cpp) and "runtime": that library is dlopen'ed RTLD_LOCAL, as Python
// extensions are, its cudaMalloc calls reach the shim by interposition, and the shim finds
// the real ones in the runtime it brought; dlclose unloads both, and the runtime is fenced
// off. Announces each allocation and free (announce.h).
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <link.h>
#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#include "announce.h"

namespace {

struct Driver {
  static constexpr const char* kFenced = nullptr;  // the driver itself
  void* handle = nullptr;
  PFN_cuMemAlloc_v3020 alloc_fn = nullptr;
  PFN_cuMemFree_v3020 free_fn = nullptr;

  bool alloc(uintptr_t* out, size_t size) const {
    CUdeviceptr p = 0;
    const bool ok = alloc_fn(&p, size) == CUDA_SUCCESS;
    *out = static_cast<uintptr_t>(p);
    return ok;
  }
  bool free(uintptr_t p) const { return free_fn(static_cast<CUdeviceptr>(p)) == CUDA_SUCCESS; }
};

// A library that calls the runtime (runtime_user.cpp), with the runtime it depends on.
struct RuntimeUser {
  static constexpr const char* kFenced = "/libcudart.so";  // the object fenced off after
  void* handle = nullptr;
  cudaError_t (*alloc_fn)(void**, size_t) = nullptr;
  cudaError_t (*free_fn)(void*) = nullptr;

  bool alloc(uintptr_t* out, size_t size) const {
    void* p = nullptr;
    const bool ok = alloc_fn(&p, size) == cudaSuccess;
    *out = reinterpret_cast<uintptr_t>(p);
    return ok;
  }
  bool free(uintptr_t p) const { return free_fn(reinterpret_cast<void*>(p)) == cudaSuccess; }
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
      !resolve(get, "cuCtxSetCurrent", &set_current) || !resolve(get, "cuMemAlloc", &d->alloc_fn) ||
      !resolve(get, "cuMemFree", &d->free_fn))
    return false;
  CUcontext context = nullptr;
  return init(0) == CUDA_SUCCESS && retain(&context, 0) == CUDA_SUCCESS &&
         set_current(context) == CUDA_SUCCESS;
}

bool load(const char* path, RuntimeUser* r) {
  r->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (r->handle == nullptr) return false;
  r->alloc_fn =
      reinterpret_cast<cudaError_t (*)(void**, size_t)>(dlsym(r->handle, "user_cuda_malloc"));
  r->free_fn = reinterpret_cast<cudaError_t (*)(void*)>(dlsym(r->handle, "user_cuda_free"));
  return r->alloc_fn != nullptr && r->free_fn != nullptr;
}

template <class Library>
bool allocate_twice_free_once(const Library& library, size_t size) {
  uintptr_t kept = 0, freed = 0;
  if (!library.alloc(&kept, size) || !library.alloc(&freed, size / 2)) return false;
  announce_alloc(reinterpret_cast<void*>(kept), size);
  announce_alloc(reinterpret_cast<void*>(freed), size / 2);
  if (!library.free(freed)) return false;
  announce_free(reinterpret_cast<void*>(freed));
  return true;
}

// The lowest and highest addresses of the loaded object whose path contains `name`.
struct Range {
  const char* name;
  uintptr_t low = UINTPTR_MAX, high = 0;
};

Range object_range(const char* name) {
  Range r{name};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* r = static_cast<Range*>(data);
        if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, r->name) == nullptr)
          return 0;
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

template <class Library>
int load_use_unload_and_load_elsewhere(const char* path) {
  Library first;
  if (!load(path, &first) || !allocate_twice_free_once(first, 1 << 20)) return 1;
  const char* fenced = Library::kFenced != nullptr ? Library::kFenced : path;
  const Range range = object_range(fenced);
  if (range.high == 0) return 3;
  dlclose(first.handle);
  if (object_range(fenced).high != 0) return 4;  // still loaded: the test would prove nothing
  // Nothing may be mapped where the first copy was: calling into it now faults.
  const uintptr_t page = 4096;
  const uintptr_t low = range.low & ~(page - 1);
  const size_t bytes = ((range.high + page - 1) & ~(page - 1)) - low;
  if (mmap(reinterpret_cast<void*>(low), bytes, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
    return 5;
  Library second;
  if (!load(path, &second) || !allocate_twice_free_once(second, 2 << 20)) return 1;
  std::printf("reloaded elsewhere\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (argc > 2 && std::strcmp(argv[2], "runtime") == 0)
    return load_use_unload_and_load_elsewhere<RuntimeUser>(argv[1]);
  return load_use_unload_and_load_elsewhere<Driver>(argv[1]);
}
