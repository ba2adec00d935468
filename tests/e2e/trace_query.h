// Reads a trace with plain SQL, independently of storage/'s reader, so that the end-to-end
// tests check the file as a user's sqlite3 would see it.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vramtrace::test {

class TraceQuery {
 public:
  explicit TraceQuery(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK)
      throw std::runtime_error("cannot open " + path);
  }
  ~TraceQuery() { sqlite3_close(db_); }
  TraceQuery(const TraceQuery&) = delete;
  TraceQuery& operator=(const TraceQuery&) = delete;

  // Every row of the query's result, each column as text ("NULL" for NULL).
  std::vector<std::vector<std::string>> rows(const std::string& sql) const {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      throw std::runtime_error(std::string("bad query: ") + sqlite3_errmsg(db_));
    std::vector<std::vector<std::string>> out;
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const unsigned char* text = sqlite3_column_text(stmt, i);
        row.emplace_back(text ? reinterpret_cast<const char*>(text) : "NULL");
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(stmt);
    return out;
  }

  int64_t integer(const std::string& sql) const { return std::stoll(rows(sql).at(0).at(0)); }

 private:
  sqlite3* db_ = nullptr;
};

}  // namespace vramtrace::test
