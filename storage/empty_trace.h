// A new trace's first content: the current schema, its enumeration rows and the meta rows every
// trace starts with. Shared by the TraceWriter (a recording) and the merge (a trace made of
// traces), so that both make the very same file. Internal to storage/.
#pragma once

#include <sqlite3.h>

#include <string>

namespace vramtrace::storage {

// The trace's page size. Four times SQLite's default: a storm's trace is mostly the overflow
// pages of packed allocations, written once to the write-ahead log and once more by its
// checkpoints, one system call or two a page, and with 4 KiB pages those calls were a tenth of
// the collector's CPU (docs/performance.md, "The storm"). A trace of a few allocations takes
// about 0.75 MB at this size, against 0.2 MB at 4 KiB.
inline constexpr int kTracePageBytes = 16384;

// The pragma that sets it: the first of a new file's pragmas, since SQLite takes a page size
// only before the file has content or leaves rollback journaling.
inline std::string trace_page_size_pragma() {
  return "PRAGMA page_size = " + std::to_string(kTracePageBytes) + ";";
}

// In an empty database, in one transaction (a reader never sees half a schema): application_id
// and user_version, every table and view, the `allocation_kind` and `api` rows, and meta
// vramtrace_version (this build), created_realtime_ns (now) and complete = '0', then
// `more_sql` (a writer's indexes and tables, in the same transaction: each page is written
// once). Returns the SQLite result code; on failure *error holds SQLite's message and nothing
// was created.
int write_empty_trace(sqlite3* db, std::string* error, const std::string& more_sql = {});

}  // namespace vramtrace::storage
