#include "analysis/time/timeline_window.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

namespace vramtrace::analysis {
namespace {

// One series being swept through the window's buckets in time order.
struct Sweep {
  TimelineSeries* series = nullptr;
  std::uint64_t value = 0;  // live bytes after the last event applied
  std::size_t next = 0;     // the first bucket not yet started
};

}  // namespace

TimelineWindow build_timeline_window(const storage::TimeIndex& index, const Timeline& whole,
                                     const std::vector<std::int64_t>& edges,
                                     std::uint64_t max_events) {
  TimelineWindow window;
  if (edges.size() < 2) return window;
  const std::int64_t from_ns = edges.front(), to_ns = edges.back();
  window.timeline.start_ns = from_ns;
  window.timeline.end_ns = to_ns;
  const std::size_t buckets = edges.size() - 1;
  if (!index.finds_events_by_seq() &&
      static_cast<std::uint64_t>(index.last_allocation_id()) > max_events) {
    window.why_not = TimelineWindow::WhyNot::kUnindexedTrace;
    return window;
  }

  std::map<std::tuple<std::int64_t, int, int>, Sweep> sweeps;  // (upid, device, kind)
  std::set<std::int64_t> upids;
  for (const TimelineSeries& series : whole.series) {
    TimelineSeries& added = window.timeline.series.emplace_back(series);
    added.buckets.clear();
    added.buckets.reserve(buckets);
    added.peak_bytes = 0;
    upids.insert(series.upid);
  }
  for (TimelineSeries& series : window.timeline.series)
    sweeps[{series.upid, series.device, series.kind}].series = &series;

  // Starts every bucket before `j` that has not been started, at the series' value.
  const auto start_until = [&](Sweep& sweep, std::size_t j) {
    for (; sweep.next < j; ++sweep.next) {
      sweep.series->buckets.push_back(
          {edges[sweep.next], edges[sweep.next + 1], sweep.value, sweep.value, sweep.value});
    }
  };
  const auto bucket_of = [&](std::int64_t ns) {
    const auto after = std::upper_bound(edges.begin() + 1, edges.end() - 1, ns);
    return static_cast<std::size_t>(after - edges.begin()) - 1;
  };

  for (const std::int64_t upid : upids) {
    // Events at or before from_ns - 1 are before the window: sequence and time rise together
    // within a process.
    const std::uint64_t before = index.last_seq_at(upid, from_ns - 1);
    const std::uint64_t through = index.last_seq_at(upid, to_ns - 1);
    if (before > 0) {
      for (const storage::AllocationRecord& live : index.live_at(upid, before)) {
        const storage::AllocationRow& a = live.allocation;
        const auto found = sweeps.find({upid, a.device, a.kind});
        if (found != sweeps.end()) found->second.value += a.size;
      }
    }
    const bool whole_window = index.for_each_event_between(
        upid, before, through, [&](const storage::AllocationEvent& event) {
          if (++window.events > max_events) return false;
          const auto found = sweeps.find({upid, event.device, event.kind});
          if (found == sweeps.end()) return true;
          Sweep& sweep = found->second;
          const std::size_t j = bucket_of(event.ns);
          start_until(sweep, j + 1);
          // As the index's rollup: a free never takes a series below zero.
          sweep.value = event.type == storage::AllocationEvent::Type::kFree
                            ? sweep.value - std::min(sweep.value, event.size)
                            : sweep.value + event.size;
          TimelineBucket& bucket = sweep.series->buckets[j];
          bucket.min_bytes = std::min(bucket.min_bytes, sweep.value);
          bucket.max_bytes = std::max(bucket.max_bytes, sweep.value);
          bucket.last_bytes = sweep.value;
          return true;
        });
    if (!whole_window) {
      window.timeline.series.clear();
      return window;
    }
  }
  for (auto& [key, sweep] : sweeps) {
    start_until(sweep, buckets);
    for (const TimelineBucket& bucket : sweep.series->buckets)
      sweep.series->peak_bytes = std::max(sweep.series->peak_bytes, bucket.max_bytes);
  }
  window.exact = true;
  return window;
}

}  // namespace vramtrace::analysis
