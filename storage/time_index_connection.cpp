#include "storage/time_index_connection.h"

#include <algorithm>
#include <utility>

#include "storage/event_merge.h"
#include "storage/schema.h"
#include "storage/trace_error.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

}  // namespace

PackedAllocations& TimeIndexConnection::packed() const {
  if (!packed_allocations)
    packed_allocations = std::make_unique<PackedAllocations>(db.get(), trace_schema, path.string());
  return *packed_allocations;
}

void TimeIndexConnection::fail(int rc) const {
  const std::string reason = sqlite3_errmsg(db.get());
  if (sqlite::is_corruption(rc)) {
    throw TraceError(path.string() + ": the trace is truncated or corrupt (" + reason +
                     "); record it again");
  }
  throw TraceError(path.string() + ": cannot index the trace for time queries (" + reason + ")");
}

std::string TimeIndexConnection::qualify(std::string_view sql) const {
  std::string out;
  for (std::size_t i = 0; i < sql.size(); ++i) {
    if (sql.substr(i, 2) == "$A") {
      out += "(" + allocation_rows_sql(trace_schema) + ")";
      ++i;
      continue;
    }
    if (sql[i] == '$' && i + 2 < sql.size() && sql[i + 2] == '.') {
      out += sql[i + 1] == 'T' ? trace_schema : index_schema;
      ++i;
      continue;
    }
    out += sql[i];
  }
  return out;
}

Statement TimeIndexConnection::prepare(std::string_view sql) const {
  Statement statement;
  if (const int rc = Statement::prepare(db.get(), qualify(sql), &statement); rc != SQLITE_OK)
    fail(rc);
  return statement;
}

void TimeIndexConnection::execute(std::string_view sql) const {
  std::string error;
  if (const int rc = sqlite::execute(db.get(), qualify(sql), &error); rc != SQLITE_OK) fail(rc);
}

std::optional<std::int64_t> TimeIndexConnection::single_int(std::string_view sql) const {
  Statement statement = prepare(sql);
  std::optional<std::int64_t> value;
  each_row(statement, [&](const Statement& row) { value = row.optional_int64(0); });
  return value;
}

std::int64_t TimeIndexConnection::info(std::string_view key) const {
  Statement statement = prepare("SELECT value FROM $X.time_index_info WHERE key = ?1");
  statement.bind_text(1, key);
  std::int64_t value = 0;
  each_row(statement, [&](const Statement& row) { value = row.int64(0); });
  return value;
}

std::int64_t TimeIndexConnection::last_allocation_id() const {
  return std::max(single_int("SELECT max(id) FROM $T.allocation_compact").value_or(0),
                  packed().last_id());
}

bool TimeIndexConnection::trace_has_seq_indexes() const {
  return single_int(
             "SELECT count(*) FROM $T.sqlite_master WHERE type = 'index' AND name IN "
             "('allocation_by_alloc_seq', 'allocation_by_free_seq')")
             .value_or(0) == 2;
}

std::unordered_set<std::int64_t> TimeIndexConnection::allocator_segments() const {
  Statement statement = prepare("SELECT id FROM $X.allocator_segment");
  std::unordered_set<std::int64_t> ids;
  each_row(statement, [&](const Statement& row) { ids.insert(row.int64(0)); });
  return ids;
}

bool TimeIndexConnection::merge_events_in_one_scan(
    Statement& allocs, std::optional<std::int64_t> upid, std::uint64_t last_seq,
    const std::function<bool(const AllocationEvent&)>& visit) const {
  PackedAllocations::Cursor cursor(packed(), upid, 0, last_seq);
  AllocationScan scan(allocs, &packed(), &cursor);
  return merged(merge_allocation_events_in_one_scan(scan, last_seq, visit));
}

bool TimeIndexConnection::merged(int rc) const {
  if (rc != SQLITE_DONE && rc != SQLITE_OK) fail(rc);
  return rc == SQLITE_DONE;
}

}  // namespace vramtrace::storage
