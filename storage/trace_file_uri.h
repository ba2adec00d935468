// How a trace is opened read-only, by the reader and by the merge (which ATTACHes its inputs):
// as a SQLite file: URI, so that the way of opening travels with the name.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace vramtrace::storage {

// file:/absolute/path, with ?query when `query` is not empty; what a URI path cannot hold as
// it is, percent-encoded.
std::string sqlite_file_uri(const std::filesystem::path& path, std::string_view query);

// True when a collector may still be writing the trace: only a collector that is writing (or
// died writing) leaves a -wal file next to it, since TraceWriter never reopens a file.
bool trace_may_be_written(const std::filesystem::path& path);

// file:/absolute/path?mode=ro while a collector may be writing, or a -journal lies next to the
// trace (a write to it under way, or interrupted), so that its commits are seen and its locks kept;
// otherwise ?immutable=1, so that SQLite creates no -wal or -shm next to the trace and a trace
// in a read-only directory can still be read. Open it with SQLITE_OPEN_URI.
std::string read_only_trace_uri(const std::filesystem::path& path);

}  // namespace vramtrace::storage
