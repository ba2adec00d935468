// A new trace's first content: the current schema, its enumeration rows and the meta rows every
// trace starts with. Shared by the TraceWriter (a recording) and the merge (a trace made of
// traces), so that both make the very same file. Internal to storage/.
#pragma once

#include <sqlite3.h>

#include <string>

namespace vramtrace::storage {

// In an empty database, in one transaction (a reader never sees half a schema): application_id
// and user_version, every table and view, the `allocation_kind` and `api` rows, and meta
// vramtrace_version (this build), created_realtime_ns (now) and complete = '0', then
// `more_sql` (a writer's indexes and tables, in the same transaction: each page is written
// once). Returns the SQLite result code; on failure *error holds SQLite's message and nothing
// was created.
int write_empty_trace(sqlite3* db, std::string* error, const std::string& more_sql = {});

}  // namespace vramtrace::storage
