// Processes' allocations and frees in sequence order, from ordered scans of the allocation table:
// its allocations by alloc_seq with the frees held back until their turn, and for a window of
// one process, the frees of long lives by free_seq beside them. With the trace's (upid, seq)
// indexes SQLite reads each scan in order without sorting. Shared by TraceReader and TimeIndex,
// which prepare the scans on their own connections.
#pragma once

#include <cstdint>
#include <functional>

#include "storage/packed_allocations.h"
#include "storage/sqlite_statement.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

// The allocations a merge reads, in (upid, alloc_seq) order, each with its free: the rows of a
// statement selecting (upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns),
// and optionally alloc_callsite_id (AllocationEvent::callsite_id), ordered by (upid,
// alloc_seq), and beside them, where a cursor is given, the packed allocations
// of the same processes and numbers (storage/packed_allocations.h); of one number, by id.
class AllocationScan {
 public:
  explicit AllocationScan(sqlite::Statement& rows, PackedAllocations* packed = nullptr,
                          PackedAllocations::Cursor* cursor = nullptr)
      : rows_(rows), packed_(packed), cursor_(cursor) {}
  // SQLITE_ROW with the next in alloc() and free(), SQLITE_DONE at the end, or the code of the
  // statement's step that failed.
  int step();
  const AllocationEvent& alloc() const { return alloc_; }
  const std::optional<AllocationEvent>& free() const { return free_; }
  // Resets the statement.
  void reset() { rows_.reset(); }

 private:
  sqlite::Statement& rows_;
  PackedAllocations* packed_;
  PackedAllocations::Cursor* cursor_;
  bool row_read_ = false, rows_done_ = false, packed_read_ = false, packed_done_ = false;
  AllocationEvent row_alloc_, packed_alloc_, alloc_;
  std::optional<AllocationEvent> row_free_, packed_free_, free_;
};

// The order: by (upid, seq); a free before an allocation of the same (upid, seq) (a damaged
// trace), so that a peak is never overstated; events of one kind and number by id.
//
// Every event from one scan: `allocs` selects (upid, alloc_seq, alloc_ns, device, kind, size,
// id, free_seq, free_ns), ordered by (upid, alloc_seq), and each allocation's free waits in a
// heap until the scan passes its number: each row is looked up once, for memory in proportion to
// the allocations live at once that are freed later. Frees numbered past `last_seq` are left out,
// as a scan bounded there would leave them; so every event of the first `last_seq` numbers is
// visited when the scan starts at the process's first allocation. A free numbered at or before its
// own allocation, which no trace the collector writes has (every event has a number of its own, and
// a free comes after its allocation), comes right after its allocation. Stops when `visit` returns
// false. Returns SQLITE_DONE when the scan ran out, SQLITE_OK when `visit` stopped, or the code of
// the step that failed; the statement is reset.
int merge_allocation_events_in_one_scan(AllocationScan& allocs, std::uint64_t last_seq,
                                        const std::function<bool(const AllocationEvent&)>& visit);

// The events of one process numbered after_seq < seq <= through_seq, in that order, where the index
// of frees holds the long lives alone (storage/schema.h, kShortLifeEvents): `allocs` selects as
// merge_allocation_events_in_one_scan's does the allocations numbered after_seq - kShortLifeEvents
// < alloc_seq <= through_seq, ordered by alloc_seq, and gives the window's allocations and its
// short lives' frees, which wait in a heap as there; `long_frees` selects (upid, seq, ns, device,
// kind, size, id) of the window's frees of the other lives, ordered by (free_seq, id). Returns as
// the one scan does; both statements are reset.
int merge_allocation_events_in_window(AllocationScan& allocs, sqlite::Statement& long_frees,
                                      std::uint64_t after_seq, std::uint64_t through_seq,
                                      const std::function<bool(const AllocationEvent&)>& visit);

}  // namespace vramtrace::storage
