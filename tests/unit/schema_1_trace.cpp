#include "schema_1_trace.h"

#include <sqlite3.h>

#include <string>
#include <string_view>

#include "storage/schema.h"

namespace vramtrace::testing {
namespace {

// Schema 1's allocation table (under another name until the view of that name is gone), as
// storage/schema.cpp had it.
constexpr const char* kSchema1Table = R"sql(
CREATE TABLE allocation_schema_1(
  id INTEGER PRIMARY KEY,
  upid INTEGER NOT NULL REFERENCES process(upid),
  kind INTEGER NOT NULL REFERENCES allocation_kind(id),
  api INTEGER NOT NULL REFERENCES api(id),
  device INTEGER NOT NULL,         -- device ordinal; -1: not known
  stream INTEGER NOT NULL,         -- cudaStream_t; 0: the legacy default stream
  address INTEGER NOT NULL,        -- 0 when the call failed
  size INTEGER NOT NULL,           -- bytes reserved
  requested_size INTEGER NOT NULL, -- bytes asked for
  flags INTEGER NOT NULL,
  pool INTEGER,                    -- cudaMemPool_t; NULL: none given
  result INTEGER NOT NULL,         -- cudaError_t; non-zero: a failed allocation
  alloc_seq INTEGER NOT NULL,      -- per-process sequence number
  alloc_ns INTEGER NOT NULL,
  alloc_utid INTEGER NOT NULL REFERENCES thread(utid),
  alloc_callsite_id INTEGER REFERENCES callsite(id),  -- NULL: no stack
  free_seq INTEGER,                -- NULL: never freed (live at the end)
  free_ns INTEGER,
  free_utid INTEGER REFERENCES thread(utid),
  free_callsite_id INTEGER REFERENCES callsite(id),
  free_api INTEGER REFERENCES api(id),
  vmm_handle INTEGER,              -- vmm_mapping: the handle mapped; NULL for other kinds
  vmm_offset INTEGER,              -- vmm_mapping: where in the handle the mapping starts
  segment_id INTEGER REFERENCES allocation(id),  -- block: the live segment (device allocation
                                   -- or vmm_mapping) that held it; NULL: none found, or not a block
  allocator_allocated INTEGER,     -- block: the allocator's allocated bytes after the event
  allocator_reserved INTEGER,      -- block: the allocator's reserved (segment) bytes after it
  free_allocator_allocated INTEGER,  -- block: the allocator's totals after the block's free
  free_allocator_reserved INTEGER,
  correlation_id INTEGER           -- CUPTI's correlation id of the allocating call; NULL: none
                                   -- (recorded by the shim)
);
)sql";
// allocation_view is the same in both schemas (`allocation` with three names joined in).
std::string allocation_view_sql() {
  const std::string_view tables = storage::schema_tables_sql();
  const std::size_t start = tables.find("CREATE VIEW allocation_view");
  return std::string(tables.substr(start, tables.find(';', start) + 1 - start));
}

}  // namespace

std::string rewrite_as_schema_1(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  std::string error;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    error = sqlite3_errmsg(db);
    sqlite3_close(db);
    return error;
  }
  const std::string sql = std::string("BEGIN;") + kSchema1Table + R"sql(
INSERT INTO allocation_schema_1 SELECT * FROM allocation ORDER BY id;
DROP VIEW allocation_view;
DROP VIEW allocation;
DROP TABLE allocation_compact;
DROP TABLE allocation_site;
DROP TABLE free_site;
DROP TABLE allocation_detail;
ALTER TABLE allocation_schema_1 RENAME TO allocation;
)sql" + allocation_view_sql() +
                          R"sql(
PRAGMA user_version = 1;
COMMIT;
VACUUM;)sql";
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    error = message != nullptr ? message : "error";
    sqlite3_free(message);
  }
  sqlite3_close(db);
  return error;
}

}  // namespace vramtrace::testing
