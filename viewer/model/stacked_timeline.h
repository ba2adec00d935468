// The timeline as the viewer stacks it: analysis::Timeline's series of one level (segment:
// device memory and other kinds as the driver sees them; block: a caching allocator's tensors),
// summed over processes into one layer per (device, kind). Block and segment series are never
// stacked together, since blocks lie inside segments (analysis/time/timeline.h). At the segment
// level only the kinds that occupy device memory (analysis::occupies_device_memory: what the peaks
// add up) are stacked; pinned host memory, VMM reservations (address space) and VMM handles (memory
// counted again when mapped) are layers of their own, drawn unstacked, since adding them would
// count memory that is not there or count it twice. The "role" level
// (analysis/roles/role_timeline.h: one process's blocks, kind the role's index) is stacked like the
// block level.
//
// Level of detail: a view asks for one value pair per pixel column, the min and the max of each
// layer over the buckets the column covers, so the cost of a picture follows its width and the
// bucket count (at most analysis::kMaxTimelineBuckets), never the number of allocations. A
// spike narrower than a column stays visible as the column's max.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/time/timeline.h"
#include "viewer/model/time_axis.h"

namespace vramtrace::viewer {

struct TimelineLayer {
  int device = 0, kind = 0;
  std::string kind_name, level;
  bool stacked = true;           // false: drawn on its own, from 0 (see above)
  std::uint64_t peak_bytes = 0;  // the largest max of its buckets
  // Summed over processes: min is the sum of the processes' minima, max the sum of their maxima
  // (an upper bound when they peak apart), last the sum of their last values.
  std::vector<analysis::TimelineBucket> buckets;
};

// One pixel column: per layer (in layer order) the min and max bytes over the column's buckets.
struct TimelineColumn {
  std::vector<std::uint64_t> min_bytes, max_bytes;
  // The highest point drawn: the sum of the stacked layers' maxima, or an unstacked layer's
  // maximum if higher.
  std::uint64_t top_bytes = 0;
};

class StackedTimeline {
 public:
  StackedTimeline() = default;
  StackedTimeline(const analysis::Timeline& timeline, std::string_view level);

  // The levels `timeline` has series of, "segment" first.
  static std::vector<std::string> levels_of(const analysis::Timeline& timeline);

  std::int64_t start_ns() const { return start_ns_; }
  std::int64_t end_ns() const { return end_ns_; }
  const std::vector<TimelineLayer>& layers() const { return layers_; }
  bool empty() const { return layers_.empty(); }

  // One column per pixel of the axis's width.
  std::vector<TimelineColumn> columns(const TimeAxis& axis) const;
  // Per layer, the least and most bytes over the buckets that [from_ns, to_ns] touches.
  struct Extremes {
    std::uint64_t min_bytes = 0, max_bytes = 0;
  };
  std::vector<Extremes> extremes(std::int64_t from_ns, std::int64_t to_ns) const;
  // Per layer, the bytes live at `ns` (the `last` value of the bucket holding it).
  std::vector<std::uint64_t> bytes_at(std::int64_t ns) const;
  // The bucket holding `ns`, clamped to the buckets.
  std::size_t bucket_at(std::int64_t ns) const;

 private:
  std::int64_t start_ns_ = 0, end_ns_ = 0;
  std::vector<TimelineLayer> layers_;
};

}  // namespace vramtrace::viewer
