// The writer's held-back allocation rows, seen by SQLite as a table of this connection, so that
// one `INSERT INTO allocation_compact SELECT ... FROM vramtrace_pending_allocation` (and one
// into allocation_detail) writes a whole batch.
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

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

struct sqlite3;

namespace vramtrace::storage {

// An allocation row not written yet, with its free once that is known, and the ids of the
// allocation_site and free_site rows (storage/schema.cpp) the writer filed them under.
struct PendingAllocation {
  // Made from its row and site, nothing else filled twice: zeroing the whole of it first, as
  // an aggregate's initialization does, cost a writer in a storm as much as the copy.
  PendingAllocation(const AllocationRow& made, std::int64_t made_site_id)
      : row(made), site_id(made_site_id) {}

  AllocationRow row;
  std::int64_t site_id = 0;
  std::optional<FreeRow> free;
  std::int64_t free_site_id = 0;
};

// Whether the row needs an allocation_detail row: one of its columns is set.
bool has_detail(const PendingAllocation& pending);

// The table's name, and its columns: allocation_compact's, then allocation_detail's after its
// id, then `has_detail` (1 or 0), then the row's live span (storage/live_span.h), NULL for a
// failed allocation, one whose free is not known yet, or one of level 0.
inline constexpr std::string_view kPendingAllocationTable = "vramtrace_pending_allocation";
inline constexpr std::string_view kPendingCompactColumns =
    "id, upid, site_id, address, size, size_minus_requested, alloc_seq, alloc_ns, free_site_id, "
    "free_seq_delta, free_ns_delta";
inline constexpr std::string_view kPendingDetailColumns =
    "vmm_handle, vmm_offset, segment_id, allocator_allocated, allocator_reserved, "
    "free_allocator_allocated, free_allocator_reserved, correlation_id";
inline constexpr std::string_view kPendingLiveSpanColumns =
    "live_span_level, live_span_bin, live_span_end_seq";

// Registers the table on `db`. Returns the SQLite result code.
int register_pending_allocation_table(sqlite3* db, const std::vector<PendingAllocation>* rows);

}  // namespace vramtrace::storage
