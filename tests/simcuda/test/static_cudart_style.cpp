// simcuda_static_style: reaches the CUDA driver exactly as a statically linked libcudart (nvcc's
// default) and PyTorch's driver API table do. The program links no CUDA library: it dlopens
// libcuda.so.1 (found through its RUNPATH, the simulated driver's directory, unless
// LD_LIBRARY_PATH names another one first), looks up cuGetProcAddress_v2 with dlsym, and gets
// every other function from it by API name for CUDA 13.0. So a profiler sees these calls only
// by interposing dlsym or cuGetProcAddress, never by defining cuMemAlloc_v2.
//
// It then allocates and frees device memory, stream-ordered memory and virtual memory, the
// latter as PyTorch's expandable segments do: one large reservation, 2 MiB handles created and
// mapped one after another at increasing offsets, then the last ones unmapped and released. Some
// memory is deliberately left live; those lines carry a comment LIVE(kind, bytes), kind one of
// device, async, vmm_mapping, vmm_handle, vmm_reservation.
//
// Output, one line per driver call, for tests that compare what a profiler recorded with what
// the program did:
//   <API name> <result name> [key=value ...]
// keys: ptr=0x<hex> and handle=0x<hex> (addresses and handles), size=<bytes>, offset=<bytes>,
// stream=0x<hex>, symbol=<API name>, version=<CUDA version>, status=<lookup status>. The API name
// is the one the program asked cuGetProcAddress for: "cuMemAlloc" is the function
// cuMemAlloc_v2. After the calls, one line per allocation left live:
//   live <kind> ptr=0x<hex> size=<bytes>        (device, async, vmm_mapping, vmm_reservation)
//   live vmm_handle handle=0x<hex> size=<bytes>
// Exit status 0 when every call returned CUDA_SUCCESS, 1 otherwise.
//
// The program expects nothing of the simulation: it runs the same on a real GPU.

#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

namespace {

constexpr int kCudaVersion = 13000;
constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kFreedBytes = kMiB;
constexpr std::size_t kKeptBytes = 3 * kMiB + 100;
constexpr std::size_t kFreedAsyncBytes = 256 * 1024;
constexpr std::size_t kKeptAsyncBytes = 512 * 1024;
constexpr std::size_t kSegmentBytes = 64 * kMiB;  // the expandable segment's reservation
constexpr std::size_t kHandleBytes = 2 * kMiB;    // each physical piece of it
constexpr int kGrownHandles = 6;
constexpr int kKeptHandles = 1;
constexpr std::size_t kScratchBytes = 8 * kMiB;  // a reservation used and given back whole

PFN_cuGetProcAddress_v12000 g_get_proc_address = nullptr;
PFN_cuGetErrorName_v6000 g_error_name = nullptr;
bool g_all_succeeded = true;

const char* result_name(CUresult result) {
  const char* name = nullptr;
  if (g_error_name != nullptr && g_error_name(result, &name) == CUDA_SUCCESS) return name;
  static char number[32];
  std::snprintf(number, sizeof number, "CUresult(%d)", static_cast<int>(result));
  return number;
}

const char* status_name(CUdriverProcAddressQueryResult status) {
  switch (status) {
    case CU_GET_PROC_ADDRESS_SUCCESS:
      return "CU_GET_PROC_ADDRESS_SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND:
      return "CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
      return "CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT";
  }
  return "unknown";
}

// Prints "<name> <result><details>" and remembers a failure. Call it after the call it reports,
// never with the call as an argument: the details read what the call wrote.
CUresult report(const char* name, CUresult result, const char* details = "") {
  std::printf("%s %s%s\n", name, result_name(result), details);
  std::fflush(stdout);
  if (result != CUDA_SUCCESS) g_all_succeeded = false;
  return result;
}

// " ptr=0x... size=..." and friends, for report().
class Details {
 public:
  Details& ptr(CUdeviceptr value) { return add(" ptr=0x%llx", value); }
  Details& handle(CUmemGenericAllocationHandle value) { return add(" handle=0x%llx", value); }
  Details& size(std::size_t value) { return add(" size=%zu", value); }
  Details& offset(std::size_t value) { return add(" offset=%zu", value); }
  Details& stream(CUstream value) {
    return add(" stream=0x%llx",
               static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(value)));
  }
  operator const char*() const { return text_; }

 private:
  template <class Value>
  Details& add(const char* format, Value value) {
    const std::size_t used = std::strlen(text_);
    std::snprintf(text_ + used, sizeof text_ - used, format, value);
    return *this;
  }
  char text_[256] = {};
};

// Finds the function behind `api` for CUDA 13.0, as a static libcudart asks for it, and stores
// it in *out before reporting the lookup (so that cuGetErrorName's own line has a result name).
template <class Function>
void resolve(const char* api, Function* out) {
  void* function = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  const CUresult result =
      g_get_proc_address(api, &function, kCudaVersion, CU_GET_PROC_ADDRESS_DEFAULT, &status);
  *out = reinterpret_cast<Function>(function);
  char details[160];
  std::snprintf(details, sizeof details, " symbol=%s version=%d status=%s", api, kCudaVersion,
                status_name(status));
  report("cuGetProcAddress_v2", result, details);
}

struct Driver {
  PFN_cuInit_v2000 cuInit;
  PFN_cuDevicePrimaryCtxRetain_v7000 cuDevicePrimaryCtxRetain;
  PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
  PFN_cuStreamCreate_v2000 cuStreamCreate;
  PFN_cuMemAlloc_v3020 cuMemAlloc;
  PFN_cuMemFree_v3020 cuMemFree;
  PFN_cuMemAllocAsync_v11020 cuMemAllocAsync;
  PFN_cuMemFreeAsync_v11020 cuMemFreeAsync;
  PFN_cuMemGetAllocationGranularity_v10020 cuMemGetAllocationGranularity;
  PFN_cuMemAddressReserve_v10020 cuMemAddressReserve;
  PFN_cuMemCreate_v10020 cuMemCreate;
  PFN_cuMemMap_v10020 cuMemMap;
  PFN_cuMemSetAccess_v10020 cuMemSetAccess;
  PFN_cuMemUnmap_v10020 cuMemUnmap;
  PFN_cuMemRelease_v10020 cuMemRelease;
  PFN_cuMemAddressFree_v10020 cuMemAddressFree;

  bool complete() const {
    return cuInit && cuDevicePrimaryCtxRetain && cuCtxSetCurrent && cuStreamCreate && cuMemAlloc &&
           cuMemFree && cuMemAllocAsync && cuMemFreeAsync && cuMemGetAllocationGranularity &&
           cuMemAddressReserve && cuMemCreate && cuMemMap && cuMemSetAccess && cuMemUnmap &&
           cuMemRelease && cuMemAddressFree;
  }
};

CUmemAllocationProp device_memory() {
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = 0;
  return prop;
}

CUmemAccessDesc read_write() {
  CUmemAccessDesc desc;
  std::memset(&desc, 0, sizeof desc);
  desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  desc.location.id = 0;
  desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return desc;
}

// The calls, each reported. Driver functions are global so that the lines of main() that leave
// memory live are short enough to carry their LIVE comment.
Driver cu{};

CUdeviceptr allocate(std::size_t size) {
  CUdeviceptr ptr = 0;
  const CUresult result = cu.cuMemAlloc(&ptr, size);
  report("cuMemAlloc", result, Details().ptr(ptr).size(size));
  return ptr;
}

void free_memory(CUdeviceptr ptr) {
  report("cuMemFree", cu.cuMemFree(ptr), Details().ptr(ptr));
}

CUdeviceptr allocate_async(std::size_t size, CUstream stream) {
  CUdeviceptr ptr = 0;
  const CUresult result = cu.cuMemAllocAsync(&ptr, size, stream);
  report("cuMemAllocAsync", result, Details().ptr(ptr).size(size).stream(stream));
  return ptr;
}

void free_async(CUdeviceptr ptr, CUstream stream) {
  report("cuMemFreeAsync", cu.cuMemFreeAsync(ptr, stream), Details().ptr(ptr).stream(stream));
}

CUdeviceptr reserve(std::size_t size) {
  CUdeviceptr ptr = 0;
  const CUresult result = cu.cuMemAddressReserve(&ptr, size, 0, 0, 0);
  report("cuMemAddressReserve", result, Details().ptr(ptr).size(size));
  return ptr;
}

void free_reservation(CUdeviceptr ptr, std::size_t size) {
  report("cuMemAddressFree", cu.cuMemAddressFree(ptr, size), Details().ptr(ptr).size(size));
}

// A physical allocation of kHandleBytes on device 0.
CUmemGenericAllocationHandle create() {
  const CUmemAllocationProp prop = device_memory();
  CUmemGenericAllocationHandle handle = 0;
  const CUresult result = cu.cuMemCreate(&handle, kHandleBytes, &prop, 0);
  report("cuMemCreate", result, Details().handle(handle).size(kHandleBytes));
  return handle;
}

void release(CUmemGenericAllocationHandle handle) {
  report("cuMemRelease", cu.cuMemRelease(handle), Details().handle(handle));
}

// Maps all of `handle` at `at` and makes it accessible to device 0.
void map(CUdeviceptr at, CUmemGenericAllocationHandle handle) {
  report("cuMemMap", cu.cuMemMap(at, kHandleBytes, 0, handle, 0),
         Details().ptr(at).size(kHandleBytes).offset(0).handle(handle));
  const CUmemAccessDesc access = read_write();
  report("cuMemSetAccess", cu.cuMemSetAccess(at, kHandleBytes, &access, 1),
         Details().ptr(at).size(kHandleBytes));
}

void unmap(CUdeviceptr at) {
  report("cuMemUnmap", cu.cuMemUnmap(at, kHandleBytes), Details().ptr(at).size(kHandleBytes));
}

}  // namespace

int main() {
  void* const library = dlopen("libcuda.so.1", RTLD_NOW);
  if (library == nullptr) {
    std::printf("dlopen libcuda.so.1 failed: %s\n", dlerror());
    return 1;
  }
  g_get_proc_address =
      reinterpret_cast<PFN_cuGetProcAddress_v12000>(dlsym(library, "cuGetProcAddress_v2"));
  if (g_get_proc_address == nullptr) {
    std::printf("dlsym cuGetProcAddress_v2 failed: %s\n", dlerror());
    return 1;
  }
  resolve("cuGetErrorName", &g_error_name);

  resolve("cuInit", &cu.cuInit);
  resolve("cuDevicePrimaryCtxRetain", &cu.cuDevicePrimaryCtxRetain);
  resolve("cuCtxSetCurrent", &cu.cuCtxSetCurrent);
  resolve("cuStreamCreate", &cu.cuStreamCreate);
  resolve("cuMemAlloc", &cu.cuMemAlloc);
  resolve("cuMemFree", &cu.cuMemFree);
  resolve("cuMemAllocAsync", &cu.cuMemAllocAsync);
  resolve("cuMemFreeAsync", &cu.cuMemFreeAsync);
  resolve("cuMemGetAllocationGranularity", &cu.cuMemGetAllocationGranularity);
  resolve("cuMemAddressReserve", &cu.cuMemAddressReserve);
  resolve("cuMemCreate", &cu.cuMemCreate);
  resolve("cuMemMap", &cu.cuMemMap);
  resolve("cuMemSetAccess", &cu.cuMemSetAccess);
  resolve("cuMemUnmap", &cu.cuMemUnmap);
  resolve("cuMemRelease", &cu.cuMemRelease);
  resolve("cuMemAddressFree", &cu.cuMemAddressFree);
  if (!cu.complete()) return 1;

  // A context, as the runtime would make one.
  if (report("cuInit", cu.cuInit(0)) != CUDA_SUCCESS) return 1;
  CUcontext context = nullptr;
  report("cuDevicePrimaryCtxRetain", cu.cuDevicePrimaryCtxRetain(&context, 0));
  if (report("cuCtxSetCurrent", cu.cuCtxSetCurrent(context)) != CUDA_SUCCESS) return 1;
  CUstream stream = nullptr;
  const CUresult created = cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  report("cuStreamCreate", created, Details().stream(stream));

  // Device memory: one allocation freed, one kept.
  const CUdeviceptr freed = allocate(kFreedBytes);
  const CUdeviceptr kept = allocate(kKeptBytes);  // LIVE(device, 3145828)
  free_memory(freed);

  // Stream-ordered memory: the same.
  const CUdeviceptr freed_async = allocate_async(kFreedAsyncBytes, stream);
  const CUdeviceptr kept_async = allocate_async(kKeptAsyncBytes, stream);  // LIVE(async, 524288)
  free_async(freed_async, stream);

  // Virtual memory. Handles must be a multiple of the granularity (2 MiB on current GPUs).
  const CUmemAllocationProp prop = device_memory();
  std::size_t granularity = 0;
  const CUresult found =
      cu.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  report("cuMemGetAllocationGranularity", found, Details().size(granularity));
  if (granularity == 0 || kHandleBytes % granularity != 0) {
    std::printf("granularity %zu does not divide %zu\n", granularity, kHandleBytes);
    return 1;
  }

  // A reservation used and given back whole.
  const CUdeviceptr scratch = reserve(kScratchBytes);
  const CUmemGenericAllocationHandle scratch_handle = create();
  map(scratch, scratch_handle);
  unmap(scratch);
  release(scratch_handle);
  free_reservation(scratch, kScratchBytes);

  // The expandable segment: reserve, grow a handle at a time, shrink back to the first.
  const CUdeviceptr segment = reserve(kSegmentBytes);  // LIVE(vmm_reservation, 67108864)
  std::vector<CUmemGenericAllocationHandle> handles;
  handles.push_back(create());    // LIVE(vmm_handle, 2097152)
  map(segment, handles.front());  // LIVE(vmm_mapping, 2097152)
  for (int i = 1; i < kGrownHandles; ++i) {
    handles.push_back(create());
    map(segment + i * kHandleBytes, handles.back());
  }
  while (handles.size() > kKeptHandles) {
    unmap(segment + (handles.size() - 1) * kHandleBytes);
    release(handles.back());
    handles.pop_back();
  }

  std::printf("live device ptr=0x%llx size=%zu\n", kept, kKeptBytes);
  std::printf("live async ptr=0x%llx size=%zu\n", kept_async, kKeptAsyncBytes);
  std::printf("live vmm_reservation ptr=0x%llx size=%zu\n", segment, kSegmentBytes);
  std::printf("live vmm_mapping ptr=0x%llx size=%zu\n", segment, kHandleBytes);
  std::printf("live vmm_handle handle=0x%llx size=%zu\n", handles.front(), kHandleBytes);
  return g_all_succeeded ? 0 : 1;
}
