// argv-like lists are stored as JSON arrays of strings (process.argv, meta 'command'), so
// that sqlite3's json_each() can take them apart. Decoding is left to SQLite's JSON functions.
#pragma once

#include <string>
#include <vector>

namespace vramtrace::storage {

// ["a","b c"]: quotes, backslashes and control characters escaped; other bytes kept as they
// are (argv is not guaranteed to be UTF-8, and JSON has no way to carry raw bytes).
std::string to_json_string_array(const std::vector<std::string>& strings);

}  // namespace vramtrace::storage
