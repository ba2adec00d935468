#include "proc_address.h"

#include <string_view>

#include "driver.h"

namespace simcuda::driver {
namespace {

enum class Variant { Plain, PerThread };

struct EntryPoint {
  std::string_view api;
  int version;
  Variant variant;
  void* function;
};

// The driver is built with __CUDA_API_VERSION_INTERNAL, so cuda.h declares every exported
// symbol under its own name, the legacy ones included.
#define SIMCUDA_ENTRY_POINT(api, version, variant, symbol) \
  EntryPoint{#api, version, Variant::variant, reinterpret_cast<void*>(&::symbol)},
const EntryPoint kEntryPoints[] = {
#include "entry_points.inc"
};
#undef SIMCUDA_ENTRY_POINT

constexpr cuuint64_t kKnownFlags =
    CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;

}  // namespace

ProcAddress find_proc_address(const char* symbol, int cuda_version, cuuint64_t flags) {
  if (symbol == nullptr || (flags & ~kKnownFlags) != 0 || cuda_version > kDriverVersion) {
    return {CUDA_ERROR_INVALID_VALUE, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, nullptr};
  }
  // CU_GET_PROC_ADDRESS_DEFAULT is the legacy stream for the library: only the caller's header
  // knows whether it was built for per-thread default streams, and then it sets the flag.
  const bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  const std::string_view api(symbol);
  const EntryPoint* best = nullptr;
  bool known = false;
  for (const EntryPoint& entry : kEntryPoints) {
    if (entry.api != api) continue;
    known = true;
    if (entry.version > cuda_version) continue;
    if (entry.variant == Variant::PerThread && !per_thread) continue;
    const bool better = best == nullptr || entry.version > best->version ||
                        (entry.version == best->version && entry.variant == Variant::PerThread);
    if (better) best = &entry;
  }
  if (best != nullptr) return {CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS, best->function};
  return {CUDA_ERROR_NOT_FOUND,
          known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND,
          nullptr};
}

}  // namespace simcuda::driver
