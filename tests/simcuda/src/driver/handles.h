// The structs behind the driver's opaque handles (CUcontext, CUstream, CUevent, CUmemoryPool; the
// runtime's cudaStream_t, cudaEvent_t and cudaMemPool_t are the same types). Handles are only
// dereferenced after they were found in the driver's tables, so a stale or made-up handle is an
// error code, not a crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <set>

#include "cuda.h"

// A device's primary context: the only kind of context the simulated driver has. It exists
// from cuInit on; `retains` counts cuDevicePrimaryCtxRetain calls not yet released, and calls
// made in it while the count is zero fail with CUDA_ERROR_CONTEXT_IS_DESTROYED.
struct CUctx_st {
  int device;
  unsigned int retains = 0;
  unsigned int flags = 0;  // cuDevicePrimaryCtxSetFlags's
  std::set<int> peers;     // devices whose memory cuCtxEnablePeerAccess made accessible
};

struct CUstream_st {
  int device;
  unsigned int flags;
  int priority = 0;  // clamped to the range cuCtxGetStreamPriorityRange reports
};

// An event records the time of cuEventRecord, since the work before it is already done.
struct CUevent_st {
  int device;
  unsigned int flags;
  bool recorded = false;
  std::int64_t recorded_ns = 0;  // CLOCK_MONOTONIC
};

struct CUmemPoolHandle_st {
  int device;
  bool is_default;
  std::size_t max_size;  // 0: limited only by the device
  unsigned int handle_types = 0;
  std::size_t live_count = 0;
  // Used: the bytes the live allocations asked for, unrounded, as the real pool counts them.
  std::size_t used_bytes = 0;
  // Footprint: what the live allocations take of the device heap (each rounded to its unit).
  std::size_t footprint = 0;
  // Reserved: the memory the pool holds, in whole granules (kPoolGranule), at least the
  // footprint. It grows when an allocation does not fit and shrinks only when trimmed: at a
  // synchronization down to the release threshold, or by cuMemPoolTrimTo. Each of the two
  // amounts keeps its own high water mark, which cuMemPoolSetAttribute resets.
  std::size_t reserved_bytes = 0;
  std::size_t reserved_high = 0;
  std::size_t used_high = 0;
  cuuint64_t release_threshold = 0;
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  std::uint64_t readers = 0;  // devices other than its own granted access (bit n: device n)
  std::uint64_t writers = 0;
  // cuMemPoolDestroy was called while allocations were live: the handle is no longer usable,
  // and the pool goes away with its last allocation, as the real one does.
  bool destroyed = false;
};
