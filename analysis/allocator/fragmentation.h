// Fragmentation at a moment: the caching allocator's segments, each with its blocks laid out in
// address order, used (a live block) and free (the bytes between), and the numbers that say
// whether the memory the allocator holds can serve the next request.
//
// - external fragmentation: 1 - largest_free / total_free over every segment (0 when nothing
//   is free): how much of the free memory is in pieces smaller than the largest one;
// - internal fragmentation: (rounded - requested) / rounded over the used blocks whose
//   requested size is known (0 when none is): what the allocator's rounding wastes;
// - the largest request that would succeed without a new segment: the largest free block.
//   A request larger than that makes the allocator ask the driver for a new segment, and fail
//   with out-of-memory when the device has no more.
// Segments are a process's live allocations that held a block at some time (a cached segment
// with no live block is one free block). Address-contiguous VMM mappings (PyTorch's expandable
// segments) are one segment, since a block may span them. Live allocations outside the
// allocator that use device memory ("raw": cudaMalloc, managed, async, mappings) are listed per
// device with the gaps between them in address space.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "analysis/time/moment.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct SegmentBlock {
  std::uint64_t address = 0, size = 0;
  std::optional<std::uint64_t> requested;  // used blocks whose requested size is known
  bool used = false;
};

struct SegmentLayout {
  int device = 0;
  std::uint64_t address = 0, size = 0;
  bool expandable = false;           // made of contiguous VMM mappings
  std::vector<SegmentBlock> blocks;  // address order, covering the segment exactly
};

// Free blocks of sizes in [from, to): powers of two.
struct FreeSizeBin {
  std::uint64_t from = 0, to = 0;
  std::uint64_t count = 0, bytes = 0;
};

struct AddressGap {
  std::uint64_t address = 0, size = 0;
};

struct RawAllocations {
  int device = 0;
  std::uint64_t count = 0, bytes = 0;
  std::vector<AddressGap> gaps;  // between consecutive live allocations, address order
};

struct Fragmentation {
  std::vector<SegmentLayout> segments;  // (device, address) order
  std::uint64_t total_free = 0, largest_free = 0;
  std::uint64_t used_bytes = 0;
  double external_fragmentation = 0, internal_fragmentation = 0;
  std::uint64_t largest_request = 0;    // that would succeed without a new segment
  std::vector<FreeSizeBin> free_sizes;  // ascending, only bins with free blocks
  std::vector<RawAllocations> raw;      // by device
};

// The layout of one process's live allocations (`live`: what was live at the moment, any
// kinds), given which allocation ids are allocator segments.
Fragmentation lay_out_segments(const std::vector<storage::AllocationRecord>& live,
                               const std::unordered_set<std::int64_t>& allocator_segments);

struct FragmentationReport {
  ProcessMoment at;
  bool allocator_events = false;  // the process had blocks: else there are no segments to map
  Fragmentation layout;
};

// One process: the only one the moment applies to; else for `peak` the largest peak (among
// processes with allocator events, if any has some), for `oom` the first OOM, for the other
// moments the only process with allocator events. Throws BadMoment when that leaves several.
// `device`: only that device's segments and allocations (the numbers are then that device's).
FragmentationReport build_fragmentation_report(const storage::TraceReader& trace,
                                               const storage::TimeIndex& index,
                                               const MomentSpec& moment,
                                               const ProcessSelection& processes,
                                               std::optional<int> device = std::nullopt);

}  // namespace vramtrace::analysis
