// TraceReader's connection to a trace, shared by the reader and the source of its allocations
// (storage/allocation_source.h): a query on it that fails throws TraceError naming the file,
// and a row is checked against the schema as it is read, so that a damaged trace is refused
// with the column named rather than read as zeros. Internal to storage/.
#pragma once

#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>

#include "storage/packed_allocations.h"
#include "storage/sqlite_statement.h"

namespace vramtrace::storage {

struct ReaderConnection {
  std::filesystem::path path;
  sqlite::Database db;
  int last_error_code = SQLITE_OK;  // of the last failure: open() tells a corrupt file by it

  // The trace's packed allocations, read once the trace is known to be one.
  std::unique_ptr<PackedAllocations> packed_allocations;
  PackedAllocations& packed();

  [[noreturn]] void fail(int rc);

  // A row read from `table`: each column in `not_null` (which the schema declares NOT NULL)
  // must hold a value, and the `int32` and `uint32` columns one that fits their fields. A trace
  // that breaks this was damaged, or not written by vramtrace: it is refused with the column
  // named, rather than read as zeros or as text that is not there. Columns that the query
  // names NULL (kAllocatorTotalsColumns) are not read, and not checked.
  void check_row(const sqlite::Statement& row, std::string_view table,
                 std::initializer_list<int> not_null, std::initializer_list<int> int32 = {},
                 std::initializer_list<int> uint32 = {});
  [[noreturn]] void damaged(const sqlite::Statement& row, std::string_view table, int column,
                            const std::string& what);

  sqlite::Statement prepare(std::string_view sql);

  // Each row of `statement`, then resets it; a failure throws.
  template <typename Visit>
  void each_row(sqlite::Statement& statement, Visit&& visit) {
    each_row_while(statement, [&](const sqlite::Statement& row) {
      visit(row);
      return true;
    });
  }
  // As each_row, until `visit` returns false.
  template <typename Visit>
  void each_row_while(sqlite::Statement& statement, Visit&& visit) {
    if (const int rc = statement.each_row_while(visit); rc != SQLITE_DONE) fail(rc);
    statement.reset();
  }
};

}  // namespace vramtrace::storage
