#include "storage/pending_rows_held.h"

#include <algorithm>
#include <map>
#include <optional>

#include "storage/schema.h"

namespace vramtrace::storage {

std::size_t pending_rows_to_write(const std::vector<PendingAllocation>& pending,
                                  std::int64_t held_before, std::size_t most_held) {
  std::map<std::int64_t, std::uint64_t> last_seq;
  for (const PendingAllocation& row : pending) {
    std::uint64_t& last = last_seq[row.row.upid];
    last = std::max(last, row.free ? row.free->free_seq : row.row.alloc_seq);
  }
  std::size_t cut = pending.size();
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const PendingAllocation& row = pending[i];
    if (row.free || row.row.result != 0 || row.row.id <= held_before) continue;
    if (last_seq[row.row.upid] - row.row.alloc_seq < static_cast<std::uint64_t>(kShortLifeEvents)) {
      cut = i;
      break;
    }
  }
  // The cut moves back to the earliest segment a waiting block names.
  const auto by_id = [](const PendingAllocation& row, std::int64_t id) { return row.row.id < id; };
  for (bool moved = true; moved;) {
    moved = false;
    for (std::size_t i = cut; i < pending.size(); ++i) {
      const std::optional<std::int64_t>& segment = pending[i].row.segment_id;
      if (!segment) continue;
      const auto end = pending.begin() + static_cast<std::ptrdiff_t>(cut);
      const auto it = std::lower_bound(pending.begin(), end, *segment, by_id);
      if (it != end && it->row.id == *segment) {
        cut = static_cast<std::size_t>(it - pending.begin());
        moved = true;
        break;
      }
    }
  }
  return pending.size() - cut > most_held ? pending.size() : cut;
}

}  // namespace vramtrace::storage
