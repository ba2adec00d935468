#include "storage/sqlite_statement.h"

namespace vramtrace::storage::sqlite {

void distrust_schema(sqlite3* db) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
}

int execute(sqlite3* db, std::string_view sql, std::string* error) {
  const std::string terminated(sql);
  char* message = nullptr;
  const int rc = sqlite3_exec(db, terminated.c_str(), nullptr, nullptr, &message);
  if (rc != SQLITE_OK && error != nullptr) {
    *error = message != nullptr ? message : sqlite3_errstr(rc);
  }
  sqlite3_free(message);
  return rc;
}

bool is_corruption(int result_code) {
  const int primary = result_code & 0xff;
  return primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB;
}

Statement& Statement::operator=(Statement&& other) noexcept {
  if (this != &other) {
    sqlite3_finalize(stmt_);
    stmt_ = other.stmt_;
    other.stmt_ = nullptr;
  }
  return *this;
}

int Statement::prepare(sqlite3* db, std::string_view sql, Statement* statement) {
  sqlite3_stmt* stmt = nullptr;
  const int rc = sqlite3_prepare_v3(db, sql.data(), static_cast<int>(sql.size()),
                                    SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
  *statement = Statement();
  if (rc == SQLITE_OK) statement->stmt_ = stmt;
  return rc;
}

void Statement::bind_optional_int64(int index, std::optional<std::int64_t> value) {
  if (value) {
    bind_int64(index, *value);
  } else {
    bind_null(index);
  }
}

void Statement::bind_optional_uint64(int index, std::optional<std::uint64_t> value) {
  if (value) {
    bind_uint64(index, *value);
  } else {
    bind_null(index);
  }
}

void Statement::bind_named_int64(const char* name, std::int64_t value) {
  if (const int index = sqlite3_bind_parameter_index(stmt_, name); index > 0) {
    bind_int64(index, value);
  }
}

void Statement::bind_text(int index, std::string_view value) {
  // A null data pointer would bind SQL NULL; an empty string must stay an empty string.
  const char* data = value.data() != nullptr ? value.data() : "";
  sqlite3_bind_text64(stmt_, index, data, value.size(), SQLITE_TRANSIENT, SQLITE_UTF8);
}

void Statement::bind_optional_text(int index, const std::optional<std::string>& value) {
  if (value) {
    bind_text(index, *value);
  } else {
    bind_null(index);
  }
}

std::string Statement::text(int column) const {
  const auto* bytes = sqlite3_column_text(stmt_, column);
  const int size = sqlite3_column_bytes(stmt_, column);
  if (bytes == nullptr) return {};
  return std::string(reinterpret_cast<const char*>(bytes), static_cast<std::size_t>(size));
}

std::optional<std::int64_t> Statement::optional_int64(int column) const {
  if (is_null(column)) return std::nullopt;
  return int64(column);
}

std::optional<std::uint64_t> Statement::optional_uint64(int column) const {
  if (is_null(column)) return std::nullopt;
  return uint64(column);
}

std::optional<std::string> Statement::optional_text(int column) const {
  if (is_null(column)) return std::nullopt;
  return text(column);
}

}  // namespace vramtrace::storage::sqlite
