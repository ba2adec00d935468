#include "storage/trace_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "storage/allocation_chunk.h"
#include "storage/empty_trace.h"
#include "storage/json_string_array.h"
#include "storage/live_at_end.h"
#include "storage/live_span.h"
#include "storage/pending_allocation_table.h"
#include "storage/rollup_rows.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// How long the final checkpoint waits for a reader in the middle of a query (a live viewer)
// before it checkpoints what it can.
constexpr int kBusyTimeoutMs = 5000;

// Stats the writer itself counts: calls that named a row that does not exist. They are
// collector bugs, but a trace with them is still worth keeping, so they are counted, not fatal.
constexpr std::string_view kStatFreeOfUnknownAllocation = "storage_free_of_unknown_allocation";
constexpr std::string_view kStatEndOfUnknownProcess = "storage_end_of_unknown_process";
constexpr std::string_view kStatNameOfUnknownThread = "storage_name_of_unknown_thread";
constexpr std::string_view kStatEndOfUnknownMarker = "storage_end_of_unknown_marker";

// Allocation rows are held back until their free (or a commit) so that each is written once,
// complete, in id order: an INSERT of a full row instead of an INSERT and an UPDATE that grows
// it, and B-tree pages filled by appends. This many rows at most wait (a few MiB).
constexpr std::size_t kPendingAllocationsMax = 8192;

struct Statements {
  Statement set_meta, add_process, end_process, add_thread, set_thread_name, add_module,
      add_mapping, add_frame, add_callsite, add_site, add_free_site, add_pending_allocations,
      add_pending_details, set_free, set_free_detail, clear_free, clear_free_detail, add_bad_free,
      fail_bad_free, add_marker, end_marker, set_stat, add_memory_activity,
      add_failure_device_memory;
};

struct StatementSql {
  Statement Statements::*statement;
  std::string_view sql;
};

constexpr std::array<StatementSql, 22> kStatementSql{{
    {&Statements::set_meta,
     "INSERT INTO meta(key, value) VALUES(?1, ?2) "
     "ON CONFLICT(key) DO UPDATE SET value = excluded.value"},
    {&Statements::add_process,
     "INSERT INTO process(upid, pid, ppid, uid, host, exe, argv, start_ns, start_realtime_ns, "
     "unwinder, rank, local_rank, world_size, backend) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"},
    {&Statements::end_process,
     "UPDATE process SET end_ns = ?2, exit_status = ?3, signal = ?4, complete = ?5 "
     "WHERE upid = ?1"},
    {&Statements::add_thread, "INSERT INTO thread(utid, upid, tid) VALUES(?1, ?2, ?3)"},
    {&Statements::set_thread_name, "UPDATE thread SET name = ?2 WHERE utid = ?1"},
    {&Statements::add_module, "INSERT INTO module(id, path, build_id) VALUES(?1, ?2, ?3)"},
    {&Statements::add_mapping,
     "INSERT INTO mapping(id, upid, module_id, start, \"end\", load_bias) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6)"},
    {&Statements::add_frame,
     "INSERT INTO frame(id, module_id, rel_pc, function, file, line, inlined, language) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
    {&Statements::add_callsite,
     "INSERT INTO callsite(id, parent_id, frame_id, depth) VALUES(?1, ?2, ?3, ?4)"},
    {&Statements::add_site,
     "INSERT INTO allocation_site(id, kind, api, device, stream, flags, pool, result, utid, "
     "callsite_id) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"},
    {&Statements::add_free_site,
     "INSERT INTO free_site(id, utid, callsite_id, api) VALUES(?1, ?2, ?3, ?4)"},
    {&Statements::set_free,
     "UPDATE allocation_compact SET free_site_id = ?2, free_seq_delta = ?3 - alloc_seq, "
     "free_ns_delta = ?4 - alloc_ns WHERE id = ?1"},
    {&Statements::set_free_detail,
     "INSERT INTO allocation_detail(id, free_allocator_allocated, free_allocator_reserved) "
     "VALUES(?1, ?2, ?3) ON CONFLICT(id) DO UPDATE SET "
     "free_allocator_allocated = excluded.free_allocator_allocated, "
     "free_allocator_reserved = excluded.free_allocator_reserved"},
    {&Statements::clear_free,
     "UPDATE allocation_compact SET free_site_id = NULL, free_seq_delta = NULL, "
     "free_ns_delta = NULL WHERE id = ?1"},
    {&Statements::clear_free_detail,
     "UPDATE allocation_detail SET free_allocator_allocated = NULL, "
     "free_allocator_reserved = NULL WHERE id = ?1"},
    {&Statements::add_bad_free,
     "INSERT INTO bad_free(id, upid, seq, ns, utid, api, address, result, callsite_id, reason) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"},
    {&Statements::add_failure_device_memory,
     "INSERT INTO failure_device_memory(id, device_free, device_total) VALUES(?1, ?2, ?3)"},
    {&Statements::fail_bad_free,
     "UPDATE bad_free SET result = ?2, callsite_id = ifnull(callsite_id, ?3) WHERE id = ?1"},
    {&Statements::add_marker,
     "INSERT INTO marker(id, upid, utid, type, source, domain, name, start_seq, start_ns, depth, "
     "parent_id, color, category) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"},
    {&Statements::end_marker,
     "UPDATE marker SET end_seq = ?2, end_ns = ?3, end_utid = ?4 WHERE id = ?1"},
    {&Statements::set_stat,
     "INSERT INTO stats(name, severity, value, description) VALUES(?1, ?2, ?3, ?4) "
     "ON CONFLICT(name) DO UPDATE SET severity = excluded.severity, value = excluded.value, "
     "description = excluded.description"},
    {&Statements::add_memory_activity,
     "INSERT INTO memory_activity(id, upid, operation, kind, correlation_id, address, size, "
     "device, stream, cupti_ns, pool_address, release_threshold, utilized_size, "
     "min_bytes_to_keep, source, allocation_id) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"},
}};

// What an allocation shares with others made by the same call from the same place: the
// allocation_site row it is filed under (storage/schema.cpp).
// The time index's SQL (`$X.` naming its schema) for tables the writer makes in the trace itself.
std::string in_the_trace(std::string_view index_sql) {
  std::string sql(index_sql);
  for (std::size_t at = sql.find("$X."); at != std::string::npos; at = sql.find("$X."))
    sql.erase(at, 3);
  return sql;
}

struct SiteKey {
  std::int64_t utid = 0;
  std::optional<std::int64_t> callsite_id;
  int kind = 0, api = 0, device = 0, result = 0;
  std::uint64_t stream = 0;
  std::uint32_t flags = 0;
  std::optional<std::uint64_t> pool;

  explicit SiteKey(const AllocationRow& row)
      : utid(row.alloc_utid),
        callsite_id(row.alloc_callsite_id),
        kind(row.kind),
        api(row.api),
        device(row.device),
        result(row.result),
        stream(row.stream),
        flags(row.flags),
        pool(row.pool) {}
  bool operator==(const SiteKey&) const = default;
};

struct FreeSiteKey {
  std::int64_t utid = 0;
  std::optional<std::int64_t> callsite_id;
  int api = 0;

  explicit FreeSiteKey(const FreeRow& row)
      : utid(row.free_utid), callsite_id(row.free_callsite_id), api(row.free_api) {}
  bool operator==(const FreeSiteKey&) const = default;
};

std::size_t mix(std::size_t seed, std::uint64_t value) {
  // boost::hash_combine's mixing, on 64 bits.
  return seed ^
         (std::hash<std::uint64_t>{}(value) + 0x9e3779b97f4a7c15ULL + (seed << 12) + (seed >> 4));
}

std::uint64_t optional_bits(const std::optional<std::int64_t>& value) {
  return value ? static_cast<std::uint64_t>(*value) : 0x8000000000000000ULL;
}

struct SiteKeyHash {
  std::size_t operator()(const SiteKey& key) const {
    std::size_t h = mix(0, static_cast<std::uint64_t>(key.utid));
    h = mix(h, optional_bits(key.callsite_id));
    h = mix(h, (static_cast<std::uint64_t>(key.kind) << 32) ^ static_cast<std::uint32_t>(key.api));
    h = mix(
        h, (static_cast<std::uint64_t>(key.device) << 32) ^ static_cast<std::uint32_t>(key.result));
    h = mix(h, key.stream);
    h = mix(h, key.flags);
    return mix(h, key.pool ? *key.pool : 0x8000000000000000ULL);
  }
  std::size_t operator()(const FreeSiteKey& key) const {
    std::size_t h = mix(0, static_cast<std::uint64_t>(key.utid));
    h = mix(h, optional_bits(key.callsite_id));
    return mix(h, static_cast<std::uint64_t>(key.api));
  }
};

}  // namespace

struct TraceFileWriter::Impl {
  std::filesystem::path path;
  sqlite::Database db;
  Statements statements;
  bool in_transaction = false;
  bool finished = false;
  std::string error;
  std::map<std::string_view, std::int64_t> unknown_row_counts;
  // Ascending ids; written by write_pending_allocations() before any commit.
  std::vector<PendingAllocation> pending_allocations;
  // The allocation_site and free_site rows written so far, by what they hold.
  std::unordered_map<SiteKey, std::int64_t, SiteKeyHash> sites;
  std::unordered_map<FreeSiteKey, std::int64_t, SiteKeyHash> free_sites;
  // The last site met and its id: a storm repeats one site, which is then compared, not hashed.
  std::optional<std::pair<SiteKey, std::int64_t>> last_site;
  std::optional<std::pair<FreeSiteKey, std::int64_t>> last_free_site;

  // TimeIndexUpkeep::kAsRowsArrive: what the writer keeps up of the time index, and whether it
  // still holds (`upkeep` turns false for good when it cannot: finish() then empties the
  // tables and leaves them to the build).
  bool upkept_tables = false;  // the tables exist in the file
  bool upkeep = false;
  // AllocationPacking::kPackShortLives, while the upkeep holds.
  bool pack_short_lives = false;
  bool chunks_written = false;
  Statement add_chunk;
  std::vector<std::pair<std::int64_t, PackedAllocation>> packed_scratch;
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
    written_live = {};
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
    if (sqlite::execute(db.get(), in_the_trace(rollup_tables_sql()), &message) != SQLITE_OK)
      return fail("adding the time index's rollups", message);
    Statement bucket, peak, live_at_peak, span;
    if (Statement::prepare(db.get(),
                           "INSERT INTO live_bytes_bucket VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                           &bucket) != SQLITE_OK ||
        Statement::prepare(db.get(), "INSERT INTO live_bytes_peak VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           &peak) != SQLITE_OK ||
        Statement::prepare(db.get(), "INSERT INTO live_at_peak VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           &live_at_peak) != SQLITE_OK ||
        Statement::prepare(db.get(),
                           "INSERT INTO time_index_upkeep VALUES('rollups_start_ns', ?1), "
                           "('rollups_end_ns', ?2)",
                           &span) != SQLITE_OK)
      return fail("adding the time index's rollups", sqlite3_errmsg(db.get()));
    RollupSink sink;
    sink.add_bucket = [&](const LiveBytesBucket& row) {
      bind_bucket_row(bucket, row);
      run(bucket, "adding the time index's rollups");
    };
    sink.add_peak = [&](const LiveBytesPeak& row) {
      bind_peak_row(peak, row);
      run(peak, "adding the time index's rollups");
    };
    sink.add_live_at_peak = [&](const LiveAtPeak& row) {
      bind_live_at_peak_row(live_at_peak, row);
      run(live_at_peak, "adding the time index's rollups");
    };
    rollups->write(start_ns, end_ns, sink);
    span.bind_int64(1, start_ns);
    span.bind_int64(2, end_ns);
    run(span, "adding the time index's rollups");
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
    run(statement, "adding a live span");
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
    if (Statement::prepare(db.get(),
                           "INSERT INTO live_at_end VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                           &statement) != SQLITE_OK)
      return fail("adding the time index's tables", sqlite3_errmsg(db.get()));
    groups.write(statement, [&](Statement& row) { run(row, "adding the time index's tables"); });
  }

  // At finish(): what is still live, and the small tables. Without upkeep, empties them.
  void write_upkept_tables() {
    if (!upkept_tables || !error.empty()) return;
    std::string message;
    if (!upkeep) {
      if (sqlite::execute(db.get(),
                          "DELETE FROM live_span; DELETE FROM allocator_segment; "
                          "DELETE FROM allocator_process; DELETE FROM process_time_range; "
                          "DELETE FROM live_at_end; DELETE FROM time_index_upkeep;",
                          &message) != SQLITE_OK)
        fail("emptying the time index's tables", message);
      return;
    }
    for (const WrittenLive& live : written_live)
      if (!live.freed) put_live_span(live.upid, live.alloc_seq, std::nullopt, live.id);
    const auto insert_each = [&](std::string_view sql, const std::set<std::int64_t>& values) {
      Statement statement;
      if (Statement::prepare(db.get(), sql, &statement) != SQLITE_OK)
        return fail("adding the time index's tables", sqlite3_errmsg(db.get()));
      for (const std::int64_t value : values) {
        statement.bind_int64(1, value);
        run(statement, "adding the time index's tables");
      }
    };
    write_live_at_end();
    insert_each("INSERT INTO allocator_segment(id) VALUES(?1)", allocator_segments);
    insert_each("INSERT INTO allocator_process(upid) VALUES(?1)", allocator_processes);
    Statement range;
    if (Statement::prepare(db.get(), "INSERT INTO process_time_range VALUES(?1, ?2, ?3, ?4)",
                           &range) != SQLITE_OK)
      return fail("adding the time index's tables", sqlite3_errmsg(db.get()));
    for (const auto& [upid, times] : time_ranges) {
      range.bind_int64(1, upid);
      range.bind_int64(2, times.first_alloc_ns);
      range.bind_int64(3, times.last_alloc_ns);
      range.bind_optional_int64(4, times.last_free_ns);
      run(range, "adding the time index's tables");
    }
    Statement upkept;
    if (Statement::prepare(db.get(),
                           "INSERT INTO time_index_upkeep VALUES('version', ?1), "
                           "('allocation_id', ?2)",
                           &upkept) != SQLITE_OK)
      return fail("adding the time index's tables", sqlite3_errmsg(db.get()));
    upkept.bind_int64(1, kTimeIndexUpkeepVersion);
    upkept.bind_int64(2, last_allocation_id);
    run(upkept, "adding the time index's tables");
    write_kept_rollups();
  }

  std::int64_t site_id(const AllocationRow& row) {
    const SiteKey key(row);
    if (last_site && last_site->first == key) return last_site->second;
    const auto [it, added] = sites.try_emplace(key, 0);
    last_site.emplace(key, it->second);
    if (!added) return it->second;
    it->second = static_cast<std::int64_t>(sites.size());
    Statement& statement = statements.add_site;
    statement.bind_int64(1, it->second);
    statement.bind_int64(2, row.kind);
    statement.bind_int64(3, row.api);
    statement.bind_int64(4, row.device);
    statement.bind_uint64(5, row.stream);
    statement.bind_int64(6, row.flags);
    statement.bind_optional_uint64(7, row.pool);
    statement.bind_int64(8, row.result);
    statement.bind_int64(9, row.alloc_utid);
    statement.bind_optional_int64(10, row.alloc_callsite_id);
    run(statement, "adding an allocation site");
    last_site->second = it->second;
    return it->second;
  }

  std::int64_t free_site_id(const FreeRow& row) {
    const FreeSiteKey key(row);
    if (last_free_site && last_free_site->first == key) return last_free_site->second;
    const auto [it, added] = free_sites.try_emplace(key, 0);
    last_free_site.emplace(key, it->second);
    if (!added) return it->second;
    it->second = static_cast<std::int64_t>(free_sites.size());
    Statement& statement = statements.add_free_site;
    statement.bind_int64(1, it->second);
    statement.bind_int64(2, row.free_utid);
    statement.bind_optional_int64(3, row.free_callsite_id);
    statement.bind_int64(4, row.free_api);
    run(statement, "adding a free site");
    last_free_site->second = it->second;
    return it->second;
  }

  // True when a write may go ahead; opens the batch transaction if none is open.
  bool begin_write() {
    if (finished || !error.empty()) return false;
    if (in_transaction) return true;
    std::string message;
    if (sqlite::execute(db.get(), "BEGIN", &message) != SQLITE_OK) {
      fail("starting a transaction", message);
      return false;
    }
    in_transaction = true;
    return true;
  }

  void fail(std::string_view doing, std::string_view message) {
    if (!error.empty()) return;
    error = "cannot write trace " + path.string() + ": " + std::string(message) + " (while " +
            std::string(doing) + ")";
  }

  // Runs a bound statement; returns the number of rows it changed (0 on failure).
  int run(Statement& statement, std::string_view doing) {
    const int rc = statement.step();
    if (rc != SQLITE_DONE) fail(doing, sqlite3_errmsg(db.get()));
    const int changes = rc == SQLITE_DONE ? sqlite3_changes(db.get()) : 0;
    statement.reset();
    return changes;
  }

  // For UPDATEs by id: a missing row is counted, not fatal.
  // Returns the number of rows it changed.
  int run_update(Statement& statement, std::string_view doing, std::string_view unknown_stat) {
    const int changed = run(statement, doing);
    if (changed == 0 && error.empty()) ++unknown_row_counts[unknown_stat];
    return changed;
  }

  void write_stat(std::string_view name, Severity severity, std::int64_t value,
                  std::string_view description) {
    Statement& set_stat = statements.set_stat;
    set_stat.bind_text(1, name);
    set_stat.bind_text(2, severity_name(severity));
    set_stat.bind_int64(3, value);
    set_stat.bind_text(4, description);
    run(set_stat, "setting a stat");
  }

  void write_unknown_row_counts() {
    for (const auto& [name, count] : unknown_row_counts) {
      write_stat(name, Severity::kError, count,
                 "the collector updated a row that was never added (a collector bug)");
    }
  }

  PendingAllocation* find_pending_allocation(std::int64_t id) {
    if (pending_allocations.empty()) return nullptr;
    // The collector numbers allocations one after another, so the row is where its number
    // says; the search, which touches a cache line a step, is for any other writer.
    const std::uint64_t guess = static_cast<std::uint64_t>(id) -
                                static_cast<std::uint64_t>(pending_allocations.front().row.id);
    if (guess < pending_allocations.size() && pending_allocations[guess].row.id == id)
      return &pending_allocations[guess];
    auto it = std::lower_bound(
        pending_allocations.begin(), pending_allocations.end(), id,
        [](const PendingAllocation& pending, std::int64_t key) { return pending.row.id < key; });
    return it != pending_allocations.end() && it->row.id == id ? &*it : nullptr;
  }

  // Whether a pending row goes into a chunk (AllocationPacking::kPackShortLives): a short life
  // allocated and freed within one bin of level 0, with no details, and no block of this batch
  // inside it (a block is made after its segment and freed before it, so one that names a row of
  // this batch is in this batch too).
  bool packable(const PendingAllocation& pending,
                const std::unordered_set<std::int64_t>& segments) const {
    if (pending.row.result != 0 || !pending.free || has_detail(pending)) return false;
    const std::uint64_t life = pending.free->free_seq - pending.row.alloc_seq;
    if (life < 1 || life > static_cast<std::uint64_t>(kShortLifeEvents)) return false;
    // Its free too in the bin (a life of level 0 may end at the next bin's first number): a
    // reader finds every number of a chunk in the bin it starts in.
    if (live_span_bin(0, static_cast<std::int64_t>(pending.row.alloc_seq)) !=
        live_span_bin(0, static_cast<std::int64_t>(pending.free->free_seq)))
      return false;
    return segments.empty() || !segments.contains(pending.row.id);
  }

  // Takes the packable rows out of pending_allocations and writes them as chunks: one per
  // process and bin of level 0 (a reader then finds a number's chunks among those that start
  // in its bin), ordered by alloc_seq.
  void write_chunks() {
    std::unordered_set<std::int64_t> segments;
    for (const PendingAllocation& pending : pending_allocations)
      if (pending.row.segment_id) segments.insert(*pending.row.segment_id);
    // (upid, allocation): the packable rows' columns alone, a fraction of a pending row's bytes.
    std::vector<std::pair<std::int64_t, PackedAllocation>>& packed = packed_scratch;
    packed.clear();
    std::erase_if(pending_allocations, [&](const PendingAllocation& pending) {
      if (!packable(pending, segments)) return false;
      const AllocationRow& row = pending.row;
      packed.emplace_back(
          row.upid,
          PackedAllocation{
              row.id, pending.site_id, row.address, row.size,
              static_cast<std::int64_t>(row.size - row.requested_size), row.alloc_seq, row.alloc_ns,
              pending.free_site_id,
              static_cast<std::int64_t>(pending.free->free_seq - row.alloc_seq),
              static_cast<std::int64_t>(static_cast<std::uint64_t>(pending.free->free_ns) -
                                        static_cast<std::uint64_t>(row.alloc_ns))});
      return true;
    });
    if (packed.empty()) return;
    // In id order, which is each process's alloc_seq order as the collector numbers them.
    const auto by_number = [](const auto& x, const auto& y) {
      return std::pair(x.first, x.second.alloc_seq) < std::pair(y.first, y.second.alloc_seq);
    };
    if (!std::is_sorted(packed.begin(), packed.end(), by_number))
      std::sort(packed.begin(), packed.end(), by_number);
    if (!chunks_written) {
      std::string message;
      if (sqlite::execute(db.get(), "PRAGMA user_version = " + std::to_string(kSchemaVersion),
                          &message) != SQLITE_OK)
        return fail("marking the trace as holding packed allocations", message);
      chunks_written = true;
    }
    std::vector<PackedAllocation> chunk;
    for (std::size_t i = 0; i < packed.size(); ++i) {
      const auto& [upid, allocation] = packed[i];
      chunk.push_back(allocation);
      const bool last_of_chunk =
          i + 1 == packed.size() || packed[i + 1].first != upid ||
          live_span_bin(0, static_cast<std::int64_t>(packed[i + 1].second.alloc_seq)) !=
              live_span_bin(0, static_cast<std::int64_t>(allocation.alloc_seq));
      if (!last_of_chunk) continue;
      const AllocationChunk packed_chunk = pack_allocations(upid, chunk);
      add_chunk.bind_int64(1, packed_chunk.upid);
      add_chunk.bind_uint64(2, packed_chunk.first_alloc_seq);
      add_chunk.bind_uint64(3, packed_chunk.last_seq);
      add_chunk.bind_int64(4, packed_chunk.first_id);
      add_chunk.bind_int64(5, packed_chunk.last_id);
      add_chunk.bind_int64(6, packed_chunk.first_alloc_ns);
      add_chunk.bind_int64(7, packed_chunk.count);
      add_chunk.bind_text(8, packed_chunk.allocations);
      run(add_chunk, "adding packed allocations");
      chunk.clear();
    }
  }

  // Rows still live are written without their free, which set_free() then updates.
  void write_pending_allocations() {
    if (pack_short_lives && upkeep && error.empty()) write_chunks();
    if (!pending_allocations.empty() && error.empty()) {
      run(statements.add_pending_allocations, "adding an allocation");
      if (std::any_of(pending_allocations.begin(), pending_allocations.end(),
                      [](const PendingAllocation& pending) { return has_detail(pending); }))
        run(statements.add_pending_details, "adding an allocation's details");
      if (upkeep) {
        // Most lives end within their bin (level 0: no span row); the statement's scan of the
        // batch runs only when one does not.
        bool any_span = false;
        for (const PendingAllocation& pending : pending_allocations) {
          if (pending.row.result != 0) continue;
          if (pending.free) {
            any_span =
                any_span || live_span_level(static_cast<std::int64_t>(pending.row.alloc_seq),
                                            static_cast<std::int64_t>(pending.free->free_seq)) != 0;
          } else {
            written_live.emplace_back(pending.row);
          }
        }
        if (any_span) run(add_pending_live_spans, "adding live spans");
      }
    }
    pending_allocations.clear();
  }

  void commit() {
    if (!in_transaction) return;
    write_pending_allocations();
    if (error.empty()) write_unknown_row_counts();
    in_transaction = false;
    std::string message;
    if (sqlite::execute(db.get(), "COMMIT", &message) != SQLITE_OK) {
      fail("committing", message);
    }
  }

  // Leaves WAL mode so that the file stands alone. While another connection has the trace
  // open, SQLite cannot switch; the trace then stays marked as WAL mode, complete, readable,
  // and (unless that reader was mid-query) fully checkpointed into the main file. That is not
  // worth failing finish() for.
  void leave_wal_mode() {
    std::string ignored;
    sqlite::execute(db.get(), "PRAGMA wal_checkpoint(TRUNCATE)", &ignored);
    sqlite::execute(db.get(), "PRAGMA journal_mode = DELETE", &ignored);
  }
};

TraceFileWriter::TraceFileWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceFileWriter::~TraceFileWriter() {
  if (!impl_->finished && impl_->db) impl_->commit();
}

std::unique_ptr<TraceFileWriter> TraceFileWriter::create(const std::filesystem::path& path,
                                                         std::string* error, TimeIndexUpkeep upkeep,
                                                         std::unique_ptr<RollupKeeper> rollups,
                                                         AllocationPacking packing) {
  std::string ignored;
  std::string& message = error != nullptr ? *error : ignored;

  // Claim the name atomically first: two collectors must never share a trace file.
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST) {
      message = "cannot create trace " + path.string() +
                ": the file already exists; remove it or choose another name";
    } else {
      message = "cannot create trace " + path.string() + ": " + std::strerror(errno);
    }
    return nullptr;
  }
  ::close(fd);

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const auto give_up = [&](std::string_view reason) {
    message = "cannot create trace " + path.string() + ": " + std::string(reason);
    impl.reset();
    std::error_code remove_error;
    std::filesystem::remove(path, remove_error);
    std::filesystem::remove(path.string() + "-wal", remove_error);
    std::filesystem::remove(path.string() + "-shm", remove_error);
    return nullptr;
  };

  sqlite3* raw_db = nullptr;
  const int open_rc =
      sqlite3_open_v2(path.c_str(), &raw_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  impl->db.reset(raw_db);
  if (open_rc != SQLITE_OK) {
    return give_up(raw_db != nullptr ? sqlite3_errmsg(raw_db) : sqlite3_errstr(open_rc));
  }
  sqlite3_busy_timeout(raw_db, kBusyTimeoutMs);

  // kAsRowsArrive: the reports' indexes and the time index's kept tables, with the schema.
  std::string upkept_sql;
  if (upkeep == TimeIndexUpkeep::kAsRowsArrive) {
    upkept_sql = std::string(schema_indexes_sql()) + in_the_trace(live_span_tables_sql());
  }
  std::string reason;
  // Checkpoints every 64 pages (1 MiB) of log rather than SQLite's 1,000: the last one, in finish()
  // after the traced command ended, then copies at most about a megabyte while the command's
  // wrapper waits (4 MB took 7 ms more at the end of a 200,000-allocation run); the others,
  // smaller and more often, run while the program does. Never syncs: each checkpoint's two
  // fsyncs were a third of the ingest's time in a storm, and what they guard against is the
  // machine's crash, not the program's or vramtrace's (SQLite's WAL stays whole through those,
  // as heaptrack's unsynced stream does).
  if (sqlite::execute(raw_db,
                      trace_page_size_pragma() +
                          " PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; "
                          "PRAGMA wal_autocheckpoint = 64;",
                      &reason) != SQLITE_OK ||
      write_empty_trace(raw_db, &reason, upkept_sql) != SQLITE_OK) {
    return give_up(reason);
  }
  for (const StatementSql& spec : kStatementSql) {
    if (Statement::prepare(raw_db, spec.sql, &(impl->statements.*spec.statement)) != SQLITE_OK) {
      return give_up(sqlite3_errmsg(raw_db));
    }
  }
  const std::string compact(kPendingCompactColumns), detail(kPendingDetailColumns),
      pending_table(kPendingAllocationTable);
  if (register_pending_allocation_table(raw_db, &impl->pending_allocations) != SQLITE_OK ||
      Statement::prepare(raw_db,
                         "INSERT INTO allocation_compact(" + compact + ") SELECT " + compact +
                             " FROM " + pending_table,
                         &impl->statements.add_pending_allocations) != SQLITE_OK ||
      Statement::prepare(raw_db,
                         "INSERT INTO allocation_detail(id, " + detail + ") SELECT id, " + detail +
                             " FROM " + pending_table + " WHERE has_detail",
                         &impl->statements.add_pending_details) != SQLITE_OK) {
    return give_up(sqlite3_errmsg(raw_db));
  }
  if (upkeep == TimeIndexUpkeep::kAsRowsArrive) {
    if (Statement::prepare(raw_db, "INSERT INTO live_span VALUES(?1, ?2, ?3, ?4, ?5, ?6)",
                           &impl->add_live_span) != SQLITE_OK ||
        Statement::prepare(raw_db,
                           "INSERT INTO live_span SELECT upid, live_span_level, live_span_bin, "
                           "alloc_seq, live_span_end_seq, id FROM " +
                               pending_table + " WHERE live_span_level IS NOT NULL",
                           &impl->add_pending_live_spans) != SQLITE_OK) {
      return give_up(sqlite3_errmsg(raw_db));
    }
    impl->upkept_tables = true;
    impl->upkeep = true;
    impl->rollups = std::move(rollups);
    if (packing == AllocationPacking::kPackShortLives) {
      if (Statement::prepare(raw_db,
                             "INSERT INTO allocation_chunk(upid, first_alloc_seq, last_seq, "
                             "first_id, last_id, first_alloc_ns, count, allocations) "
                             "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                             &impl->add_chunk) != SQLITE_OK)
        return give_up(sqlite3_errmsg(raw_db));
      impl->pack_short_lives = true;
    }
  }
  return std::unique_ptr<TraceFileWriter>(new TraceFileWriter(std::move(impl)));
}

void TraceFileWriter::set_meta(std::string_view key, std::string_view value) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.set_meta;
  statement.bind_text(1, key);
  statement.bind_text(2, value);
  impl_->run(statement, "setting meta");
}

void TraceFileWriter::set_command(const std::vector<std::string>& argv) {
  set_meta("command", to_json_string_array(argv));
}

void TraceFileWriter::add_process(const ProcessRow& row) {
  if (!impl_->begin_write()) return;
  // A upid given twice is refused by the table; its times are not kept.
  if (!impl_->process_times.try_emplace(row.upid, Impl::ProcessTimes{row.start_ns}).second)
    impl_->rollups.reset();
  Statement& statement = impl_->statements.add_process;
  statement.bind_int64(1, row.upid);
  statement.bind_int64(2, row.pid);
  statement.bind_int64(3, row.ppid);
  statement.bind_int64(4, row.uid);
  statement.bind_text(5, row.host);
  statement.bind_text(6, row.exe);
  statement.bind_text(7, to_json_string_array(row.argv));
  statement.bind_int64(8, row.start_ns);
  statement.bind_int64(9, row.start_realtime_ns);
  statement.bind_text(10, row.unwinder);
  statement.bind_optional_int64(11, row.rank);
  statement.bind_optional_int64(12, row.local_rank);
  statement.bind_optional_int64(13, row.world_size);
  statement.bind_text(14, row.backend);
  impl_->run(statement, "adding a process");
}

void TraceFileWriter::end_process(const ProcessEndRow& row) {
  if (!impl_->begin_write()) return;
  if (const auto times = impl_->process_times.find(row.upid); times != impl_->process_times.end())
    times->second.end_ns = row.end_ns;
  Statement& statement = impl_->statements.end_process;
  statement.bind_int64(1, row.upid);
  statement.bind_optional_int64(2, row.end_ns);
  statement.bind_optional_int64(3, row.exit_status);
  statement.bind_optional_int64(4, row.signal);
  statement.bind_int64(5, row.complete ? 1 : 0);
  impl_->run_update(statement, "ending a process", kStatEndOfUnknownProcess);
}

void TraceFileWriter::add_thread(std::int64_t utid, std::int64_t upid, std::uint32_t tid) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_thread;
  statement.bind_int64(1, utid);
  statement.bind_int64(2, upid);
  statement.bind_int64(3, tid);
  impl_->run(statement, "adding a thread");
}

void TraceFileWriter::set_thread_name(std::int64_t utid, std::string_view name) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.set_thread_name;
  statement.bind_int64(1, utid);
  statement.bind_text(2, name);
  impl_->run_update(statement, "naming a thread", kStatNameOfUnknownThread);
}

void TraceFileWriter::add_module(std::int64_t id, std::string_view path,
                                 std::string_view build_id_hex) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_module;
  statement.bind_int64(1, id);
  statement.bind_text(2, path);
  if (build_id_hex.empty()) {
    statement.bind_null(3);
  } else {
    statement.bind_text(3, build_id_hex);
  }
  impl_->run(statement, "adding a module");
}

void TraceFileWriter::add_mapping(std::int64_t id, std::int64_t upid, std::int64_t module_id,
                                  std::uint64_t start, std::uint64_t end, std::uint64_t load_bias) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_mapping;
  statement.bind_int64(1, id);
  statement.bind_int64(2, upid);
  statement.bind_int64(3, module_id);
  statement.bind_uint64(4, start);
  statement.bind_uint64(5, end);
  statement.bind_uint64(6, load_bias);
  impl_->run(statement, "adding a mapping");
}

void TraceFileWriter::add_frame(const FrameRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_frame;
  statement.bind_int64(1, row.id);
  statement.bind_int64(2, row.module_id);
  statement.bind_uint64(3, row.rel_pc);
  statement.bind_optional_text(4, row.function);
  statement.bind_optional_text(5, row.file);
  statement.bind_optional_int64(6, row.line);
  statement.bind_int64(7, row.inlined ? 1 : 0);
  statement.bind_text(8, frame_language_name(row.language));
  impl_->run(statement, "adding a frame");
}

void TraceFileWriter::add_callsite(std::int64_t id, std::optional<std::int64_t> parent_id,
                                   std::int64_t frame_id, int depth) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_callsite;
  statement.bind_int64(1, id);
  statement.bind_optional_int64(2, parent_id);
  statement.bind_int64(3, frame_id);
  statement.bind_int64(4, depth);
  impl_->run(statement, "adding a callsite");
}

void TraceFileWriter::add_allocation(const AllocationRow& row) {
  if (!impl_->begin_write()) return;
  if (impl_->upkeep) impl_->keep_up_with_allocation(row);
  if (row.result == 0)
    impl_->keep_rollups(AllocationEvent::Type::kAlloc, row.id, row.upid, row.alloc_seq,
                        row.alloc_ns, row.device, row.kind, row.size, row.alloc_callsite_id);
  auto& pending = impl_->pending_allocations;
  if (!pending.empty() && row.id <= pending.back().row.id) {
    // Not the collector's ascending order: write it now, so that a duplicate fails here.
    impl_->write_pending_allocations();
    pending.emplace_back(row, impl_->site_id(row));
    impl_->write_pending_allocations();
    return;
  }
  // Made in place: a temporary of this size, copied, cost as much as the rest.
  pending.emplace_back(row, impl_->site_id(row));
  if (pending.size() >= kPendingAllocationsMax) impl_->write_pending_allocations();
}

void TraceFileWriter::set_free(std::int64_t allocation_id, const FreeRow& row) {
  if (!impl_->begin_write()) return;
  const std::int64_t free_site_id = impl_->free_site_id(row);
  if (PendingAllocation* pending = impl_->find_pending_allocation(allocation_id)) {
    if (impl_->upkeep) {
      if (pending->free) {
        impl_->stop_upkeep();
      } else if (pending->row.result == 0) {
        impl_->keep_up_with_free(pending->row.upid, row);
        impl_->keep_rollups(AllocationEvent::Type::kFree, allocation_id, pending->row.upid,
                            row.free_seq, row.free_ns, pending->row.device, pending->row.kind,
                            pending->row.size, pending->row.alloc_callsite_id);
      }
    }
    pending->free = row;
    pending->free_site_id = free_site_id;
    return;
  }
  if (impl_->upkeep) impl_->keep_up_with_written_free(allocation_id, row);
  Statement& statement = impl_->statements.set_free;
  statement.bind_int64(1, allocation_id);
  statement.bind_int64(2, free_site_id);
  statement.bind_uint64(3, row.free_seq);
  statement.bind_int64(4, row.free_ns);
  if (impl_->run_update(statement, "recording a free", kStatFreeOfUnknownAllocation) == 0) return;
  if (row.allocator_allocated || row.allocator_reserved) {
    Statement& detail = impl_->statements.set_free_detail;
    detail.bind_int64(1, allocation_id);
    detail.bind_optional_uint64(2, row.allocator_allocated);
    detail.bind_optional_uint64(3, row.allocator_reserved);
    impl_->run(detail, "recording a free's allocator totals");
  }
}

void TraceFileWriter::clear_free(std::int64_t allocation_id) {
  if (!impl_->begin_write()) return;
  // Its span and its process's range are written or counted already: the build redoes them.
  impl_->stop_upkeep();
  if (PendingAllocation* pending = impl_->find_pending_allocation(allocation_id)) {
    pending->free.reset();
    return;
  }
  Statement& statement = impl_->statements.clear_free;
  statement.bind_int64(1, allocation_id);
  impl_->run_update(statement, "undoing a failed free", kStatFreeOfUnknownAllocation);
  Statement& detail = impl_->statements.clear_free_detail;
  detail.bind_int64(1, allocation_id);
  impl_->run(detail, "undoing a failed free's allocator totals");
}

void TraceFileWriter::add_bad_free(const BadFreeRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_bad_free;
  statement.bind_int64(1, row.id);
  statement.bind_int64(2, row.upid);
  statement.bind_uint64(3, row.seq);
  statement.bind_int64(4, row.ns);
  statement.bind_int64(5, row.utid);
  statement.bind_int64(6, row.api);
  statement.bind_uint64(7, row.address);
  statement.bind_int64(8, row.result);
  statement.bind_optional_int64(9, row.callsite_id);
  statement.bind_text(10, row.reason);
  impl_->run(statement, "adding a bad free");
}

void TraceFileWriter::add_failure_device_memory(std::int64_t allocation_id,
                                                std::uint64_t device_free,
                                                std::uint64_t device_total) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_failure_device_memory;
  statement.bind_int64(1, allocation_id);
  statement.bind_uint64(2, device_free);
  statement.bind_uint64(3, device_total);
  impl_->run(statement, "adding a failure's device memory");
}

void TraceFileWriter::fail_bad_free(std::int64_t bad_free_id, std::int32_t result,
                                    std::optional<std::int64_t> callsite_id) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.fail_bad_free;
  statement.bind_int64(1, bad_free_id);
  statement.bind_int64(2, result);
  statement.bind_optional_int64(3, callsite_id);
  impl_->run(statement, "marking a bad free failed");
}

void TraceFileWriter::add_marker(const MarkerRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_marker;
  statement.bind_int64(1, row.id);
  statement.bind_int64(2, row.upid);
  statement.bind_int64(3, row.utid);
  statement.bind_text(4, row.type);
  statement.bind_text(5, row.source);
  statement.bind_optional_text(6, row.domain);
  statement.bind_text(7, row.name);
  statement.bind_uint64(8, row.start_seq);
  statement.bind_int64(9, row.start_ns);
  statement.bind_int64(10, row.depth);
  statement.bind_optional_int64(11, row.parent_id);
  statement.bind_optional_int64(12, row.color);
  statement.bind_optional_int64(13, row.category);
  impl_->run(statement, "adding a marker");
}

void TraceFileWriter::add_memory_activity(const MemoryActivityRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_memory_activity;
  statement.bind_int64(1, row.id);
  statement.bind_int64(2, row.upid);
  statement.bind_text(3, row.operation);
  statement.bind_int64(4, row.kind);
  statement.bind_int64(5, row.correlation_id);
  statement.bind_uint64(6, row.address);
  statement.bind_uint64(7, row.size);
  statement.bind_int64(8, row.device);
  statement.bind_int64(9, row.stream);
  statement.bind_uint64(10, row.cupti_ns);
  statement.bind_optional_uint64(11, row.pool_address);
  statement.bind_optional_uint64(12, row.release_threshold);
  statement.bind_optional_uint64(13, row.utilized_size);
  statement.bind_optional_uint64(14, row.min_bytes_to_keep);
  statement.bind_optional_text(15, row.source);
  statement.bind_optional_int64(16, row.allocation_id);
  impl_->run(statement, "adding a memory activity record");
}

void TraceFileWriter::end_marker(std::int64_t marker_id, const MarkerEndRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.end_marker;
  statement.bind_int64(1, marker_id);
  statement.bind_uint64(2, row.end_seq);
  statement.bind_int64(3, row.end_ns);
  statement.bind_int64(4, row.end_utid);
  impl_->run_update(statement, "ending a marker", kStatEndOfUnknownMarker);
}

void TraceFileWriter::set_stat(std::string_view name, Severity severity, std::int64_t value,
                               std::string_view description) {
  if (!impl_->begin_write()) return;
  impl_->write_stat(name, severity, value, description);
}

void TraceFileWriter::flush() {
  if (impl_->finished) return;
  impl_->commit();
}

bool TraceFileWriter::finish(std::string* error, AllocationIndexes allocation_indexes) {
  Impl& impl = *impl_;
  if (!impl.finished) {
    impl.commit();
    if (impl.begin_write()) {
      impl.write_upkept_tables();
      std::string message;
      std::string_view indexes = schema_indexes_sql();
      if (allocation_indexes == AllocationIndexes::kLeaveToTimeIndex)
        indexes.remove_prefix(allocation_indexes_sql().size());
      if (sqlite::execute(impl.db.get(), indexes, &message) != SQLITE_OK) {
        impl.fail("creating indexes", message);
      }
      set_meta("complete", "1");
      impl.commit();
    }
    if (impl.error.empty()) impl.leave_wal_mode();
    impl.statements = Statements();
    impl.add_live_span = Statement();
    impl.add_pending_live_spans = Statement();
    impl.add_chunk = Statement();
    if (const int rc = sqlite3_close(impl.db.release()); rc != SQLITE_OK) {
      impl.fail("closing", sqlite3_errstr(rc));
    }
    impl.finished = true;
  }
  if (!impl.error.empty() && error != nullptr) *error = impl.error;
  return impl.error.empty();
}

bool TraceFileWriter::ok() const {
  return impl_->error.empty();
}

const std::string& TraceFileWriter::error() const {
  return impl_->error;
}

}  // namespace vramtrace::storage
