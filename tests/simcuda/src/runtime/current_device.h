// The runtime's current device, per host thread, and the driver contexts behind it.
#pragma once

#include "cuda_runtime_api.h"
#include "driver_link.h"

namespace simcuda::runtime {

// Makes sure the calling thread has a current driver context before a call that needs one. A
// context that the program made current through the driver API is used as it is (the runtime
// then works on its device, as the real runtime does); otherwise the primary context of the
// thread's current device (cudaSetDevice's, 0 by default) is retained, once per process and
// device, and made current.
cudaError_t activate_context(const Driver& driver);

// cudaSetDevice: retains the device's primary context and makes it current.
cudaError_t set_device(const Driver& driver, int device);

// cudaGetDevice: the device of the current context, or the thread's current device when the
// thread has no context yet.
cudaError_t get_device(const Driver& driver, int* device);

// The device of the current context, which must exist (see activate_context).
cudaError_t context_device(const Driver& driver, int* device);

}  // namespace simcuda::runtime
