// The first failure of a trace writer's statements, shared by the writer and the parts that
// write tables for it (storage/time_index_keeper.h): kept with what was being done, in one
// line naming the file. Once there is one, the writer writes nothing more.
#pragma once

#include <sqlite3.h>

#include <string>
#include <string_view>

#include "storage/sqlite_statement.h"

namespace vramtrace::storage {

struct WriteFailure {
  sqlite3* db = nullptr;
  std::string trace;  // the file's path
  std::string error;  // empty until the first failure

  void fail(std::string_view doing, std::string_view message) {
    if (!error.empty()) return;
    error = "cannot write trace " + trace + ": " + std::string(message) + " (while " +
            std::string(doing) + ")";
  }

  // Runs a bound statement; returns the number of rows it changed (0 on failure).
  int run(sqlite::Statement& statement, std::string_view doing) {
    const int rc = statement.step();
    if (rc != SQLITE_DONE) fail(doing, sqlite3_errmsg(db));
    const int changes = rc == SQLITE_DONE ? sqlite3_changes(db) : 0;
    statement.reset();
    return changes;
  }
};

}  // namespace vramtrace::storage
