#include "analysis/allocator_state.h"

#include <algorithm>

#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

struct Range {
  std::uint64_t start, end;
};

}  // namespace

bool live_after(const storage::AllocationRecord& r, std::uint64_t seq) {
  return !r.failed() && r.allocation.alloc_seq <= seq && (!r.free || r.free->free_seq > seq);
}

// The segments live at `seq`, with the live blocks laid over them: what is left between the
// blocks is the allocator's free (cached) memory, and its largest piece is the largest block
// the allocator could have handed out without a new segment.
AllocatorState allocator_layout(std::span<const storage::AllocationRecord> rows, std::uint64_t seq,
                                const std::unordered_set<std::int64_t>& allocator_segments,
                                std::optional<int> device) {
  AllocatorState at;
  std::vector<Range> blocks;
  struct Segment {
    Range range;
    bool mapping;
  };
  std::vector<Segment> segments;
  for (const auto& r : rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq > seq) break;
    if (device && a.device != *device) continue;
    if (!live_after(r, seq)) continue;
    if (a.kind == kind::kBlock) {
      blocks.push_back({a.address, a.address + a.size});
      at.live_block_bytes += a.size;
    } else if (allocator_segments.contains(a.id)) {
      segments.push_back({{a.address, a.address + a.size}, a.kind == kind::kVmmMapping});
    }
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Range& x, const Range& y) { return x.start < y.start; });
  std::sort(segments.begin(), segments.end(),
            [](const Segment& x, const Segment& y) { return x.range.start < y.range.start; });

  for (std::size_t i = 0; i < segments.size();) {
    // Expandable segments: one reserved range mapped piece by piece, used as one segment.
    SegmentState segment;
    Range range = segments[i].range;
    segment.expandable = segments[i].mapping;
    for (++i; i < segments.size() && segment.expandable && segments[i].mapping &&
              segments[i].range.start == range.end;
         ++i)
      range.end = segments[i].range.end;
    segment.address = range.start;
    segment.size = range.end - range.start;
    std::uint64_t cursor = range.start;
    const auto first = std::lower_bound(
        blocks.begin(), blocks.end(), range.start,
        [](const Range& block, std::uint64_t start) { return block.end <= start; });
    // Blocks sorted by start with no overlap, so their ends are sorted too.
    for (auto block = first; block != blocks.end() && block->start < range.end; ++block) {
      if (block->end <= range.start) continue;
      segment.blocks += 1;
      const std::uint64_t start = std::max(block->start, range.start);
      if (start > cursor) segment.free_gaps.push_back(start - cursor);
      cursor = std::max(cursor, std::min(block->end, range.end));
    }
    if (range.end > cursor) segment.free_gaps.push_back(range.end - cursor);
    at.segment_bytes += segment.size;
    for (const std::uint64_t gap : segment.free_gaps) {
      at.total_free += gap;
      at.largest_free_gap = std::max(at.largest_free_gap, gap);
    }
    if (segment.blocks == 0) at.releasable_bytes += segment.size;
    at.segments.push_back(std::move(segment));
  }
  at.cached_bytes = at.total_free;
  if (at.total_free != 0) {
    at.external_fragmentation =
        1.0 - static_cast<double>(at.largest_free_gap) / static_cast<double>(at.total_free);
  }
  return at;
}

}  // namespace vramtrace::analysis
