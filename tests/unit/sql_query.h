// One SQL query straight through SQLite, bypassing storage/'s reader, so that tests check the
// file as a user's sqlite3 sees it.
#pragma once

#include <sqlite3.h>

#include <filesystem>
#include <string>

namespace vramtrace::testing {

// The first column of the first row as text: "<null>" for NULL, "<error>" when the query
// fails or returns no row.
inline std::string query_one(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* stmt = nullptr;
  std::string value = "<error>";
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
      sqlite3_step(stmt) == SQLITE_ROW) {
    const auto* text = sqlite3_column_text(stmt, 0);
    value = text != nullptr ? reinterpret_cast<const char*>(text) : "<null>";
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Runs `sql` (any number of statements) on the file, read-write, as a user's sqlite3 would.
// Returns SQLite's error message, or "" when every statement ran.
inline std::string execute_sql(const std::filesystem::path& path, const std::string& sql) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    sqlite3_close(db);
    return "cannot open " + path.string();
  }
  char* error = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error);
  std::string message = rc == SQLITE_OK ? "" : (error != nullptr ? error : sqlite3_errstr(rc));
  sqlite3_free(error);
  sqlite3_close(db);
  return message;
}

}  // namespace vramtrace::testing
