// libc10.so stand-in: PyTorch's two profiler entry points, which do nothing when no profiler
// is attached (PyTorch's forward to a reporter only when one is registered). The caching
// allocator (libc10_cuda_sim.so) calls them across the library boundary, as libc10_cuda.so
// calls libc10.so's, so a preloaded definition takes the calls.
#include "c10_profiler_abi.h"

namespace c10 {

__attribute__((visibility("default"))) void reportMemoryUsageToProfiler(void*, int64_t, size_t,
                                                                        size_t, Device) {}

__attribute__((visibility("default"))) void reportOutOfMemoryToProfiler(int64_t, size_t, size_t,
                                                                        Device) {}

}  // namespace c10
