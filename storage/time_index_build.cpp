#include "storage/time_index_build.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "storage/live_at_end.h"
#include "storage/live_span.h"
#include "storage/rollup_rows.h"
#include "storage/schema.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// Bumped when the tables below change, or what the rollups count (storage/live_bytes_rollups.h),
// so that an older build's index is rebuilt. 2: time_problem, and times within their process.
// 3: slices of a power of two. 4: live_at_end. 5: live_at_peak.
constexpr std::int64_t kTimeIndexVersion = 5;

// A process's start and end (either unknown in a damaged or unfinished trace): every event of
// the process is taken as happening between them.
struct ProcessSpan {
  std::optional<std::int64_t> start_ns, end_ns;

  std::int64_t place(std::int64_t ns) const {
    if (start_ns) ns = std::max(ns, *start_ns);
    if (end_ns) ns = std::min(ns, *end_ns);
    return ns;
  }
  // kTimeBeforeProcessStart, kTimeAfterProcessEnd, or null for a time within the span.
  const char* problem(std::int64_t ns) const {
    if (start_ns && ns < *start_ns) return kTimeBeforeProcessStart;
    if (end_ns && ns > *end_ns) return kTimeAfterProcessEnd;
    return nullptr;
  }
};

// One build of the index on `index`. What the build finds that the rollups need (the span of
// the index, and whether level 0 is filed in live_span) is written to time_index_info, from
// which the index's queries read it back.
class TimeIndexBuild {
 public:
  explicit TimeIndexBuild(const TimeIndexConnection& index) : index_(index) {}

  // In place: what this trace lacks of its indexes, the time index and the allocation table's.
  bool complete_in_place() const { return allocation_indexes_present() && index_is_current(); }

  void build_in_place(const BuildRollups& build_rollups_with) {
    // First: the time index's queries walk them.
    if (!allocation_indexes_present()) index_.execute(allocation_indexes_sql());
    if (index_is_current()) return;
    if (build()) build_rollups(build_rollups_with);
  }

  // Makes the index's tables but the rollups; true when those are still to build (the writer
  // did not keep them up, or cut them for another span than the trace's).
  bool build() {
    const bool upkept = upkept_by_writer();
    // Packed allocations are read beside level 0's rows, never from live_span: a trace with
    // them reads level 0 so, even in the rare trace whose index by number was dropped.
    level_0_spans_ = !upkept && !index_.trace_has_seq_indexes() && index_.packed().last_id() == 0;
    index_.execute(
        "DROP TABLE IF EXISTS $X.time_index_info;"
        "CREATE TABLE $X.time_index_info (key TEXT PRIMARY KEY, value INTEGER) WITHOUT ROWID;");
    if (!upkept) {
      index_.execute(
          "DROP TABLE IF EXISTS $X.live_span; DROP TABLE IF EXISTS $X.allocator_segment;"
          "DROP TABLE IF EXISTS $X.live_at_end;"
          "DROP TABLE IF EXISTS $X.allocator_process; DROP TABLE IF EXISTS $X.process_time_range;"
          "DROP TABLE IF EXISTS $X.time_index_upkeep;");
      index_.execute(live_span_tables_sql());
      // Sorted as the primary key, so the table is written in order rather than by random
      // inserts.
      index_.execute(
          "INSERT INTO $X.live_span SELECT upid, level, vramtrace_live_span_bin(level, alloc_seq), "
          "alloc_seq, end_seq, id FROM (SELECT upid, id, alloc_seq, coalesce(free_seq, " +
          std::to_string(kNeverFreedEnd) +
          ") AS end_seq, vramtrace_live_span_level(alloc_seq, free_seq) AS level "
          "FROM $A WHERE result = 0) WHERE level != 0 OR " +
          std::string(level_0_spans_ ? "1" : "0") + " ORDER BY 1, 2, 3, 4, 6");
      const std::string block = std::to_string(allocation_kind::kBlock);
      index_.execute(
          "INSERT INTO $X.allocator_segment SELECT DISTINCT segment_id FROM $T.allocation "
          "WHERE kind = " +
          block +
          " AND segment_id IS NOT NULL ORDER BY 1;"
          "INSERT INTO $X.allocator_process SELECT DISTINCT upid FROM $T.allocation "
          "WHERE kind = " +
          block + " ORDER BY 1;");
      index_.execute(
          "INSERT INTO $X.process_time_range SELECT upid, min(alloc_ns), max(alloc_ns), "
          "max(free_ns) FROM $T.allocation WHERE result = 0 GROUP BY upid");
      build_live_at_end();
    }
    // Each process's times placed within its span: placing is monotonic, so the extremes of
    // the placed times are the placed extremes.
    const std::map<std::int64_t, ProcessSpan> spans = process_spans();
    Statement range = index_.prepare(
        "SELECT upid, first_alloc_ns, last_alloc_ns, last_free_ns FROM $X.process_time_range");
    std::optional<std::int64_t> first, last;
    index_.each_row(range, [&](const Statement& row) {
      const auto span = spans.find(row.int64(0));
      const auto place = [&](std::int64_t ns) {
        return span == spans.end() ? ns : span->second.place(ns);
      };
      const std::int64_t from = place(row.int64(1));
      std::int64_t to = place(row.int64(2));
      if (const auto free_ns = row.optional_int64(3)) to = std::max(to, place(*free_ns));
      first = first ? std::min(*first, from) : from;
      last = last ? std::max(*last, to) : to;
    });
    start_ns_ = first.value_or(0);
    end_ns_ = std::max(start_ns_, last.value_or(0));
    const bool rollups_kept = upkept && upkeep_value("rollups_start_ns") == start_ns_ &&
                              upkeep_value("rollups_end_ns") == end_ns_;
    if (!rollups_kept) {
      index_.execute(
          "DROP TABLE IF EXISTS $X.live_bytes_bucket; DROP TABLE IF EXISTS $X.live_bytes_peak;"
          "DROP TABLE IF EXISTS $X.live_at_peak; DROP TABLE IF EXISTS $X.time_problem;");
      index_.execute(rollup_tables_sql());
    }
    Statement put = index_.prepare(
        "INSERT INTO $X.time_index_info VALUES ('version', ?1), ('last_allocation_id', ?2),"
        " ('start_ns', ?3), ('end_ns', ?4), ('level_0_spans', ?5)");
    put.bind_int64(1, kTimeIndexVersion);
    put.bind_int64(2, index_.last_allocation_id());
    put.bind_int64(3, start_ns_);
    put.bind_int64(4, end_ns_);
    put.bind_int64(5, level_0_spans_ ? 1 : 0);
    index_.each_row(put, [](const Statement&) {});
    return !rollups_kept;
  }

  // The caller's rollups over one pass of every process's allocations and frees in sequence
  // order (two ordered scans, merged), stored as they come.
  void build_rollups(const BuildRollups& build) {
    Statement put_bucket =
        index_.prepare("INSERT INTO $X.live_bytes_bucket VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    Statement put_peak =
        index_.prepare("INSERT INTO $X.live_bytes_peak VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    Statement put_live_at_peak =
        index_.prepare("INSERT INTO $X.live_at_peak VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    const std::map<std::int64_t, ProcessSpan> spans = process_spans();
    std::map<std::pair<std::int64_t, std::string>, TimeProblem> problems;
    RollupSource source;
    source.start_ns = start_ns_;
    source.end_ns = end_ns_;
    source.for_each_event = [&](const std::function<void(const AllocationEvent&)>& visit) {
      problems.clear();
      Statement allocs = index_.prepare(
          "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns, "
          "alloc_callsite_id FROM $A WHERE result = 0 ORDER BY upid, alloc_seq");
      std::optional<std::int64_t> upid;
      const ProcessSpan* span = nullptr;
      std::optional<std::int64_t> previous_ns;  // of the process's last event within its span
      index_.merge_events_in_one_scan(allocs, std::nullopt, static_cast<std::uint64_t>(INT64_MAX),
                                      [&](const AllocationEvent& event) {
                                        if (event.upid != upid) {
                                          upid = event.upid;
                                          const auto found = spans.find(event.upid);
                                          span = found == spans.end() ? nullptr : &found->second;
                                          previous_ns.reset();
                                        }
                                        AllocationEvent placed = event;
                                        const char* problem =
                                            span != nullptr ? span->problem(event.ns) : nullptr;
                                        if (span != nullptr) placed.ns = span->place(event.ns);
                                        if (problem == nullptr) {
                                          if (previous_ns && event.ns < *previous_ns)
                                            problem = kTimeOutOfOrder;
                                          previous_ns = event.ns;
                                        }
                                        if (problem != nullptr) {
                                          TimeProblem& counted = problems[{event.upid, problem}];
                                          if (counted.events++ == 0) {
                                            counted.upid = event.upid;
                                            counted.problem = problem;
                                            counted.first_seq = event.seq;
                                          }
                                        }
                                        visit(placed);
                                        return true;
                                      });
    };
    RollupSink sink;
    sink.add_bucket = [&](const LiveBytesBucket& row) {
      bind_bucket_row(put_bucket, row);
      index_.each_row(put_bucket, [](const Statement&) {});
    };
    sink.add_peak = [&](const LiveBytesPeak& row) {
      bind_peak_row(put_peak, row);
      index_.each_row(put_peak, [](const Statement&) {});
    };
    sink.add_live_at_peak = [&](const LiveAtPeak& row) {
      bind_live_at_peak_row(put_live_at_peak, row);
      index_.each_row(put_live_at_peak, [](const Statement&) {});
    };
    build(source, sink);
    Statement put_problem = index_.prepare("INSERT INTO $X.time_problem VALUES (?1, ?2, ?3, ?4)");
    for (const auto& [key, problem] : problems) {
      put_problem.bind_int64(1, problem.upid);
      put_problem.bind_text(2, problem.problem);
      put_problem.bind_uint64(3, problem.events);
      put_problem.bind_uint64(4, problem.first_seq);
      index_.each_row(put_problem, [](const Statement&) {});
    }
  }

 private:
  // A kept index is current when its version and the trace's last allocation id match.
  bool index_is_current() const {
    const auto exists = index_.single_int(
        "SELECT count(*) FROM $X.sqlite_master WHERE type = 'table' AND name = "
        "'time_index_info'");
    if (exists.value_or(0) == 0) return false;
    return index_.info("version") == kTimeIndexVersion &&
           index_.info("last_allocation_id") == index_.last_allocation_id();
  }

  // The allocation table's indexes (storage/schema.h), which `vramtrace run` leaves to this
  // step: present, or not for this trace (the index aside has no way to add them).
  bool allocation_indexes_present() const {
    const auto names_wanted = allocation_index_names();
    std::string names;
    for (const std::string_view name : names_wanted)
      names += (names.empty() ? "'" : ", '") + std::string(name) + "'";
    return index_
               .single_int(
                   "SELECT count(*) FROM $T.sqlite_master WHERE type = 'index' AND name IN (" +
                   names + ")")
               .value_or(0) == static_cast<std::int64_t>(names_wanted.size());
  }

  // Whether the writer kept up the live spans, each process's time range and the allocator's
  // tables through the trace's last allocation (TraceWriter's kAsRowsArrive): then the build
  // reads them rather than the trace.
  bool upkept_by_writer() const {
    const auto exists = index_.single_int(
        "SELECT count(*) FROM $X.sqlite_master WHERE type = 'table' AND name = "
        "'time_index_upkeep'");
    if (exists.value_or(0) == 0) return false;
    return upkeep_value("version") == kTimeIndexUpkeepVersion &&
           upkeep_value("allocation_id") == index_.last_allocation_id();
  }

  std::optional<std::int64_t> upkeep_value(std::string_view key) const {
    Statement statement = index_.prepare("SELECT value FROM $X.time_index_upkeep WHERE key = ?1");
    statement.bind_text(1, key);
    std::optional<std::int64_t> found;
    index_.each_row(statement, [&](const Statement& row) { found = row.optional_int64(0); });
    return found;
  }

  // live_at_end from the never-freed spans, so that its cost follows what was left live, added
  // up here rather than by SQL's GROUP BY, which would sort every row first.
  void build_live_at_end() {
    const std::unordered_set<std::int64_t> segments = index_.allocator_segments();
    std::vector<std::int64_t> upids;
    Statement processes = index_.prepare("SELECT DISTINCT upid FROM $X.live_span");
    index_.each_row(processes, [&](const Statement& row) { upids.push_back(row.int64(0)); });
    Statement never_freed = index_.prepare(
        "SELECT s.allocation_id, c.size, c.site_id, d.segment_id FROM $X.live_span AS s "
        "JOIN $T.allocation_compact AS c ON c.id = s.allocation_id "
        "LEFT JOIN $T.allocation_detail AS d ON d.id = s.allocation_id "
        "WHERE s.upid = ?1 AND s.level = " +
        std::to_string(kNeverFreedLevel));
    LiveAtEndGroups groups;
    for (const std::int64_t upid : upids) {
      never_freed.bind_int64(1, upid);
      index_.each_row(never_freed, [&](const Statement& row) {
        const std::int64_t id = row.int64(0);
        const PackedAllocations::Site& site = index_.packed().site(row.int64(2));
        groups.add({upid, site.kind, site.device, site.callsite_id, row.optional_int64(3),
                    segments.contains(id) ? std::optional(id) : std::nullopt},
                   1, row.uint64(1));
      });
    }
    Statement put =
        index_.prepare("INSERT INTO $X.live_at_end VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    groups.write(put, [&](Statement& row) { index_.each_row(row, [](const Statement&) {}); });
  }

  std::map<std::int64_t, ProcessSpan> process_spans() const {
    std::map<std::int64_t, ProcessSpan> spans;
    Statement statement = index_.prepare("SELECT upid, start_ns, end_ns FROM $T.process");
    index_.each_row(statement, [&](const Statement& row) {
      spans[row.int64(0)] = {row.optional_int64(1), row.optional_int64(2)};
    });
    return spans;
  }

  const TimeIndexConnection& index_;
  bool level_0_spans_ =
      true;  // live_span holds level 0 (else: read through allocation_by_alloc_seq)
  std::int64_t start_ns_ = 0, end_ns_ = 0;
};

}  // namespace

bool time_index_complete_in_place(const TimeIndexConnection& connection) {
  return TimeIndexBuild(connection).complete_in_place();
}

void complete_time_index_in_place(const TimeIndexConnection& connection,
                                  const BuildRollups& build_rollups) {
  TimeIndexBuild(connection).build_in_place(build_rollups);
}

void build_time_index(const TimeIndexConnection& connection, const BuildRollups& build_rollups) {
  TimeIndexBuild build(connection);
  if (build.build()) build.build_rollups(build_rollups);
}

}  // namespace vramtrace::storage
