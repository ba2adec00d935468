// Names and descriptions of error codes, and the per-thread "last error" of the runtime API.
#pragma once

#include "cuda_runtime_api.h"

namespace simcuda {

// "cudaErrorInvalidValue" / "invalid argument"; for a value that is no error code, both
// return "unrecognized error code", as the real runtime does.
const char* error_name(cudaError_t error);
const char* error_string(cudaError_t error);
// Whether `error` is one of the codes above, rather than any other value of the type.
bool known_error(cudaError_t error);

// Every failing runtime call leaves its error here for the calling thread until
// cudaGetLastError reads and clears it; a successful call leaves it alone. Returns `error`.
cudaError_t record(cudaError_t error);
cudaError_t peek_last_error();
cudaError_t take_last_error();

}  // namespace simcuda
