#include "storage/live_at_end.h"

namespace vramtrace::storage {

void LiveAtEndGroups::add(const Group& group, std::uint64_t count, std::uint64_t bytes) {
  const Key key{group.upid,        group.kind,       group.device,
                group.callsite_id, group.segment_id, group.allocator_segment_id};
  if (last_ == groups_.end() || last_->first != key) last_ = groups_.try_emplace(key).first;
  last_->second.first += count;
  last_->second.second += bytes;
}

void LiveAtEndGroups::write(sqlite::Statement& insert,
                            const std::function<void(sqlite::Statement&)>& step) const {
  for (const auto& [key, totals] : groups_) {
    const auto& [upid, kind, device, callsite_id, segment_id, allocator_segment_id] = key;
    insert.bind_int64(1, upid);
    insert.bind_int64(2, kind);
    insert.bind_int64(3, device);
    insert.bind_optional_int64(4, callsite_id);
    insert.bind_optional_int64(5, segment_id);
    insert.bind_optional_int64(6, allocator_segment_id);
    insert.bind_uint64(7, totals.first);
    insert.bind_uint64(8, totals.second);
    step(insert);
  }
}

}  // namespace vramtrace::storage
