// A caching allocator's state at one moment of a process: its live segments, the live blocks
// laid over them, and what is left between the blocks (the allocator's free, cached memory).
//
// Used by the OOM report (the state at a failure) and by the trace advice (the state at a
// peak). "At seq" means just after the process's event `seq`: an allocation is live when
// alloc_seq <= seq and it was not freed by then (free_seq NULL or > seq). A failed allocation
// is never live, so at an OOM's own seq the state is the one the failure met.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_set>
#include <vector>

#include "storage/trace_reader.h"

namespace vramtrace::analysis {

bool live_after(const storage::AllocationRecord& record, std::uint64_t seq);

// One allocator segment: address-contiguous cuMemMap mappings (expandable segments) are merged
// into one, since a block may span them.
struct SegmentState {
  std::uint64_t address = 0, size = 0;
  std::uint64_t blocks = 0;              // live blocks in it
  std::vector<std::uint64_t> free_gaps;  // address order; the bytes between live blocks
  bool expandable = false;               // made of cuMemMap mappings
};

struct AllocatorState {
  // The allocator's own totals in its latest report at or before the moment; unset: none yet.
  std::optional<std::uint64_t> allocated, reserved;
  std::uint64_t live_block_bytes = 0;  // live blocks (in segments or not)
  std::uint64_t segment_bytes = 0;     // live allocator segments
  std::uint64_t cached_bytes = 0;      // segment bytes not in a live block (= total_free)
  // Bytes of segments with no live block at all: what torch.cuda.empty_cache() would return
  // to the driver (it never splits a segment, and frees no live tensor).
  std::uint64_t releasable_bytes = 0;
  std::uint64_t total_free = 0, largest_free_gap = 0;
  double external_fragmentation = 0;   // 1 - largest_free_gap / total_free; 0 when nothing free
  std::vector<SegmentState> segments;  // address order
};

// The segments and blocks of the state just after `seq`, from rows that hold at least those
// live then (others are passed over): the live set that ProcessHistory::live_at reads will do.
// `allocator_segments`: the ids of allocations that held a block at some time. With `device`,
// only that device's blocks and segments. Leaves `allocated` and `reserved` unset: the
// allocator's reports are not among the live rows (TraceReader::allocator_totals_at).
AllocatorState allocator_layout(std::span<const storage::AllocationRecord> rows, std::uint64_t seq,
                                const std::unordered_set<std::int64_t>& allocator_segments,
                                std::optional<int> device = std::nullopt);

}  // namespace vramtrace::analysis
