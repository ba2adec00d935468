// A process's allocations and frees in sequence order, from two ordered scans of the allocation
// table (its allocations by alloc_seq, its frees by free_seq) merged as they are read, or from
// the first alone with the frees held back: with the trace's (upid, seq) indexes SQLite reads
// each in order without sorting. Shared by TraceReader and TimeIndex, which prepare the scans on
// their own connections.
#pragma once

#include <cstdint>
#include <functional>

#include "storage/sqlite_statement.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

// `allocs` and `frees` each select (upid, seq, ns, device, kind, size, id), ordered by (upid,
// seq). A free sorts before an allocation of the same (upid, seq) (a damaged trace), so that a
// peak is never overstated. Stops when `visit` returns false. Returns SQLITE_DONE when both scans
// ran out, SQLITE_OK when `visit` stopped, or the code of the step that failed; both statements
// are reset.
int merge_allocation_events(sqlite::Statement& allocs, sqlite::Statement& frees,
                            const std::function<bool(const AllocationEvent&)>& visit);

// The same events from one scan: `allocs` selects (upid, alloc_seq, alloc_ns, device, kind,
// size, id, free_seq, free_ns), ordered by (upid, alloc_seq), and each allocation's free waits
// in a heap until the scan passes its number. Half the reads of the two scans (each row is
// looked up once, not twice), for memory in proportion to the allocations live at once that are
// freed later. Frees numbered past `last_seq` are left out, as a scan bounded there would leave
// them; so every event of the first `last_seq` numbers is visited when the scan starts at the
// process's first allocation. The order is merge_allocation_events', ties included, except for
// a free numbered at or before its own allocation, which no trace the collector writes has
// (every event has a number of its own, and a free comes after its allocation): it comes right
// after its allocation here. Returns as merge_allocation_events does.
int merge_allocation_events_in_one_scan(sqlite::Statement& allocs, std::uint64_t last_seq,
                                        const std::function<bool(const AllocationEvent&)>& visit);

}  // namespace vramtrace::storage
