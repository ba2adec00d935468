// The rows of the time index's rollup tables and of time_problem (docs/schema.md, "Time
// index"), as the index reads them back and as whoever makes them writes them: apart from
// storage/time_index.h so that the makers (storage/rollup_rows.h, storage/live_bytes_rollups.h)
// need not include the index they feed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "storage/trace_stats.h"

namespace vramtrace::storage {

// live_bytes_bucket's time slices: at most kLiveBytesBuckets over the index's [start_ns,
// end_ns], each 2^shift ns and starting at a multiple of it, with the smallest shift that fits.
// Slices of a power of two, aligned, are what a writer can keep up before it knows the trace's
// end: two neighbours merge into one of the next size exactly.
inline constexpr std::uint32_t kLiveBytesBuckets = 16384;
int live_bytes_bucket_shift(std::int64_t start_ns, std::int64_t end_ns);

// A row of live_bytes_bucket: live bytes of one (process, device, kind) in one time slice of
// the trace.
struct LiveBytesBucket {
  std::int64_t upid = 0;
  int device = 0, kind = 0;
  std::uint32_t bucket = 0;  // the slice: (ns >> shift) - (start_ns >> shift)
  // Over the slice, the value it started with included; `last` holds until the next bucket of
  // the same series (a slice without events is not stored).
  std::uint64_t min_bytes = 0, max_bytes = 0, last_bytes = 0;
};

// A row of live_bytes_peak: the peak of a group of kinds of one process on one device.
struct LiveBytesPeak {
  std::int64_t upid = 0;
  int device = 0;
  std::string group;  // peak_group
  std::uint64_t bytes = 0;
  std::uint64_t seq = 0;  // the event that first reached it
  std::int64_t ns = 0;
};

// A row of live_at_peak: the allocations of one callsite live at a peak of live_bytes_peak
// (the same upid, device and group), just after its event.
struct LiveAtPeak {
  std::int64_t upid = 0;
  int device = 0;
  std::string group;                        // peak_group
  std::optional<std::int64_t> callsite_id;  // alloc_callsite_id
  std::uint64_t count = 0, bytes = 0;
};

// What time_problem counts (its column `problem`).
inline constexpr const char* kTimeBeforeProcessStart =
    trace_stat(TraceStatId::kTimeBeforeProcessStart).name.data();
inline constexpr const char* kTimeAfterProcessEnd =
    trace_stat(TraceStatId::kTimeAfterProcessEnd).name.data();
inline constexpr const char* kTimeOutOfOrder = trace_stat(TraceStatId::kTimeOutOfOrder).name.data();

// A row of time_problem: one process's events with one kind of impossible time.
struct TimeProblem {
  std::int64_t upid = 0;
  std::string problem;  // kTimeBeforeProcessStart, kTimeAfterProcessEnd or kTimeOutOfOrder
  std::uint64_t events = 0;
  std::uint64_t first_seq = 0;  // the first such event
};

}  // namespace vramtrace::storage
