#include "viewer/model/exact_zoom.h"

#include "analysis/live_bytes_rollups.h"
#include "storage/time_index.h"

namespace vramtrace::viewer {

bool wants_exact_window(const TimeAxis& axis) {
  // About as the index cuts them: at most kLiveBytesBuckets slices of the trace's end - start +
  // 1 ns, and more than half that many (storage::live_bytes_bucket_shift).
  const double bucket_ns = static_cast<double>(axis.trace_end_ns() - axis.trace_start_ns() + 1) /
                           analysis::kLiveBytesBuckets;
  const double column_ns =
      static_cast<double>(axis.visible_end_ns() - axis.visible_start_ns()) / axis.width();
  return column_ns < kExactBelowBucketsPerColumn * bucket_ns;
}

std::vector<std::int64_t> column_edges(const TimeAxis& axis) {
  std::vector<std::int64_t> edges;
  edges.reserve(static_cast<std::size_t>(axis.width()) + 1);
  for (int x = 0; x < axis.width(); ++x) edges.push_back(axis.column_span(x).first);
  edges.push_back(axis.column_span(axis.width() - 1).second);
  return edges;
}

}  // namespace vramtrace::viewer
