#include "storage/schema.h"

#include <sqlite3.h>

#include <array>
#include <string>
#include <utility>
#include <vector>

namespace vramtrace::storage {
namespace {

constexpr std::array kAllocationKindRows{
#define VRAMTRACE_KIND_NAMED_ID(constant, id, name, wire, occupies, description) NamedId{id, name},
    VRAMTRACE_ALLOCATION_KINDS(VRAMTRACE_KIND_NAMED_ID)
#undef VRAMTRACE_KIND_NAMED_ID
};

// Times are CLOCK_MONOTONIC nanoseconds unless the name says realtime. Addresses, sizes and
// other unsigned 64-bit values are stored as the int64 with the same bit pattern. The tables
// are not STRICT so that sqlite3 builds older than 3.37 can still open a trace.
constexpr std::string_view kTablesBeforeViewSql = R"sql(
CREATE TABLE meta(
  key TEXT PRIMARY KEY,
  value TEXT
);
CREATE TABLE process(
  upid INTEGER PRIMARY KEY,        -- unique process id within the trace (pids get reused)
  pid INTEGER NOT NULL,
  ppid INTEGER NOT NULL,
  uid INTEGER NOT NULL,
  host TEXT NOT NULL,
  exe TEXT NOT NULL,
  argv TEXT NOT NULL,              -- JSON array of strings
  start_ns INTEGER NOT NULL,
  start_realtime_ns INTEGER NOT NULL,
  end_ns INTEGER,                  -- NULL: the end was never seen
  exit_status INTEGER,             -- NULL: did not exit normally, or not known
  signal INTEGER,                  -- NULL: not killed by a signal, or not known
  complete INTEGER NOT NULL DEFAULT 0,  -- 1: said goodbye, or its ring was fully drained
  unwinder TEXT NOT NULL,
  rank INTEGER,                    -- place in a distributed job; NULL: not in one, or not said
  local_rank INTEGER,              -- NULL as rank
  world_size INTEGER,              -- NULL as rank
  backend TEXT NOT NULL DEFAULT 'preload'  -- what recorded it: 'preload' (the LD_PRELOAD shim) or
                                   -- 'cupti' (the CUPTI library); `run --backend both` makes
                                   -- one row of each per process
);
CREATE TABLE thread(
  utid INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  tid INTEGER NOT NULL,
  name TEXT                        -- NULL: not known
);
CREATE TABLE module(
  id INTEGER PRIMARY KEY,
  path TEXT NOT NULL,
  build_id TEXT                    -- lower-case hex of NT_GNU_BUILD_ID; NULL: none
);
CREATE TABLE mapping(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  module_id INTEGER NOT NULL REFERENCES module(id),
  start INTEGER NOT NULL,
  "end" INTEGER NOT NULL,
  load_bias INTEGER NOT NULL
);
CREATE TABLE frame(
  id INTEGER PRIMARY KEY,
  module_id INTEGER NOT NULL REFERENCES module(id),
  rel_pc INTEGER NOT NULL,         -- ELF virtual address of the instruction
  function TEXT,                   -- NULL: not symbolized
  file TEXT,                       -- NULL: no line information
  line INTEGER,                    -- NULL: no line information
  inlined INTEGER NOT NULL DEFAULT 0,  -- 1: inlined into the next outer frame
  language TEXT NOT NULL DEFAULT 'native'  -- 'native', or 'python': a Python source line, whose
                                   -- module is the .py file and rel_pc its line
);
CREATE TABLE callsite(
  id INTEGER PRIMARY KEY,
  parent_id INTEGER REFERENCES callsite(id),  -- NULL: outermost frame
  frame_id INTEGER NOT NULL REFERENCES frame(id),
  depth INTEGER NOT NULL           -- 0 for the outermost frame
);
CREATE TABLE allocation_kind(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE api(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
-- One row per allocation is stored in allocation_compact, with what it shares with other
-- allocations (the call's thread, callsite, kind, API, device, stream...) in allocation_site and
-- free_site, and the columns few rows have in allocation_detail; the view `allocation` below
-- joins them back into the row users query. Why: a row of 29 columns took 67 bytes (a byte of
-- record header for each column, NULL or not), the compact row about 38.
CREATE TABLE allocation_site(
  id INTEGER PRIMARY KEY,
  kind INTEGER NOT NULL REFERENCES allocation_kind(id),
  api INTEGER NOT NULL REFERENCES api(id),
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,
  flags INTEGER NOT NULL,
  pool INTEGER,
  result INTEGER NOT NULL,
  utid INTEGER NOT NULL REFERENCES thread(utid),
  callsite_id INTEGER REFERENCES callsite(id)
);
CREATE INDEX allocation_site_by_value
  ON allocation_site(utid, callsite_id, kind, api, device, stream, flags, pool, result);
CREATE TABLE free_site(
  id INTEGER PRIMARY KEY,
  utid INTEGER REFERENCES thread(utid),
  callsite_id INTEGER REFERENCES callsite(id),
  api INTEGER REFERENCES api(id)
);
CREATE INDEX free_site_by_value ON free_site(utid, callsite_id, api);
CREATE TABLE allocation_compact(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  site_id INTEGER NOT NULL REFERENCES allocation_site(id),
  address INTEGER NOT NULL,
  size INTEGER NOT NULL,
  size_minus_requested INTEGER NOT NULL,
  alloc_seq INTEGER NOT NULL,
  alloc_ns INTEGER NOT NULL,
  free_site_id INTEGER REFERENCES free_site(id),  -- NULL: never freed
  free_seq_delta INTEGER,          -- free_seq - alloc_seq
  free_ns_delta INTEGER            -- free_ns - alloc_ns
);
-- Short lives packed many to a row: allocations that succeeded, were freed 1 to
-- kShortLifeEvents numbers later (made in one bin of 4096 numbers, freed in it or the next), and
-- have no details but a block's and no block inside them (storage/allocation_chunk.h). The view
-- `allocation` shows each.
CREATE TABLE allocation_chunk(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  first_alloc_seq INTEGER NOT NULL,  -- its first allocation's alloc_seq
  last_seq INTEGER NOT NULL,       -- the highest free_seq in it
  first_id INTEGER NOT NULL,       -- its first allocation's id
  last_id INTEGER NOT NULL,        -- the highest id in it
  first_alloc_ns INTEGER NOT NULL, -- its first allocation's alloc_ns
  count INTEGER NOT NULL,          -- allocations in it
  allocations TEXT NOT NULL,       -- JSON: an array of 10 integers per allocation, ordered by
                                   -- alloc_seq: id - first_id, site_id, address, size,
                                   -- size_minus_requested, alloc_seq - first_alloc_seq,
                                   -- alloc_ns - first_alloc_ns, free_site_id, free_seq_delta,
                                   -- free_ns_delta
  UNIQUE(upid, first_alloc_seq)
);
-- Bins whose packed allocations repeat a chunk's, but for numbers, ids and times: runs of them,
-- instance k (0 <= k < repeats) the source chunk moved by k steps (storage/chunk_repeat.h). The
-- view `allocation` shows each instance's allocations.
CREATE TABLE allocation_chunk_repeat(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  first_alloc_seq INTEGER NOT NULL,  -- instance 0's first allocation's alloc_seq
  last_seq INTEGER NOT NULL,         -- the highest free_seq of the last instance
  first_id INTEGER NOT NULL,         -- instance 0's first allocation's id
  last_id INTEGER NOT NULL,          -- the highest id of the last instance
  first_alloc_ns INTEGER NOT NULL,   -- instance 0's first allocation's alloc_ns
  seq_step INTEGER NOT NULL,         -- instance k's numbers are instance 0's + k * seq_step
  id_step INTEGER NOT NULL,          -- and its ids instance 0's + k * id_step
  instance_ns INTEGER NOT NULL,      -- instance k starts k * instance_ns after instance 0
  repeats INTEGER NOT NULL,          -- instances
  count INTEGER NOT NULL,            -- allocations per instance
  source_first_alloc_seq INTEGER NOT NULL,  -- the repeated allocation_chunk row's first_alloc_seq
  source_span_ns INTEGER NOT NULL,   -- from the source's first allocation to its last free
  UNIQUE(upid, first_alloc_seq)
);
CREATE TABLE allocation_detail(    -- only for allocations with one of these set
  id INTEGER PRIMARY KEY REFERENCES allocation_compact(id),
  vmm_handle INTEGER,
  vmm_offset INTEGER,
  segment_id INTEGER REFERENCES allocation_compact(id),
  allocator_allocated INTEGER,
  allocator_reserved INTEGER,
  free_allocator_allocated INTEGER,
  free_allocator_reserved INTEGER,
  correlation_id INTEGER
);
)sql";

// After the view `allocation` (allocation_view_sql()).
constexpr std::string_view kTablesAfterViewSql = R"sql(
CREATE TABLE bad_free(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  seq INTEGER NOT NULL,
  ns INTEGER NOT NULL,
  utid INTEGER NOT NULL REFERENCES thread(utid),
  api INTEGER NOT NULL REFERENCES api(id),
  address INTEGER NOT NULL,
  result INTEGER NOT NULL,         -- cudaError_t the free returned
  callsite_id INTEGER REFERENCES callsite(id),
  reason TEXT NOT NULL             -- 'unknown_address' or 'call_failed'
);
CREATE TABLE marker(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  utid INTEGER NOT NULL REFERENCES thread(utid),  -- the thread that began it
  type TEXT NOT NULL,              -- 'mark' or 'range'
  source TEXT NOT NULL,            -- 'nvtx' or 'api'
  domain TEXT,                     -- NULL: NVTX's default domain
  name TEXT NOT NULL,
  start_seq INTEGER NOT NULL,      -- per-process sequence number, as allocation's
  start_ns INTEGER NOT NULL,
  end_seq INTEGER,                 -- NULL: a mark, or a range never ended
  end_ns INTEGER,
  end_utid INTEGER REFERENCES thread(utid),  -- start/end ranges may end on another thread
  depth INTEGER NOT NULL DEFAULT 0,  -- push/pop nesting on its thread; 0: outermost
  parent_id INTEGER REFERENCES marker(id),  -- the enclosing push/pop range; NULL: none
  color INTEGER,                   -- ARGB; NULL: none given
  category INTEGER                 -- NULL: none given
);
CREATE TABLE failure_device_memory(  -- a failure for lack of memory: the device then
  id INTEGER PRIMARY KEY REFERENCES allocation_compact(id),  -- the failed allocation
  device_free INTEGER NOT NULL,    -- bytes free on the device, as cuMemGetInfo gave them after it
  device_total INTEGER NOT NULL    -- the device's bytes
);
CREATE TABLE memory_activity(     -- CUPTI's MEMORY2 and MEMORY_POOL activity records
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  operation TEXT NOT NULL,         -- 'allocation', 'release', 'pool_created', 'pool_destroyed',
                                   -- 'pool_trimmed'
  kind INTEGER NOT NULL REFERENCES allocation_kind(id),
  correlation_id INTEGER NOT NULL, -- of the API call that made it
  address INTEGER NOT NULL,        -- pool records: the pool's base address
  size INTEGER NOT NULL,           -- pool records: the pool's size
  device INTEGER NOT NULL,
  stream INTEGER NOT NULL,         -- CUPTI's stream id; 0: not async
  cupti_ns INTEGER NOT NULL,       -- CUPTI's timestamp (its own clock, not CLOCK_MONOTONIC)
  pool_address INTEGER,            -- the pool's base address; NULL: not a pool's memory
  release_threshold INTEGER,       -- NULL as pool_address
  utilized_size INTEGER,           -- NULL as pool_address
  min_bytes_to_keep INTEGER,       -- pool_trimmed: cudaMemPoolTrimTo's argument; else NULL
  source TEXT,                     -- the object the request came from (CUPTI 13+); NULL: not said
  allocation_id INTEGER REFERENCES allocation_compact(id)  -- allocation and release: the allocation the
                                   -- API callback with the same correlation id made or freed;
                                   -- NULL: no callback recorded that call
);
CREATE TABLE stats(
  name TEXT PRIMARY KEY,
  severity TEXT NOT NULL,          -- 'info', 'data_loss' or 'error'
  value INTEGER NOT NULL,
  description TEXT NOT NULL
);
CREATE VIEW allocation_view AS
  SELECT allocation.*,
         allocation_kind.name AS kind_name,
         alloc_api.name AS api_name,
         free_api.name AS free_api_name
  FROM allocation
  LEFT JOIN allocation_kind ON allocation_kind.id = allocation.kind
  LEFT JOIN api AS alloc_api ON alloc_api.id = allocation.api
  LEFT JOIN api AS free_api ON free_api.id = allocation.free_api;
)sql";

// The allocation table's, then the small tables'. free_seq is the expression the view
// computes. It holds the frees of long lives alone (long_life_sql()): a short life's free is
// found through the alloc_seq index, a few thousand numbers before it, and a storm of short
// lives then costs this index nothing. allocation_failed holds the failed calls alone (their
// address is 0), found through their sites: a few rows, where an index of every row by site cost as
// much as the others together.
#define VRAMTRACE_SHORT_LIFE_EVENTS "1024"
static_assert(kShortLifeEvents == 1024, "the index's WHERE says kShortLifeEvents");
#define VRAMTRACE_ALLOCATION_INDEXES                                                             \
  "CREATE INDEX IF NOT EXISTS allocation_by_alloc_seq ON allocation_compact(upid, alloc_seq);\n" \
  "CREATE INDEX IF NOT EXISTS allocation_by_free_seq ON allocation_compact(upid, alloc_seq + "   \
  "free_seq_delta) WHERE free_seq_delta > " VRAMTRACE_SHORT_LIFE_EVENTS                          \
  " OR free_seq_delta < 1;\n"                                                                    \
  "CREATE INDEX IF NOT EXISTS allocation_by_segment ON allocation_detail(segment_id) WHERE "     \
  "segment_id IS NOT NULL;\n"                                                                    \
  "CREATE INDEX IF NOT EXISTS allocation_failed ON allocation_compact(site_id, upid) WHERE "     \
  "address = 0;\n"
#define VRAMTRACE_SMALL_TABLE_INDEXES                                        \
  "CREATE INDEX IF NOT EXISTS callsite_by_parent ON callsite(parent_id);\n"  \
  "CREATE INDEX IF NOT EXISTS bad_free_by_process ON bad_free(upid, seq);\n" \
  "CREATE INDEX IF NOT EXISTS marker_by_process ON marker(upid, start_seq);\n"

constexpr std::string_view kIndexesSql = VRAMTRACE_ALLOCATION_INDEXES VRAMTRACE_SMALL_TABLE_INDEXES;
constexpr std::string_view kAllocationIndexesSql = VRAMTRACE_ALLOCATION_INDEXES;
#undef VRAMTRACE_ALLOCATION_INDEXES
#undef VRAMTRACE_SMALL_TABLE_INDEXES
#undef VRAMTRACE_SHORT_LIFE_EVENTS

constexpr std::array<std::string_view, 4> kAllocationIndexNames{
    "allocation_by_alloc_seq", "allocation_by_free_seq", "allocation_by_segment",
    "allocation_failed"};

constexpr std::array<std::string_view, 17> kRequiredTables{
    "meta",
    "process",
    "thread",
    "module",
    "mapping",
    "frame",
    "callsite",
    "allocation_kind",
    "api",
    "allocation",
    "allocation_compact",
    "allocation_site",
    "free_site",
    "allocation_detail",
    "bad_free",
    "marker",
    "stats",
};

}  // namespace

// The rows of allocation_compact as the view `allocation` shows them, its tables named with
// `schema` before them ("" or "trace.").
std::string allocation_rows_sql(std::string_view schema) {
  std::string sql = R"sql(
  SELECT a.id AS id,
         a.upid AS upid,
         s.kind AS kind,
         s.api AS api,
         s.device AS device,              -- device ordinal; -1: not known
         s.stream AS stream,              -- cudaStream_t; 0: the legacy default stream
         a.address AS address,            -- 0 when the call failed
         a.size AS size,                  -- bytes reserved
         a.size - a.size_minus_requested AS requested_size,  -- bytes asked for
         s.flags AS flags,
         s.pool AS pool,                  -- cudaMemPool_t; NULL: none given
         s.result AS result,              -- cudaError_t; non-zero: a failed allocation
         a.alloc_seq AS alloc_seq,        -- per-process sequence number
         a.alloc_ns AS alloc_ns,
         s.utid AS alloc_utid,
         s.callsite_id AS alloc_callsite_id,  -- NULL: no stack
         a.alloc_seq + a.free_seq_delta AS free_seq,  -- NULL: never freed (live at the end)
         a.alloc_ns + a.free_ns_delta AS free_ns,
         f.utid AS free_utid,
         f.callsite_id AS free_callsite_id,
         f.api AS free_api,
         d.vmm_handle AS vmm_handle,      -- vmm_mapping: the handle mapped; NULL for other kinds
         d.vmm_offset AS vmm_offset,      -- vmm_mapping: where in the handle the mapping starts
         d.segment_id AS segment_id,      -- block: the live segment (device allocation or
                                          -- vmm_mapping) that held it; NULL: none found, or not
                                          -- a block
         d.allocator_allocated AS allocator_allocated,  -- block: the allocator's allocated
                                          -- bytes after the event
         d.allocator_reserved AS allocator_reserved,  -- block: its reserved (segment) bytes
         d.free_allocator_allocated AS free_allocator_allocated,  -- block: the allocator's
         d.free_allocator_reserved AS free_allocator_reserved,    -- totals after the free
         d.correlation_id AS correlation_id  -- CUPTI's correlation id of the allocating call;
                                          -- NULL: none (recorded by the shim)
  FROM $S.allocation_compact AS a
  LEFT JOIN $S.allocation_site AS s ON s.id = a.site_id
  LEFT JOIN $S.free_site AS f ON f.id = a.free_site_id
  LEFT JOIN $S.allocation_detail AS d ON d.id = a.id)sql";
  const std::string prefix = schema.empty() ? "" : std::string(schema) + ".";
  for (std::size_t at = sql.find("$S."); at != std::string::npos; at = sql.find("$S.", at))
    sql.replace(at, 3, prefix);
  return sql;
}

namespace {

// The packed allocations (allocation_chunk) as rows of the same columns, through SQLite's
// built-in json_each() and json_extract(), which any sqlite3 since 3.38 has (the `->>` operator
// would read better, but a schema using it is one an older sqlite3 cannot open), with a block's
// details from the five fields after the ten where a packed allocation has them
// (storage/allocation_chunk.h).
constexpr std::string_view kPackedBlockRowsSql = R"sql(
  SELECT c.first_id + json_extract(p.value, '$[0]') AS id,
         c.upid AS upid,
         s.kind AS kind,
         s.api AS api,
         s.device AS device,
         s.stream AS stream,
         json_extract(p.value, '$[2]') AS address,
         json_extract(p.value, '$[3]') AS size,
         json_extract(p.value, '$[3]') - json_extract(p.value, '$[4]') AS requested_size,
         s.flags AS flags,
         s.pool AS pool,
         s.result AS result,
         c.first_alloc_seq + json_extract(p.value, '$[5]') AS alloc_seq,
         c.first_alloc_ns + json_extract(p.value, '$[6]') AS alloc_ns,
         s.utid AS alloc_utid,
         s.callsite_id AS alloc_callsite_id,
         c.first_alloc_seq + json_extract(p.value, '$[5]') + json_extract(p.value, '$[8]')
             AS free_seq,
         c.first_alloc_ns + json_extract(p.value, '$[6]') + json_extract(p.value, '$[9]')
             AS free_ns,
         f.utid AS free_utid,
         f.callsite_id AS free_callsite_id,
         f.api AS free_api,
         NULL AS vmm_handle,
         NULL AS vmm_offset,
         json_extract(p.value, '$[10]') AS segment_id,
         json_extract(p.value, '$[11]') AS allocator_allocated,
         json_extract(p.value, '$[12]') AS allocator_reserved,
         json_extract(p.value, '$[13]') AS free_allocator_allocated,
         json_extract(p.value, '$[14]') AS free_allocator_reserved,
         NULL AS correlation_id
  FROM allocation_chunk AS c
  CROSS JOIN json_each(c.allocations) AS p
  LEFT JOIN allocation_site AS s ON s.id = json_extract(p.value, '$[1]')
  LEFT JOIN free_site AS f ON f.id = json_extract(p.value, '$[7]'))sql";

// The instances of the runs (allocation_chunk_repeat) as rows of the same columns: instance k of
// a run is its source chunk's first `count` allocations (by number) with their numbers, ids and
// times moved as append_repeat_instance() moves them (storage/chunk_repeat.h), k counted by a
// recursive query (generate_series() is not built into every sqlite3). The innermost query reads
// each allocation's fields once; the outer one is the arithmetic, times by repeat_time().
constexpr std::string_view kRepeatRowsSql = R"sql(
  SELECT x.id AS id,
         x.upid AS upid,
         s.kind AS kind,
         s.api AS api,
         s.device AS device,
         s.stream AS stream,
         x.address AS address,
         x.size AS size,
         x.size - x.size_minus_requested AS requested_size,
         s.flags AS flags,
         s.pool AS pool,
         s.result AS result,
         x.alloc_seq AS alloc_seq,
         x.start_ns + CASE WHEN x.source_span_ns <= x.instance_ns THEN x.relative_alloc_ns
                           ELSE x.relative_alloc_ns * x.instance_ns / x.source_span_ns END
             AS alloc_ns,
         s.utid AS alloc_utid,
         s.callsite_id AS alloc_callsite_id,
         x.alloc_seq + x.free_seq_delta AS free_seq,
         x.start_ns + CASE WHEN x.source_span_ns <= x.instance_ns THEN x.relative_free_ns
                           ELSE x.relative_free_ns * x.instance_ns / x.source_span_ns END
             AS free_ns,
         f.utid AS free_utid,
         f.callsite_id AS free_callsite_id,
         f.api AS free_api,
         NULL AS vmm_handle,
         NULL AS vmm_offset,
         x.segment_id AS segment_id,
         x.allocator_allocated AS allocator_allocated,
         x.allocator_reserved AS allocator_reserved,
         x.free_allocator_allocated AS free_allocator_allocated,
         x.free_allocator_reserved AS free_allocator_reserved,
         NULL AS correlation_id
  FROM (
    WITH RECURSIVE instance(run_id, k) AS (
      SELECT id, 0 FROM allocation_chunk_repeat
      UNION ALL
      SELECT i.run_id, i.k + 1 FROM instance AS i
      JOIN allocation_chunk_repeat AS r ON r.id = i.run_id
      WHERE i.k + 1 < r.repeats)
    SELECT r.upid AS upid,
           r.first_id + i.k * r.id_step + json_extract(p.value, '$[0]') AS id,
           json_extract(p.value, '$[1]') AS site_id,
           json_extract(p.value, '$[2]') AS address,
           json_extract(p.value, '$[3]') AS size,
           json_extract(p.value, '$[4]') AS size_minus_requested,
           r.first_alloc_seq + i.k * r.seq_step + json_extract(p.value, '$[5]') AS alloc_seq,
           r.first_alloc_ns + i.k * r.instance_ns AS start_ns,
           json_extract(p.value, '$[6]') AS relative_alloc_ns,
           json_extract(p.value, '$[7]') AS free_site_id,
           json_extract(p.value, '$[8]') AS free_seq_delta,
           json_extract(p.value, '$[6]') + json_extract(p.value, '$[9]') AS relative_free_ns,
           json_extract(p.value, '$[10]') AS segment_id,
           json_extract(p.value, '$[11]') AS allocator_allocated,
           json_extract(p.value, '$[12]') AS allocator_reserved,
           json_extract(p.value, '$[13]') AS free_allocator_allocated,
           json_extract(p.value, '$[14]') AS free_allocator_reserved,
           r.instance_ns AS instance_ns,
           r.source_span_ns AS source_span_ns,
           r.count AS count,
           row_number() OVER (PARTITION BY i.run_id, i.k ORDER BY json_extract(p.value, '$[5]'))
               AS position
    FROM instance AS i
    JOIN allocation_chunk_repeat AS r ON r.id = i.run_id
    JOIN allocation_chunk AS c
      ON c.upid = r.upid AND c.first_alloc_seq = r.source_first_alloc_seq
    CROSS JOIN json_each(c.allocations) AS p) AS x
  LEFT JOIN allocation_site AS s ON s.id = x.site_id
  LEFT JOIN free_site AS f ON f.id = x.free_site_id
  WHERE x.position <= x.count)sql";

// The view `allocation` of schema 3, which traces of schema 2 written with allocation_chunk and
// traces of schema 3 hold: allocation_compact's rows, then allocation_chunk's.
// The same as schema 3 wrote it, without a block's details: the text of the view of every trace
// of schema 3, which schema_views() must know word for word.
std::string schema_3_packed_rows_sql() {
  constexpr std::pair<std::string_view, std::string_view> kDetails[] = {
      {"10", "segment_id"},
      {"11", "allocator_allocated"},
      {"12", "allocator_reserved"},
      {"13", "free_allocator_allocated"},
      {"14", "free_allocator_reserved"}};
  std::string sql(kPackedBlockRowsSql);
  for (const auto& [field, column] : kDetails) {
    const std::string detail =
        "json_extract(p.value, '$[" + std::string(field) + "]') AS " + std::string(column);
    sql.replace(sql.find(detail), detail.size(), "NULL AS " + std::string(column));
  }
  return sql;
}

std::string schema_3_allocation_view_sql() {
  return "CREATE VIEW allocation AS" + allocation_rows_sql("") + "\n  UNION ALL" +
         schema_3_packed_rows_sql();
}

std::string make_tables_sql() {
  return std::string(kTablesBeforeViewSql) +
         "-- Every allocation: allocation_compact's rows, then allocation_chunk's, then the\n"
         "-- instances of allocation_chunk_repeat's runs.\n"
         "CREATE VIEW allocation AS" +
         allocation_rows_sql("") + "\n  UNION ALL" + std::string(kPackedBlockRowsSql) +
         "\n  UNION ALL" + std::string(kRepeatRowsSql) + ";\n" + std::string(kTablesAfterViewSql);
}

}  // namespace

std::span<const NamedId> allocation_kind_rows() {
  return kAllocationKindRows;
}
std::span<const NamedId> api_rows() {
  return kApis;
}
std::string long_life_sql(std::string_view table) {
  const std::string column = std::string(table) + "free_seq_delta";
  return "(" + column + " > " + std::to_string(kShortLifeEvents) + " OR " + column + " < 1)";
}
std::string short_life_sql(std::string_view table) {
  return std::string(table) + "free_seq_delta BETWEEN 1 AND " + std::to_string(kShortLifeEvents);
}
std::string_view schema_tables_sql() {
  static const std::string sql = make_tables_sql();
  return sql;
}
const std::map<std::string, std::vector<std::string>, std::less<>>& schema_views() {
  static const std::map<std::string, std::vector<std::string>, std::less<>> views = [] {
    std::map<std::string, std::vector<std::string>, std::less<>> made;
    // Schema 2's, before packed allocations: the compact rows alone; then schema 3's, before
    // runs: the compact rows and the chunks. Traces written so are read as they were.
    made["allocation"].push_back("CREATE VIEW allocation AS" + allocation_rows_sql(""));
    made["allocation"].push_back(schema_3_allocation_view_sql());
    sqlite3* raw = nullptr;
    if (sqlite3_open_v2(":memory:", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_MEMORY, nullptr) ==
            SQLITE_OK &&
        sqlite3_exec(raw, std::string(schema_tables_sql()).c_str(), nullptr, nullptr, nullptr) ==
            SQLITE_OK) {
      sqlite3_stmt* list = nullptr;
      if (sqlite3_prepare_v2(raw, "SELECT name, sql FROM sqlite_master WHERE type = 'view'", -1,
                             &list, nullptr) == SQLITE_OK) {
        while (sqlite3_step(list) == SQLITE_ROW) {
          made[reinterpret_cast<const char*>(sqlite3_column_text(list, 0))].emplace_back(
              reinterpret_cast<const char*>(sqlite3_column_text(list, 1)));
        }
      }
      sqlite3_finalize(list);
    }
    sqlite3_close(raw);
    return made;
  }();
  return views;
}

std::string_view schema_indexes_sql() {
  return kIndexesSql;
}
std::string_view allocation_indexes_sql() {
  return kAllocationIndexesSql;
}
std::span<const std::string_view> allocation_index_names() {
  return kAllocationIndexNames;
}
std::span<const std::string_view> required_tables() {
  return kRequiredTables;
}

}  // namespace vramtrace::storage
