#include "storage/trace_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <system_error>
#include <utility>

#include "storage/json_string_array.h"
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

std::int64_t realtime_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

struct Statements {
  Statement set_meta, add_process, end_process, add_thread, set_thread_name, add_module,
      add_mapping, add_frame, add_callsite, add_allocation, set_free, clear_free, add_bad_free,
      set_stat;
};

struct StatementSql {
  Statement Statements::*statement;
  std::string_view sql;
};

constexpr std::array<StatementSql, 14> kStatementSql{{
    {&Statements::set_meta,
     "INSERT INTO meta(key, value) VALUES(?1, ?2) "
     "ON CONFLICT(key) DO UPDATE SET value = excluded.value"},
    {&Statements::add_process,
     "INSERT INTO process(upid, pid, ppid, uid, host, exe, argv, start_ns, start_realtime_ns, "
     "unwinder) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"},
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
     "INSERT INTO frame(id, module_id, rel_pc, function, file, line, inlined) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)"},
    {&Statements::add_callsite,
     "INSERT INTO callsite(id, parent_id, frame_id, depth) VALUES(?1, ?2, ?3, ?4)"},
    {&Statements::add_allocation,
     "INSERT INTO allocation(id, upid, kind, api, device, stream, address, size, "
     "requested_size, flags, pool, result, alloc_seq, alloc_ns, alloc_utid, alloc_callsite_id) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"},
    {&Statements::set_free,
     "UPDATE allocation SET free_seq = ?2, free_ns = ?3, free_utid = ?4, free_callsite_id = ?5, "
     "free_api = ?6 WHERE id = ?1"},
    {&Statements::clear_free,
     "UPDATE allocation SET free_seq = NULL, free_ns = NULL, free_utid = NULL, "
     "free_callsite_id = NULL, free_api = NULL WHERE id = ?1"},
    {&Statements::add_bad_free,
     "INSERT INTO bad_free(id, upid, seq, ns, utid, api, address, result, callsite_id, reason) "
     "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"},
    {&Statements::set_stat,
     "INSERT INTO stats(name, severity, value, description) VALUES(?1, ?2, ?3, ?4) "
     "ON CONFLICT(name) DO UPDATE SET severity = excluded.severity, value = excluded.value, "
     "description = excluded.description"},
}};

// Runs a two-parameter INSERT once per row; bind(statement, row) binds ?1 and ?2.
template <typename Rows, typename Bind>
int insert_each(sqlite3* db, std::string_view sql, const Rows& rows, Bind bind,
                std::string* error) {
  Statement insert;
  int rc = Statement::prepare(db, sql, &insert);
  for (const auto& row : rows) {
    if (rc != SQLITE_OK) break;
    bind(insert, row);
    rc = insert.step() == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    if (rc != SQLITE_OK) *error = sqlite3_errmsg(db);
    insert.reset();
  }
  return rc;
}

// Creates the tables, fills the enumerations and the writer's own meta rows, in one
// transaction, so that a reader never sees half a schema.
int create_schema(sqlite3* db, std::string* error) {
  int rc = sqlite::execute(db, "BEGIN", error);
  if (rc != SQLITE_OK) return rc;
  // Pragma values cannot be bound; these two are constants of this file.
  rc = sqlite::execute(db,
                       "PRAGMA application_id = " + std::to_string(kApplicationId) +
                           "; PRAGMA user_version = " + std::to_string(kSchemaVersion) + ";",
                       error);
  if (rc == SQLITE_OK) rc = sqlite::execute(db, schema_tables_sql(), error);

  const auto bind_named_id = [](Statement& insert, const NamedId& row) {
    insert.bind_int64(1, row.id);
    insert.bind_text(2, row.name);
  };
  if (rc == SQLITE_OK) {
    rc = insert_each(db, "INSERT INTO allocation_kind(id, name) VALUES(?1, ?2)",
                     allocation_kind_rows(), bind_named_id, error);
  }
  if (rc == SQLITE_OK) {
    rc = insert_each(db, "INSERT INTO api(id, name) VALUES(?1, ?2)", api_rows(), bind_named_id,
                     error);
  }
  if (rc == SQLITE_OK) {
    const std::array<std::pair<std::string_view, std::string>, 3> meta{{
        {"vramtrace_version", VRAMTRACE_VERSION},
        {"created_realtime_ns", std::to_string(realtime_now_ns())},
        {"complete", "0"},
    }};
    rc = insert_each(
        db, "INSERT INTO meta(key, value) VALUES(?1, ?2)", meta,
        [](Statement& insert, const auto& row) {
          insert.bind_text(1, row.first);
          insert.bind_text(2, row.second);
        },
        error);
  }
  if (rc == SQLITE_OK) return sqlite::execute(db, "COMMIT", error);
  sqlite::execute(db, "ROLLBACK", nullptr);
  return rc;
}

}  // namespace

struct TraceWriter::Impl {
  std::filesystem::path path;
  sqlite::Database db;
  Statements statements;
  bool in_transaction = false;
  bool finished = false;
  std::string error;
  std::map<std::string_view, std::int64_t> unknown_row_counts;

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
  void run_update(Statement& statement, std::string_view doing, std::string_view unknown_stat) {
    if (run(statement, doing) == 0 && error.empty()) ++unknown_row_counts[unknown_stat];
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

  void commit() {
    if (!in_transaction) return;
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

TraceWriter::TraceWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TraceWriter::~TraceWriter() {
  if (!impl_->finished && impl_->db) impl_->commit();
}

std::unique_ptr<TraceWriter> TraceWriter::create(const std::filesystem::path& path,
                                                 std::string* error) {
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
  const int open_rc = sqlite3_open_v2(path.c_str(), &raw_db, SQLITE_OPEN_READWRITE, nullptr);
  impl->db.reset(raw_db);
  if (open_rc != SQLITE_OK) {
    return give_up(raw_db != nullptr ? sqlite3_errmsg(raw_db) : sqlite3_errstr(open_rc));
  }
  sqlite3_busy_timeout(raw_db, kBusyTimeoutMs);

  std::string reason;
  if (sqlite::execute(raw_db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;", &reason) !=
          SQLITE_OK ||
      create_schema(raw_db, &reason) != SQLITE_OK) {
    return give_up(reason);
  }
  for (const StatementSql& spec : kStatementSql) {
    if (Statement::prepare(raw_db, spec.sql, &(impl->statements.*spec.statement)) != SQLITE_OK) {
      return give_up(sqlite3_errmsg(raw_db));
    }
  }
  return std::unique_ptr<TraceWriter>(new TraceWriter(std::move(impl)));
}

void TraceWriter::set_meta(std::string_view key, std::string_view value) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.set_meta;
  statement.bind_text(1, key);
  statement.bind_text(2, value);
  impl_->run(statement, "setting meta");
}

void TraceWriter::set_command(const std::vector<std::string>& argv) {
  set_meta("command", to_json_string_array(argv));
}

void TraceWriter::add_process(const ProcessRow& row) {
  if (!impl_->begin_write()) return;
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
  impl_->run(statement, "adding a process");
}

void TraceWriter::end_process(const ProcessEndRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.end_process;
  statement.bind_int64(1, row.upid);
  statement.bind_optional_int64(2, row.end_ns);
  statement.bind_optional_int64(3, row.exit_status);
  statement.bind_optional_int64(4, row.signal);
  statement.bind_int64(5, row.complete ? 1 : 0);
  impl_->run_update(statement, "ending a process", kStatEndOfUnknownProcess);
}

void TraceWriter::add_thread(std::int64_t utid, std::int64_t upid, std::uint32_t tid) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_thread;
  statement.bind_int64(1, utid);
  statement.bind_int64(2, upid);
  statement.bind_int64(3, tid);
  impl_->run(statement, "adding a thread");
}

void TraceWriter::set_thread_name(std::int64_t utid, std::string_view name) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.set_thread_name;
  statement.bind_int64(1, utid);
  statement.bind_text(2, name);
  impl_->run_update(statement, "naming a thread", kStatNameOfUnknownThread);
}

void TraceWriter::add_module(std::int64_t id, std::string_view path,
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

void TraceWriter::add_mapping(std::int64_t id, std::int64_t upid, std::int64_t module_id,
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

void TraceWriter::add_frame(const FrameRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_frame;
  statement.bind_int64(1, row.id);
  statement.bind_int64(2, row.module_id);
  statement.bind_uint64(3, row.rel_pc);
  statement.bind_optional_text(4, row.function);
  statement.bind_optional_text(5, row.file);
  statement.bind_optional_int64(6, row.line);
  statement.bind_int64(7, row.inlined ? 1 : 0);
  impl_->run(statement, "adding a frame");
}

void TraceWriter::add_callsite(std::int64_t id, std::optional<std::int64_t> parent_id,
                               std::int64_t frame_id, int depth) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_callsite;
  statement.bind_int64(1, id);
  statement.bind_optional_int64(2, parent_id);
  statement.bind_int64(3, frame_id);
  statement.bind_int64(4, depth);
  impl_->run(statement, "adding a callsite");
}

void TraceWriter::add_allocation(const AllocationRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.add_allocation;
  statement.bind_int64(1, row.id);
  statement.bind_int64(2, row.upid);
  statement.bind_int64(3, row.kind);
  statement.bind_int64(4, row.api);
  statement.bind_int64(5, row.device);
  statement.bind_uint64(6, row.stream);
  statement.bind_uint64(7, row.address);
  statement.bind_uint64(8, row.size);
  statement.bind_uint64(9, row.requested_size);
  statement.bind_int64(10, row.flags);
  if (row.pool) {
    statement.bind_uint64(11, *row.pool);
  } else {
    statement.bind_null(11);
  }
  statement.bind_int64(12, row.result);
  statement.bind_uint64(13, row.alloc_seq);
  statement.bind_int64(14, row.alloc_ns);
  statement.bind_int64(15, row.alloc_utid);
  statement.bind_optional_int64(16, row.alloc_callsite_id);
  impl_->run(statement, "adding an allocation");
}

void TraceWriter::set_free(std::int64_t allocation_id, const FreeRow& row) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.set_free;
  statement.bind_int64(1, allocation_id);
  statement.bind_uint64(2, row.free_seq);
  statement.bind_int64(3, row.free_ns);
  statement.bind_int64(4, row.free_utid);
  statement.bind_optional_int64(5, row.free_callsite_id);
  statement.bind_int64(6, row.free_api);
  impl_->run_update(statement, "recording a free", kStatFreeOfUnknownAllocation);
}

void TraceWriter::clear_free(std::int64_t allocation_id) {
  if (!impl_->begin_write()) return;
  Statement& statement = impl_->statements.clear_free;
  statement.bind_int64(1, allocation_id);
  impl_->run_update(statement, "undoing a failed free", kStatFreeOfUnknownAllocation);
}

void TraceWriter::add_bad_free(const BadFreeRow& row) {
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

void TraceWriter::set_stat(std::string_view name, Severity severity, std::int64_t value,
                           std::string_view description) {
  if (!impl_->begin_write()) return;
  impl_->write_stat(name, severity, value, description);
}

void TraceWriter::flush() {
  if (impl_->finished) return;
  impl_->commit();
}

bool TraceWriter::finish(std::string* error) {
  Impl& impl = *impl_;
  if (!impl.finished) {
    impl.commit();
    if (impl.begin_write()) {
      std::string message;
      if (sqlite::execute(impl.db.get(), schema_indexes_sql(), &message) != SQLITE_OK) {
        impl.fail("creating indexes", message);
      }
      set_meta("complete", "1");
      impl.commit();
    }
    if (impl.error.empty()) impl.leave_wal_mode();
    impl.statements = Statements();
    if (const int rc = sqlite3_close(impl.db.release()); rc != SQLITE_OK) {
      impl.fail("closing", sqlite3_errstr(rc));
    }
    impl.finished = true;
  }
  if (!impl.error.empty() && error != nullptr) *error = impl.error;
  return impl.error.empty();
}

bool TraceWriter::ok() const {
  return impl_->error.empty();
}

const std::string& TraceWriter::error() const {
  return impl_->error;
}

}  // namespace vramtrace::storage
