#include "storage/event_merge.h"

#include <optional>
#include <utility>

namespace vramtrace::storage {

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
    *event = AllocationEvent{type,
                             statement.int64(6),
                             statement.int64(0),
                             statement.uint64(1),
                             statement.int64(2),
                             statement.int32(3),
                             statement.int32(4),
                             statement.uint64(5)};
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

}  // namespace vramtrace::storage
