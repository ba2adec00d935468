#include "collector/live_query.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <tuple>

#include "storage/schema.h"
#include "text/stack_text.h"
#include "text/text_style.h"

namespace vramtrace::collector {

using storage::kind_occupies_device_memory;
using text::count_of;
using text::format_bytes_exact;

void LiveQueries::open_checkpoint(uint64_t seq) {
  if (open_.size() == kMaxOpen) {
    open_.erase(open_.begin());
    ++dropped_;
    forget_unfollowed();
  }
  open_.push_back({seq});
}

void LiveQueries::on_alloc(int64_t id, uint64_t seq, int kind, uint64_t size,
                           std::optional<int64_t> callsite) {
  const bool block = kind == storage::allocation_kind::kBlock;
  saw_blocks_ = saw_blocks_ || block;
  if (open_.empty()) return;
  followed_[id] = Followed{seq, kind, size, callsite};
  for (Checkpoint& c : open_) {
    if (block) {
      c.block_bytes += size;
      c.block_peak = std::max(c.block_peak, c.block_bytes);
    } else if (kind_occupies_device_memory(kind)) {
      c.device_bytes += size;
      c.device_peak = std::max(c.device_peak, c.device_bytes);
    }
  }
}

void LiveQueries::on_block_in_segment(int64_t segment_id) {
  if (followed_.empty()) return;  // no checkpoint open: the usual case, one branch
  if (auto it = followed_.find(segment_id); it != followed_.end())
    it->second.allocator_segment = true;
}

void LiveQueries::on_free(int64_t id) {
  if (followed_.empty()) return;  // no checkpoint open: the usual case, one branch
  const auto it = followed_.find(id);
  if (it == followed_.end()) return;
  const Followed& f = it->second;
  for (Checkpoint& c : open_) {
    if (c.seq >= f.seq) continue;  // made before this checkpoint: not its to count
    if (f.kind == storage::allocation_kind::kBlock)
      c.block_bytes -= f.size;
    else if (kind_occupies_device_memory(f.kind))
      c.device_bytes -= f.size;
  }
  followed_.erase(it);
}

// Once the oldest checkpoint is gone, what was allocated before the new oldest need not be
// followed any more.
void LiveQueries::forget_unfollowed() {
  if (open_.empty()) {
    followed_.clear();
    return;
  }
  const uint64_t oldest = open_.front().seq;
  std::erase_if(followed_, [&](const auto& entry) { return entry.second.seq <= oldest; });
}

LiveQueries::Reply LiveQueries::answer(uint64_t query_id, uint64_t checkpoint_seq,
                                       const StackOf& stack_of, const KindName& kind_name) {
  Reply reply;
  wire::LiveReplyHeader& h = reply.header;
  std::memcpy(h.magic, wire::kLiveReplyMagic, sizeof h.magic);
  h.query_id = query_id;
  h.block_level = saw_blocks_ ? 1 : 0;
  const auto checkpoint = std::find_if(
      open_.begin(), open_.end(), [&](const Checkpoint& c) { return c.seq == checkpoint_seq; });
  if (checkpoint == open_.end()) {
    h.status = wire::kLiveReplyUnknownCheckpoint;
    return reply;
  }
  h.status = wire::kLiveReplyAnswered;
  h.peak_bytes = saw_blocks_ ? checkpoint->block_peak : checkpoint->device_peak;

  // (bytes, count) per (stack, kind), largest first.
  std::map<std::pair<std::optional<int64_t>, int>, std::pair<uint64_t, uint64_t>> groups;
  for (const auto& [id, f] : followed_) {
    if (f.seq <= checkpoint_seq || f.allocator_segment) continue;
    auto& [bytes, count] = groups[{f.callsite, f.kind}];
    bytes += f.size;
    count += 1;
    h.live_bytes += f.size;
    h.live_count += 1;
  }
  std::vector<std::tuple<uint64_t, uint64_t, std::optional<int64_t>, int>> largest;
  for (const auto& [key, totals] : groups)
    largest.emplace_back(totals.first, totals.second, key.first, key.second);
  std::sort(largest.begin(), largest.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(b), std::get<2>(a), std::get<3>(a)) <
           std::tie(std::get<0>(a), std::get<2>(b), std::get<3>(b));
  });

  std::string& text = reply.report;
  const char* level = saw_blocks_ ? "block" : "segment";
  text = fmt::format(
      "{} in {} made since the checkpoint still live ({} level); at most {} live "
      "at once\n",
      format_bytes_exact(h.live_bytes), count_of(h.live_count, "allocation", "allocations"), level,
      format_bytes_exact(h.peak_bytes));
  for (std::size_t i = 0; i < largest.size() && i < kGroupsShown; ++i) {
    const auto& [bytes, count, callsite, kind] = largest[i];
    const std::string name = kind_name(kind);
    const std::vector<storage::StackFrame> stack = stack_of(callsite);
    text += fmt::format("\n{} in {}{}\n", format_bytes_exact(bytes),
                        count_of(count, name + " allocation", name + " allocations"),
                        stack.empty() ? " (no stack recorded)" : " from:");
    // Python-first, as the reports show it: a test's failure should open on the test's line.
    text += text::format_stack(stack, text::StackView::kPythonFirst, "    ", kFramesShown);
  }
  if (largest.size() > kGroupsShown)
    text += fmt::format("\n... {} more stacks (the trace has them all)\n",
                        largest.size() - kGroupsShown);
  if (text.size() > wire::kMaxLiveReportBytes) text.resize(wire::kMaxLiveReportBytes);
  h.report_bytes = static_cast<uint32_t>(text.size());

  open_.erase(checkpoint);
  forget_unfollowed();
  return reply;
}

}  // namespace vramtrace::collector
