#include "viewer/model/stacked_timeline.h"

#include <algorithm>
#include <map>

#include "analysis/time/device_peaks.h"

namespace vramtrace::viewer {

StackedTimeline::StackedTimeline(const analysis::Timeline& timeline, std::string_view level)
    : start_ns_(timeline.start_ns), end_ns_(timeline.end_ns) {
  std::map<std::pair<int, int>, TimelineLayer> by_device_kind;
  for (const analysis::TimelineSeries& series : timeline.series) {
    if (series.level != level) continue;
    TimelineLayer& layer = by_device_kind[{series.device, series.kind}];
    if (layer.buckets.empty()) {
      layer.device = series.device;
      layer.kind = series.kind;
      layer.kind_name = series.kind_name;
      layer.level = series.level;
      layer.stacked =
          level == "block" || level == "role" || analysis::occupies_device_memory(series.kind);
      layer.buckets = series.buckets;
      continue;
    }
    for (std::size_t i = 0; i < layer.buckets.size() && i < series.buckets.size(); ++i) {
      layer.buckets[i].min_bytes += series.buckets[i].min_bytes;
      layer.buckets[i].max_bytes += series.buckets[i].max_bytes;
      layer.buckets[i].last_bytes += series.buckets[i].last_bytes;
    }
  }
  for (auto& [key, layer] : by_device_kind) {
    for (const analysis::TimelineBucket& bucket : layer.buckets)
      layer.peak_bytes = std::max(layer.peak_bytes, bucket.max_bytes);
    layers_.push_back(std::move(layer));
  }
}

std::vector<std::string> StackedTimeline::levels_of(const analysis::Timeline& timeline) {
  bool segment = false, block = false;
  for (const analysis::TimelineSeries& series : timeline.series) {
    segment = segment || series.level == "segment";
    block = block || series.level == "block";
  }
  std::vector<std::string> levels;
  if (segment) levels.emplace_back("segment");
  if (block) levels.emplace_back("block");
  return levels;
}

std::size_t StackedTimeline::bucket_at(std::int64_t ns) const {
  if (layers_.empty() || layers_.front().buckets.empty()) return 0;
  // Every series has the same bucket edges (analysis/time/timeline.h): search the first layer's.
  const std::vector<analysis::TimelineBucket>& buckets = layers_.front().buckets;
  const auto after = std::upper_bound(
      buckets.begin(), buckets.end(), ns,
      [](std::int64_t t, const analysis::TimelineBucket& bucket) { return t < bucket.start_ns; });
  if (after == buckets.begin()) return 0;
  return static_cast<std::size_t>(after - buckets.begin()) - 1;
}

std::vector<TimelineColumn> StackedTimeline::columns(const TimeAxis& axis) const {
  std::vector<TimelineColumn> columns(static_cast<std::size_t>(axis.width()));
  for (int x = 0; x < axis.width(); ++x) {
    TimelineColumn& column = columns[static_cast<std::size_t>(x)];
    const auto [from_ns, to_ns] = axis.column_span(x);
    std::uint64_t stacked_top = 0;
    for (std::size_t l = 0; const Extremes& layer : extremes(from_ns, to_ns - 1)) {
      column.min_bytes.push_back(layer.min_bytes);
      column.max_bytes.push_back(layer.max_bytes);
      stacked_top += layers_[l].stacked ? layer.max_bytes : 0;
      column.top_bytes =
          std::max(column.top_bytes, layers_[l].stacked ? stacked_top : layer.max_bytes);
      ++l;
    }
  }
  return columns;
}

std::vector<StackedTimeline::Extremes> StackedTimeline::extremes(std::int64_t from_ns,
                                                                 std::int64_t to_ns) const {
  std::vector<Extremes> found;
  const std::size_t first = bucket_at(from_ns), last = std::max(first, bucket_at(to_ns));
  for (const TimelineLayer& layer : layers_) {
    Extremes extremes{UINT64_MAX, 0};
    for (std::size_t b = first; b <= last && b < layer.buckets.size(); ++b) {
      extremes.min_bytes = std::min(extremes.min_bytes, layer.buckets[b].min_bytes);
      extremes.max_bytes = std::max(extremes.max_bytes, layer.buckets[b].max_bytes);
    }
    if (extremes.min_bytes == UINT64_MAX) extremes.min_bytes = 0;
    found.push_back(extremes);
  }
  return found;
}

std::vector<std::uint64_t> StackedTimeline::bytes_at(std::int64_t ns) const {
  std::vector<std::uint64_t> bytes;
  const std::size_t bucket = bucket_at(ns);
  for (const TimelineLayer& layer : layers_)
    bytes.push_back(bucket < layer.buckets.size() ? layer.buckets[bucket].last_bytes : 0);
  return bytes;
}

}  // namespace vramtrace::viewer
