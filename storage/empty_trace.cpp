#include "storage/empty_trace.h"

#include <array>
#include <ctime>
#include <string_view>
#include <utility>

#include "storage/schema.h"
#include "storage/sqlite_statement.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

std::int64_t realtime_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Runs a two-parameter INSERT once per row; bind(statement, row) binds ?1 and ?2.
template <typename Rows, typename Bind>
int insert_each(sqlite3* db, std::string_view sql, const Rows& rows, Bind bind,
                std::string* error) {
  Statement insert;
  int rc = Statement::prepare(db, sql, &insert);
  if (rc != SQLITE_OK) *error = sqlite3_errmsg(db);
  for (const auto& row : rows) {
    if (rc != SQLITE_OK) break;
    bind(insert, row);
    rc = insert.step() == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db);
    if (rc != SQLITE_OK) *error = sqlite3_errmsg(db);
    insert.reset();
  }
  return rc;
}

}  // namespace

int write_empty_trace(sqlite3* db, std::string* error, const std::string& more_sql) {
  int rc = sqlite::execute(db, "BEGIN", error);
  if (rc != SQLITE_OK) return rc;
  // Pragma values cannot be bound; these two are constants of this file.
  rc = sqlite::execute(
      db,
      "PRAGMA application_id = " + std::to_string(kApplicationId) +
          "; PRAGMA user_version = " + std::to_string(kSchemaVersionWithoutChunks) + ";",
      error);
  if (rc == SQLITE_OK) rc = sqlite::execute(db, schema_tables_sql(), error);

  const auto bind_named_id = [](Statement& insert, const NamedId& row) {
    insert.bind_int64(1, row.id);
    insert.bind_text(2, row.name);
  };
  if (rc == SQLITE_OK) {
    rc = insert_each(db, "INSERT INTO allocation_kind(id, name) VALUES(?1, ?2)",
                     allocation_kind_rows(), bind_named_id, error);
  }
  if (rc == SQLITE_OK) {
    rc = insert_each(db, "INSERT INTO api(id, name) VALUES(?1, ?2)", api_rows(), bind_named_id,
                     error);
  }
  if (rc == SQLITE_OK) {
    const std::array<std::pair<std::string_view, std::string>, 3> meta{{
        {"vramtrace_version", VRAMTRACE_VERSION},
        {"created_realtime_ns", std::to_string(realtime_now_ns())},
        {"complete", "0"},
    }};
    rc = insert_each(
        db, "INSERT INTO meta(key, value) VALUES(?1, ?2)", meta,
        [](Statement& insert, const auto& row) {
          insert.bind_text(1, row.first);
          insert.bind_text(2, row.second);
        },
        error);
  }
  if (rc == SQLITE_OK && !more_sql.empty()) rc = sqlite::execute(db, more_sql, error);
  if (rc == SQLITE_OK) return sqlite::execute(db, "COMMIT", error);
  sqlite::execute(db, "ROLLBACK", nullptr);
  return rc;
}

}  // namespace vramtrace::storage
