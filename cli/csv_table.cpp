#include "cli/csv_table.h"

#include <stdexcept>

namespace vramtrace::cli {
namespace {

std::string csv_field(std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) return std::string(field);
  std::string text = "\"";
  for (const char c : field) {
    if (c == '"') text += '"';
    text += c;
  }
  return text + '"';
}

}  // namespace

CsvTable::CsvTable(std::vector<std::string> header) : columns_(header.size()) {
  append(header);
}

CsvTable& CsvTable::row(const std::vector<std::string>& fields) {
  // A row of the wrong width is a programming error, never the user's.
  if (fields.size() != columns_) throw std::logic_error("CSV row of the wrong width");
  append(fields);
  return *this;
}

void CsvTable::append(const std::vector<std::string>& fields) {
  for (std::size_t i = 0; i < fields.size(); ++i) text_ += (i ? "," : "") + csv_field(fields[i]);
  text_ += "\r\n";
}

std::vector<std::string> csv_frame_fields(const std::vector<storage::StackFrame>& stack) {
  if (stack.empty()) return {"", "", ""};
  const storage::StackFrame& frame = stack.front();
  return {frame.function.value_or(""), frame.file.value_or(""),
          frame.line ? std::to_string(*frame.line) : ""};
}

std::string csv_stack(const std::vector<storage::StackFrame>& stack) {
  std::string text;
  for (const storage::StackFrame& frame : stack) {
    if (!text.empty()) text += " <- ";
    text += frame.function.value_or("??");
    if (frame.file) text += " (" + *frame.file + ":" + std::to_string(frame.line.value_or(0)) + ")";
  }
  return text;
}

}  // namespace vramtrace::cli
