// Names and descriptions of the driver's result codes, for cuGetErrorName and cuGetErrorString.
#pragma once

#include "cuda.h"

namespace simcuda::driver {

// "CUDA_ERROR_OUT_OF_MEMORY" / "out of memory"; nullptr for a value that is no result code.
const char* result_name(CUresult result);
const char* result_description(CUresult result);

}  // namespace simcuda::driver
