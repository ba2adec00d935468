// The timeline: live bytes over time, one series per (process, device, kind), downsampled to N
// equal time buckets that keep the min, max and last value of each, so that a short spike is
// never lost to the downsampling (the max shows it) and the level after it is right (last).
//
// Built from the time index's 16384 fine buckets (storage/live_bytes_rollups.h), not from the
// events: a bucket of N is the union of the fine buckets whose index maps to it
// (fine * N / 16384), so its edges fall on fine-bucket edges. A series' value holds from its last
// event on; every series starts at 0 before its first event.
//
// The level says what the bytes are: `block` for a caching allocator's blocks (tensors), which
// lie inside segments; `segment` for everything else (device, managed, async, pinned host, and
// the virtual memory API's reserved address space, physical handles and mappings, each its own
// kind). Never add a block series to a segment series of the same process.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/scope/process_filter.h"
#include "storage/live_bytes_rollups.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

struct TimelineBucket {
  std::int64_t start_ns = 0, end_ns = 0;  // [start, end)
  std::uint64_t min_bytes = 0, max_bytes = 0, last_bytes = 0;
};

struct TimelineSeries {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  int device = 0, kind = 0;
  std::string kind_name, level;
  std::uint64_t peak_bytes = 0;         // the largest max over the buckets
  std::vector<TimelineBucket> buckets;  // N of them, or the index's slices if fewer
};

struct Timeline {
  std::int64_t start_ns = 0, end_ns = 0;  // the first allocation to the last event
  std::vector<TimelineSeries> series;     // (upid, device, kind) order
};

// The most buckets a timeline can have: the index's fine buckets (TimeIndex::bucket_count(),
// at most this many; a span of more than that many ns has more than half of them).
inline constexpr std::uint32_t kMaxTimelineBuckets = storage::kLiveBytesBuckets;

// `buckets` must be 1 .. kMaxTimelineBuckets.
Timeline build_timeline(const storage::TraceReader& trace, const storage::TimeIndex& index,
                        std::uint32_t buckets, const ProcessSelection& processes);

}  // namespace vramtrace::analysis
