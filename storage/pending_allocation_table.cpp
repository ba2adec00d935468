#include "storage/pending_allocation_table.h"

#include <sqlite3.h>

#include <cstdint>
#include <new>
#include <string>

#include "storage/live_span.h"

namespace vramtrace::storage {
namespace {

using Rows = std::vector<PendingAllocation>;

// The table's columns, by their position: kPendingCompactColumns, then kPendingDetailColumns,
// then has_detail, then kPendingLiveSpanColumns.
enum Column {
  kId,
  kUpid,
  kSiteId,
  kAddress,
  kSize,
  kSizeMinusRequested,
  kAllocSeq,
  kAllocNs,
  kFreeSiteId,
  kFreeSeqDelta,
  kFreeNsDelta,
  kVmmHandle,
  kVmmOffset,
  kSegmentId,
  kAllocatorAllocated,
  kAllocatorReserved,
  kFreeAllocatorAllocated,
  kFreeAllocatorReserved,
  kCorrelationId,
  kHasDetail,
  kLiveSpanLevel,
  kLiveSpanBin,
  kLiveSpanEndSeq,
};

struct Table {
  sqlite3_vtab base{};
  const Rows* rows = nullptr;
};

struct Cursor {
  sqlite3_vtab_cursor base{};
  std::size_t index = 0;
};

const Rows& rows_of(sqlite3_vtab_cursor* cursor) {
  return *reinterpret_cast<Table*>(cursor->pVtab)->rows;
}

void result(sqlite3_context* context, std::int64_t value) {
  sqlite3_result_int64(context, value);
}

// Unsigned values are stored as the int64 with the same bits, as everywhere in the trace.
void result(sqlite3_context* context, std::uint64_t value) {
  sqlite3_result_int64(context, static_cast<std::int64_t>(value));
}

template <typename T>
void result(sqlite3_context* context, const std::optional<T>& value) {
  if (value) {
    result(context, *value);
  } else {
    sqlite3_result_null(context);
  }
}

// SQLite's callbacks are C: nothing may throw out of them, so allocations here fail with
// SQLITE_NOMEM instead.
int connect(sqlite3* db, void* aux, int, const char* const*, sqlite3_vtab** vtab, char**) {
  std::string schema;
  try {
    schema = "CREATE TABLE x(" + std::string(kPendingCompactColumns) + ", " +
             std::string(kPendingDetailColumns) + ", has_detail, " +
             std::string(kPendingLiveSpanColumns) + ")";
  } catch (...) {
    return SQLITE_NOMEM;
  }
  if (const int rc = sqlite3_declare_vtab(db, schema.c_str()); rc != SQLITE_OK) return rc;
  auto* table = new (std::nothrow) Table;
  if (table == nullptr) return SQLITE_NOMEM;
  table->rows = static_cast<const Rows*>(aux);
  *vtab = &table->base;
  return SQLITE_OK;
}

int disconnect(sqlite3_vtab* vtab) {
  delete reinterpret_cast<Table*>(vtab);
  return SQLITE_OK;
}

int best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  info->estimatedCost = 1e6;  // one full scan, in the vector's (ascending id) order
  return SQLITE_OK;
}

int open_cursor(sqlite3_vtab*, sqlite3_vtab_cursor** cursor) {
  auto* opened = new (std::nothrow) Cursor;
  if (opened == nullptr) return SQLITE_NOMEM;
  *cursor = &opened->base;
  return SQLITE_OK;
}

int close_cursor(sqlite3_vtab_cursor* cursor) {
  delete reinterpret_cast<Cursor*>(cursor);
  return SQLITE_OK;
}

int filter(sqlite3_vtab_cursor* cursor, int, const char*, int, sqlite3_value**) {
  reinterpret_cast<Cursor*>(cursor)->index = 0;
  return SQLITE_OK;
}

int next(sqlite3_vtab_cursor* cursor) {
  ++reinterpret_cast<Cursor*>(cursor)->index;
  return SQLITE_OK;
}

int eof(sqlite3_vtab_cursor* cursor) {
  return reinterpret_cast<Cursor*>(cursor)->index >= rows_of(cursor).size() ? 1 : 0;
}

int rowid(sqlite3_vtab_cursor* cursor, sqlite3_int64* id) {
  *id = static_cast<sqlite3_int64>(reinterpret_cast<Cursor*>(cursor)->index);
  return SQLITE_OK;
}

// The difference of two values stored as int64 bit patterns, as the int64 with its bits: the
// view adds it back with the same wrap-around for every value a real trace has.
std::int64_t difference(std::uint64_t a, std::uint64_t b) {
  return static_cast<std::int64_t>(a - b);
}

// Sets the value of `column` of `pending` as the statement's result.
void put_column(sqlite3_context* context, const PendingAllocation& pending, int column) {
  const AllocationRow& row = pending.row;
  const std::optional<FreeRow>& free = pending.free;
  switch (column) {
    case kId:
      return result(context, row.id);
    case kUpid:
      return result(context, row.upid);
    case kSiteId:
      return result(context, pending.site_id);
    case kAddress:
      return result(context, row.address);
    case kSize:
      return result(context, row.size);
    case kSizeMinusRequested:
      return result(context, difference(row.size, row.requested_size));
    case kAllocSeq:
      return result(context, row.alloc_seq);
    case kAllocNs:
      return result(context, row.alloc_ns);
    case kVmmHandle:
      return result(context, row.vmm_handle);
    case kVmmOffset:
      return result(context, row.vmm_offset);
    case kSegmentId:
      return result(context, row.segment_id);
    case kAllocatorAllocated:
      return result(context, row.allocator_allocated);
    case kAllocatorReserved:
      return result(context, row.allocator_reserved);
    case kCorrelationId:
      if (row.correlation_id) return result(context, std::int64_t{*row.correlation_id});
      return sqlite3_result_null(context);
    case kHasDetail:
      return result(context, std::int64_t{has_detail(pending) ? 1 : 0});
    default:
      break;
  }
  if (!free) return sqlite3_result_null(context);
  // A failed allocation has no live span; a live one gets its span once its free is known.
  const auto alloc_seq = static_cast<std::int64_t>(row.alloc_seq);
  const auto free_seq = static_cast<std::int64_t>(free->free_seq);
  switch (column) {
    case kLiveSpanLevel: {
      // Level 0 is read through the (upid, alloc_seq) index instead (storage/live_span.h).
      const int level = live_span_level(alloc_seq, free_seq);
      if (row.result != 0 || level == 0) return sqlite3_result_null(context);
      return result(context, std::int64_t{level});
    }
    case kLiveSpanBin:
      return result(context, live_span_bin(live_span_level(alloc_seq, free_seq), alloc_seq));
    case kLiveSpanEndSeq:
      return result(context, free_seq);
    default:
      break;
  }
  switch (column) {
    case kFreeSiteId:
      return result(context, pending.free_site_id);
    case kFreeSeqDelta:
      return result(context, difference(free->free_seq, row.alloc_seq));
    case kFreeNsDelta:
      return result(context, difference(static_cast<std::uint64_t>(free->free_ns),
                                        static_cast<std::uint64_t>(row.alloc_ns)));
    case kFreeAllocatorAllocated:
      return result(context, free->allocator_allocated);
    case kFreeAllocatorReserved:
      return result(context, free->allocator_reserved);
    default:
      return sqlite3_result_null(context);
  }
}

int column(sqlite3_vtab_cursor* cursor, sqlite3_context* context, int column) {
  put_column(context, rows_of(cursor)[reinterpret_cast<Cursor*>(cursor)->index], column);
  return SQLITE_OK;
}

sqlite3_module make_module() {
  sqlite3_module module{};
  module.iVersion = 0;
  module.xCreate = nullptr;  // eponymous only: usable by name, never created in the file
  module.xConnect = connect;
  module.xBestIndex = best_index;
  module.xDisconnect = disconnect;
  module.xDestroy = disconnect;
  module.xOpen = open_cursor;
  module.xClose = close_cursor;
  module.xFilter = filter;
  module.xNext = next;
  module.xEof = eof;
  module.xColumn = column;
  module.xRowid = rowid;
  return module;
}

const sqlite3_module kModule = make_module();

}  // namespace

bool has_detail(const PendingAllocation& pending) {
  const AllocationRow& row = pending.row;
  return row.vmm_handle || row.vmm_offset || row.segment_id || row.allocator_allocated ||
         row.allocator_reserved || row.correlation_id ||
         (pending.free && (pending.free->allocator_allocated || pending.free->allocator_reserved));
}

int register_pending_allocation_table(sqlite3* db, const std::vector<PendingAllocation>* rows) {
  return sqlite3_create_module_v2(db, std::string(kPendingAllocationTable).c_str(), &kModule,
                                  const_cast<std::vector<PendingAllocation>*>(rows), nullptr);
}

}  // namespace vramtrace::storage
