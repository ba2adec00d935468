// The structs behind the driver's opaque handles (CUcontext, CUstream, CUmemoryPool; the runtime's
// cudaStream_t and cudaMemPool_t are the same types). Handles are only dereferenced after they
// were found in the driver's tables, so a stale or made-up handle is an error code, not a crash.
#pragma once

#include <cstddef>

// A device's primary context: the only kind of context the simulated driver has. It exists
// from cuInit on; `retains` counts cuDevicePrimaryCtxRetain calls not yet released, and calls
// made in it while the count is zero fail with CUDA_ERROR_CONTEXT_IS_DESTROYED.
struct CUctx_st {
  int device;
  unsigned int retains = 0;
};

struct CUstream_st {
  int device;
  unsigned int flags;
};

struct CUmemPoolHandle_st {
  int device;
  bool is_default;
  std::size_t max_size;  // 0: limited only by the device
  std::size_t live_count = 0;
  std::size_t live_bytes = 0;
  // cuMemPoolDestroy was called while allocations were live: the handle is no longer usable,
  // and the pool goes away with its last allocation, as the real one does.
  bool destroyed = false;
};
