#include "analysis/roles/role_timeline.h"

#include <algorithm>
#include <map>
#include <utility>

namespace vramtrace::analysis {

RoleSweep sweep_block_roles(std::span<const BlockLife> lives) {
  struct Event {
    std::int64_t ns;
    std::uint64_t seq;
    std::size_t series;
    std::int64_t delta;
  };
  RoleSweep sweep;
  sweep.blocks = lives.size();
  std::map<std::pair<int, int>, std::size_t> index;  // (device, role) -> series
  for (const BlockLife& life : lives) index.try_emplace({life.device, static_cast<int>(life.role)});
  for (auto& [key, series] : index) {
    series = sweep.series.size();
    sweep.series.push_back({key.first, static_cast<BlockRole>(key.second), {}, {}, 0});
  }
  std::vector<Event> events;
  events.reserve(lives.size() * 2);
  for (const BlockLife& life : lives) {
    const std::size_t series = index.at({life.device, static_cast<int>(life.role)});
    const auto size = static_cast<std::int64_t>(life.size);
    events.push_back({life.alloc_ns, life.alloc_seq, series, size});
    if (life.free_ns) events.push_back({*life.free_ns, life.free_seq, series, -size});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.ns != b.ns ? a.ns < b.ns : a.seq < b.seq;
  });
  std::vector<std::uint64_t> live(sweep.series.size(), 0);
  for (const Event& event : events) {
    RoleSteps& steps = sweep.series[event.series];
    std::uint64_t& bytes = live[event.series];
    bytes = static_cast<std::uint64_t>(static_cast<std::int64_t>(bytes) + event.delta);
    steps.ns.push_back(event.ns);
    steps.bytes.push_back(bytes);
    steps.peak_bytes = std::max(steps.peak_bytes, bytes);
  }
  return sweep;
}

Timeline role_timeline(const RoleSweep& sweep, std::span<const std::int64_t> edges) {
  Timeline timeline;
  if (edges.size() < 2) return timeline;
  timeline.start_ns = edges.front();
  timeline.end_ns = edges.back();
  for (const RoleSteps& steps : sweep.series) {
    TimelineSeries series;
    series.upid = sweep.upid;
    series.pid = sweep.pid;
    series.device = steps.device;
    series.kind = static_cast<int>(steps.role);
    series.kind_name = std::string(block_role_name(steps.role));
    series.level = "role";
    series.buckets.reserve(edges.size() - 1);
    // The first step at or after the bucket's start; the bytes before it are the step before.
    auto step = std::lower_bound(steps.ns.begin(), steps.ns.end(), edges.front());
    for (std::size_t b = 0; b + 1 < edges.size(); ++b) {
      TimelineBucket bucket{edges[b], edges[b + 1], 0, 0, 0};
      step = std::lower_bound(step, steps.ns.end(), edges[b]);
      auto at = static_cast<std::size_t>(step - steps.ns.begin());
      const std::uint64_t before = at == 0 ? 0 : steps.bytes[at - 1];
      bucket.min_bytes = bucket.max_bytes = bucket.last_bytes = before;
      for (; at < steps.ns.size() && steps.ns[at] < edges[b + 1]; ++at) {
        bucket.min_bytes = std::min(bucket.min_bytes, steps.bytes[at]);
        bucket.max_bytes = std::max(bucket.max_bytes, steps.bytes[at]);
        bucket.last_bytes = steps.bytes[at];
      }
      series.peak_bytes = std::max(series.peak_bytes, bucket.max_bytes);
      series.buckets.push_back(bucket);
    }
    timeline.series.push_back(std::move(series));
  }
  return timeline;
}

}  // namespace vramtrace::analysis
