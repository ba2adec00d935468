// The writer's held-back allocation rows, seen by SQLite as a table of this connection, so that
// one `INSERT INTO allocation SELECT ... FROM vramtrace_pending_allocation` writes a whole batch.
//
// Why: row by row, each allocation cost a statement's start and end, a cursor seek, and a bind
// call per column, more than the row's own B-tree work. Read through a virtual table, the batch
// is one statement whose cursor appends row after row.
//
// The table is eponymous (it needs no CREATE VIRTUAL TABLE, so nothing of it is stored in the
// trace), read-only, and exists only on the connection that registered it. Its rows are the
// vector given at registration, read in place while a statement runs; the vector must outlive
// the connection's statements and not change while one runs.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

struct sqlite3;

namespace vramtrace::storage {

// An allocation row not written yet, with its free once that is known.
struct PendingAllocation {
  AllocationRow row;
  std::optional<FreeRow> free;
};

// The table's name, and its columns: those of `allocation` that the writer sets, in the
// table's order.
inline constexpr std::string_view kPendingAllocationTable = "vramtrace_pending_allocation";
inline constexpr std::string_view kPendingAllocationColumns =
    "id, upid, kind, api, device, stream, address, size, requested_size, flags, pool, result, "
    "alloc_seq, alloc_ns, alloc_utid, alloc_callsite_id, free_seq, free_ns, free_utid, "
    "free_callsite_id, free_api, vmm_handle, vmm_offset, segment_id, allocator_allocated, "
    "allocator_reserved, free_allocator_allocated, free_allocator_reserved, correlation_id";

// Registers the table on `db`. Returns the SQLite result code.
int register_pending_allocation_table(sqlite3* db, const std::vector<PendingAllocation>* rows);

}  // namespace vramtrace::storage
