// A process's allocations and frees in sequence order, from two ordered scans of the allocation
// table (its allocations by alloc_seq, its frees by free_seq) merged as they are read: with the
// trace's (upid, seq) indexes SQLite reads each in order without sorting, and the events never
// sit in memory. Shared by TraceReader and TimeIndex, which prepare the scans on their own
// connections.
#pragma once

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

}  // namespace vramtrace::storage
