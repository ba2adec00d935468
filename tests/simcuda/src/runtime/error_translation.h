// The runtime's reading of the driver's result codes.
#pragma once

#include "cuda.h"
#include "cuda_runtime_api.h"

namespace simcuda::runtime {

// The cudaError_t a runtime call returns when the driver call it made returned `result`.
// CUDA numbers the two enums alike (CUDA_ERROR_OUT_OF_MEMORY and cudaErrorMemoryAllocation are
// both 2, CUDA_ERROR_INVALID_HANDLE and cudaErrorInvalidResourceHandle both 400), so a code
// keeps its value; the driver codes that have no runtime counterpart
// (CUDA_ERROR_CONTEXT_ALREADY_CURRENT, CUDA_ERROR_KEY_ROTATION, anything unknown) become
// cudaErrorUnknown.
cudaError_t from_driver(CUresult result);

}  // namespace simcuda::runtime
