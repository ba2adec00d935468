// Compile-time proof that the shim's own CUDA declarations (preload/cuda_abi.h) match the
// real toolkit's headers: each hooked function's signature, the error codes the shim
// interprets, and the layout of the structs it reads. Built only where the toolkit exists;
// if this file compiles, the shim's hooks have the real ABI.
#include <cuda.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <type_traits>

#include "cuda_abi.h"

namespace vt = vramtrace::cuda;

// Our parameter types, translated to the real ones.
template <class T>
struct ToReal {
  using type = T;
};
template <>
struct ToReal<vt::vt_cudaStream_t> {
  using type = cudaStream_t;
};
template <>
struct ToReal<vt::vt_cudaMemPool_t> {
  using type = cudaMemPool_t;
};
template <>
struct ToReal<vt::vt_cudaExtent> {
  using type = cudaExtent;
};
template <>
struct ToReal<vt::vt_cudaPitchedPtr*> {
  using type = cudaPitchedPtr*;
};

// CUdeviceptr, CUdevice and CUmemGenericAllocationHandle are integer typedefs in both.
template <>
struct ToReal<const vt::vt_CUmemAllocationProp*> {
  using type = const CUmemAllocationProp*;
};
template <>
struct ToReal<vt::vt_CUdriverProcAddressQueryResult*> {
  using type = CUdriverProcAddressQueryResult*;
};

template <class Fn>
struct ToRealFunction;
template <class... Args>
struct ToRealFunction<vt::vt_cudaError_t (*)(Args...)> {
  using type = cudaError_t (*)(typename ToReal<Args>::type...);
};

#define VRAMTRACE_CHECK_SIGNATURE(name, same_as, params)                                        \
  static_assert(                                                                                \
      std::is_same_v<ToRealFunction<vt::vt_cudaError_t(*) params>::type, decltype(&::same_as)>, \
      "preload/cuda_abi.h declares " #name " unlike the CUDA toolkit's " #same_as);
namespace vramtrace::cuda {
VRAMTRACE_CUDA_RUNTIME_HOOKS(VRAMTRACE_CHECK_SIGNATURE)
VRAMTRACE_CUDA_RUNTIME_USED(VRAMTRACE_CHECK_SIGNATURE)
}  // namespace vramtrace::cuda

// The driver's functions return CUresult. cuda.h maps the unversioned names to the versioned
// ones by macros (cuMemAlloc -> cuMemAlloc_v2), so `same_as` names the declaration the
// program's call resolves to.
template <class Fn>
struct ToRealDriverFunction;
template <class... Args>
struct ToRealDriverFunction<vt::vt_CUresult (*)(Args...)> {
  using type = CUresult (*)(typename ToReal<Args>::type...);
};
#define VRAMTRACE_CHECK_DRIVER_SIGNATURE(name, same_as, params)                                    \
  static_assert(                                                                                   \
      std::is_same_v<ToRealDriverFunction<vt::vt_CUresult(*) params>::type, decltype(&::same_as)>, \
      "preload/cuda_abi.h declares " #name " unlike the CUDA toolkit's " #same_as);
namespace vramtrace::cuda {
VRAMTRACE_CUDA_DRIVER_HOOKS(VRAMTRACE_CHECK_DRIVER_SIGNATURE)
VRAMTRACE_CUDA_DRIVER_RESOLVERS(VRAMTRACE_CHECK_DRIVER_SIGNATURE)
VRAMTRACE_CUDA_DRIVER_USED(VRAMTRACE_CHECK_DRIVER_SIGNATURE)
}  // namespace vramtrace::cuda
static_assert(std::is_same_v<ToRealDriverFunction<vt::vt_cuGetProcAddress_v1_fn>::type,
                             CUresult (*)(const char*, void**, int, cuuint64_t)>);
static_assert(vt::kCudaSuccess == CUDA_SUCCESS);
static_assert(vt::kCudaErrorOutOfMemory == CUDA_ERROR_OUT_OF_MEMORY);
static_assert(vt::kMemLocationTypeDevice == CU_MEM_LOCATION_TYPE_DEVICE);
static_assert(sizeof(vt::vt_CUmemAllocationProp) == sizeof(CUmemAllocationProp));
static_assert(offsetof(vt::vt_CUmemAllocationProp, location) ==
              offsetof(CUmemAllocationProp, location));
static_assert(offsetof(vt::vt_CUmemLocation, id) == offsetof(CUmemLocation, id));
static_assert(sizeof(vt::vt_CUdeviceptr) == sizeof(CUdeviceptr));
static_assert(sizeof(vt::vt_CUdriverProcAddressQueryResult) ==
              sizeof(CUdriverProcAddressQueryResult));

static_assert(std::is_same_v<std::underlying_type_t<cudaError_t>, vt::vt_cudaError_t> ||
              sizeof(cudaError_t) == sizeof(vt::vt_cudaError_t));
static_assert(vt::kSuccess == cudaSuccess);
static_assert(vt::kErrorMemoryAllocation == cudaErrorMemoryAllocation);
static_assert(vt::kErrorInitializationError == cudaErrorInitializationError);

static_assert(sizeof(vt::vt_cudaExtent) == sizeof(cudaExtent));
static_assert(offsetof(vt::vt_cudaExtent, width) == offsetof(cudaExtent, width));
static_assert(offsetof(vt::vt_cudaExtent, height) == offsetof(cudaExtent, height));
static_assert(offsetof(vt::vt_cudaExtent, depth) == offsetof(cudaExtent, depth));
static_assert(sizeof(vt::vt_cudaPitchedPtr) == sizeof(cudaPitchedPtr));
static_assert(offsetof(vt::vt_cudaPitchedPtr, ptr) == offsetof(cudaPitchedPtr, ptr));
static_assert(offsetof(vt::vt_cudaPitchedPtr, pitch) == offsetof(cudaPitchedPtr, pitch));
static_assert(offsetof(vt::vt_cudaPitchedPtr, xsize) == offsetof(cudaPitchedPtr, xsize));
static_assert(offsetof(vt::vt_cudaPitchedPtr, ysize) == offsetof(cudaPitchedPtr, ysize));

int main() {
  return 0;
}
