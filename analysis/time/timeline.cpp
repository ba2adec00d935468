#include "analysis/time/timeline.h"

#include <algorithm>
#include <map>

#include "storage/schema.h"

namespace vramtrace::analysis {

Timeline build_timeline(const storage::TraceReader& trace, const storage::TimeIndex& index,
                        std::uint32_t buckets, const ProcessSelection& processes) {
  Timeline timeline;
  timeline.start_ns = index.start_ns();
  timeline.end_ns = index.end_ns();
  // Each coarse bucket is whole fine ones, the index's slices: no more coarse than fine.
  const std::uint64_t fine_count = index.bucket_count();
  const std::uint64_t n = std::clamp<std::uint64_t>(buckets, 1, fine_count);
  // The first fine bucket of coarse bucket j: the smallest i with i * n / fine_count >= j.
  const auto first_fine = [&](std::uint64_t j) { return (j * fine_count + n - 1) / n; };
  const auto fine_start = [&](std::uint64_t i) { return index.bucket_start_ns(i); };
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& process : trace.processes())
    pids[process.start.upid] = process.start.pid;

  TimelineSeries* series = nullptr;
  std::uint64_t carried = 0;                      // the series' value before the next coarse bucket
  std::uint64_t next = 0;                         // the next coarse bucket to fill
  const auto fill_until = [&](std::uint64_t j) {  // constant buckets with no fine data
    for (; next < j; ++next) {
      series->buckets.push_back({fine_start(first_fine(next)), fine_start(first_fine(next + 1)),
                                 carried, carried, carried});
    }
  };
  const auto finish_series = [&] {
    if (series == nullptr) return;
    fill_until(n);
    for (const TimelineBucket& bucket : series->buckets)
      series->peak_bytes = std::max(series->peak_bytes, bucket.max_bytes);
  };
  for (const storage::LiveBytesBucket& fine : index.buckets()) {
    if (!is_selected(processes, fine.upid)) continue;
    if (series == nullptr || series->upid != fine.upid || series->device != fine.device ||
        series->kind != fine.kind) {
      finish_series();
      TimelineSeries& added = timeline.series.emplace_back();
      added.upid = fine.upid;
      added.pid = pids[fine.upid];
      added.device = fine.device;
      added.kind = fine.kind;
      added.kind_name = trace.kind_name(fine.kind);
      added.level = fine.kind == storage::allocation_kind::kBlock ? "block" : "segment";
      series = &added;
      carried = 0;
      next = 0;
    }
    const std::uint64_t j = fine.bucket * n / fine_count;
    if (next <= j) {
      fill_until(j);
      series->buckets.push_back(
          {fine_start(first_fine(j)), fine_start(first_fine(j + 1)), carried, carried, carried});
      next = j + 1;
    }
    TimelineBucket& bucket = series->buckets.back();
    bucket.min_bytes = std::min(bucket.min_bytes, fine.min_bytes);
    bucket.max_bytes = std::max(bucket.max_bytes, fine.max_bytes);
    bucket.last_bytes = fine.last_bytes;
    carried = fine.last_bytes;
  }
  finish_series();
  return timeline;
}

}  // namespace vramtrace::analysis
