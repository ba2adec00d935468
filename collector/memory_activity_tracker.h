// MemoryActivityTracker: the CUPTI backend's activity records (wire::MemoryActivity). Each
// becomes a memory_activity row, and an allocation's or release's record names the allocation
// row that the API callback of the same call made or freed (correlation_index.h: by correlation
// id, else by address). A record that no callback matches is memory CUPTI saw only through
// activity: counted, so that the summary shows it.
#pragma once

#include <cstdint>

#include "collector/correlation_index.h"
#include "collector/ingest_stats.h"
#include "vramtrace.pb.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

class MemoryActivityTracker {
 public:
  MemoryActivityTracker(storage::TraceWriter& writer, IngestStats& stats);

  // An activity record of process `upid`; `callbacks`: the process's API callbacks' events.
  void on_activity(CorrelationIndex& callbacks, int64_t upid, const wire::MemoryActivity& m);

 private:
  storage::TraceWriter& writer_;
  IngestStats& stats_;
  int64_t next_id_ = 1;
};

}  // namespace vramtrace::collector
