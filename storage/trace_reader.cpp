#include "storage/trace_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <unordered_set>
#include <utility>
#include <vector>

#include "proto/shim_markers.h"
#include "storage/allocation_source.h"
#include "storage/packed_block_totals.h"
#include "storage/printable.h"
#include "storage/reader_connection.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"
#include "storage/trace_file_header.h"
#include "storage/trace_file_uri.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// How long a query waits when the collector's checkpoint or WAL recovery briefly locks a live
// trace.
constexpr int kBusyTimeoutMs = 5000;

constexpr std::string_view kRecordHint = "record one with 'vramtrace run -o FILE -- PROGRAM'";

std::string hex(std::int64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  auto bits = static_cast<std::uint64_t>(value);
  std::string out;
  do {
    out.insert(out.begin(), kDigits[bits & 0xf]);
    bits >>= 4;
  } while (bits != 0);
  return "0x" + out;
}

// True when this user may write the file and its folder (where SQLite puts the journal).
bool writable(const std::filesystem::path& path) {
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::absolute(path, ec).parent_path();
  return !ec && ::access(path.c_str(), W_OK) == 0 && ::access(folder.c_str(), W_OK) == 0;
}

// Reads the schema through a connection of its own, which makes SQLite roll back a hot
// journal (read-write) or report one (read-only). Returns the extended result code.
int read_schema(const std::filesystem::path& path, int flags) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(
      sqlite_file_uri(path, (flags & SQLITE_OPEN_READONLY) != 0 ? "mode=ro" : "").c_str(), &raw,
      flags | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  const sqlite::Database db(raw);
  if (rc != SQLITE_OK) return rc;
  sqlite::distrust_schema(raw);
  sqlite3_extended_result_codes(raw, 1);
  sqlite3_busy_timeout(raw, kBusyTimeoutMs);
  Statement statement;
  rc = Statement::prepare(raw, "SELECT count(*) FROM sqlite_master", &statement);
  if (rc == SQLITE_OK)
    rc = statement.step() == SQLITE_ROW ? SQLITE_OK : sqlite3_extended_errcode(raw);
  return rc;
}

// A rollback journal next to the trace: a write that was interrupted (`vramtrace run`, or a
// report, killed while it built the time index into the file) or one under way. The trace's
// own pages may then be half overwritten, and only the journal tells what they held: read
// immutable, as a finished trace is, the file looks damaged. A read-write connection rolls a
// hot journal back (and waits on one under way); where this user cannot write, the one line
// says what happened and how to recover. Returns the refusal, if any.
std::optional<std::string> roll_back_interrupted_write(const std::filesystem::path& path) {
  const std::string journal = path.string() + "-journal";
  std::error_code ec;
  if (!std::filesystem::exists(journal, ec)) return std::nullopt;
  if (writable(path)) {
    read_schema(path, SQLITE_OPEN_READWRITE);  // any failure is reported by the open that follows
    return std::nullopt;
  }
  if (read_schema(path, SQLITE_OPEN_READONLY) != SQLITE_READONLY_ROLLBACK) return std::nullopt;
  return path.string() + ": a write to the trace was interrupted (" + journal +
         " holds what it replaced) and this user cannot write the trace or its folder to roll "
         "it back; run the report once with write access there (or copy the trace and " +
         std::filesystem::path(journal).filename().string() +
         " together to a writable folder), and keep the two files together until then";
}

// One of the INSTEAD OF triggers schema 2 wrote through its view `allocation`.
bool is_schema_2_trigger(std::string_view name, std::string_view sql) {
  const std::string expected_start = "CREATE TRIGGER " + std::string(name) + " INSTEAD OF ";
  return (name == "allocation_insert" || name == "allocation_delete" ||
          name == "allocation_update") &&
         sql.starts_with(expected_start) &&
         sql.substr(expected_start.size()).find(" ON allocation\n") != std::string_view::npos;
}

// A name column (a frame's function, file or module) as every output shows it (printable.h).
std::optional<std::string> printable_name(const Statement& row, int column) {
  std::optional<std::string> text = row.optional_text(column);
  if (text) *text = printable(*text);
  return text;
}

}  // namespace

struct TraceReader::Impl : ReaderConnection {
  int schema_version = 0;
  bool complete = false;
  bool has_failure_device_memory = false;  // a trace written before the table was has none
  std::map<std::string, std::string, std::less<>> meta;
  std::map<int, std::string> kind_names;
  std::map<int, std::string> api_names;
  ProgramEnds program_ends;                 // see program_end_seq()
  std::vector<std::string> damaged_fields;  // see damaged_fields()

  std::int64_t pragma_int(std::string_view pragma) {
    Statement statement = prepare(pragma);
    std::int64_t value = 0;
    each_row(statement, [&](const Statement& row) { value = row.int64(0); });
    return value;
  }

  std::map<int, std::string> names_of(std::string_view table) {
    Statement statement = prepare("SELECT id, name FROM " + std::string(table));
    std::map<int, std::string> names;
    each_row(statement, [&](const Statement& row) {
      check_row(row, table, {0, 1}, {0});
      names[row.int32(0)] = row.text(1);
    });
    return names;
  }

  // A JSON array of strings (process.argv, meta 'command'). Anything else (damaged, or written
  // by another tool; damaged_fields() names it) reads as one string, the text as it is stored,
  // so that the rest of the trace still reads.
  // Prepared once: a trace can hold 100,000 processes, and preparing was most of reading them.
  std::vector<std::string> decode_string_array(const std::string& json) {
    if (!string_array) {
      // CASE tries its branches in order: json_type() never sees text that is not JSON.
      string_array = std::make_unique<Statement>(
          prepare("SELECT value FROM json_each(CASE WHEN NOT json_valid(?1) THEN json_array(?1) "
                  "WHEN json_type(?1) = 'array' THEN ?1 ELSE json_array(?1) END)"));
    }
    string_array->bind_text(1, json);
    std::vector<std::string> strings;
    each_row(*string_array, [&](const Statement& row) { strings.push_back(row.text(0)); });
    return strings;
  }
  std::unique_ptr<Statement> string_array;  // decode_string_array()'s

  // Checks identity and version, then loads the small tables. Returns the failure, if any.
  std::optional<OpenFailure> validate_and_load() {
    using Reason = OpenFailure::Reason;
    const std::string name = path.string();
    const std::int64_t application_id = pragma_int("PRAGMA application_id");
    if (application_id != kApplicationId) {
      return OpenFailure{Reason::kNotATrace,
                         name + ": an SQLite database but not a vramtrace trace (application_id " +
                             hex(application_id) + "); " + std::string(kRecordHint)};
    }
    schema_version = static_cast<int>(pragma_int("PRAGMA user_version"));
    if (schema_version > kSchemaVersion) {
      return OpenFailure{Reason::kNewerSchema,
                         name + ": written by a newer vramtrace (trace schema " +
                             std::to_string(schema_version) + ", this build reads up to " +
                             std::to_string(kSchemaVersion) + "); upgrade vramtrace to read it"};
    }
    if (schema_version < 1) {
      return OpenFailure{
          Reason::kNotATrace,
          name + ": not a vramtrace trace (no schema version); " + std::string(kRecordHint)};
    }
    if (schema_version < kSchemaVersionWithoutChunks) {
      return OpenFailure{Reason::kOlderSchema,
                         name + ": written by an older vramtrace (trace schema " +
                             std::to_string(schema_version) + ", which this build does not read: " +
                             "it reads schemas " + std::to_string(kSchemaVersionWithoutChunks) +
                             " to " + std::to_string(kSchemaVersion) + "); record it again"};
    }
    std::set<std::string, std::less<>> tables;
    Statement list = prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')");
    each_row(list, [&](const Statement& row) { tables.insert(row.text(0)); });
    has_failure_device_memory = tables.contains("failure_device_memory");
    for (const std::string_view table : required_tables()) {
      if (!tables.contains(table)) {
        return OpenFailure{Reason::kNotATrace, name + ": not a vramtrace trace (no '" +
                                                   std::string(table) + "' table); " +
                                                   std::string(kRecordHint)};
      }
    }
    // Before any query touches a view: the trace's views must be ours, and it may hold no
    // trigger. A view of another's runs its query when a report reads it (a recursive one spins
    // for ever); a trace is a file passed between people and CI jobs.
    Statement objects =
        prepare("SELECT type, name, sql FROM sqlite_master WHERE type IN ('view', 'trigger')");
    std::optional<std::string> foreign;
    each_row(objects, [&](const Statement& row) {
      if (foreign) return;
      // Schema 2 wrote through its view `allocation` by INSTEAD OF triggers, which only a write
      // to that view fires: no reader writes there, and no reader's connection fires a trigger
      // (distrust_schema). Any other trigger is not ours.
      if (row.text(0) == "trigger") {
        if (!is_schema_2_trigger(row.text(1), row.text(2)))
          foreign = "trigger '" + row.text(1) + "'";
        return;
      }
      const auto ours = schema_views().find(row.text(1));
      if (ours == schema_views().end() ||
          std::find(ours->second.begin(), ours->second.end(), row.text(2)) == ours->second.end())
        foreign = "view '" + row.text(1) + "'";
    });
    if (foreign) {
      return OpenFailure{Reason::kNotATrace,
                         name + ": holds a " + *foreign + " that vramtrace did not write; it is " +
                             "not read, since a view or trigger runs any query its author chose " +
                             "(docs/security.md)"};
    }
    Statement meta_rows = prepare("SELECT key, value FROM meta");
    each_row(meta_rows, [&](const Statement& row) { meta[row.text(0)] = row.text(1); });
    const auto flag = meta.find("complete");
    complete = flag != meta.end() && flag->second == "1";
    Statement bad_argv = prepare(
        "SELECT upid FROM process WHERE argv IS NOT NULL AND "
        "CASE WHEN json_valid(argv) THEN json_type(argv) != 'array' ELSE 1 END ORDER BY upid");
    each_row(bad_argv, [&](const Statement& row) {
      damaged_fields.push_back("process.argv of upid " + row.text(0) +
                               " is not a JSON array; shown as the text it holds");
    });
    Statement bad_command = prepare(
        "SELECT count(*) FROM meta WHERE key = 'command' AND value IS NOT NULL AND "
        "CASE WHEN json_valid(value) THEN json_type(value) != 'array' ELSE 1 END");
    each_row(bad_command, [&](const Statement& row) {
      if (row.int64(0) != 0)
        damaged_fields.push_back("meta 'command' is not a JSON array; shown as the text it holds");
    });
    kind_names = names_of("allocation_kind");
    api_names = names_of("api");
    Statement ends = prepare(
        "SELECT upid, min(start_seq) FROM marker WHERE source = ?1 AND name = ?2 GROUP BY upid");
    ends.bind_text(1, kMarkerFromShim);
    ends.bind_text(2, wire_markers::kPythonFinalizing);
    each_row(ends, [&](const Statement& row) {
      program_ends[row.int64(0)] = static_cast<std::uint64_t>(row.int64(1));
    });
    return std::nullopt;
  }
};

TraceReader::TraceReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TraceReader::~TraceReader() = default;

std::unique_ptr<TraceReader> TraceReader::open(const std::filesystem::path& path,
                                               OpenFailure* failure) {
  using Reason = OpenFailure::Reason;
  OpenFailure ignored;
  OpenFailure& out = failure != nullptr ? *failure : ignored;
  const std::string name = path.string();
  const auto refuse = [&](Reason reason, std::string message) {
    out = OpenFailure{reason, std::move(message)};
    return nullptr;
  };

  FileInspection inspection = inspect_trace_file(path);
  if (inspection.verdict == FileVerdict::kTruncated ||
      inspection.verdict == FileVerdict::kLooksSound) {
    if (auto refusal = roll_back_interrupted_write(path))
      return refuse(Reason::kUnreadable, std::move(*refusal));
    inspection = inspect_trace_file(path);
  }
  switch (inspection.verdict) {
    case FileVerdict::kMissing:
      return refuse(Reason::kMissing,
                    name + ": no such file; check the path, or " + std::string(kRecordHint));
    case FileVerdict::kUnreadable:
      return refuse(Reason::kUnreadable,
                    name + ": cannot read the file (" + inspection.detail + ")");
    case FileVerdict::kEmpty:
      return refuse(Reason::kNotATrace, name + ": the file is empty, not a vramtrace trace; " +
                                            std::string(kRecordHint));
    case FileVerdict::kNotSqlite:
      return refuse(Reason::kNotATrace, name + ": not a vramtrace trace (not an SQLite file); " +
                                            std::string(kRecordHint));
    case FileVerdict::kTruncated:
      return refuse(Reason::kCorrupt,
                    name + ": the trace is truncated (" + inspection.detail + "); record it again");
    case FileVerdict::kLooksSound:
      break;
  }

  auto impl = std::make_unique<Impl>();
  impl->path = path;
  // See read_only_trace_uri(): a trace no collector can be writing is opened immutable.
  const std::string location = read_only_trace_uri(path);
  sqlite3* raw_db = nullptr;
  // Without SQLite's mutexes: a reader serves one thread at a time (trace_reader.h), and they
  // were an eighth of a report's time, taken and released around every column read.
  const int rc =
      sqlite3_open_v2(location.c_str(), &raw_db,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  impl->db.reset(raw_db);
  if (rc != SQLITE_OK) {
    const std::string reason = raw_db != nullptr ? sqlite3_errmsg(raw_db) : sqlite3_errstr(rc);
    return refuse(sqlite::is_corruption(rc) ? Reason::kCorrupt : Reason::kUnreadable,
                  name + ": cannot open the trace (" + reason + ")");
  }
  sqlite3_busy_timeout(raw_db, kBusyTimeoutMs);
  sqlite::distrust_schema(raw_db);

  try {
    if (auto refusal = impl->validate_and_load()) return refuse(refusal->reason, refusal->message);
  } catch (const TraceError& error) {
    return refuse(
        sqlite::is_corruption(impl->last_error_code) ? Reason::kCorrupt : Reason::kUnreadable,
        error.what());
  }
  return std::unique_ptr<TraceReader>(new TraceReader(std::move(impl)));
}

const std::filesystem::path& TraceReader::path() const {
  return impl_->path;
}
int TraceReader::schema_version() const {
  return impl_->schema_version;
}
bool TraceReader::complete() const {
  return impl_->complete;
}

const std::map<std::string, std::string, std::less<>>& TraceReader::meta() const {
  return impl_->meta;
}

const std::vector<std::string>& TraceReader::damaged_fields() const {
  return impl_->damaged_fields;
}

std::optional<std::string> TraceReader::meta_value(std::string_view key) const {
  const auto it = impl_->meta.find(key);
  if (it == impl_->meta.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> TraceReader::recorded_command() const {
  const auto command = meta_value("command");
  if (!command) return {};
  return impl_->decode_string_array(*command);
}

std::string TraceReader::kind_name(int kind) const {
  const auto it = impl_->kind_names.find(kind);
  return it != impl_->kind_names.end() ? it->second : "kind_" + std::to_string(kind);
}

std::string TraceReader::api_name(int api) const {
  const auto it = impl_->api_names.find(api);
  return it != impl_->api_names.end() ? it->second : "api_" + std::to_string(api);
}

std::vector<ProcessRecord> TraceReader::processes() const {
  Statement statement = impl_->prepare(
      "SELECT upid, pid, ppid, uid, host, exe, argv, start_ns, start_realtime_ns, unwinder, "
      "end_ns, exit_status, signal, complete, rank, local_rank, world_size, backend "
      "FROM process ORDER BY upid");
  std::vector<ProcessRecord> processes;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "process", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17}, {11, 12, 14, 15, 16},
                     {1, 2, 3});
    ProcessRecord& record = processes.emplace_back();
    ProcessRow& start = record.start;
    start.upid = row.int64(0);
    start.pid = static_cast<std::uint32_t>(row.int64(1));
    start.ppid = static_cast<std::uint32_t>(row.int64(2));
    start.uid = static_cast<std::uint32_t>(row.int64(3));
    start.host = printable(row.text(4));
    start.exe = printable(row.text(5));
    start.argv = impl_->decode_string_array(row.text(6));  // as run: `python -c` takes newlines
    start.start_ns = row.int64(7);
    start.start_realtime_ns = row.int64(8);
    start.unwinder = row.text(9);
    ProcessEndRow& end = record.end;
    end.upid = start.upid;
    end.end_ns = row.optional_int64(10);
    if (!row.is_null(11)) end.exit_status = row.int32(11);
    if (!row.is_null(12)) end.signal = row.int32(12);
    end.complete = row.int64(13) != 0;
    if (!row.is_null(14)) start.rank = row.int32(14);
    if (!row.is_null(15)) start.local_rank = row.int32(15);
    if (!row.is_null(16)) start.world_size = row.int32(16);
    start.backend = row.text(17);
  });
  return processes;
}

std::map<std::int64_t, std::string> TraceReader::process_backends() const {
  Statement statement = impl_->prepare("SELECT upid, backend FROM process");
  std::map<std::int64_t, std::string> backends;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "process", {0, 1});
    backends[row.int64(0)] = row.text(1);
  });
  return backends;
}

std::vector<ThreadRecord> TraceReader::threads() const {
  Statement statement = impl_->prepare("SELECT utid, upid, tid, name FROM thread ORDER BY utid");
  std::vector<ThreadRecord> threads;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "thread", {0, 1, 2}, {}, {2});
    threads.push_back({row.int64(0), row.int64(1), static_cast<std::uint32_t>(row.int64(2)),
                       printable_name(row, 3)});
  });
  return threads;
}

void TraceReader::for_each_allocation(
    const AllocationFilter& filter,
    const std::function<void(const AllocationRecord&)>& visit) const {
  AllocationSource(*impl_, impl_->program_ends).for_each(filter, visit);
}

std::optional<std::uint64_t> TraceReader::program_end_seq(std::int64_t upid) const {
  const auto end = impl_->program_ends.find(upid);
  if (end == impl_->program_ends.end()) return std::nullopt;
  return end->second;
}

bool TraceReader::live_at_program_end(const AllocationRecord& record) const {
  if (record.failed()) return false;
  std::optional<std::uint64_t> free_seq;
  if (record.free) free_seq = record.free->free_seq;
  return live_at_program_end_of(impl_->program_ends, record.allocation.upid,
                                record.allocation.alloc_seq, free_seq);
}

std::vector<AllocationRecord> TraceReader::allocations(const AllocationFilter& filter) const {
  std::vector<AllocationRecord> records;
  for_each_allocation(filter, [&](const AllocationRecord& record) { records.push_back(record); });
  return records;
}

void TraceReader::for_each_allocation_event(
    const std::function<void(const AllocationEvent&)>& visit,
    std::optional<std::int64_t> upid) const {
  AllocationSource(*impl_, impl_->program_ends).for_each_event(visit, upid);
}

std::map<std::int64_t, DeviceMemoryRow> TraceReader::failure_device_memory() const {
  std::map<std::int64_t, DeviceMemoryRow> rows;
  if (!impl_->has_failure_device_memory) return rows;
  Statement statement =
      impl_->prepare("SELECT id, device_free, device_total FROM failure_device_memory ORDER BY id");
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "failure_device_memory", {0, 1, 2});
    rows[row.int64(0)] = {row.uint64(1), row.uint64(2)};
  });
  return rows;
}

std::vector<BadFreeRow> TraceReader::bad_frees() const {
  Statement statement = impl_->prepare(
      "SELECT id, upid, seq, ns, utid, api, address, result, callsite_id, reason FROM bad_free "
      "ORDER BY upid, seq, id");
  std::vector<BadFreeRow> rows;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "bad_free", {0, 1, 2, 3, 4, 5, 6, 7, 9}, {5, 7});
    BadFreeRow& bad_free = rows.emplace_back();
    bad_free.id = row.int64(0);
    bad_free.upid = row.int64(1);
    bad_free.seq = row.uint64(2);
    bad_free.ns = row.int64(3);
    bad_free.utid = row.int64(4);
    bad_free.api = row.int32(5);
    bad_free.address = row.uint64(6);
    bad_free.result = row.int32(7);
    bad_free.callsite_id = row.optional_int64(8);
    bad_free.reason = row.text(9);
  });
  return rows;
}

std::vector<std::int64_t> TraceReader::upids_with_gpu_events() const {
  // The allocations' distinct upids by skip scan: each step finds the next upid through the
  // (upid, alloc_seq) index, so a trace of millions of allocations costs a search per process.
  Statement statement = impl_->prepare(
      "WITH RECURSIVE step(upid) AS ("
      " SELECT min(upid) FROM allocation_compact"
      " UNION ALL SELECT (SELECT min(upid) FROM allocation_compact WHERE upid > step.upid)"
      " FROM step WHERE step.upid IS NOT NULL)"
      " SELECT upid FROM step WHERE upid IS NOT NULL"
      " UNION SELECT upid FROM bad_free"
      " UNION SELECT upid FROM marker WHERE source IS NOT 'shim'"
      " ORDER BY 1");
  std::vector<std::int64_t> upids;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "allocation", {0}, {});
    upids.push_back(row.int64(0));
  });
  const std::vector<std::int64_t> packed = impl_->packed().upids();
  upids.insert(upids.end(), packed.begin(), packed.end());
  std::sort(upids.begin(), upids.end());
  upids.erase(std::unique(upids.begin(), upids.end()), upids.end());
  return upids;
}

std::map<std::pair<std::int64_t, int>, std::uint64_t> TraceReader::failures_by_process_and_kind(
    int result) const {
  // CROSS JOIN keeps the sites outermost: the few that failed, then their allocations through
  // allocation_failed (a failed call's address is 0), rather than a scan of every allocation.
  Statement statement = impl_->prepare(
      "SELECT a.upid, s.kind, count(*) FROM allocation_site AS s"
      " CROSS JOIN allocation_compact AS a ON a.site_id = s.id AND a.address = 0"
      " WHERE s.result = ?1 GROUP BY a.upid, s.kind");
  statement.bind_int64(1, result);
  std::map<std::pair<std::int64_t, int>, std::uint64_t> counts;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "allocation", {0, 1, 2}, {1});
    counts[{row.int64(0), row.int32(1)}] = row.uint64(2);
  });
  return counts;
}

std::vector<MarkerRecord> TraceReader::markers() const {
  Statement statement = impl_->prepare(
      "SELECT id, upid, utid, type, source, domain, name, start_seq, start_ns, depth, parent_id, "
      "color, category, end_seq, end_ns, end_utid FROM marker ORDER BY upid, start_seq, id");
  std::vector<MarkerRecord> markers;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "marker", {0, 1, 2, 3, 4, 6, 7, 8, 9}, {9}, {11, 12});
    MarkerRecord& record = markers.emplace_back();
    MarkerRow& start = record.start;
    start.id = row.int64(0);
    start.upid = row.int64(1);
    start.utid = row.int64(2);
    start.type = row.text(3);
    start.source = row.text(4);
    start.domain = row.optional_text(5);
    start.name = printable(row.text(6));
    start.start_seq = row.uint64(7);
    start.start_ns = row.int64(8);
    start.depth = row.int32(9);
    start.parent_id = row.optional_int64(10);
    if (!row.is_null(11)) start.color = static_cast<std::uint32_t>(row.int64(11));
    if (!row.is_null(12)) start.category = static_cast<std::uint32_t>(row.int64(12));
    if (!row.is_null(13)) {
      // A range's end is all three columns or none; a missing thread reads as 0 (none).
      record.end = MarkerEndRow{row.uint64(13), row.int64(14), row.int64(15)};
    }
  });
  return markers;
}

TraceReader::AllocatorTotalsAt TraceReader::allocator_totals_at(std::int64_t upid,
                                                                std::uint64_t seq) const {
  // Each side walks the (upid, seq) indexes backwards from `seq` to the first block event that
  // carried totals, where the trace has those indexes: the allocations by alloc_seq, the long
  // lives' frees by free_seq, and the short lives' frees through their allocations, down to
  // kShortLifeEvents before the latest event found (none before it could free later).
  Statement at_alloc =
      impl_->prepare("SELECT alloc_seq, allocator_allocated, allocator_reserved FROM " +
                     allocation_rows_subquery() +
                     " WHERE upid = ?1 AND alloc_seq <= ?2 AND kind = ?3 AND "
                     "(allocator_allocated IS NOT NULL OR allocator_reserved IS NOT NULL) "
                     "ORDER BY alloc_seq DESC LIMIT 1");
  const std::string block_free_with_totals =
      " FROM allocation_compact AS a CROSS JOIN allocation_site AS s ON s.id = a.site_id "
      "CROSS JOIN allocation_detail AS d ON d.id = a.id WHERE a.upid = ?1 AND "
      "a.alloc_seq + a.free_seq_delta <= ?2 AND s.kind = ?3 AND "
      "(d.free_allocator_allocated IS NOT NULL OR d.free_allocator_reserved IS NOT NULL) AND ";
  Statement at_long_free = impl_->prepare(
      "SELECT a.alloc_seq + a.free_seq_delta, d.free_allocator_allocated, "
      "d.free_allocator_reserved" +
      block_free_with_totals + long_life_sql("a.") +
      " ORDER BY a.alloc_seq + a.free_seq_delta DESC LIMIT 1");
  Statement at_short_free = impl_->prepare(
      "SELECT a.alloc_seq + a.free_seq_delta, d.free_allocator_allocated, "
      "d.free_allocator_reserved, a.alloc_seq" +
      block_free_with_totals + "a.alloc_seq < ?2 AND " + short_life_sql("a.") +
      " ORDER BY a.alloc_seq DESC");
  std::optional<std::uint64_t> latest;
  AllocatorTotalsAt totals;
  const auto take = [&](const Statement& row) {
    if (latest && row.uint64(0) < *latest) return;
    latest = row.uint64(0);
    totals = {row.optional_uint64(1), row.optional_uint64(2)};
  };
  for (Statement* statement : {&at_alloc, &at_long_free, &at_short_free}) {
    statement->bind_int64(1, upid);
    statement->bind_uint64(2, seq);
    statement->bind_int64(3, allocation_kind::kBlock);
  }
  impl_->each_row(at_alloc, take);
  impl_->each_row(at_long_free, take);
  impl_->each_row_while(at_short_free, [&](const Statement& row) {
    if (latest && row.uint64(3) + static_cast<std::uint64_t>(kShortLifeEvents) < *latest)
      return false;
    take(row);
    return true;
  });
  packed_allocator_totals_at(*impl_, upid, seq, &latest, &totals);
  return totals;
}

std::vector<AllocationTotalsRow> TraceReader::allocation_totals() const {
  return AllocationSource(*impl_, impl_->program_ends).totals();
}

std::vector<StatRecord> TraceReader::stats() const {
  Statement statement =
      impl_->prepare("SELECT name, severity, value, description FROM stats ORDER BY name");
  std::vector<StatRecord> stats;
  impl_->each_row(statement, [&](const Statement& row) {
    impl_->check_row(row, "stats", {0, 1, 2, 3});
    // A severity this build does not know is shown as the most serious one.
    stats.push_back({row.text(0), parse_severity(row.text(1)).value_or(Severity::kError),
                     row.int64(2), row.text(3)});
  });
  return stats;
}

std::vector<StackFrame> TraceReader::stack(std::optional<std::int64_t> callsite_id) const {
  if (!callsite_id) return {};
  Statement statement = impl_->prepare(
      "WITH RECURSIVE chain(id, parent_id, frame_id, hops) AS ("
      "  SELECT id, parent_id, frame_id, 0 FROM callsite WHERE id = ?1"
      "  UNION ALL"
      "  SELECT callsite.id, callsite.parent_id, callsite.frame_id, chain.hops + 1"
      "  FROM callsite JOIN chain ON callsite.id = chain.parent_id"
      "  WHERE chain.hops < ?2) "
      "SELECT chain.id, chain.frame_id, frame.function, frame.file, frame.line, frame.inlined, "
      "  frame.rel_pc, module.path, frame.language "
      "FROM chain LEFT JOIN frame ON frame.id = chain.frame_id "
      "  LEFT JOIN module ON module.id = frame.module_id "
      "ORDER BY chain.hops");
  statement.bind_int64(1, *callsite_id);
  // One row more than a stack may have, to tell a chain that goes deeper.
  statement.bind_int64(2, static_cast<std::int64_t>(kMaxStackDepth));
  std::vector<StackFrame> frames;
  std::unordered_set<std::int64_t> seen;
  StackCut cut = StackCut::kNone;
  impl_->each_row(statement, [&](const Statement& row) {
    if (cut != StackCut::kNone) return;
    if (!seen.insert(row.int64(0)).second) {
      cut = StackCut::kCycle;
      return;
    }
    if (frames.size() == kMaxStackDepth) {
      cut = StackCut::kTooDeep;
      return;
    }
    impl_->check_row(row, "callsite", {0, 1});
    impl_->check_row(row, "frame", {}, {4});
    StackFrame& frame = frames.emplace_back();
    frame.callsite_id = row.int64(0);
    frame.frame_id = row.int64(1);
    frame.function = printable_name(row, 2);
    frame.file = printable_name(row, 3);
    if (!row.is_null(4)) frame.line = row.int32(4);
    frame.inlined = row.int64(5) != 0;
    frame.rel_pc = row.uint64(6);
    frame.module = printable_name(row, 7).value_or("");
    frame.language = frame_language_from_name(row.optional_text(8).value_or(""));
  });
  if (cut != StackCut::kNone) {
    StackFrame& mark = frames.emplace_back();
    mark.cut = cut;
    mark.function = cut == StackCut::kCycle
                        ? "[stack cut: its callsites loop back in the trace]"
                        : "[stack cut: deeper than " + std::to_string(kMaxStackDepth) + " frames]";
  }
  return frames;
}

}  // namespace vramtrace::storage
