// A moment at which a caching allocator's state is whole. PyTorch's allocator asks the driver
// for a segment (cudaMalloc) and then reports the block it asked for it for, a few events
// later: just after the segment, its memory looks unused (4 GiB of "cache" that a live tensor
// holds, advice to empty it, a fragmentation map with the segment free). A peak of device
// memory is reached at such a segment; the reports look at it once the block is there, which
// changes no device memory and so is the same peak.
#pragma once

#include <cstdint>

#include "storage/time_index.h"

namespace vramtrace::analysis {

// The number of events the block may come after its segment (the allocator's own steps on its
// thread, and whatever other threads did meanwhile).
inline constexpr std::uint64_t kBlockAfterSegmentEvents = 16;

// `seq` when process `upid`'s event `seq` is not a segment whose block is still to come; else
// the event of its first block. Processes without allocator events: `seq`.
std::uint64_t with_new_segments_blocks(const storage::TimeIndex& index, std::int64_t upid,
                                       std::uint64_t seq);

}  // namespace vramtrace::analysis
