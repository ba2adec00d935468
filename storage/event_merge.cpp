#include "storage/event_merge.h"

#include <algorithm>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace vramtrace::storage {
namespace {

// The event of the current row of a scan selecting (upid, seq, ns, device, kind, size, id).
AllocationEvent event_of(const sqlite::Statement& row, AllocationEvent::Type type) {
  return AllocationEvent{type,         row.int64(6), row.int64(0), row.uint64(1),
                         row.int64(2), row.int32(3), row.int32(4), row.uint64(5)};
}

}  // namespace

int merge_allocation_events(sqlite::Statement& allocs, sqlite::Statement& frees,
                            const std::function<bool(const AllocationEvent&)>& visit) {
  int failed = SQLITE_OK;
  const auto next = [&](sqlite::Statement& statement, AllocationEvent::Type type,
                        std::optional<AllocationEvent>* event) {
    event->reset();
    if (failed != SQLITE_OK) return;
    const int rc = statement.step();
    if (rc == SQLITE_DONE) return;
    if (rc != SQLITE_ROW) {
      failed = rc;
      return;
    }
    *event = event_of(statement, type);
  };
  std::optional<AllocationEvent> alloc, free;
  next(allocs, AllocationEvent::Type::kAlloc, &alloc);
  next(frees, AllocationEvent::Type::kFree, &free);
  int result = SQLITE_DONE;
  while ((alloc || free) && failed == SQLITE_OK) {
    const bool take_free =
        free && (!alloc || std::pair(free->upid, free->seq) <= std::pair(alloc->upid, alloc->seq));
    std::optional<AllocationEvent>& taken = take_free ? free : alloc;
    if (!visit(*taken)) {
      result = SQLITE_OK;
      break;
    }
    next(take_free ? frees : allocs, taken->type, &taken);
  }
  allocs.reset();
  frees.reset();
  return failed != SQLITE_OK ? failed : result;
}

int merge_allocation_events_in_one_scan(sqlite::Statement& allocs, std::uint64_t last_seq,
                                        const std::function<bool(const AllocationEvent&)>& visit) {
  // Frees waiting for their turn, a min-heap on (upid, seq).
  std::vector<AllocationEvent> frees;
  // Frees of the same number (a damaged trace) by id, as the index of frees would give them.
  const auto later = [](const AllocationEvent& a, const AllocationEvent& b) {
    return std::tuple(a.upid, a.seq, a.allocation_id) > std::tuple(b.upid, b.seq, b.allocation_id);
  };
  // Visits the waiting frees that come before (upid, seq): a free before an allocation of the
  // same number, as merge_allocation_events orders them.
  const auto visit_frees_through = [&](std::int64_t upid, std::uint64_t seq) {
    while (!frees.empty() &&
           std::pair(frees.front().upid, frees.front().seq) <= std::pair(upid, seq)) {
      std::pop_heap(frees.begin(), frees.end(), later);
      const AllocationEvent free = frees.back();
      frees.pop_back();
      if (!visit(free)) return false;
    }
    return true;
  };
  int rc = SQLITE_OK;
  while ((rc = allocs.step()) == SQLITE_ROW) {
    const AllocationEvent alloc = event_of(allocs, AllocationEvent::Type::kAlloc);
    if (!visit_frees_through(alloc.upid, alloc.seq) || !visit(alloc)) {
      allocs.reset();
      return SQLITE_OK;
    }
    if (allocs.is_null(7) || allocs.uint64(7) > last_seq) continue;
    AllocationEvent free = alloc;
    free.type = AllocationEvent::Type::kFree;
    free.seq = allocs.uint64(7);
    free.ns = allocs.int64(8);
    frees.push_back(free);
    std::push_heap(frees.begin(), frees.end(), later);
  }
  allocs.reset();
  if (rc != SQLITE_DONE) return rc;
  return visit_frees_through(INT64_MAX, UINT64_MAX) ? SQLITE_DONE : SQLITE_OK;
}

}  // namespace vramtrace::storage
