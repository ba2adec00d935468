#include "storage/schema.h"

#include <array>

namespace vramtrace::storage {
namespace {

constexpr std::array<NamedId, 9> kAllocationKindRows{{
    {allocation_kind::kUnknown, "unknown"},
    {allocation_kind::kDevice, "device"},
    {allocation_kind::kManaged, "managed"},
    {allocation_kind::kHostPinned, "host_pinned"},
    {allocation_kind::kAsync, "async"},
    {allocation_kind::kVmmReservation, "vmm_reservation"},
    {allocation_kind::kVmmHandle, "vmm_handle"},
    {allocation_kind::kVmmMapping, "vmm_mapping"},
    {allocation_kind::kBlock, "block"},
}};

constexpr std::array<NamedId, 30> kApiRows{{
    {api::kUnknown, "unknown"},
    {api::kCudaMalloc, "cudaMalloc"},
    {api::kCudaFree, "cudaFree"},
    {api::kCudaMallocManaged, "cudaMallocManaged"},
    {api::kCudaMallocHost, "cudaMallocHost"},
    {api::kCudaHostAlloc, "cudaHostAlloc"},
    {api::kCudaFreeHost, "cudaFreeHost"},
    {api::kCudaMallocPitch, "cudaMallocPitch"},
    {api::kCudaMalloc3D, "cudaMalloc3D"},
    {api::kCudaMallocAsync, "cudaMallocAsync"},
    {api::kCudaMallocFromPoolAsync, "cudaMallocFromPoolAsync"},
    {api::kCudaFreeAsync, "cudaFreeAsync"},
    {api::kCuMemAlloc, "cuMemAlloc"},
    {api::kCuMemAllocPitch, "cuMemAllocPitch"},
    {api::kCuMemFree, "cuMemFree"},
    {api::kCuMemAllocManaged, "cuMemAllocManaged"},
    {api::kCuMemHostAlloc, "cuMemHostAlloc"},
    {api::kCuMemAllocHost, "cuMemAllocHost"},
    {api::kCuMemFreeHost, "cuMemFreeHost"},
    {api::kCuMemAllocAsync, "cuMemAllocAsync"},
    {api::kCuMemAllocFromPoolAsync, "cuMemAllocFromPoolAsync"},
    {api::kCuMemFreeAsync, "cuMemFreeAsync"},
    {api::kCuMemCreate, "cuMemCreate"},
    {api::kCuMemRelease, "cuMemRelease"},
    {api::kCuMemAddressReserve, "cuMemAddressReserve"},
    {api::kCuMemAddressFree, "cuMemAddressFree"},
    {api::kCuMemMap, "cuMemMap"},
    {api::kCuMemUnmap, "cuMemUnmap"},
    {api::kC10ReportMemoryUsage, "c10::reportMemoryUsageToProfiler"},
    {api::kC10ReportOutOfMemory, "c10::reportOutOfMemoryToProfiler"},
}};

// Times are CLOCK_MONOTONIC nanoseconds unless the name says realtime. Addresses, sizes and
// other unsigned 64-bit values are stored as the int64 with the same bit pattern. The tables
// are not STRICT so that sqlite3 builds older than 3.37 can still open a trace.
constexpr std::string_view kTablesSql = R"sql(
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
CREATE TABLE allocation(
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
  allocation_id INTEGER REFERENCES allocation(id)  -- allocation and release: the allocation the
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

// The allocation table's, then the small tables'. schema_indexes_sql() is the whole text;
// allocation_indexes_sql() its first part.
constexpr std::string_view kIndexesSql = R"sql(
CREATE INDEX IF NOT EXISTS allocation_by_alloc_seq ON allocation(upid, alloc_seq);
CREATE INDEX IF NOT EXISTS allocation_by_free_seq ON allocation(upid, free_seq);
CREATE INDEX IF NOT EXISTS allocation_by_alloc_callsite ON allocation(alloc_callsite_id);
CREATE INDEX IF NOT EXISTS allocation_by_segment ON allocation(segment_id) WHERE segment_id IS NOT NULL;
)sql"
                                         R"sql(
CREATE INDEX IF NOT EXISTS callsite_by_parent ON callsite(parent_id);
CREATE INDEX IF NOT EXISTS bad_free_by_process ON bad_free(upid, seq);
CREATE INDEX IF NOT EXISTS marker_by_process ON marker(upid, start_seq);
)sql";

constexpr std::array<std::string_view, 4> kAllocationIndexNames{
    "allocation_by_alloc_seq", "allocation_by_free_seq", "allocation_by_alloc_callsite",
    "allocation_by_segment"};

constexpr std::array<std::string_view, 13> kRequiredTables{
    "meta", "process",    "thread",   "module", "mapping", "frame", "callsite", "allocation_kind",
    "api",  "allocation", "bad_free", "marker", "stats",
};

}  // namespace

std::span<const NamedId> allocation_kind_rows() {
  return kAllocationKindRows;
}
std::span<const NamedId> api_rows() {
  return kApiRows;
}
std::string_view schema_tables_sql() {
  return kTablesSql;
}
std::string_view schema_indexes_sql() {
  return kIndexesSql;
}
std::string_view allocation_indexes_sql() {
  return kIndexesSql.substr(0, kIndexesSql.find("CREATE INDEX IF NOT EXISTS callsite_by_parent"));
}
std::span<const std::string_view> allocation_index_names() {
  return kAllocationIndexNames;
}
std::span<const std::string_view> required_tables() {
  return kRequiredTables;
}

}  // namespace vramtrace::storage
