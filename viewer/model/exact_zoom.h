// When the timeline stops trusting the time index's buckets and computes the visible window
// from the allocation events themselves (analysis/time/timeline_window.h), and the window it asks
// for: one bucket per pixel column, on the column edges TimeAxis::column_span draws.
//
// The threshold: a view at fewer than kExactBelowBucketsPerColumn index buckets per pixel
// column. A column's bucketed value is the min and max of every bucket it touches, so a step
// is smeared over the buckets that straddle the column's edges: up to one bucket on each side.
// At two or more buckets per column that smear stays within the column next to it; below two
// it spreads over whole columns, and below one a bucket is a flat plateau several pixels wide.
// Zoomed out beyond the threshold the exact series would cost more events than it could show,
// and the buckets keep its min and max anyway.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/time/timeline_window.h"
#include "viewer/model/time_axis.h"

namespace vramtrace::viewer {

inline constexpr double kExactBelowBucketsPerColumn = 2.0;

// The width of the index's buckets, from the trace's timeline at its finest (the overview's:
// one bucket per index bucket, analysis::kMaxTimelineBuckets asked).
double index_bucket_ns(const analysis::Timeline& finest);

// True when `axis` shows fewer than kExactBelowBucketsPerColumn of the index's buckets, each
// `bucket_ns` wide, per pixel column.
bool wants_exact_window(const TimeAxis& axis, double bucket_ns);

// The edges of the axis's pixel columns: width + 1 of them, ascending.
std::vector<std::int64_t> column_edges(const TimeAxis& axis);

// The exact series of a window, and the column edges it was computed for.
struct ZoomedTimeline {
  std::vector<std::int64_t> edges;
  analysis::TimelineWindow window;
};

}  // namespace vramtrace::viewer
