// The time index kept up as a trace's rows arrive (TraceFileWriter's
// TimeIndexUpkeep::kAsRowsArrive), so that finishing a recording need not read the trace again:
// each successful allocation's live span (storage/live_span.h) filed when its row is written
// with its free, or when a row written still live gets its free, and at finish() the spans of
// what is still live and what each process left live (live_at_end); each process's time
// range; the allocator's segments and processes; and, with RollupUpkeep::kAsRowsArrive, the
// rollups (storage/live_bytes_rollups.h) while each process's events come in sequence order
// with rising times within its span, as the build would take them.
//
// The keeper takes what the build takes, in the same way (storage/time_index_build.cpp). When it
// cannot (a row out of id order, a free undone, a row freed twice), it stops for good and
// finish() empties its tables: the index's build then makes them all.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "storage/pending_allocation_table.h"
#include "storage/trace_rows.h"
#include "storage/write_failure.h"

namespace vramtrace::storage {

class TimeIndexKeeper {
 public:
  // The tables it keeps, for the trace's schema to make before create().
  static std::string tables_sql();
  // Prepares its statements in the trace's database (`failure.db`), whose tables the schema
  // made, reading written batches from `pending_table` (storage/pending_allocation_table.h).
  // Null, with *error set, when SQLite refuses one.
  static std::unique_ptr<TimeIndexKeeper> create(WriteFailure& failure,
                                                 std::string_view pending_table, bool keep_rollups,
                                                 std::string* error);
  ~TimeIndexKeeper();
  TimeIndexKeeper(const TimeIndexKeeper&) = delete;
  TimeIndexKeeper& operator=(const TimeIndexKeeper&) = delete;

  // False once it stopped: what it kept is then left to the build.
  bool holds() const;
  void stop();

  void process_started(std::int64_t upid, std::int64_t start_ns);
  void process_ended(std::int64_t upid, std::optional<std::int64_t> end_ns);
  // Every allocation row, as the writer takes it (failed ones too).
  void allocation_added(const AllocationRow& row);
  // The free of a row still waiting to be written; `freed_before`: it had one already.
  void pending_row_freed(const AllocationRow& row, bool freed_before, const FreeRow& free);
  // The free of a row already written.
  void written_row_freed(std::int64_t allocation_id, const FreeRow& free);
  // A batch of rows just written from the pending table: the spans of those written with
  // their free, and those written live kept until their free.
  void batch_written(const std::vector<PendingAllocation>& batch);
  // At the writer's finish(), inside its last transaction: what is still live, the small
  // tables and the rollups; or, when it stopped, its tables emptied.
  void finish();

 private:
  struct State;
  explicit TimeIndexKeeper(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vramtrace::storage
