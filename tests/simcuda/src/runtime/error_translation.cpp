#include "error_translation.h"

#include "errors.h"

namespace simcuda::runtime {

cudaError_t from_driver(CUresult result) {
  // Outside the range of cudaError_t's values a cast would not even be defined.
  const int value = result;
  if (value < cudaSuccess || value > cudaErrorApiFailureBase) return cudaErrorUnknown;
  const auto error = static_cast<cudaError_t>(value);
  return simcuda::known_error(error) ? error : cudaErrorUnknown;
}

}  // namespace simcuda::runtime
