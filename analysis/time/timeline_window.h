// The timeline of a window of time, exact: the series of `vramtrace timeline` (analysis/
// timeline.h) over caller-chosen bucket edges, computed from the allocation events themselves
// rather than from the time index's 16384 buckets, so that a window narrower than a few of
// those buckets (a zoomed-in view) still shows where inside them memory rose and fell.
//
// Each bucket keeps min, max and last as the index's do: the value a bucket starts with is the
// live bytes after every event before its start, and each event counts in the bucket its time
// falls in. The value carried into the window comes from the time index's live set just before
// it (TimeIndex::live_at); the events inside come through the trace's (upid, seq) indexes, so
// the work follows the window's events, never the trace's.
#pragma once

#include <cstdint>
#include <vector>

#include "analysis/time/timeline.h"
#include "storage/time_index.h"

namespace vramtrace::analysis {

// More events than this in a window and it is not worth reading them (about a second of
// SQLite reads): the caller shows the index's buckets instead and says so.
inline constexpr std::uint64_t kMaxWindowEvents = 2'000'000;

struct TimelineWindow {
  // False: not computed, for `why_not`; `timeline` has no series.
  bool exact = false;
  enum class WhyNot {
    kTooManyEvents,  // the window held more than the most events asked for
    // The trace lacks its (upid, seq) indexes (TimeIndex::finds_events_by_seq) and holds more
    // allocations than the most events asked for: finding the window's events would read them
    // all, whatever the window.
    kUnindexedTrace,
  };
  WhyNot why_not = WhyNot::kTooManyEvents;
  std::uint64_t events = 0;  // read, over every process of `whole`
  // `whole`'s series (same processes, devices, kinds and order), each with one bucket per pair
  // of neighbouring edges; start_ns and end_ns are the first and last edge.
  Timeline timeline;
};

// `edges` ascending, at least two: bucket j is [edges[j], edges[j+1]). `whole` is the timeline
// (any resolution) whose series to compute: its processes, devices and kinds.
TimelineWindow build_timeline_window(const storage::TimeIndex& index, const Timeline& whole,
                                     const std::vector<std::int64_t>& edges,
                                     std::uint64_t max_events = kMaxWindowEvents);

}  // namespace vramtrace::analysis
