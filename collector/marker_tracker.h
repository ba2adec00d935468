// MarkerTracker: NVTX's and the vramtrace_ API's marks and ranges, as marker rows; which range
// a pop or an end closes is MarkerPairing's (marker_pairing.h).
#pragma once

#include <cstdint>

#include "collector/ingest_stats.h"
#include "collector/marker_pairing.h"
#include "shm_ring.h"
#include "vramtrace.pb.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

class MarkerTracker {
 public:
  MarkerTracker(storage::TraceWriter& writer, IngestStats& stats);

  // A Marker record of process `upid` on thread `utid`; `ranges`: the process's open ranges.
  void on_marker(MarkerPairing& ranges, int64_t upid, int64_t utid, const ring::RecordHeader& h,
                 const wire::Marker& m);

 private:
  storage::TraceWriter& writer_;
  IngestStats& stats_;
  int64_t next_marker_id_ = 1;
};

}  // namespace vramtrace::collector
