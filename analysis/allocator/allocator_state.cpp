#include "analysis/allocator/allocator_state.h"

#include <algorithm>

#include "analysis/allocator/fragmentation.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

}  // namespace

bool live_after(const storage::AllocationRecord& r, std::uint64_t seq) {
  return !r.failed() && r.allocation.alloc_seq <= seq && (!r.free || r.free->free_seq > seq);
}

// The segments live at `seq`, with the live blocks laid over them (fragmentation.h lays them
// out): what is left between the blocks is the allocator's free (cached) memory, and its
// largest piece is the largest block the allocator could have handed out without a new segment.
AllocatorState allocator_layout(std::span<const storage::AllocationRecord> rows, std::uint64_t seq,
                                const std::unordered_set<std::int64_t>& allocator_segments,
                                std::optional<int> device) {
  AllocatorState at;
  std::vector<storage::AllocationRecord> live;
  for (const auto& r : rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq > seq) break;
    if ((device && a.device != *device) || !live_after(r, seq)) continue;
    if (a.kind == kind::kBlock) at.live_block_bytes += a.size;
    if (a.kind == kind::kBlock || allocator_segments.contains(a.id)) live.push_back(r);
  }
  const Fragmentation layout = lay_out_segments(live, allocator_segments);
  for (const SegmentLayout& laid : layout.segments) {
    SegmentState segment;
    segment.address = laid.address;
    segment.size = laid.size;
    segment.expandable = laid.expandable;
    for (const SegmentBlock& block : laid.blocks) {
      if (block.used)
        segment.blocks += 1;
      else
        segment.free_gaps.push_back(block.size);
    }
    at.segment_bytes += segment.size;
    if (segment.blocks == 0) at.releasable_bytes += segment.size;
    at.segments.push_back(std::move(segment));
  }
  at.total_free = at.cached_bytes = layout.total_free;
  at.largest_free_gap = layout.largest_free;
  at.external_fragmentation = layout.external_fragmentation;
  return at;
}

}  // namespace vramtrace::analysis
