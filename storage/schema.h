// Schema v4 of a vramtrace trace file: its identity (application_id, user_version), the
// fixed rows of the enumeration tables (storage/schema_enums.h), and the SQL that creates it.
// docs/schema.md is the user-facing description of every table and column; keep the two in step.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "storage/schema_enums.h"

namespace vramtrace::storage {

// PRAGMA application_id: 'VRMT'. Tells a trace from any other SQLite file.
inline constexpr std::int32_t kApplicationId = 0x56524D54;
// PRAGMA user_version: bumped whenever a reader of the previous version would misread a file.
// 2: allocations stored compact (allocation_compact and the tables beside it) under the view
// `allocation`. Version 1, which no release wrote, is not read.
// 3: some allocations packed many to a row (allocation_chunk). A trace is written as version 2,
// which it stays while it has no chunk: a reader of version 2 reads it whole.
// 4: bins of packed allocations that repeat a chunk stored as runs (allocation_chunk_repeat),
// and packed blocks with their details (five more fields). A trace with chunks of neither stays
// version 3.
inline constexpr int kSchemaVersion = 4;
inline constexpr int kSchemaVersionWithChunks = 3;
inline constexpr int kSchemaVersionWithoutChunks = 2;

// A life of 1 to this many sequence numbers (free_seq - alloc_seq) is short: the index of frees
// (allocation_by_free_seq) leaves it out, and a reader finds its free through the allocations
// numbered at most this much before the free. Traces whose index holds every free (schema 2 as
// written before) are read the same way.
inline constexpr std::int64_t kShortLifeEvents = 1024;
// SQL conditions on allocation_compact's columns, each named with `table` before it ("a." or
// ""), of a freed allocation: long_life_sql() the frees the index holds (its WHERE, word for
// word, which SQLite needs to see in a query before it uses the index), short_life_sql() the
// others.
std::string long_life_sql(std::string_view table);
std::string short_life_sql(std::string_view table);

// The SELECT of allocation_compact's rows as the view `allocation` shows them, its tables named
// with `schema` and a dot before them (none when empty). Readers select from it, as a subquery,
// rather than from the view, whose packed rows (allocation_chunk) only a scan of every chunk
// finds: they read the chunks in C++ (storage/allocation_chunk.h).
std::string allocation_rows_sql(std::string_view schema);

// The rows a new trace's `allocation_kind` and `api` tables are filled with.
std::span<const NamedId> allocation_kind_rows();
std::span<const NamedId> api_rows();

// Creates every table and view of the current schema (no indexes, no pragmas, no rows).
std::string_view schema_tables_sql();
// The views a trace of a schema this build reads (kSchemaVersionWithoutChunks to
// kSchemaVersion) holds, by name, each with the texts SQLite keeps of it in sqlite_master: a
// trace whose views are not these was not written by vramtrace, and a view (or a trigger) runs
// whatever query its author wrote when a reader touches it.
const std::map<std::string, std::vector<std::string>, std::less<>>& schema_views();
// Every index: the allocations' (allocation_indexes_sql()), then the small tables'. A writer
// that keeps them up as rows arrive (TraceWriter's kAsRowsArrive) creates them all with the
// schema.
std::string_view schema_indexes_sql();

// The allocations' part of the indexes (their names below), which the step that indexes the
// trace by time (storage/time_index.h) needs first and builds where they are missing.
std::string_view allocation_indexes_sql();
std::span<const std::string_view> allocation_index_names();
// Tables (and views) a reader requires before it accepts a file as a trace.
std::span<const std::string_view> required_tables();

}  // namespace vramtrace::storage
