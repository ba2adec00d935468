// A look at a would-be trace's first bytes before SQLite opens it. SQLite treats an empty file
// as an empty database and reads past the end of a truncated one as zeros, so the clear
// answers ("that is a text file", "this trace was cut short") come from here.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace vramtrace::storage {

enum class FileVerdict {
  kMissing,     // no such file
  kUnreadable,  // a directory, a FIFO or other non-regular file, no permission, an I/O error
  kEmpty,       // zero bytes
  kNotSqlite,   // does not start with the SQLite header
  kTruncated,   // an SQLite file cut short: fewer bytes than its header promises
  kLooksSound,  // an SQLite file whose size agrees with its header
};

struct FileInspection {
  FileVerdict verdict = FileVerdict::kLooksSound;
  std::string detail;  // for kUnreadable and kTruncated: why, in a few words
};

// Reads the first 100 bytes (the SQLite database header) and the file's size. The size check
// is skipped while a -wal file lies next to the file: a collector may be checkpointing, and the
// header can then promise pages that are still being written.
FileInspection inspect_trace_file(const std::filesystem::path& path);

}  // namespace vramtrace::storage
