// A CSV table (RFC 4180): a header row, then one row per record; a field with a comma, a quote
// or a line break is quoted, its quotes doubled. What `--format csv` prints.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::cli {

class CsvTable {
 public:
  explicit CsvTable(std::vector<std::string> header);

  // A row: as many fields as the header has columns.
  CsvTable& row(const std::vector<std::string>& fields);

  const std::string& text() const { return text_; }

 private:
  void append(const std::vector<std::string>& fields);
  std::size_t columns_;
  std::string text_;
};

// A number as a CSV field.
template <typename T>
std::string csv_number(T value) {
  return std::to_string(value);
}

// The innermost frame's function, file and line as three fields (empty when unknown).
std::vector<std::string> csv_frame_fields(const std::vector<storage::StackFrame>& stack);

// A whole stack in one field, innermost first: "make (a.cu:12) <- main (a.cu:40)".
std::string csv_stack(const std::vector<storage::StackFrame>& stack);

}  // namespace vramtrace::cli
