// abi_check_driver.cpp for the driver's own view of cuda.h (__CUDA_API_VERSION_INTERNAL, as our
// libcuda is built): every entry point under its own name, the legacy 32-bit ones included.
// Also cudaTypedefs.h: each of our function pointer types is the toolkit's type of that name.

#define __CUDA_API_VERSION_INTERNAL 1

#include <stddef.h>

#include <type_traits>

#include <cuda.h>  // the toolkit's: only its directory is on the include path
#include <cudaTypedefs.h>

#include "simcuda_abi_lists.h"

namespace simcuda_abi {
#define SIMCUDA_CUDA_H_TYPES_ONLY
#include "../include/cuda.h"
#undef SIMCUDA_CUDA_H_TYPES_ONLY
}  // namespace simcuda_abi

// Every function we declare, public or legacy, exists in the real header under its own name...
#define SIMCUDA_DECLARED_BY_TOOLKIT(name) \
  [[maybe_unused]] static constexpr auto* real_##name = &::name;
SIMCUDA_ABI_DRIVER_ALL_FUNCTIONS(SIMCUDA_DECLARED_BY_TOOLKIT)
#undef SIMCUDA_DECLARED_BY_TOOLKIT

// ...and our declarations of them agree with it.
#include "../include/cuda.h"

// Our cudaTypedefs.h, in a namespace of its own, where the driver types it names are the
// toolkit's.
namespace simcuda_pfn {
#undef CUDATYPEDEFS_H
#include "../include/cudaTypedefs.h"
}  // namespace simcuda_pfn

#define SIMCUDA_SAME_PFN(type)                             \
  static_assert(std::is_same_v<simcuda_pfn::type, ::type>, \
                #type " is another function type than the toolkit's");
SIMCUDA_ABI_PFN_TYPES(SIMCUDA_SAME_PFN)
SIMCUDA_ABI_INTERNAL_PFN_TYPES(SIMCUDA_SAME_PFN)
#undef SIMCUDA_SAME_PFN
