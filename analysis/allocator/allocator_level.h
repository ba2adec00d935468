// The allocator level of a trace: a caching allocator's blocks (PyTorch's tensors, kind
// `block`) against the segments that hold them (device allocations or VMM mappings).
//
// A segment of the allocator is a live-or-freed non-block allocation that held at least one
// block during its life (a block row names it as segment_id). At the end of a trace, a live
// allocator segment is memory the allocator keeps: the live blocks in it are in use (tensors
// still alive), the rest is cache. A process with no allocator event (no block, no allocator
// OOM) can only be seen at the segment level.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "analysis/scope/process_filter.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// One process, at the end of its trace.
struct AllocatorTotals {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  bool allocator_events = false;  // any block, or an allocator out-of-memory report
  std::uint64_t blocks = 0;       // block allocations that succeeded
  std::uint64_t live_block_count = 0, live_block_bytes = 0;
  std::uint64_t segment_count = 0, segment_bytes = 0;  // live allocator segments
  // Bytes of live allocator segments not in a live block: the allocator's cache.
  std::uint64_t cached_bytes = 0;
  std::uint64_t blocks_without_segment = 0;  // block allocations with no segment found
  std::uint64_t out_of_memory = 0;           // the allocator's failed requests
  // The allocator's own totals as its last report gave them (allocated and reserved bytes).
  std::optional<std::uint64_t> allocator_allocated, allocator_reserved;
};

struct AllocatorView {
  std::map<std::int64_t, AllocatorTotals> processes;    // by upid; the selected processes only
  std::unordered_set<std::int64_t> allocator_segments;  // allocation ids
  std::unordered_map<std::int64_t, std::uint64_t> live_block_bytes_in;  // by segment id

  bool has_allocator_events(std::int64_t upid) const;
};

AllocatorView build_allocator_view(const storage::TraceReader& trace,
                                   const ProcessSelection& processes = std::nullopt);

}  // namespace vramtrace::analysis
