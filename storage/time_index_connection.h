// The connection the time index is built and read on, shared by its build
// (storage/time_index_build.h) and its queries (storage/time_index.cpp): the trace's tables under
// one schema name and the index's under another ("main" for both when the index is kept in the
// file), SQL written with placeholders for them, and every failure thrown as TraceError naming
// the file. Internal to storage/.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>

#include "storage/packed_allocations.h"
#include "storage/sqlite_statement.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

struct TimeIndexConnection {
  std::filesystem::path path;
  sqlite::Database db;
  // Schema names: the trace's tables and the index's (both "main" when the index is in the file).
  std::string trace_schema = "main", index_schema = "main";

  // The trace's packed allocations, once the trace's schema is known.
  mutable std::unique_ptr<PackedAllocations> packed_allocations;
  PackedAllocations& packed() const;

  [[noreturn]] void fail(int rc) const;

  // `$T.` names a trace table, `$X.` an index table, and `$A` the trace's allocation rows, as
  // a subquery: the view `allocation` without its packed allocations, which the queries by
  // number read through PackedAllocations instead (storage/packed_allocations.h).
  std::string qualify(std::string_view sql) const;
  sqlite::Statement prepare(std::string_view sql) const;
  void execute(std::string_view sql) const;

  // Each row of `statement`, then resets it; a failure throws.
  template <typename Visit>
  void each_row(sqlite::Statement& statement, Visit&& visit) const {
    each_row_while(statement, [&](const sqlite::Statement& row) {
      visit(row);
      return true;
    });
  }
  // As each_row, until `visit` returns false.
  template <typename Visit>
  void each_row_while(sqlite::Statement& statement, Visit&& visit) const {
    if (const int rc = statement.each_row_while(visit); rc != SQLITE_DONE) fail(rc);
    statement.reset();
  }

  std::optional<std::int64_t> single_int(std::string_view sql) const;
  // A value of time_index_info.
  std::int64_t info(std::string_view key) const;
  // The trace's highest allocation id, packed or not.
  std::int64_t last_allocation_id() const;
  // The trace's (upid, seq) indexes: level 0's spans are read through the alloc_seq one.
  bool trace_has_seq_indexes() const;
  // allocator_segment's ids: a query's answer, and what the build of live_at_end tells
  // segments by.
  std::unordered_set<std::int64_t> allocator_segments() const;

  // merge_allocation_events_in_one_scan (event_merge.h), failing as this index does.
  // `allocs` selects the rows of one process or of all, from its first; their packed
  // allocations are merged in.
  bool merge_events_in_one_scan(sqlite::Statement& allocs, std::optional<std::int64_t> upid,
                                std::uint64_t last_seq,
                                const std::function<bool(const AllocationEvent&)>& visit) const;
  // A merge's result: true when it ran out, false when its visitor stopped it; a failure throws.
  bool merged(int rc) const;
};

}  // namespace vramtrace::storage
