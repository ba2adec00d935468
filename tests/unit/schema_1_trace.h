// A trace rewritten as vramtrace wrote it before schema 2: every allocation column in the table
// `allocation` (PRAGMA user_version 1). Tests read it beside the schema-2 trace it came from.
#pragma once

#include <filesystem>
#include <string>

namespace vramtrace::testing {

// Rewrites the trace at `path`, a finished schema-2 trace, in place. Returns SQLite's error,
// empty on success.
std::string rewrite_as_schema_1(const std::filesystem::path& path);

}  // namespace vramtrace::testing
