// How the time index's rollups are made, by rules that are not the index's own
// (storage/live_bytes_rollups.h): what a maker reads, once per build of the index (RollupSource),
// where it puts the rows (RollupSink), and the same made as a writer's rows arrive
// (RollupKeeper). Apart from storage/time_index.h so that a maker need not include the index
// that calls it.
#pragma once

#include <cstdint>
#include <functional>

#include "storage/time_index_rows.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

// What the rollups are built from, once per build.
struct RollupSource {
  // The span of the index (TimeIndex::start_ns() and end_ns()).
  std::int64_t start_ns = 0, end_ns = 0;
  // Every successful allocation and free of the trace: processes in upid order, each process's
  // events in sequence order (a free before an allocation of the same number), each with its
  // callsite_id. A time before
  // its process's start or after its end comes as that start or end; a time earlier than the
  // event before it comes as it is (the trace's times need not rise with its sequence, and the
  // rollups must not rely on it). time_problem counts both.
  std::function<void(const std::function<void(const AllocationEvent&)>& visit)> for_each_event;
};

// Where the rollups go: rows of live_bytes_bucket, live_bytes_peak and live_at_peak, in any
// order.
struct RollupSink {
  std::function<void(const LiveBytesBucket&)> add_bucket;
  std::function<void(const LiveBytesPeak&)> add_peak;
  std::function<void(const LiveAtPeak&)> add_live_at_peak;
};

using BuildRollups = std::function<void(const RollupSource&, const RollupSink&)>;

// The same rollups made as rows arrive (TraceWriter's kAsRowsArrive), by the caller's rules: a
// writer gives it what RollupSource would (each process's events in sequence order, times
// within the process's span), and only while the times also rise; the trace's span comes last.
class RollupKeeper {
 public:
  virtual ~RollupKeeper() = default;
  virtual void add(const AllocationEvent& event) = 0;
  virtual void write(std::int64_t start_ns, std::int64_t end_ns, const RollupSink& sink) const = 0;
};

}  // namespace vramtrace::storage
