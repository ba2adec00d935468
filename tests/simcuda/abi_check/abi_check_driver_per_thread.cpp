// abi_check_driver.cpp for programs built for per-thread default streams: the API names of the
// stream-taking functions then map to the _ptsz/_ptds symbols (both headers' macros must agree,
// or the redefinition is an error), and those declarations must agree too.

#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1

#include <stddef.h>

#include <string_view>

#include <cuda.h>  // the toolkit's: only its directory is on the include path

#include "simcuda_abi_lists.h"

#define SIMCUDA_STRING(x) #x
#define SIMCUDA_EXPANDED(x) SIMCUDA_STRING(x)

// Every function we declare exists in the real header, under its per-thread symbol where it has
// one.
#define SIMCUDA_DECLARED_BY_TOOLKIT(name) \
  [[maybe_unused]] static constexpr auto* real_##name = &::name;
SIMCUDA_ABI_DRIVER_FUNCTIONS(SIMCUDA_DECLARED_BY_TOOLKIT)
#undef SIMCUDA_DECLARED_BY_TOOLKIT

// Both headers end by defining an inline cuGetProcAddress_v2_ptsz that asks for the per-thread
// variants, and mapping cuGetProcAddress_v2 to it. Ours gets another name here, so that the two
// definitions do not collide, and the mapping is compared as a string.
constexpr std::string_view real_target_cuGetProcAddress_v2 = SIMCUDA_EXPANDED(cuGetProcAddress_v2);
#undef cuGetProcAddress_v2
#define cuGetProcAddress_v2_ptsz simcuda_abi_cuGetProcAddress_v2_ptsz

namespace simcuda_abi {
#define SIMCUDA_CUDA_H_TYPES_ONLY
#include "../include/cuda.h"
#undef SIMCUDA_CUDA_H_TYPES_ONLY
}  // namespace simcuda_abi

#include "../include/cuda.h"

#undef cuGetProcAddress_v2_ptsz
static_assert(std::string_view(SIMCUDA_EXPANDED(cuGetProcAddress_v2)) ==
                  real_target_cuGetProcAddress_v2,
              "cuGetProcAddress_v2 is mapped to another symbol than the toolkit's");
