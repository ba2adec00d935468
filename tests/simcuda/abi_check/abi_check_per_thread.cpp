// abi_check.cpp for the per-thread-default-stream entry points (cudaMallocAsync_ptsz, ...):
// the toolkit declares them only when CUDA_API_PER_THREAD_DEFAULT_STREAM is defined, and then
// maps the plain names to them with macros, which ours must do the same way.

#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#define CUDA_ENABLE_DEPRECATED 1

#include <stddef.h>

#include <string_view>

#include <cuda_runtime_api.h>  // the toolkit's: only its directory is on the include path

#include "simcuda_abi_lists.h"

#define SIMCUDA_STRING(x) #x
#define SIMCUDA_EXPANDED(x) SIMCUDA_STRING(x)

// What the toolkit maps each plain name to; its macros then make way for ours.
#define SIMCUDA_PER_THREAD_NAMES(X) \
  X(cudaMemcpy)                     \
  X(cudaMemset)                     \
  X(cudaStreamSynchronize)          \
  X(cudaMallocAsync)                \
  X(cudaFreeAsync)                  \
  X(cudaMallocFromPoolAsync)        \
  X(cudaGetDriverEntryPoint)        \
  X(cudaGetDriverEntryPointByVersion)
#define SIMCUDA_REAL_TARGET(name) \
  constexpr std::string_view real_target_##name = SIMCUDA_EXPANDED(name);
SIMCUDA_PER_THREAD_NAMES(SIMCUDA_REAL_TARGET)
#undef SIMCUDA_REAL_TARGET
#undef cudaMemcpy
#undef cudaMemset
#undef cudaStreamSynchronize
#undef cudaMallocAsync
#undef cudaFreeAsync
#undef cudaMallocFromPoolAsync
#undef cudaGetDriverEntryPoint
#undef cudaGetDriverEntryPointByVersion

// Every suffixed function we declare exists in the real header...
#define SIMCUDA_DECLARED_BY_TOOLKIT(name) \
  [[maybe_unused]] static constexpr auto* real_##name = &::name;
SIMCUDA_ABI_PER_THREAD_FUNCTIONS(SIMCUDA_DECLARED_BY_TOOLKIT)
#undef SIMCUDA_DECLARED_BY_TOOLKIT

// ...and our declarations agree with it.
namespace simcuda_abi {
#include "../include/driver_types.h"
}  // namespace simcuda_abi
#define SIMCUDA_DEFAULT_ARG(value)
#include "../include/cuda_runtime_api.h"

// Our header maps the plain names to the same symbols.
#define SIMCUDA_SAME_TARGET(name)                                               \
  static_assert(std::string_view(SIMCUDA_EXPANDED(name)) == real_target_##name, \
                #name " is mapped to another symbol than the toolkit's");
SIMCUDA_PER_THREAD_NAMES(SIMCUDA_SAME_TARGET)
#undef SIMCUDA_SAME_TARGET
