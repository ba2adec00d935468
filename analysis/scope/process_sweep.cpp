#include "analysis/scope/process_sweep.h"

#include <algorithm>

#include "storage/schema.h"

namespace vramtrace::analysis {

namespace kind = storage::allocation_kind;

ProcessSweep::ProcessSweep(const std::vector<storage::MarkerRecord>& ranges)
    : ranges_(ranges),
      levels_(ranges.size()),
      order_(ranges.size()),
      range_group_(ranges.size(), 0) {
  for (std::size_t i = 0; i < ranges.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
    return ranges[a].start.start_seq < ranges[b].start.start_seq;
  });
}

void ProcessSweep::on_event(std::uint64_t seq, bool alloc, int kind, int device,
                            std::uint64_t size) {
  begin_ranges_before(seq);
  end_ranges_by(seq);
  const auto move = [&](std::uint64_t& value) {
    value = alloc ? value + size : value - std::min(value, size);
  };
  if (kind == kind::kBlock) {
    move(block_bytes_[device]);
    move(all_blocks_);
    if (!group_most_.empty()) group_most_.back() = std::max(group_most_.back(), all_blocks_);
  } else if (kind == kind::kHostPinned) {
    move(pinned_);
    pinned_allocations_ += alloc ? 1 : 0;
    if (pinned_ > pinned_peak_.bytes) pinned_peak_ = {pinned_, seq};
  }
}

void ProcessSweep::finish() {
  begin_ranges_before(UINT64_MAX);
  std::vector<std::uint64_t> most_from(group_most_.size() + 1, 0);
  for (std::size_t g = group_most_.size(); g-- > 0;)
    most_from[g] = std::max(group_most_[g], most_from[g + 1]);
  while (!open_.empty()) {
    const std::size_t i = open_.top().second;
    open_.pop();
    levels_[i].most = std::max(levels_[i].base, most_from[range_group_[i]]);
  }
}

void ProcessSweep::begin_ranges_before(std::uint64_t seq) {
  bool grouped = false;
  for (; next_ < order_.size(); ++next_) {
    const std::size_t i = order_[next_];
    const storage::MarkerRecord& m = ranges_[i];
    if (m.start.start_seq >= seq) break;
    if (!grouped) {
      group_most_.push_back(all_blocks_);
      grouped = true;
    }
    range_group_[i] = group_most_.size() - 1;
    levels_[i].base = all_blocks_;
    if (m.start.depth == 0) levels_[i].base_by_device = block_bytes_;
    open_.emplace(m.end ? m.end->end_seq : UINT64_MAX, i);
  }
}

void ProcessSweep::end_ranges_by(std::uint64_t seq) {
  while (!open_.empty() && open_.top().first <= seq) {
    const std::size_t i = open_.top().second;
    open_.pop();
    std::uint64_t most = levels_[i].base;
    for (std::size_t g = range_group_[i]; g < group_most_.size(); ++g)
      most = std::max(most, group_most_[g]);
    levels_[i].most = most;
  }
}

}  // namespace vramtrace::analysis
