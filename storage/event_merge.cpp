#include "storage/event_merge.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "storage/allocation_columns.h"
#include "storage/schema.h"

namespace vramtrace::storage {
namespace {

// The event of the current row of a scan selecting (upid, seq, ns, device, kind, size, id), and
// alloc_callsite_id as its tenth column, when it has one.
AllocationEvent event_of(const sqlite::Statement& row, AllocationEvent::Type type) {
  AllocationEvent event{type,         row.int64(6), row.int64(0), row.uint64(1),
                        row.int64(2), row.int32(3), row.int32(4), allocation_size(row, 5, 6)};
  if (row.column_count() > 9) event.callsite_id = row.optional_int64(9);
  return event;
}

// Frees waiting for their turn: a min-heap on (upid, seq), frees of the same number (a damaged
// trace) by id, as the index of frees would give them.
class WaitingFrees {
 public:
  void push(const AllocationEvent& free) {
    frees_.push_back(free);
    std::push_heap(frees_.begin(), frees_.end(), later);
  }
  const AllocationEvent* first() const { return frees_.empty() ? nullptr : &frees_.front(); }
  AllocationEvent pop() {
    std::pop_heap(frees_.begin(), frees_.end(), later);
    const AllocationEvent free = frees_.back();
    frees_.pop_back();
    return free;
  }

 private:
  static bool later(const AllocationEvent& a, const AllocationEvent& b) {
    return std::tuple(a.upid, a.seq, a.allocation_id) > std::tuple(b.upid, b.seq, b.allocation_id);
  }
  std::vector<AllocationEvent> frees_;
};

// The free of the current row of a scan selecting (upid, alloc_seq, alloc_ns, device, kind,
// size, id, free_seq, free_ns); unset when it was never freed.
std::optional<AllocationEvent> free_of(const sqlite::Statement& row) {
  if (row.is_null(7)) return std::nullopt;
  AllocationEvent free = event_of(row, AllocationEvent::Type::kFree);
  free.seq = row.uint64(7);
  free.ns = row.int64(8);
  return free;
}

}  // namespace

int AllocationScan::step() {
  if (!row_read_ && !rows_done_) {
    const int rc = rows_.step();
    if (rc == SQLITE_ROW) {
      row_alloc_ = event_of(rows_, AllocationEvent::Type::kAlloc);
      row_free_ = free_of(rows_);
      row_read_ = true;
    } else if (rc == SQLITE_DONE) {
      rows_done_ = true;
    } else {
      return rc;
    }
  }
  if (!packed_read_ && !packed_done_) {
    std::int64_t upid = 0;
    const PackedAllocation* packed = cursor_ != nullptr ? cursor_->next(&upid) : nullptr;
    if (packed != nullptr) {
      packed_alloc_ = packed_->alloc_event(upid, *packed);
      packed_free_ = packed_->free_event(upid, *packed);
      packed_read_ = true;
    } else {
      packed_done_ = true;
    }
  }
  if (!row_read_ && !packed_read_) return SQLITE_DONE;
  const auto key = [](const AllocationEvent& event) {
    return std::tuple(event.upid, event.seq, event.allocation_id);
  };
  if (row_read_ && (!packed_read_ || key(row_alloc_) <= key(packed_alloc_))) {
    alloc_ = row_alloc_;
    free_ = row_free_;
    row_read_ = false;
  } else {
    alloc_ = packed_alloc_;
    free_ = packed_free_;
    packed_read_ = false;
  }
  return SQLITE_ROW;
}

int merge_allocation_events_in_one_scan(AllocationScan& allocs, std::uint64_t last_seq,
                                        const std::function<bool(const AllocationEvent&)>& visit) {
  WaitingFrees frees;
  // Visits the waiting frees that come before (upid, seq): a free before an allocation of the
  // same number.
  const auto visit_frees_through = [&](std::int64_t upid, std::uint64_t seq) {
    while (frees.first() != nullptr &&
           std::pair(frees.first()->upid, frees.first()->seq) <= std::pair(upid, seq)) {
      if (!visit(frees.pop())) return false;
    }
    return true;
  };
  int rc = SQLITE_OK;
  while ((rc = allocs.step()) == SQLITE_ROW) {
    const AllocationEvent& alloc = allocs.alloc();
    if (!visit_frees_through(alloc.upid, alloc.seq) || !visit(alloc)) {
      allocs.reset();
      return SQLITE_OK;
    }
    const std::optional<AllocationEvent>& free = allocs.free();
    if (free && free->seq <= last_seq) frees.push(*free);
  }
  allocs.reset();
  if (rc != SQLITE_DONE) return rc;
  return visit_frees_through(INT64_MAX, UINT64_MAX) ? SQLITE_DONE : SQLITE_OK;
}

int merge_allocation_events_in_window(AllocationScan& allocs, sqlite::Statement& long_frees,
                                      std::uint64_t after_seq, std::uint64_t through_seq,
                                      const std::function<bool(const AllocationEvent&)>& visit) {
  int failed = SQLITE_OK;
  std::optional<AllocationEvent> long_free;
  const auto next_long_free = [&] {
    long_free.reset();
    const int rc = long_frees.step();
    if (rc == SQLITE_ROW) {
      long_free = event_of(long_frees, AllocationEvent::Type::kFree);
    } else if (rc != SQLITE_DONE) {
      failed = rc;
    }
  };
  WaitingFrees short_frees;
  // Visits the frees of both kinds numbered up to `seq`, in order: a free before an allocation
  // of the same number.
  const auto visit_frees_through = [&](std::uint64_t seq) {
    while (failed == SQLITE_OK) {
      const AllocationEvent* waiting = short_frees.first();
      const bool short_due = waiting != nullptr && waiting->seq <= seq;
      const bool long_due = long_free && long_free->seq <= seq;
      if (!short_due && !long_due) return true;
      if (long_due && (!short_due || std::pair(long_free->seq, long_free->allocation_id) <
                                         std::pair(waiting->seq, waiting->allocation_id))) {
        if (!visit(*long_free)) return false;
        next_long_free();
      } else if (!visit(short_frees.pop())) {
        return false;
      }
    }
    return true;
  };
  next_long_free();
  int rc = SQLITE_OK;
  bool stopped = false;
  while (failed == SQLITE_OK && (rc = allocs.step()) == SQLITE_ROW) {
    const AllocationEvent& alloc = allocs.alloc();
    if (alloc.seq > after_seq && (!visit_frees_through(alloc.seq) || !visit(alloc))) {
      stopped = true;
      break;
    }
    // A free numbered at or before its own allocation (a damaged trace) is not short: the
    // index of frees holds it.
    const std::optional<AllocationEvent>& free = allocs.free();
    if (free && free->seq > after_seq && free->seq <= through_seq && free->seq > alloc.seq &&
        free->seq - alloc.seq <= static_cast<std::uint64_t>(kShortLifeEvents))
      short_frees.push(*free);
  }
  if (!stopped && failed == SQLITE_OK && rc != SQLITE_ROW && rc != SQLITE_DONE) failed = rc;
  if (!stopped && failed == SQLITE_OK) stopped = !visit_frees_through(UINT64_MAX);
  allocs.reset();
  long_frees.reset();
  if (failed != SQLITE_OK) return failed;
  return stopped ? SQLITE_OK : SQLITE_DONE;
}

}  // namespace vramtrace::storage
