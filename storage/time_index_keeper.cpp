#include "storage/time_index_keeper.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>

#include "storage/live_at_end.h"
#include "storage/live_bytes_rollups.h"
#include "storage/live_span.h"
#include "storage/rollup_maker.h"
#include "storage/rollup_rows.h"
#include "storage/schema.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// The time index's SQL (`$X.` naming its schema) for tables made in the trace itself.
std::string in_the_trace(std::string_view index_sql) {
  std::string sql(index_sql);
  for (std::size_t at = sql.find("$X."); at != std::string::npos; at = sql.find("$X."))
    sql.erase(at, 3);
  return sql;
}

}  // namespace

struct TimeIndexKeeper::State {
  explicit State(WriteFailure& writer_failure) : failure(writer_failure) {}

  WriteFailure& failure;
  bool upkeep = true;  // false for good once it cannot hold
  Statement add_live_span, add_pending_live_spans;
  // A recording can end with millions of rows live, each held here: its optional ids are kept
  // as plain integers, kNoId for none (ids are positive), which makes an entry 64 bytes, not 80.
  static constexpr std::int64_t kNoId = INT64_MIN;
  struct WrittenLive {
    explicit WrittenLive(const AllocationRow& row)
        : id(row.id),
          upid(row.upid),
          alloc_seq(row.alloc_seq),
          device(row.device),
          kind(row.kind),
          size(row.size),
          callsite(row.alloc_callsite_id.value_or(kNoId)),
          segment(row.segment_id.value_or(kNoId)) {}
    std::int64_t id = 0, upid = 0;
    std::uint64_t alloc_seq = 0;
    int device = 0, kind = 0;
    std::uint64_t size = 0;
    std::int64_t callsite = kNoId, segment = kNoId;
    bool freed = false;

    std::optional<std::int64_t> callsite_id() const {
      return callsite == kNoId ? std::nullopt : std::optional(callsite);
    }
    std::optional<std::int64_t> segment_id() const {
      return segment == kNoId ? std::nullopt : std::optional(segment);
    }
  };
  static_assert(sizeof(WrittenLive) == 64);
  std::vector<WrittenLive> written_live;  // successful rows written without their free, by id
  struct TimeRange {
    std::int64_t first_alloc_ns = 0, last_alloc_ns = 0;
    std::optional<std::int64_t> last_free_ns;
  };
  std::map<std::int64_t, TimeRange> time_ranges;  // by upid: successful allocations only
  std::set<std::int64_t> allocator_segments, allocator_processes;
  std::int64_t last_allocation_id = 0;

  // The rollups, while each process's events come as the build takes them: in sequence order,
  // times rising, none before the process's start (nor, checked at the end, after its end).
  std::unique_ptr<RollupKeeper> rollups;
  struct ProcessTimes {
    std::int64_t start_ns = 0;
    std::optional<std::int64_t> end_ns;
    std::optional<std::int64_t> last_ns;
    std::uint64_t last_seq = 0;
  };
  std::unordered_map<std::int64_t, ProcessTimes> process_times;  // by upid
  // The process of the last event: a storm's events are one process's, compared, not hashed.
  // The map keeps its elements where they are as it grows, and never erases one.
  std::int64_t last_times_upid = 0;
  ProcessTimes* last_times = nullptr;

  ProcessTimes* times_of(std::int64_t upid) {
    if (last_times != nullptr && last_times_upid == upid) return last_times;
    const auto found = process_times.find(upid);
    if (found == process_times.end()) return nullptr;
    last_times_upid = upid;
    last_times = &found->second;
    return last_times;
  }

  void stop_upkeep() {
    upkeep = false;
    std::vector<WrittenLive>().swap(written_live);  // `= {}` would keep the capacity
    time_ranges.clear();
    allocator_segments.clear();
    allocator_processes.clear();
    rollups.reset();
  }

  void keep_rollups(AllocationEvent::Type type, std::int64_t allocation_id, std::int64_t upid,
                    std::uint64_t seq, std::int64_t ns, int device, int kind, std::uint64_t size,
                    std::optional<std::int64_t> callsite_id) {
    if (!rollups) return;
    ProcessTimes* const process = times_of(upid);
    if (process == nullptr || ns < process->start_ns ||
        (process->last_ns && (ns < *process->last_ns || seq <= process->last_seq))) {
      rollups.reset();  // the build places and counts such times
      return;
    }
    process->last_ns = ns;
    process->last_seq = seq;
    rollups->add({type, allocation_id, upid, seq, ns, device, kind, size, callsite_id});
  }

  // At finish(): the rollups cut for the span the build will find, when the times held.
  void write_kept_rollups() {
    for (const auto& [upid, times] : process_times)
      if (times.end_ns && times.last_ns && *times.last_ns > *times.end_ns) rollups.reset();
    if (!rollups) return;
    std::optional<std::int64_t> first, last;
    for (const auto& [upid, range] : time_ranges) {
      first = first ? std::min(*first, range.first_alloc_ns) : range.first_alloc_ns;
      std::int64_t to = range.last_alloc_ns;
      if (range.last_free_ns) to = std::max(to, *range.last_free_ns);
      last = last ? std::max(*last, to) : to;
    }
    const std::int64_t start_ns = first.value_or(0);
    const std::int64_t end_ns = std::max(start_ns, last.value_or(0));
    std::string message;
    if (sqlite::execute(failure.db, in_the_trace(rollup_tables_sql()), &message) != SQLITE_OK)
      return failure.fail("adding the time index's rollups", message);
    Statement bucket, peak, live_at_peak, span;
    if (Statement::prepare(failure.db,
                           "INSERT INTO live_bytes_bucket VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                           &bucket) != SQLITE_OK ||
        Statement::prepare(failure.db, "INSERT INTO live_bytes_peak VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           &peak) != SQLITE_OK ||
        Statement::prepare(failure.db, "INSERT INTO live_at_peak VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           &live_at_peak) != SQLITE_OK ||
        Statement::prepare(failure.db,
                           "INSERT INTO time_index_upkeep VALUES('rollups_start_ns', ?1), "
                           "('rollups_end_ns', ?2)",
                           &span) != SQLITE_OK)
      return failure.fail("adding the time index's rollups", sqlite3_errmsg(failure.db));
    RollupSink sink;
    sink.add_bucket = [&](const LiveBytesBucket& row) {
      bind_bucket_row(bucket, row);
      failure.run(bucket, "adding the time index's rollups");
    };
    sink.add_peak = [&](const LiveBytesPeak& row) {
      bind_peak_row(peak, row);
      failure.run(peak, "adding the time index's rollups");
    };
    sink.add_live_at_peak = [&](const LiveAtPeak& row) {
      bind_live_at_peak_row(live_at_peak, row);
      failure.run(live_at_peak, "adding the time index's rollups");
    };
    rollups->write(start_ns, end_ns, sink);
    span.bind_int64(1, start_ns);
    span.bind_int64(2, end_ns);
    failure.run(span, "adding the time index's rollups");
  }

  // As the time index's build takes them (storage/time_index.cpp): a range from successful
  // allocations, segments and processes from every block row.
  void keep_up_with_allocation(const AllocationRow& row) {
    if (row.id <= last_allocation_id) return stop_upkeep();
    last_allocation_id = row.id;
    if (row.result == 0) {
      const auto [it, added] =
          time_ranges.try_emplace(row.upid, TimeRange{row.alloc_ns, row.alloc_ns, {}});
      if (!added) {
        it->second.first_alloc_ns = std::min(it->second.first_alloc_ns, row.alloc_ns);
        it->second.last_alloc_ns = std::max(it->second.last_alloc_ns, row.alloc_ns);
      }
    }
    if (row.kind == allocation_kind::kBlock) {
      allocator_processes.insert(row.upid);
      if (row.segment_id) allocator_segments.insert(*row.segment_id);
    }
  }

  void keep_up_with_free(std::int64_t upid, const FreeRow& row) {
    std::optional<std::int64_t>& last = time_ranges[upid].last_free_ns;
    last = last ? std::max(*last, row.free_ns) : row.free_ns;
  }

  void put_live_span(std::int64_t upid, std::uint64_t alloc_seq,
                     std::optional<std::uint64_t> free_seq, std::int64_t id) {
    const auto alloc = static_cast<std::int64_t>(alloc_seq);
    const std::optional<std::int64_t> free =
        free_seq ? std::optional(static_cast<std::int64_t>(*free_seq)) : std::nullopt;
    const int level = live_span_level(alloc, free);
    if (level == 0) return;  // read through the (upid, alloc_seq) index (storage/live_span.h)
    Statement& statement = add_live_span;
    statement.bind_int64(1, upid);
    statement.bind_int64(2, level);
    statement.bind_int64(3, live_span_bin(level, alloc));
    statement.bind_int64(4, alloc);
    statement.bind_int64(5, free.value_or(kNeverFreedEnd));
    statement.bind_int64(6, id);
    failure.run(statement, "adding a live span");
  }

  // The free of a row already written: its span now, or the upkeep ends (a row freed twice, or
  // one never added, which set_free counts).
  void keep_up_with_written_free(std::int64_t allocation_id, const FreeRow& row) {
    auto it =
        std::lower_bound(written_live.begin(), written_live.end(), allocation_id,
                         [](const WrittenLive& live, std::int64_t key) { return live.id < key; });
    if (it == written_live.end() || it->id != allocation_id || it->freed) return stop_upkeep();
    it->freed = true;
    put_live_span(it->upid, it->alloc_seq, row.free_seq, it->id);
    keep_up_with_free(it->upid, row);
    keep_rollups(AllocationEvent::Type::kFree, it->id, it->upid, row.free_seq, row.free_ns,
                 it->device, it->kind, it->size, it->callsite_id());
  }

  // What each process left live, one row per (kind, device, callsite, segment), and one per
  // allocator segment, whose own bytes the reports weigh against the blocks in it.
  void write_live_at_end() {
    LiveAtEndGroups groups;
    for (const WrittenLive& live : written_live) {
      if (live.freed) continue;
      groups.add({live.upid, live.kind, live.device, live.callsite_id(), live.segment_id(),
                  allocator_segments.contains(live.id) ? std::optional(live.id) : std::nullopt},
                 1, live.size);
    }
    Statement statement;
    if (Statement::prepare(failure.db,
                           "INSERT INTO live_at_end VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                           &statement) != SQLITE_OK)
      return failure.fail("adding the time index's tables", sqlite3_errmsg(failure.db));
    groups.write(statement,
                 [&](Statement& row) { failure.run(row, "adding the time index's tables"); });
  }

  void finish() {
    if (!failure.error.empty()) return;
    std::string message;
    if (!upkeep) {
      if (sqlite::execute(failure.db,
                          "DELETE FROM live_span; DELETE FROM allocator_segment; "
                          "DELETE FROM allocator_process; DELETE FROM process_time_range; "
                          "DELETE FROM live_at_end; DELETE FROM time_index_upkeep;",
                          &message) != SQLITE_OK)
        failure.fail("emptying the time index's tables", message);
      return;
    }
    for (const WrittenLive& live : written_live)
      if (!live.freed) put_live_span(live.upid, live.alloc_seq, std::nullopt, live.id);
    const auto insert_each = [&](std::string_view sql, const std::set<std::int64_t>& values) {
      Statement statement;
      if (Statement::prepare(failure.db, sql, &statement) != SQLITE_OK)
        return failure.fail("adding the time index's tables", sqlite3_errmsg(failure.db));
      for (const std::int64_t value : values) {
        statement.bind_int64(1, value);
        failure.run(statement, "adding the time index's tables");
      }
    };
    write_live_at_end();
    insert_each("INSERT INTO allocator_segment(id) VALUES(?1)", allocator_segments);
    insert_each("INSERT INTO allocator_process(upid) VALUES(?1)", allocator_processes);
    Statement range;
    if (Statement::prepare(failure.db, "INSERT INTO process_time_range VALUES(?1, ?2, ?3, ?4)",
                           &range) != SQLITE_OK)
      return failure.fail("adding the time index's tables", sqlite3_errmsg(failure.db));
    for (const auto& [upid, times] : time_ranges) {
      range.bind_int64(1, upid);
      range.bind_int64(2, times.first_alloc_ns);
      range.bind_int64(3, times.last_alloc_ns);
      range.bind_optional_int64(4, times.last_free_ns);
      failure.run(range, "adding the time index's tables");
    }
    Statement upkept;
    if (Statement::prepare(failure.db,
                           "INSERT INTO time_index_upkeep VALUES('version', ?1), "
                           "('allocation_id', ?2)",
                           &upkept) != SQLITE_OK)
      return failure.fail("adding the time index's tables", sqlite3_errmsg(failure.db));
    upkept.bind_int64(1, kTimeIndexUpkeepVersion);
    upkept.bind_int64(2, last_allocation_id);
    failure.run(upkept, "adding the time index's tables");
    write_kept_rollups();
  }

  // The upkeep's part of writing a batch of pending rows.
  void batch_written(const std::vector<PendingAllocation>& batch) {
    // Most lives end within their bin (level 0: no span row); the statement's scan of the
    // batch runs only when one does not.
    bool any_span = false;
    for (const PendingAllocation& pending : batch) {
      if (pending.row.result != 0) continue;
      if (pending.free) {
        any_span =
            any_span || live_span_level(static_cast<std::int64_t>(pending.row.alloc_seq),
                                        static_cast<std::int64_t>(pending.free->free_seq)) != 0;
      } else {
        written_live.emplace_back(pending.row);
      }
    }
    if (any_span) failure.run(add_pending_live_spans, "adding live spans");
  }
};

std::string TimeIndexKeeper::tables_sql() {
  return in_the_trace(live_span_tables_sql());
}

TimeIndexKeeper::TimeIndexKeeper(std::unique_ptr<State> state) : state_(std::move(state)) {}
TimeIndexKeeper::~TimeIndexKeeper() = default;

std::unique_ptr<TimeIndexKeeper> TimeIndexKeeper::create(WriteFailure& failure,
                                                         std::string_view pending_table,
                                                         bool keep_rollups, std::string* error) {
  auto state = std::make_unique<State>(failure);
  if (Statement::prepare(failure.db, "INSERT INTO live_span VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                         &state->add_live_span) != SQLITE_OK ||
      Statement::prepare(failure.db,
                         "INSERT INTO live_span SELECT upid, live_span_level, live_span_bin, "
                         "alloc_seq, live_span_end_seq, id FROM " +
                             std::string(pending_table) + " WHERE live_span_level IS NOT NULL",
                         &state->add_pending_live_spans) != SQLITE_OK) {
    if (error != nullptr) *error = sqlite3_errmsg(failure.db);
    return nullptr;
  }
  if (keep_rollups) state->rollups = keep_live_bytes_rollups();
  return std::unique_ptr<TimeIndexKeeper>(new TimeIndexKeeper(std::move(state)));
}

bool TimeIndexKeeper::holds() const {
  return state_->upkeep;
}

void TimeIndexKeeper::stop() {
  state_->stop_upkeep();
}

void TimeIndexKeeper::process_started(std::int64_t upid, std::int64_t start_ns) {
  // A upid given twice is refused by the table; its times are not kept.
  if (!state_->process_times.try_emplace(upid, State::ProcessTimes{start_ns}).second)
    state_->rollups.reset();
}

void TimeIndexKeeper::process_ended(std::int64_t upid, std::optional<std::int64_t> end_ns) {
  if (const auto times = state_->process_times.find(upid); times != state_->process_times.end())
    times->second.end_ns = end_ns;
}

void TimeIndexKeeper::allocation_added(const AllocationRow& row) {
  if (state_->upkeep) state_->keep_up_with_allocation(row);
  if (row.result == 0)
    state_->keep_rollups(AllocationEvent::Type::kAlloc, row.id, row.upid, row.alloc_seq,
                         row.alloc_ns, row.device, row.kind, row.size, row.alloc_callsite_id);
}

void TimeIndexKeeper::pending_row_freed(const AllocationRow& row, bool freed_before,
                                        const FreeRow& free) {
  if (!state_->upkeep) return;
  if (freed_before) return state_->stop_upkeep();
  if (row.result != 0) return;
  state_->keep_up_with_free(row.upid, free);
  state_->keep_rollups(AllocationEvent::Type::kFree, row.id, row.upid, free.free_seq, free.free_ns,
                       row.device, row.kind, row.size, row.alloc_callsite_id);
}

void TimeIndexKeeper::written_row_freed(std::int64_t allocation_id, const FreeRow& free) {
  if (state_->upkeep) state_->keep_up_with_written_free(allocation_id, free);
}

void TimeIndexKeeper::batch_written(const std::vector<PendingAllocation>& batch) {
  if (state_->upkeep) state_->batch_written(batch);
}

void TimeIndexKeeper::finish() {
  state_->finish();
}

}  // namespace vramtrace::storage
