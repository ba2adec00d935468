// What each process left live, added up for the time index's live_at_end table (docs/schema.md):
// one group per (process, kind, device, callsite, segment), and one per live allocator segment.
// The writer adds the rows it holds as live when a recording ends; the index build adds the
// never-freed spans.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <tuple>
#include <utility>

#include "storage/sqlite_statement.h"

namespace vramtrace::storage {

class LiveAtEndGroups {
 public:
  struct Group {
    std::int64_t upid = 0;
    int kind = 0, device = 0;
    std::optional<std::int64_t> callsite_id, segment_id;
    // The allocation's id when it is an allocator segment (the reports weigh its bytes against
    // the live blocks in it); unset for every other allocation.
    std::optional<std::int64_t> allocator_segment_id;
  };

  void add(const Group& group, std::uint64_t count, std::uint64_t bytes);

  // Binds each group to `insert` (INSERT INTO live_at_end VALUES(?1, ..., ?8), in the table's
  // column order) and hands it to `step`.
  void write(sqlite::Statement& insert, const std::function<void(sqlite::Statement&)>& step) const;

 private:
  using Key = std::tuple<std::int64_t, int, int, std::optional<std::int64_t>,
                         std::optional<std::int64_t>, std::optional<std::int64_t>>;
  std::map<Key, std::pair<std::uint64_t, std::uint64_t>> groups_;  // -> (count, bytes)
  // Rows left live by one stack mostly come one after another: the last group is tried first.
  std::map<Key, std::pair<std::uint64_t, std::uint64_t>>::iterator last_ = groups_.end();
};

}  // namespace vramtrace::storage
