#include "storage/trace_merge.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <system_error>
#include <utility>

#include "storage/empty_trace.h"
#include "storage/json_string_array.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"
#include "storage/trace_file_uri.h"
#include "storage/trace_reader.h"

namespace vramtrace::storage {
namespace {

namespace fs = std::filesystem;
using sqlite::Statement;

// Ends the merge; what() is the merge's one-line error.
class MergeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What the merge keeps of an input once it has opened it with the TraceReader.
struct InputTrace {
  fs::path path;
  bool complete = false;
  std::map<std::string, std::string, std::less<>> meta;
};

// meta keys the merge writes itself rather than carrying over.
constexpr std::array<std::string_view, 4> kMetaSetByMerge{"complete", "command", "merged_from",
                                                          "created_realtime_ns"};

// The id columns that the merge shifts, and the SQL parameter that carries each one's shift.
// An input's rows get `id + shift`, which puts them past every id already in the output.
struct IdColumn {
  const char* parameter;
  std::string_view table;
  std::string_view column;
};
constexpr std::array<IdColumn, 12> kIdColumns{{
    {":upid", "process", "upid"},
    {":utid", "thread", "utid"},
    {":module", "module", "id"},
    {":mapping", "mapping", "id"},
    {":frame", "frame", "id"},
    {":callsite", "callsite", "id"},
    {":allocation", "allocation_compact", "id"},
    {":allocation_site", "allocation_site", "id"},
    {":free_site", "free_site", "id"},
    {":bad_free", "bad_free", "id"},
    {":marker", "marker", "id"},
    {":memory_activity", "memory_activity", "id"},
}};

// Deduplication: a row of the input that equals one in the output (by these keys) is not
// added again, and the input's references to it are translated through a temp id map. The
// unique indexes make INSERT OR IGNORE skip the duplicates, within an input too; ifnull(x, x'')
// makes a NULL equal to a NULL (a blob never equals the text or integer of a real value). They
// are dropped before the output is finished, which then has the schema's own indexes only.
constexpr std::string_view kMergeSetupSql = R"sql(
CREATE UNIQUE INDEX merge_module_key ON module(path, ifnull(build_id, x''));
CREATE UNIQUE INDEX merge_frame_key ON frame(module_id, rel_pc, ifnull(function, x''),
                                             ifnull(file, x''), ifnull(line, x''), inlined,
                                             language);
CREATE UNIQUE INDEX merge_callsite_key ON callsite(ifnull(parent_id, x''), frame_id);
CREATE TEMP TABLE module_map(old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);
CREATE TEMP TABLE frame_map(old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);
CREATE TEMP TABLE callsite_map(old_id INTEGER PRIMARY KEY, new_id INTEGER NOT NULL);
CREATE TEMP TABLE input_callsite(id INTEGER PRIMARY KEY, parent_id INTEGER, frame_id INTEGER,
                                 depth INTEGER);
CREATE INDEX temp.input_callsite_by_depth ON input_callsite(depth);
)sql";

constexpr std::string_view kMergeTeardownSql = R"sql(
DROP INDEX merge_module_key;
DROP INDEX merge_frame_key;
DROP INDEX merge_callsite_key;
)sql";

constexpr std::string_view kClearMapsSql = R"sql(
DELETE FROM temp.module_map;
DELETE FROM temp.frame_map;
DELETE FROM temp.callsite_map;
DELETE FROM temp.input_callsite;
)sql";

struct CopyStep {
  std::string_view doing;
  std::string_view sql;
};

// Copies an input attached as `input`, in this order: each step's references are mapped by
// the steps before it. Callsites come in between, level by level (kCallsiteLevelSql).
constexpr std::array<CopyStep, 7> kCopyBeforeCallsites{{
    {"copying processes", R"sql(
INSERT INTO main.process(upid, pid, ppid, uid, host, exe, argv, start_ns, start_realtime_ns,
                         end_ns, exit_status, signal, complete, unwinder, rank, local_rank,
                         world_size, backend)
SELECT upid + :upid, pid, ppid, uid, host, exe, argv, start_ns, start_realtime_ns, end_ns,
       exit_status, signal, complete, unwinder, rank, local_rank, world_size, backend
FROM input.process ORDER BY upid)sql"},
    {"copying threads", R"sql(
INSERT INTO main.thread(utid, upid, tid, name)
SELECT utid + :utid, upid + :upid, tid, name FROM input.thread ORDER BY utid)sql"},
    {"copying modules", R"sql(
INSERT OR IGNORE INTO main.module(id, path, build_id)
SELECT id + :module, path, build_id FROM input.module ORDER BY id)sql"},
    {"mapping modules", R"sql(
INSERT INTO temp.module_map(old_id, new_id)
SELECT i.id, o.id FROM input.module AS i
JOIN main.module AS o ON o.path = i.path AND ifnull(o.build_id, x'') = ifnull(i.build_id, x''))sql"},
    {"copying mappings", R"sql(
INSERT INTO main.mapping(id, upid, module_id, start, "end", load_bias)
SELECT x.id + :mapping, x.upid + :upid, ifnull(m.new_id, x.module_id + :module), x.start,
       x."end", x.load_bias
FROM input.mapping AS x LEFT JOIN temp.module_map AS m ON m.old_id = x.module_id
ORDER BY x.id)sql"},
    {"copying frames", R"sql(
INSERT OR IGNORE INTO main.frame(id, module_id, rel_pc, function, file, line, inlined, language)
SELECT f.id + :frame, ifnull(m.new_id, f.module_id + :module), f.rel_pc, f.function, f.file,
       f.line, f.inlined, f.language
FROM input.frame AS f LEFT JOIN temp.module_map AS m ON m.old_id = f.module_id
ORDER BY f.id)sql"},
    {"mapping frames", R"sql(
INSERT INTO temp.frame_map(old_id, new_id)
SELECT f.id, o.id FROM input.frame AS f
LEFT JOIN temp.module_map AS m ON m.old_id = f.module_id
JOIN main.frame AS o
  ON o.module_id = ifnull(m.new_id, f.module_id + :module) AND o.rel_pc = f.rel_pc
 AND ifnull(o.function, x'') = ifnull(f.function, x'') AND ifnull(o.file, x'') = ifnull(f.file, x'')
 AND ifnull(o.line, x'') = ifnull(f.line, x'') AND o.inlined = f.inlined
 AND o.language = f.language)sql"},
}};

constexpr std::string_view kLoadCallsitesSql = R"sql(
INSERT INTO temp.input_callsite(id, parent_id, frame_id, depth)
SELECT id, parent_id, frame_id, depth FROM input.callsite)sql";

constexpr std::string_view kCallsiteDepthsSql =
    "SELECT DISTINCT depth FROM temp.input_callsite ORDER BY depth";

// One level of the callsite tree: its parents (one level up) are mapped already, so a callsite
// is the same as one in the output exactly when its mapped parent and frame are.
constexpr std::array<CopyStep, 2> kCallsiteLevel{{
    {"copying callsites", R"sql(
INSERT OR IGNORE INTO main.callsite(id, parent_id, frame_id, depth)
SELECT c.id + :callsite, ifnull(p.new_id, c.parent_id + :callsite),
       ifnull(f.new_id, c.frame_id + :frame), c.depth
FROM temp.input_callsite AS c
LEFT JOIN temp.callsite_map AS p ON p.old_id = c.parent_id
LEFT JOIN temp.frame_map AS f ON f.old_id = c.frame_id
WHERE c.depth = :depth ORDER BY c.id)sql"},
    {"mapping callsites", R"sql(
INSERT INTO temp.callsite_map(old_id, new_id)
SELECT c.id, o.id FROM temp.input_callsite AS c
LEFT JOIN temp.callsite_map AS p ON p.old_id = c.parent_id
LEFT JOIN temp.frame_map AS f ON f.old_id = c.frame_id
JOIN main.callsite AS o
  ON ifnull(o.parent_id, x'') = ifnull(ifnull(p.new_id, c.parent_id + :callsite), x'')
 AND o.frame_id = ifnull(f.new_id, c.frame_id + :frame)
WHERE c.depth = :depth)sql"},
}};

// CUPTI's activity records (run --backend cupti|both), where the input has the table.
constexpr CopyStep kCopyMemoryActivity{"copying memory activity", R"sql(
INSERT INTO main.memory_activity(id, upid, operation, kind, correlation_id, address, size, device,
                                 stream, cupti_ns, pool_address, release_threshold, utilized_size,
                                 min_bytes_to_keep, source, allocation_id)
SELECT id + :memory_activity, upid + :upid, operation, kind, correlation_id, address, size, device,
       stream, cupti_ns, pool_address, release_threshold, utilized_size, min_bytes_to_keep,
       source, allocation_id + :allocation
FROM input.memory_activity ORDER BY id)sql"};

// The device's memory at each failure, where the input has the table.
constexpr CopyStep kCopyFailureDeviceMemory{"copying failures' device memory", R"sql(
INSERT INTO main.failure_device_memory(id, device_free, device_total)
SELECT id + :allocation, device_free, device_total FROM input.failure_device_memory
ORDER BY id)sql"};

// An input's allocations: their tables are copied as they are, ids shifted.
// Sites stay distinct: each names a thread, and every input's threads are new to the output.
constexpr std::array<CopyStep, 4> kCopyCompactAllocations{{
    {"copying allocation sites", R"sql(
INSERT INTO main.allocation_site(id, kind, api, device, stream, flags, pool, result, utid,
                                 callsite_id)
SELECT s.id + :allocation_site, s.kind, s.api, s.device, s.stream, s.flags, s.pool, s.result,
       s.utid + :utid, ifnull(c.new_id, s.callsite_id + :callsite)
FROM input.allocation_site AS s LEFT JOIN temp.callsite_map AS c ON c.old_id = s.callsite_id
ORDER BY s.id)sql"},
    {"copying free sites", R"sql(
INSERT INTO main.free_site(id, utid, callsite_id, api)
SELECT s.id + :free_site, s.utid + :utid, ifnull(c.new_id, s.callsite_id + :callsite), s.api
FROM input.free_site AS s LEFT JOIN temp.callsite_map AS c ON c.old_id = s.callsite_id
ORDER BY s.id)sql"},
    {"copying allocations", R"sql(
INSERT INTO main.allocation_compact(id, upid, site_id, address, size, size_minus_requested,
                                    alloc_seq, alloc_ns, free_site_id, free_seq_delta,
                                    free_ns_delta)
SELECT id + :allocation, upid + :upid, site_id + :allocation_site, address, size,
       size_minus_requested, alloc_seq, alloc_ns, free_site_id + :free_site, free_seq_delta,
       free_ns_delta
FROM input.allocation_compact ORDER BY id)sql"},
    {"copying allocation details", R"sql(
INSERT INTO main.allocation_detail(id, vmm_handle, vmm_offset, segment_id, allocator_allocated,
                                   allocator_reserved, free_allocator_allocated,
                                   free_allocator_reserved, correlation_id)
SELECT id + :allocation, vmm_handle, vmm_offset, segment_id + :allocation, allocator_allocated,
       allocator_reserved, free_allocator_allocated, free_allocator_reserved, correlation_id
FROM input.allocation_detail ORDER BY id)sql"},
}};

constexpr CopyStep kCopyAllocationChunks{"copying packed allocations", R"sql(
INSERT INTO main.allocation_chunk(upid, first_alloc_seq, last_seq, first_id, last_id,
                                  first_alloc_ns, count, allocations)
SELECT c.upid + :upid, c.first_alloc_seq, c.last_seq, c.first_id + :allocation,
       c.last_id + :allocation, c.first_alloc_ns, c.count,
       (SELECT json_group_array(json(CASE WHEN json_array_length(v) > 10
                                          THEN json_set(v, '$[10]',
                                                        json_extract(v, '$[10]') + :allocation)
                                          ELSE v END))
        FROM (SELECT json_set(p.value,
                              '$[1]', json_extract(p.value, '$[1]') + :allocation_site,
                              '$[7]', json_extract(p.value, '$[7]') + :free_site) AS v
              FROM json_each(c.allocations) AS p))
FROM input.allocation_chunk AS c ORDER BY c.id)sql"};

// The runs of repeated bins: their processes and ids shifted as their sources' are. A run
// names its source by (upid, first_alloc_seq), which the copy keeps but for the upid.
constexpr CopyStep kCopyChunkRepeats{"copying runs of repeated bins", R"sql(
INSERT INTO main.allocation_chunk_repeat(upid, first_alloc_seq, last_seq, first_id, last_id,
                                         first_alloc_ns, seq_step, id_step, instance_ns, repeats,
                                         count, source_first_alloc_seq, source_span_ns)
SELECT upid + :upid, first_alloc_seq, last_seq, first_id + :allocation, last_id + :allocation,
       first_alloc_ns, seq_step, id_step, instance_ns, repeats, count, source_first_alloc_seq,
       source_span_ns
FROM input.allocation_chunk_repeat ORDER BY id)sql"};

constexpr std::array<CopyStep, 5> kCopyAfterCallsites{{
    {"copying bad frees", R"sql(
INSERT INTO main.bad_free(id, upid, seq, ns, utid, api, address, result, callsite_id, reason)
SELECT b.id + :bad_free, b.upid + :upid, b.seq, b.ns, b.utid + :utid, b.api, b.address, b.result,
       ifnull(c.new_id, b.callsite_id + :callsite), b.reason
FROM input.bad_free AS b LEFT JOIN temp.callsite_map AS c ON c.old_id = b.callsite_id
ORDER BY b.id)sql"},
    {"copying markers", R"sql(
INSERT INTO main.marker(id, upid, utid, type, source, domain, name, start_seq, start_ns, end_seq,
                        end_ns, end_utid, depth, parent_id, color, category)
SELECT id + :marker, upid + :upid, utid + :utid, type, source, domain, name, start_seq,
       start_ns, end_seq, end_ns, end_utid + :utid, depth, parent_id + :marker, color, category
FROM input.marker ORDER BY id)sql"},
    // Counts add up; the severity is the worst either trace gave (one the merge does not know
    // ranks as an error, as the reader reads it).
    {"adding up stats", R"sql(
INSERT INTO main.stats(name, severity, value, description)
SELECT name, severity, value, description FROM input.stats WHERE true
ON CONFLICT(name) DO UPDATE SET
  value = stats.value + excluded.value,
  severity = CASE
    WHEN (CASE excluded.severity WHEN 'info' THEN 0 WHEN 'data_loss' THEN 1 ELSE 2 END) >
         (CASE stats.severity WHEN 'info' THEN 0 WHEN 'data_loss' THEN 1 ELSE 2 END)
    THEN excluded.severity ELSE stats.severity END)sql"},
    {"copying allocation kinds", R"sql(
INSERT OR IGNORE INTO main.allocation_kind(id, name) SELECT id, name FROM input.allocation_kind)sql"},
    {"copying api names", R"sql(
INSERT OR IGNORE INTO main.api(id, name) SELECT id, name FROM input.api)sql"},
}};

// The merged meta rows that are not the merge's own: those every input agrees on.
std::map<std::string, std::string> agreed_meta(const std::vector<InputTrace>& inputs) {
  std::map<std::string, std::string> agreed(inputs.front().meta.begin(), inputs.front().meta.end());
  for (const InputTrace& input : inputs) {
    std::erase_if(agreed, [&](const auto& entry) {
      const auto it = input.meta.find(entry.first);
      return it == input.meta.end() || it->second != entry.second;
    });
  }
  for (const std::string_view key : kMetaSetByMerge) agreed.erase(std::string(key));
  return agreed;
}

// The output while it is being written, at its temporary name.
class MergedTrace {
 public:
  MergedTrace(const fs::path& temp_path, const fs::path& output) : output_(output) {
    // Claim the name first: O_EXCL gives a clear reason (permissions, no such directory) that
    // SQLite's "unable to open database file" would not.
    const int fd = ::open(temp_path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
      throw MergeFailure("cannot create " + temp_path.string() +
                         " for the merged trace: " + std::strerror(errno));
    }
    ::close(fd);
    sqlite3* raw_db = nullptr;
    const std::string uri = sqlite_file_uri(temp_path, "");
    const int rc =
        sqlite3_open_v2(uri.c_str(), &raw_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI, nullptr);
    db_.reset(raw_db);
    if (rc != SQLITE_OK) fail("opening", rc);
    sqlite::distrust_schema(raw_db);  // the inputs are attached to this connection
    // The file is renamed into place only when complete, and fsync'ed before: a journal
    // would only slow the merge down.
    execute(trace_page_size_pragma() +
                " PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -65536;",
            "setting up");
    std::string message;
    if (write_empty_trace(db_.get(), &message) != SQLITE_OK) fail_with("creating", message);
    execute(kMergeSetupSql, "setting up");
  }

  void add(const InputTrace& input) {
    input_ = input.path;
    {
      Statement attach = prepare("ATTACH DATABASE ?1 AS input", "attaching");
      attach.bind_text(1, read_only_trace_uri(input.path));
      step(attach, "attaching");
    }
    execute("BEGIN", "starting a transaction");
    execute(kClearMapsSql, "clearing the id maps");
    const std::map<std::string, std::int64_t> shifts = id_shifts();
    for (const CopyStep& copy : kCopyBeforeCallsites) run(copy, shifts, std::nullopt);
    copy_callsites(shifts);
    for (const CopyStep& copy : kCopyCompactAllocations) run(copy, shifts, std::nullopt);
    if (input_has("allocation_chunk")) copy_chunks(shifts);
    if (input_has("allocation_chunk_repeat")) copy_chunk_repeats(shifts);
    for (const CopyStep& copy : kCopyAfterCallsites) run(copy, shifts, std::nullopt);
    if (input_has("memory_activity")) run(kCopyMemoryActivity, shifts, std::nullopt);
    if (input_has("failure_device_memory")) run(kCopyFailureDeviceMemory, shifts, std::nullopt);
    execute("COMMIT", "committing");
    execute("DETACH DATABASE input", "detaching");
    input_.reset();
  }

  // Meta, indexes, close. Returns the number of processes in the output.
  std::size_t finish(const std::vector<InputTrace>& inputs, bool complete) {
    execute("BEGIN", "starting a transaction");
    execute(kMergeTeardownSql, "dropping the merge's indexes");
    execute(schema_indexes_sql(), "creating indexes");
    // Every key but these two starts over: vramtrace_version, for one, must be the inputs'
    // (where they agree), not this build's, which write_empty_trace() put there.
    execute("DELETE FROM meta WHERE key NOT IN ('complete', 'created_realtime_ns')",
            "setting meta");
    for (const auto& [key, value] : agreed_meta(inputs)) set_meta(key, value);
    std::vector<std::string> paths;
    for (const InputTrace& input : inputs) paths.push_back(input.path.string());
    set_meta("merged_from", to_json_string_array(paths));
    set_meta("complete", complete ? "1" : "0");
    const auto& first_meta = inputs.front().meta;
    if (const auto command = first_meta.find("command"); command != first_meta.end()) {
      set_meta("command", command->second);
    }
    const std::size_t processes = count_processes();
    execute("COMMIT", "committing");
    if (const int rc = sqlite3_close(db_.release()); rc != SQLITE_OK) {
      fail_with("closing", sqlite3_errstr(rc));
    }
    return processes;
  }

 private:
  std::size_t count_processes() {
    Statement count = prepare("SELECT count(*) FROM process", "counting processes");
    if (const int rc = count.step(); rc != SQLITE_ROW) fail("counting processes", rc);
    return static_cast<std::size_t>(count.int64(0));
  }

  // A damaged page met while an input is attached is the input's fault, and said so as the
  // reports say it; anything else is a failure to write the output.
  [[noreturn]] void fail(std::string_view doing, int rc) {
    const std::string message = db_ ? sqlite3_errmsg(db_.get()) : sqlite3_errstr(rc);
    if (input_ && sqlite::is_corruption(rc)) {
      throw MergeFailure(input_->string() + ": the trace is truncated or corrupt (" + message +
                         "); record it again");
    }
    // A NULL that the output's schema refuses came from the input, whose schema the same
    // constraint should have kept it out of: the input is damaged, as the reports say it.
    constexpr std::string_view kNotNull = "NOT NULL constraint failed: ";
    if (input_ && db_ && sqlite3_extended_errcode(db_.get()) == SQLITE_CONSTRAINT_NOTNULL &&
        message.starts_with(kNotNull)) {
      throw MergeFailure(input_->string() +
                         ": the trace is damaged: " + message.substr(kNotNull.size()) +
                         " is NULL, which the schema forbids; it was changed after vramtrace "
                         "wrote it, or written by another tool");
    }
    fail_with(doing, message);
  }

  [[noreturn]] void fail_with(std::string_view doing, std::string_view message) {
    std::string while_doing(doing);
    if (input_) while_doing += " from " + input_->string();
    throw MergeFailure("cannot write the merged trace " + output_.string() + ": " +
                       std::string(message) + " (while " + while_doing + ")");
  }

  void execute(std::string_view sql, std::string_view doing) {
    if (const int rc = sqlite::execute(db_.get(), sql, nullptr); rc != SQLITE_OK) fail(doing, rc);
  }

  Statement prepare(std::string_view sql, std::string_view doing) {
    Statement statement;
    if (const int rc = Statement::prepare(db_.get(), sql, &statement); rc != SQLITE_OK) {
      fail(doing, rc);
    }
    return statement;
  }

  void step(Statement& statement, std::string_view doing) {
    if (const int rc = statement.step(); rc != SQLITE_DONE && rc != SQLITE_ROW) fail(doing, rc);
    statement.reset();
  }

  // Whether the attached input has `table`. A reader requires most tables of a trace, not
  // memory_activity: an input without it has no activity records to copy.
  bool input_has(std::string_view table) {
    Statement query = prepare("SELECT count(*) FROM pragma_table_info(?1, 'input')",
                              "reading the input's schema");
    query.bind_text(1, std::string(table));
    if (const int rc = query.step(); rc != SQLITE_ROW) fail("reading the input's schema", rc);
    return query.int64(0) > 0;
  }

  void run(const CopyStep& copy, const std::map<std::string, std::int64_t>& shifts,
           std::optional<std::int64_t> depth) {
    Statement statement = prepare(copy.sql, copy.doing);
    for (const auto& [parameter, shift] : shifts) {
      statement.bind_named_int64(parameter.c_str(), shift);
    }
    if (depth) statement.bind_named_int64(":depth", *depth);
    step(statement, copy.doing);
  }

  // For each id column: 0 while the output's table is empty (the first input keeps its ids),
  // else what moves the input's ids just past the output's largest. Ids start at 1 (module's
  // at 0), so an input's 1 becomes the output's largest + 1 and the ids stay contiguous; a
  // reference to a row the input lacks still lands past every row of the output.
  std::map<std::string, std::int64_t> id_shifts() {
    std::map<std::string, std::int64_t> shifts;
    for (const IdColumn& id : kIdColumns) {
      const std::string column(id.column), table(id.table);
      if (!input_has(table)) continue;  // an input without the table: nothing to shift
      Statement query =
          prepare("SELECT (SELECT max(" + column + ") FROM main." + table +
                      "), min(1, ifnull((SELECT min(" + column + ") FROM input." + table + "), 1))",
                  "numbering rows");
      if (const int rc = query.step(); rc != SQLITE_ROW) fail("numbering rows", rc);
      shifts[id.parameter] = query.is_null(0) ? 0 : query.int64(0) + 1 - query.int64(1);
    }
    // Allocation ids are the rows', the packed allocations' (allocation_chunk) and the runs'
    // instances' (allocation_chunk_repeat) together: the output has every table, an input only
    // those of its schema.
    {
      std::string smallest_sql = "(SELECT min(id) FROM input.allocation_compact)";
      if (input_has("allocation_chunk"))
        smallest_sql += ", (SELECT min(first_id) FROM input.allocation_chunk)";
      if (input_has("allocation_chunk_repeat"))
        smallest_sql += ", (SELECT min(first_id) FROM input.allocation_chunk_repeat)";
      Statement query = prepare(
          "SELECT (SELECT max(id) FROM main.allocation_compact), (SELECT max(last_id) FROM "
          "main.allocation_chunk), (SELECT max(last_id) FROM main.allocation_chunk_repeat), " +
              smallest_sql,
          "numbering rows");
      if (const int rc = query.step(); rc != SQLITE_ROW) fail("numbering rows", rc);
      std::optional<std::int64_t> largest, smallest;
      for (int column = 0; column < query.column_count(); ++column) {
        if (query.is_null(column)) continue;
        if (column < 3)
          largest = std::max(largest.value_or(INT64_MIN), query.int64(column));
        else
          smallest = std::min(smallest.value_or(INT64_MAX), query.int64(column));
      }
      shifts[":allocation"] =
          largest ? *largest + 1 - std::min<std::int64_t>(1, smallest.value_or(1)) : 0;
    }
    return shifts;
  }

  // The packed allocations, their ids and sites shifted as the rows' are, each chunk's text
  // written again by SQLite's JSON functions (what unpack_allocations() reads; the order of
  // the allocations within a chunk does not matter to a reader, which sorts them).
  void copy_chunks(const std::map<std::string, std::int64_t>& shifts) {
    run(kCopyAllocationChunks, shifts, std::nullopt);
    if (!any_row("allocation_chunk", "copying packed allocations")) return;
    // Chunks of schema 4 may hold blocks' details, which readers of schema 3 do not read.
    Statement version = prepare("PRAGMA input.user_version", "copying packed allocations");
    if (const int rc = version.step(); rc != SQLITE_ROW) fail("copying packed allocations", rc);
    mark_schema(version.int64(0) >= kSchemaVersion ? kSchemaVersion : kSchemaVersionWithChunks);
  }

  void copy_chunk_repeats(const std::map<std::string, std::int64_t>& shifts) {
    run(kCopyChunkRepeats, shifts, std::nullopt);
    if (any_row("allocation_chunk_repeat", "copying runs of repeated bins"))
      mark_schema(kSchemaVersion);
  }

  bool any_row(std::string_view input_table, std::string_view doing) {
    Statement any = prepare("SELECT count(*) FROM input." + std::string(input_table), doing);
    if (const int rc = any.step(); rc != SQLITE_ROW) fail(doing, rc);
    return any.int64(0) > 0;
  }

  // The output's schema version is the highest any of its inputs' rows needs: a later input
  // with chunks alone keeps the runs of an earlier one readable.
  void mark_schema(int version) {
    if (version <= marked_version_) return;
    execute("PRAGMA main.user_version = " + std::to_string(version), "marking the schema");
    marked_version_ = version;
  }

  void copy_callsites(const std::map<std::string, std::int64_t>& shifts) {
    execute(kLoadCallsitesSql, "reading callsites");
    std::vector<std::int64_t> depths;
    {
      Statement levels = prepare(kCallsiteDepthsSql, "reading callsites");
      for (int rc = levels.step(); rc != SQLITE_DONE; rc = levels.step()) {
        if (rc != SQLITE_ROW) fail("reading callsites", rc);
        depths.push_back(levels.int64(0));
      }
    }
    for (const std::int64_t depth : depths) {
      for (const CopyStep& copy : kCallsiteLevel) run(copy, shifts, depth);
    }
  }

  void set_meta(std::string_view key, std::string_view value) {
    Statement statement = prepare(
        "INSERT INTO meta(key, value) VALUES(?1, ?2) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        "setting meta");
    statement.bind_text(1, key);
    statement.bind_text(2, value);
    step(statement, "setting meta");
  }

  fs::path output_;
  sqlite::Database db_;
  std::optional<fs::path> input_;                     // the input being merged, for messages
  int marked_version_ = kSchemaVersionWithoutChunks;  // as write_empty_trace() marks it
};

// Opens every input with the TraceReader, so that a bad one is refused with its own clear
// message before anything is written.
std::vector<InputTrace> open_inputs(const std::vector<fs::path>& paths) {
  std::vector<InputTrace> inputs;
  for (const fs::path& path : paths) {
    OpenFailure failure;
    const auto reader = TraceReader::open(path, &failure);
    if (!reader) throw MergeFailure(failure.message);
    for (const InputTrace& earlier : inputs) {
      std::error_code ec;
      if (fs::equivalent(earlier.path, path, ec)) {
        throw MergeFailure(path.string() + ": the same trace as " + earlier.path.string() +
                           "; give each trace once");
      }
    }
    inputs.push_back({path, reader->complete(), reader->meta()});
  }
  return inputs;
}

// Makes the written file durable before it takes the output's name.
void sync_file(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0) {
    const std::string reason = std::strerror(errno);
    if (fd >= 0) ::close(fd);
    throw MergeFailure("cannot write the merged trace " + path.string() + ": " + reason);
  }
  ::close(fd);
}

void remove_quietly(const fs::path& path) {
  std::error_code ignored;
  fs::remove(path, ignored);
}

}  // namespace

MergeResult merge_traces(const std::vector<fs::path>& input_paths, const fs::path& output,
                         const MergeOptions& options) {
  MergeResult result;
  if (input_paths.empty()) {
    result.error = "no traces to merge";
    return result;
  }
  std::error_code ec;
  if (fs::exists(fs::symlink_status(output, ec)) && !options.replace_existing) {
    result.error = output.string() + ": the file already exists; remove it, choose another name, " +
                   "or pass --force to replace it";
    return result;
  }
  if (fs::is_directory(output, ec)) {
    result.error = output.string() + ": is a directory; name the merged trace's file";
    return result;
  }

  const fs::path temp_path = output.string() + ".tmp-" + std::to_string(::getpid());
  try {
    const std::vector<InputTrace> inputs = open_inputs(input_paths);
    result.complete = true;
    for (const InputTrace& input : inputs) {
      if (input.complete) continue;
      result.complete = false;
      result.warnings.push_back(input.path.string() +
                                ": the trace is incomplete (its collector did not finish); the "
                                "merged trace is marked incomplete");
    }
    remove_quietly(temp_path);  // left by an earlier merge of this pid that was killed
    {
      MergedTrace merged(temp_path, output);
      for (std::size_t i = 0; i < inputs.size(); ++i) {
        merged.add(inputs[i]);
        if (options.progress) options.progress(i + 1, inputs.size());
      }
      result.processes = merged.finish(inputs, result.complete);
    }
    sync_file(temp_path);
    // A -wal or -shm of the file being replaced would be read as the new file's.
    remove_quietly(output.string() + "-wal");
    remove_quietly(output.string() + "-shm");
    fs::rename(temp_path, output, ec);
    if (ec) {
      throw MergeFailure("cannot write the merged trace " + output.string() + ": " + ec.message());
    }
  } catch (const MergeFailure& failure) {
    remove_quietly(temp_path);
    result.error = failure.what();
    result.complete = false;
    result.warnings.clear();
    return result;
  }
  result.ok = true;
  return result;
}

}  // namespace vramtrace::storage
