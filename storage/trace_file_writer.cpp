#include "storage/trace_file_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "storage/allocation_chunk.h"
#include "storage/allocation_sites.h"
#include "storage/empty_trace.h"
#include "storage/json_string_array.h"
#include "storage/live_span.h"
#include "storage/pending_allocation_table.h"
#include "storage/pending_rows_held.h"
#include "storage/schema.h"
#include "storage/short_life_packer.h"
#include "storage/sqlite_statement.h"
#include "storage/time_index_keeper.h"
#include "storage/trace_stats.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// How long the final checkpoint waits for a reader in the middle of a query (a live viewer)
// before it checkpoints what it can.
constexpr int kBusyTimeoutMs = 5000;

// Stats the writer itself counts: calls that named a row that does not exist (the writer's rows
// of storage/trace_stats.h, which give their severity and description).
constexpr std::string_view kStatFreeOfUnknownAllocation =
    trace_stat(TraceStatId::kStorageFreeOfUnknownAllocation).name;
constexpr std::string_view kStatEndOfUnknownProcess =
    trace_stat(TraceStatId::kStorageEndOfUnknownProcess).name;
constexpr std::string_view kStatNameOfUnknownThread =
    trace_stat(TraceStatId::kStorageNameOfUnknownThread).name;
constexpr std::string_view kStatEndOfUnknownMarker =
    trace_stat(TraceStatId::kStorageEndOfUnknownMarker).name;

// Allocation rows are held back until their free (or a commit) so that each is written once,
// complete, in id order: an INSERT of a full row instead of an INSERT and an UPDATE that grows
// it, and B-tree pages filled by appends. This many rows at most wait (a few MiB).
constexpr std::size_t kPendingAllocationsMax = 8192;

struct Statements {
  Statement set_meta, add_process, end_process, add_thread, set_thread_name, add_module,
      add_mapping, add_frame, add_callsite, add_pending_allocations, add_pending_details, set_free,
      set_free_detail, clear_free, clear_free_detail, add_bad_free, fail_bad_free, add_marker,
      end_marker, set_stat, add_memory_activity, add_failure_device_memory;
};

struct StatementSql {
  Statement Statements::*statement;
  std::string_view sql;
};

constexpr std::array<StatementSql, 20> kStatementSql{{
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

}  // namespace

struct TraceFileWriter::Impl {
  std::filesystem::path path;
  sqlite::Database db;
  Statements statements;
  bool in_transaction = false;
  bool finished = false;
  WriteFailure failure;
  std::map<std::string_view, std::int64_t> unknown_row_counts;
  // Ascending ids; written by write_pending_allocations() before any commit.
  std::vector<PendingAllocation> pending_allocations;
  // The highest id a periodic commit held back (pending_rows_to_write()): the next one writes
  // those.
  std::int64_t held_at_last_commit = INT64_MIN;
  // allocation_site and free_site.
  std::unique_ptr<AllocationSites> sites;
  // TimeIndexUpkeep::kAsRowsArrive: the time index kept up as rows arrive.
  std::unique_ptr<TimeIndexKeeper> time_index;
  bool upkeep() const { return time_index && time_index->holds(); }
  // AllocationPacking::kPackShortLives, while the upkeep holds.
  std::unique_ptr<ShortLifePacker> packer;

  // True when a write may go ahead; opens the batch transaction if none is open.
  bool begin_write() {
    if (finished || !failure.error.empty()) return false;
    if (in_transaction) return true;
    std::string message;
    if (sqlite::execute(db.get(), "BEGIN", &message) != SQLITE_OK) {
      fail("starting a transaction", message);
      return false;
    }
    in_transaction = true;
    return true;
  }

  void fail(std::string_view doing, std::string_view message) { failure.fail(doing, message); }
  int run(Statement& statement, std::string_view doing) { return failure.run(statement, doing); }

  // For UPDATEs by id: a missing row is counted, not fatal.
  // Returns the number of rows it changed.
  int run_update(Statement& statement, std::string_view doing, std::string_view unknown_stat) {
    const int changed = run(statement, doing);
    if (changed == 0 && failure.error.empty()) ++unknown_row_counts[unknown_stat];
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

  void write_writer_stat(TraceStatId id, std::int64_t value) {
    const TraceStat& stat = trace_stat(id);
    write_stat(stat.name, stat.severity, value, stat.description);
  }

  void write_unknown_row_counts() {
    for (const auto& [name, count] : unknown_row_counts) {
      const TraceStat& stat = *find_trace_stat(name);  // a kStat... constant's: a row
      write_stat(name, stat.severity, count, stat.description);
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

  // Rows still live are written without their free, which set_free() then updates.
  void write_pending_allocations() {
    if (packer && upkeep() && failure.error.empty()) packer->pack(pending_allocations);
    if (!pending_allocations.empty() && failure.error.empty()) {
      run(statements.add_pending_allocations, "adding an allocation");
      if (std::any_of(pending_allocations.begin(), pending_allocations.end(),
                      [](const PendingAllocation& pending) { return has_detail(pending); }))
        run(statements.add_pending_details, "adding an allocation's details");
      if (time_index) time_index->batch_written(pending_allocations);
    }
    pending_allocations.clear();
  }

  // The pending rows up to pending_rows_to_write() (storage/pending_rows_held.h), when packing;
  // the others stay pending.
  void write_pending_allocations_but_young() {
    if (!packer) return write_pending_allocations();
    const std::size_t through =
        pending_rows_to_write(pending_allocations, held_at_last_commit, kPendingAllocationsMax / 2);
    std::vector<PendingAllocation> held(
        std::make_move_iterator(pending_allocations.begin() + static_cast<std::ptrdiff_t>(through)),
        std::make_move_iterator(pending_allocations.end()));
    pending_allocations.erase(pending_allocations.begin() + static_cast<std::ptrdiff_t>(through),
                              pending_allocations.end());
    write_pending_allocations();
    pending_allocations = std::move(held);
  }

  // kPeriodic: a commit while recording; kLast: finish()'s, which writes everything.
  enum class CommitKind { kPeriodic, kLast };
  void commit(CommitKind kind = CommitKind::kLast) {
    // Rows the last commit held back are written by this one, even if nothing came since.
    if (!in_transaction && (pending_allocations.empty() || !begin_write())) return;
    if (kind == CommitKind::kPeriodic) {
      write_pending_allocations_but_young();
      held_at_last_commit =
          pending_allocations.empty() ? INT64_MIN : pending_allocations.back().row.id;
    } else {
      write_pending_allocations();
    }
    if (packer && failure.error.empty()) {
      if (kind == CommitKind::kPeriodic)
        packer->commit();
      else
        packer->finish();
      if (const std::int64_t folded = packer->folded_allocations(); folded > 0) {
        write_writer_stat(TraceStatId::kStorageFoldedAllocations, folded);
        write_writer_stat(TraceStatId::kStorageFoldedBins, packer->folded_bins());
      }
    }
    if (failure.error.empty()) write_unknown_row_counts();
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
                                                         RollupUpkeep rollups,
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
  impl->failure.trace = path.string();
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
  impl->failure.db = raw_db;
  if (open_rc != SQLITE_OK) {
    return give_up(raw_db != nullptr ? sqlite3_errmsg(raw_db) : sqlite3_errstr(open_rc));
  }
  sqlite3_busy_timeout(raw_db, kBusyTimeoutMs);

  // kAsRowsArrive: the reports' indexes and the time index's kept tables, with the schema.
  std::string upkept_sql;
  if (upkeep == TimeIndexUpkeep::kAsRowsArrive) {
    upkept_sql = std::string(schema_indexes_sql()) + TimeIndexKeeper::tables_sql();
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
  std::string refused;
  impl->sites = AllocationSites::create(impl->failure, &refused);
  if (!impl->sites) return give_up(refused);
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
    impl->time_index = TimeIndexKeeper::create(impl->failure, pending_table,
                                               rollups == RollupUpkeep::kAsRowsArrive, &refused);
    if (!impl->time_index) return give_up(refused);
    if (packing != AllocationPacking::kRows) {
      impl->packer = ShortLifePacker::create(impl->failure,
                                             packing == AllocationPacking::kPackAndFoldRepeats
                                                 ? ShortLifePacker::Repeats::kFold
                                                 : ShortLifePacker::Repeats::kKeep,
                                             &refused);
      if (!impl->packer) return give_up(refused);
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
  if (impl_->time_index) impl_->time_index->process_started(row.upid, row.start_ns);
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
  if (impl_->time_index) impl_->time_index->process_ended(row.upid, row.end_ns);
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
  if (impl_->time_index) impl_->time_index->allocation_added(row);
  auto& pending = impl_->pending_allocations;
  if (!pending.empty() && row.id <= pending.back().row.id) {
    // Not the collector's ascending order: write it now, so that a duplicate fails here.
    impl_->write_pending_allocations();
    pending.emplace_back(row, impl_->sites->site_id(row));
    impl_->write_pending_allocations();
    return;
  }
  // Made in place: a temporary of this size, copied, cost as much as the rest.
  pending.emplace_back(row, impl_->sites->site_id(row));
  if (pending.size() >= kPendingAllocationsMax) impl_->write_pending_allocations_but_young();
}

void TraceFileWriter::set_free(std::int64_t allocation_id, const FreeRow& row) {
  if (!impl_->begin_write()) return;
  const std::int64_t free_site_id = impl_->sites->free_site_id(row);
  if (PendingAllocation* pending = impl_->find_pending_allocation(allocation_id)) {
    if (impl_->time_index)
      impl_->time_index->pending_row_freed(pending->row, pending->free.has_value(), row);
    pending->free = row;
    pending->free_site_id = free_site_id;
    return;
  }
  if (impl_->time_index) impl_->time_index->written_row_freed(allocation_id, row);
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
  if (impl_->time_index) impl_->time_index->stop();
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
  impl_->commit(Impl::CommitKind::kPeriodic);
}

bool TraceFileWriter::finish(std::string* error, AllocationIndexes allocation_indexes) {
  Impl& impl = *impl_;
  if (!impl.finished) {
    impl.commit();
    if (impl.begin_write()) {
      if (impl.time_index) impl.time_index->finish();
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
    if (impl.failure.error.empty()) impl.leave_wal_mode();
    impl.statements = Statements();
    impl.sites.reset();
    impl.time_index.reset();
    impl.packer.reset();
    if (const int rc = sqlite3_close(impl.db.release()); rc != SQLITE_OK) {
      impl.fail("closing", sqlite3_errstr(rc));
    }
    impl.finished = true;
  }
  if (!impl.failure.error.empty() && error != nullptr) *error = impl.failure.error;
  return impl.failure.error.empty();
}

bool TraceFileWriter::ok() const {
  return impl_->failure.error.empty();
}

const std::string& TraceFileWriter::error() const {
  return impl_->failure.error;
}

}  // namespace vramtrace::storage
