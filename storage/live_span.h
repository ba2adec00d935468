// live_span: where the time index files each successful allocation's live interval, and the
// tables a writer keeps up as rows arrive so that finishing a trace need not read it again.
//
// The rule (docs/schema.md, "Time index"): an allocation live over [alloc_seq, free_seq) is
// filed at the smallest level L whose bins of 2^(12 + 3L) events hold its first and last live
// event in one bin, under that bin's number; one never freed goes to kNeverFreedLevel with
// end_seq INT64_MAX. "Live just after event s" then reads one bin per level. Level 0 (a life
// within one bin of 4096 events: most of a program's allocations) is not filed where the trace
// has its (upid, alloc_seq) index: the allocations made in s's bin, read through that index,
// are those candidates already, and a storm of short lives then costs the table nothing.
// One rule, in C++,
// for both who file spans: the writer as rows arrive (TraceWriter's kAsRowsArrive) and the
// time index's build, which calls it from SQL (register_live_span_functions).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

struct sqlite3;

namespace vramtrace::storage {

inline constexpr int kLiveSpanFirstShift = 12;
inline constexpr int kLiveSpanShiftStep = 3;
inline constexpr int kLiveSpanLevels = 17;  // shifts 12 .. 60; level kLevels: crossing 2^60
inline constexpr int kNeverFreedLevel = 255;
inline constexpr std::int64_t kNeverFreedEnd = INT64_MAX;
// time_index_upkeep's 'version': bumped when what a writer keeps up changes, so that a build
// reads only tables it knows how they were made.
// 2: the rollups kept too (storage/rollup_rows.h), with the span they were cut for.
// 3: live_at_end, what each process left live, added up. 4: live_at_peak, with the rollups.
inline constexpr std::int64_t kTimeIndexUpkeepVersion = 4;

int live_span_shift(int level);
// The first and the last number of the bin of level 0 that holds `seq`.
constexpr std::uint64_t level_0_bin_first(std::uint64_t seq) {
  return seq >> kLiveSpanFirstShift << kLiveSpanFirstShift;
}
constexpr std::uint64_t level_0_bin_last(std::uint64_t seq) {
  return level_0_bin_first(seq) + ((std::uint64_t{1} << kLiveSpanFirstShift) - 1);
}
// The bin of `seq` at `level`; 0 for the levels above the ladder.
std::int64_t live_span_bin(int level, std::int64_t seq);
// The level of an allocation made at `alloc_seq`, freed at `free_seq` (unset: never).
int live_span_level(std::int64_t alloc_seq, std::optional<std::int64_t> free_seq);

// SQL functions of the rule on `db`: vramtrace_live_span_level(alloc_seq, free_seq) (free_seq
// NULL: never freed) and vramtrace_live_span_bin(level, alloc_seq). Returns SQLite's code.
int register_live_span_functions(sqlite3* db);

// The tables of the time index a writer keeps up while it records (storage/trace_writer.h),
// `$X.` naming the index's schema: live_span itself, and what finishing would otherwise scan
// the trace for: each process's range of times, the allocator's segments and its processes.
// time_index_upkeep then says through which allocation they hold (docs/schema.md).
std::string_view live_span_tables_sql();

}  // namespace vramtrace::storage
