#include "storage/reader_connection.h"

#include <climits>
#include <cstdint>

#include "storage/trace_error.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

}  // namespace

PackedAllocations& ReaderConnection::packed() {
  if (!packed_allocations)
    packed_allocations = std::make_unique<PackedAllocations>(db.get(), "main", path.string());
  return *packed_allocations;
}

void ReaderConnection::fail(int rc) {
  last_error_code = rc;
  const std::string reason = sqlite3_errmsg(db.get());
  if (sqlite::is_corruption(rc)) {
    throw TraceError(path.string() + ": the trace is truncated or corrupt (" + reason +
                     "); record it again");
  }
  throw TraceError(path.string() + ": cannot read the trace (" + reason + ")");
}

void ReaderConnection::check_row(const Statement& row, std::string_view table,
                                 std::initializer_list<int> not_null,
                                 std::initializer_list<int> int32,
                                 std::initializer_list<int> uint32) {
  for (const int column : not_null) {
    if (row.is_null(column) && row.column_name(column) != "NULL")
      damaged(row, table, column, "is NULL, which the schema forbids");
  }
  const auto check_range = [&](int column, std::int64_t low, std::int64_t high) {
    if (row.is_null(column)) return;
    // Text or a real would be read as 0 or as the nearest integer: not what the file holds.
    if (!row.is_integer(column))
      damaged(row, table, column, "holds '" + row.text(column) + "', not an integer");
    const std::int64_t value = row.int64(column);
    if (value < low || value > high) {
      damaged(row, table, column,
              "holds " + std::to_string(value) + ", outside its range (" + std::to_string(low) +
                  " to " + std::to_string(high) + ")");
    }
  };
  for (const int column : int32) check_range(column, INT32_MIN, INT32_MAX);
  for (const int column : uint32) check_range(column, 0, UINT32_MAX);
}

void ReaderConnection::damaged(const Statement& row, std::string_view table, int column,
                               const std::string& what) {
  const std::string key =
      row.is_null(0) ? "NULL" : std::string(row.column_name(0)) + " " + row.text(0);
  throw TraceError(path.string() + ": the trace is damaged: " + std::string(table) + "." +
                   std::string(row.column_name(column)) + " " + what + " (in the row with " + key +
                   "); it was changed after vramtrace wrote it, or written by another tool");
}

Statement ReaderConnection::prepare(std::string_view sql) {
  Statement statement;
  if (const int rc = Statement::prepare(db.get(), sql, &statement); rc != SQLITE_OK) fail(rc);
  return statement;
}

}  // namespace vramtrace::storage
