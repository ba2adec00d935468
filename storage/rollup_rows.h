// The time index's rollup tables (storage/time_index.h) as both who write them do: the time
// index's build, and a writer that kept the rollups up as rows arrived, at its finish
// (time_index_upkeep's 'rollups_start_ns' and 'rollups_end_ns' then say which span it cut them
// for). Their tables, `$X.` naming the index's schema, and a row bound to an INSERT of all its
// columns in table order.
#pragma once

#include <string_view>

#include "storage/sqlite_statement.h"
#include "storage/time_index_rows.h"

namespace vramtrace::storage {

std::string_view rollup_tables_sql();
void bind_bucket_row(sqlite::Statement& insert, const LiveBytesBucket& row);
void bind_peak_row(sqlite::Statement& insert, const LiveBytesPeak& row);
void bind_live_at_peak_row(sqlite::Statement& insert, const LiveAtPeak& row);

}  // namespace vramtrace::storage
