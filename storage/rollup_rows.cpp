#include "storage/rollup_rows.h"

namespace vramtrace::storage {
namespace {

constexpr std::string_view kRollupTablesSql = R"sql(
CREATE TABLE $X.live_bytes_bucket (upid INTEGER, device INTEGER, kind INTEGER,
  bucket INTEGER, min_bytes INTEGER, max_bytes INTEGER, last_bytes INTEGER,
  PRIMARY KEY (upid, device, kind, bucket)) WITHOUT ROWID;
CREATE TABLE $X.live_bytes_peak (upid INTEGER, device INTEGER, peak_group TEXT,
  bytes INTEGER, seq INTEGER, ns INTEGER,
  PRIMARY KEY (upid, device, peak_group)) WITHOUT ROWID;
CREATE TABLE $X.live_at_peak (upid INTEGER, device INTEGER, peak_group TEXT,
  alloc_callsite_id INTEGER, count INTEGER, bytes INTEGER);
CREATE TABLE $X.time_problem (upid INTEGER, problem TEXT, events INTEGER,
  first_seq INTEGER, PRIMARY KEY (upid, problem)) WITHOUT ROWID;
)sql";

}  // namespace

std::string_view rollup_tables_sql() {
  return kRollupTablesSql;
}

void bind_bucket_row(sqlite::Statement& insert, const LiveBytesBucket& row) {
  insert.bind_int64(1, row.upid);
  insert.bind_int64(2, row.device);
  insert.bind_int64(3, row.kind);
  insert.bind_int64(4, row.bucket);
  insert.bind_uint64(5, row.min_bytes);
  insert.bind_uint64(6, row.max_bytes);
  insert.bind_uint64(7, row.last_bytes);
}

void bind_peak_row(sqlite::Statement& insert, const LiveBytesPeak& row) {
  insert.bind_int64(1, row.upid);
  insert.bind_int64(2, row.device);
  insert.bind_text(3, row.group);
  insert.bind_uint64(4, row.bytes);
  insert.bind_uint64(5, row.seq);
  insert.bind_int64(6, row.ns);
}

void bind_live_at_peak_row(sqlite::Statement& insert, const LiveAtPeak& row) {
  insert.bind_int64(1, row.upid);
  insert.bind_int64(2, row.device);
  insert.bind_text(3, row.group);
  insert.bind_optional_int64(4, row.callsite_id);
  insert.bind_uint64(5, row.count);
  insert.bind_uint64(6, row.bytes);
}

}  // namespace vramtrace::storage
