// Hooks for the CUDA driver's allocation family (docs/architecture.md, "Layer 2: the CUDA
// driver").
//
// A statically linked cudart (nvcc's default) and frameworks' driver tables never call these
// functions by name: they dlopen libcuda, dlsym its cuGetProcAddress, and ask it for each
// function. So the shim's wrappers reach them in two ways: as plain exported definitions (for
// programs linked against libcuda), and handed out by the shim's dlsym and cuGetProcAddress
// (proc_address.cpp) in place of the driver's own pointers.
#pragma once

namespace vramtrace::preload {

// If `versioned_name` is a driver function the shim hooks ("cuMemAlloc_v2", ...), remembers
// `real` as the function its wrapper forwards to and returns the wrapper; otherwise null.
// `real` may be null (then the wrapper finds the driver's function itself).
void* wrap_driver_function(const char* versioned_name, void* real);

}  // namespace vramtrace::preload
