#include "analysis/time/whole_moment.h"

#include <optional>
#include <utility>
#include <vector>

#include "storage/schema.h"

namespace vramtrace::analysis {

std::uint64_t with_new_segments_blocks(const storage::TimeIndex& index, std::int64_t upid,
                                       std::uint64_t seq) {
  if (!index.processes_with_allocator_events().contains(upid)) return seq;
  // One pass over what was live at `seq` or the events after it: the allocation made at `seq`,
  // if it is device memory (a segment is never a block), and the blocks made in the window.
  std::vector<std::uint64_t> moments;
  for (std::uint64_t s = seq; s <= seq + kBlockAfterSegmentEvents; ++s) moments.push_back(s);
  std::optional<std::int64_t> segment;
  std::vector<std::pair<std::uint64_t, std::optional<std::int64_t>>> blocks;  // alloc_seq, segment
  index.for_each_live_at_any(upid, moments, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& a = record.allocation;
    if (a.kind != storage::allocation_kind::kBlock) {
      if (a.alloc_seq == seq) segment = a.id;
      return;
    }
    const bool live_at_seq = a.alloc_seq <= seq && (!record.free || record.free->free_seq > seq);
    if (live_at_seq || a.alloc_seq > seq) blocks.emplace_back(a.alloc_seq, a.segment_id);
  });
  if (!segment) return seq;
  std::optional<std::uint64_t> first_block;
  for (const auto& [alloc_seq, in_segment] : blocks) {
    if (in_segment != segment) continue;
    if (alloc_seq <= seq) return seq;  // a block is in it already: the state is whole
    if (!first_block || alloc_seq < *first_block) first_block = alloc_seq;
  }
  return first_block.value_or(seq);
}

}  // namespace vramtrace::analysis
