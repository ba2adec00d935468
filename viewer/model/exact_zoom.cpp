#include "viewer/model/exact_zoom.h"

#include <algorithm>

#include "storage/live_bytes_rollups.h"
#include "storage/time_index.h"

namespace vramtrace::viewer {

double index_bucket_ns(const analysis::Timeline& finest) {
  const double span = static_cast<double>(finest.end_ns - finest.start_ns + 1);
  // Slices of a power of two ns (storage::live_bytes_bucket_shift): the first one clipped to
  // the start, so the average is within one slice of the width.
  const std::size_t buckets =
      finest.series.empty() ? storage::kLiveBytesBuckets : finest.series.front().buckets.size();
  return span / static_cast<double>(std::max<std::size_t>(buckets, 1));
}

bool wants_exact_window(const TimeAxis& axis, double bucket_ns) {
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
