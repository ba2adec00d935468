#include "storage/live_span.h"

#include <sqlite3.h>

namespace vramtrace::storage {
namespace {

constexpr std::string_view kTablesSql = R"sql(
CREATE TABLE IF NOT EXISTS $X.live_span (upid INTEGER, level INTEGER, bin INTEGER,
  alloc_seq INTEGER, end_seq INTEGER, allocation_id INTEGER,
  PRIMARY KEY (upid, level, bin, alloc_seq, allocation_id)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS $X.live_at_end (upid INTEGER, kind INTEGER, device INTEGER,
  alloc_callsite_id INTEGER, segment_id INTEGER, allocator_segment_id INTEGER,
  count INTEGER, bytes INTEGER);
CREATE TABLE IF NOT EXISTS $X.allocator_segment (id INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS $X.allocator_process (upid INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS $X.process_time_range (upid INTEGER PRIMARY KEY,
  first_alloc_ns INTEGER, last_alloc_ns INTEGER, last_free_ns INTEGER);
CREATE TABLE IF NOT EXISTS $X.time_index_upkeep (key TEXT PRIMARY KEY, value INTEGER)
  WITHOUT ROWID;
)sql";

void level_function(sqlite3_context* context, int, sqlite3_value** args) {
  const std::int64_t alloc_seq = sqlite3_value_int64(args[0]);
  std::optional<std::int64_t> free_seq;
  if (sqlite3_value_type(args[1]) != SQLITE_NULL) free_seq = sqlite3_value_int64(args[1]);
  sqlite3_result_int(context, live_span_level(alloc_seq, free_seq));
}

void bin_function(sqlite3_context* context, int, sqlite3_value** args) {
  sqlite3_result_int64(context,
                       live_span_bin(sqlite3_value_int(args[0]), sqlite3_value_int64(args[1])));
}

}  // namespace

int live_span_shift(int level) {
  return kLiveSpanFirstShift + kLiveSpanShiftStep * level;
}

std::int64_t live_span_bin(int level, std::int64_t seq) {
  if (level < 0 || level >= kLiveSpanLevels) return 0;
  return seq >> live_span_shift(level);
}

int live_span_level(std::int64_t alloc_seq, std::optional<std::int64_t> free_seq) {
  if (!free_seq) return kNeverFreedLevel;
  // The last live event is the one before the free. Unsigned: a damaged trace's free_seq of
  // INT64_MIN must not overflow.
  const auto last = static_cast<std::int64_t>(static_cast<std::uint64_t>(*free_seq) - 1);
  for (int level = 0; level < kLiveSpanLevels; ++level) {
    const int shift = live_span_shift(level);
    if ((alloc_seq >> shift) == (last >> shift)) return level;
  }
  return kLiveSpanLevels;
}

int register_live_span_functions(sqlite3* db) {
  const int flags = SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_DIRECTONLY;
  int rc = sqlite3_create_function_v2(db, "vramtrace_live_span_level", 2, flags, nullptr,
                                      &level_function, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "vramtrace_live_span_bin", 2, flags, nullptr, &bin_function,
                                    nullptr, nullptr, nullptr);
  return rc;
}

std::string_view live_span_tables_sql() {
  return kTablesSql;
}

}  // namespace vramtrace::storage
