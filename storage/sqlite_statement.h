// Thin RAII over the SQLite C API, shared by the writer and the reader. Internal to storage/:
// the public headers never include sqlite3.h.
//
// Unsigned 64-bit values (addresses, sizes, sequence numbers) are stored as the int64 with the
// same bit pattern. User-space addresses on x86-64 stay below 2^63, so in practice they read
// back as the same non-negative number in sqlite3 too.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace vramtrace::storage::sqlite {

struct DatabaseCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using Database = std::unique_ptr<sqlite3, DatabaseCloser>;

// Runs one or more statements that return no rows. Returns the SQLite result code; on
// failure *error (if given) holds SQLite's message.
int execute(sqlite3* db, std::string_view sql, std::string* error);

// For a connection to a file someone else may have written: its triggers never fire. (Its views
// are checked by the reader, against the schema's own, before any query touches them; SQLite's
// trusted_schema cannot be turned off instead, since the schema's own view calls json_extract,
// which SQLite does not mark innocuous.)
void distrust_schema(sqlite3* db);

// True for the result codes that mean the file's content is damaged.
bool is_corruption(int result_code);

class Statement {
 public:
  Statement() = default;
  Statement(Statement&& other) noexcept : stmt_(other.stmt_) { other.stmt_ = nullptr; }
  Statement& operator=(Statement&& other) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement() { sqlite3_finalize(stmt_); }

  // Returns the SQLite result code; *statement is left empty on failure.
  static int prepare(sqlite3* db, std::string_view sql, Statement* statement);

  // Parameters are numbered from 1, as in SQL's ?1.
  void bind_int64(int index, std::int64_t value) { sqlite3_bind_int64(stmt_, index, value); }
  void bind_uint64(int index, std::uint64_t value) {
    bind_int64(index, static_cast<std::int64_t>(value));
  }
  void bind_optional_int64(int index, std::optional<std::int64_t> value);
  void bind_optional_uint64(int index, std::optional<std::uint64_t> value);
  void bind_text(int index, std::string_view value);
  void bind_optional_text(int index, const std::optional<std::string>& value);
  void bind_null(int index) { sqlite3_bind_null(stmt_, index); }
  // Binds the parameter written `name` in the SQL (":upid"), if the statement has one.
  void bind_named_int64(const char* name, std::int64_t value);

  // SQLITE_ROW, SQLITE_DONE or an error code.
  int step() { return sqlite3_step(stmt_); }
  // Makes the statement ready to run again with new parameters.
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  // Steps through the rows, calling visit(*this) on each until it returns false. Returns
  // SQLITE_DONE when the rows ran out or `visit` stopped, else the failed step's code. Does not
  // reset: a caller reads SQLite's message about a failure first.
  template <typename Visit>
  int each_row_while(Visit&& visit) {
    for (;;) {
      const int rc = step();
      if (rc != SQLITE_ROW) return rc;
      if (!visit(static_cast<const Statement&>(*this))) return SQLITE_DONE;
    }
  }

  // Columns are numbered from 0.
  int column_count() const { return sqlite3_column_count(stmt_); }
  bool is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  bool is_integer(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_INTEGER; }
  std::int64_t int64(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::uint64_t uint64(int column) const { return static_cast<std::uint64_t>(int64(column)); }
  int int32(int column) const { return sqlite3_column_int(stmt_, column); }
  std::string text(int column) const;
  // The text in place, valid until the next step or reset.
  std::string_view text_view(int column) const {
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, column));
    return text != nullptr
               ? std::string_view(text,
                                  static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
               : std::string_view();
  }
  std::optional<std::int64_t> optional_int64(int column) const;
  std::optional<std::uint64_t> optional_uint64(int column) const;
  std::optional<std::string> optional_text(int column) const;
  // The column's name as the query gives it ("argv", or "NULL" for a literal NULL).
  std::string_view column_name(int column) const {
    const char* name = sqlite3_column_name(stmt_, column);
    return name != nullptr ? name : "";
  }

  explicit operator bool() const { return stmt_ != nullptr; }

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace vramtrace::storage::sqlite
