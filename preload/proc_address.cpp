// How the shim reaches driver calls that symbol interposition cannot: a statically linked
// cudart (nvcc's default) and frameworks' driver tables dlopen libcuda, dlsym its
// cuGetProcAddress, and ask that for every function. The shim interposes both:
//
// - dlsym: for the driver's resolvers and allocation functions, the shim's dlsym returns its
//   own wrappers (remembering the driver's pointers); every other name goes to glibc's dlsym
//   untouched. glibc's dlsym resolves RTLD_NEXT relative to its *caller's* object, found from
//   its return address, so forwarding with an ordinary call would make the shim the caller
//   and change what RTLD_NEXT means for the program. The exported dlsym is therefore a small
//   assembly stub that asks a C function whether the name is one of ours and otherwise
//   *jumps* to glibc's dlsym, leaving the caller's return address in place.
// - cuGetProcAddress (the CUDA 12+ _v2 form, and the CUDA 11 form still exported): the
//   driver resolves the name and the requested CUDA version to one of its versioned entry
//   points, as it alone knows how; the shim then names the pointer it got (dladdr) and, when
//   it is one of the versioned functions the shim hooks, hands out the wrapper instead. A
//   version the shim has no wrapper for (an old 32-bit cuMemAlloc) is passed through as it is.
#include <dlfcn.h>

#include <atomic>
#include <cstring>

#include "cuda_abi.h"
#include "driver_hooks.h"
#include "real_functions.h"
#include "recorder.h"

using namespace vramtrace::cuda;

extern "C" vt_CUresult cuGetProcAddress_v2(const char*, void**, int, vt_cuuint64_t,
                                           vt_CUdriverProcAddressQueryResult*);
extern "C" vt_CUresult cuGetProcAddress(const char*, void**, int, vt_cuuint64_t);

namespace {

std::atomic<void*> g_real_cuGetProcAddress_v2{nullptr};
std::atomic<void*> g_real_cuGetProcAddress_v1{nullptr};
using cuGetProcAddress_v2_fn = vt_CUresult (*)(const char*, void**, int, vt_cuuint64_t,
                                               vt_CUdriverProcAddressQueryResult*);

bool starts_with(const char* s, const char* prefix) {
  return std::strncmp(s, prefix, std::strlen(prefix)) == 0;
}

// The shim's replacement for a driver pointer, or the pointer itself. `real` is a function
// the driver handed out; its exported name tells which versioned entry point it is.
void* wrap_driver_pointer(void* real);

}  // namespace

extern "C" {

// Read by the assembly stub below; glibc's dlsym.
__attribute__((visibility("hidden"))) void* vt_glibc_dlsym = nullptr;

// Called by the stub with the symbol name: non-zero when the shim must answer.
__attribute__((visibility("hidden"), used)) int vt_dlsym_is_ours(const char* symbol) {
  if (vt_glibc_dlsym == nullptr) {
    vt_glibc_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (vt_glibc_dlsym == nullptr) vt_glibc_dlsym = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  }
  if (symbol == nullptr || symbol[0] != 'c' || symbol[1] != 'u') return 0;
  vramtrace::preload::ensure_started();
  if (vramtrace::preload::g_shim_state.load(std::memory_order_relaxed) ==
      static_cast<int>(vramtrace::preload::ShimState::kOff))
    return 0;
  if (starts_with(symbol, "cuGetProcAddress")) return 1;
  return vramtrace::preload::wrap_driver_function(symbol, nullptr) != nullptr;
}

// The stub jumps here, with the caller's arguments, for the names above.
__attribute__((visibility("hidden"), used)) void* vt_dlsym_ours(void* handle, const char* symbol) {
  void* real = vramtrace::preload::real_dlsym(handle, symbol);
  if (real == nullptr) return nullptr;
  return wrap_driver_pointer(real);
}

}  // extern "C"

// dlsym(handle, symbol): rdi = handle, rsi = symbol. The stack is realigned to 16 bytes for
// the call; the argument registers are saved across it and restored for either jump.
asm(R"(
  .text
  .globl dlsym
  .type dlsym, @function
dlsym:
  .cfi_startproc
  push %rdi
  .cfi_adjust_cfa_offset 8
  push %rsi
  .cfi_adjust_cfa_offset 8
  sub $8, %rsp
  .cfi_adjust_cfa_offset 8
  mov %rsi, %rdi
  call vt_dlsym_is_ours
  add $8, %rsp
  .cfi_adjust_cfa_offset -8
  pop %rsi
  .cfi_adjust_cfa_offset -8
  pop %rdi
  .cfi_adjust_cfa_offset -8
  test %eax, %eax
  jnz vt_dlsym_ours
  jmp *vt_glibc_dlsym(%rip)
  .cfi_endproc
  .size dlsym, .-dlsym
)");

namespace {

void* wrap_driver_pointer(void* real) {
  Dl_info info{};
  if (dladdr(real, &info) == 0 || info.dli_sname == nullptr || info.dli_saddr != real) return real;
  const char* name = info.dli_sname;
  // The latest pointer wins, as in wrap_driver_function: a driver unloaded and loaded again
  // is elsewhere.
  if (std::strcmp(name, "cuGetProcAddress_v2") == 0) {
    if (real != reinterpret_cast<void*>(&cuGetProcAddress_v2)) {
      g_real_cuGetProcAddress_v2.store(real, std::memory_order_release);
      vramtrace::preload::remember_real_function(g_real_cuGetProcAddress_v2);
    }
    return reinterpret_cast<void*>(&cuGetProcAddress_v2);
  }
  if (std::strcmp(name, "cuGetProcAddress") == 0) {
    if (real != reinterpret_cast<void*>(&cuGetProcAddress)) {
      g_real_cuGetProcAddress_v1.store(real, std::memory_order_release);
      vramtrace::preload::remember_real_function(g_real_cuGetProcAddress_v1);
    }
    return reinterpret_cast<void*>(&cuGetProcAddress);
  }
  void* wrapper = vramtrace::preload::wrap_driver_function(name, real);
  return wrapper != nullptr ? wrapper : real;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) vt_CUresult cuGetProcAddress_v2(
    const char* symbol, void** pfn, int cudaVersion, vt_cuuint64_t flags,
    vt_CUdriverProcAddressQueryResult* symbolStatus) {
  auto real = vramtrace::preload::real_function<cuGetProcAddress_v2_fn>(
      g_real_cuGetProcAddress_v2, "cuGetProcAddress_v2", "libcuda.so");
  if (real == nullptr) return 3;  // CUDA_ERROR_NOT_INITIALIZED: no driver loaded
  const vt_CUresult result = real(symbol, pfn, cudaVersion, flags, symbolStatus);
  if (result == kCudaSuccess && pfn != nullptr && *pfn != nullptr) *pfn = wrap_driver_pointer(*pfn);
  return result;
}

extern "C" __attribute__((visibility("default"))) vt_CUresult cuGetProcAddress(
    const char* symbol, void** pfn, int cudaVersion, vt_cuuint64_t flags) {
  auto real = vramtrace::preload::real_function<vt_cuGetProcAddress_v1_fn>(
      g_real_cuGetProcAddress_v1, "cuGetProcAddress", "libcuda.so");
  if (real == nullptr) return 3;
  const vt_CUresult result = real(symbol, pfn, cudaVersion, flags);
  if (result == kCudaSuccess && pfn != nullptr && *pfn != nullptr) *pfn = wrap_driver_pointer(*pfn);
  return result;
}
