// The tables of a Markdown document, read back cell by cell: the tests that hold docs/schema.md
// to the code use it. Needs VRAMTRACE_SOURCE_DIR defined to the source tree.
#pragma once

#include <algorithm>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace vramtrace::testing {

// docs/schema.md, as this build's source tree has it.
inline std::string read_schema_doc() {
  std::ifstream in(std::filesystem::path(VRAMTRACE_SOURCE_DIR) / "docs" / "schema.md");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// The section of docs/schema.md that starts with the line `heading`, to the next heading of
// any level; empty when there is none.
inline std::string section_of_schema_doc(const std::string& heading) {
  const std::string doc = read_schema_doc();
  const std::size_t start = doc.find("\n" + heading);
  if (start == std::string::npos) return "";
  const std::size_t body = doc.find('\n', start + 1);
  const std::size_t next = doc.find("\n#", body);
  return doc.substr(body, next == std::string::npos ? std::string::npos : next - body);
}

inline std::string trim(std::string text) {
  const auto first = text.find_first_not_of(' ');
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(' ') - first + 1);
}

inline std::string unquote(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '`'), text.end());
  return text;
}

inline std::vector<std::string> cells(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|' && line[i - 1] != '\\') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return out;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// The rows of the first table whose header line is `header`, each as its cells.
inline std::vector<std::vector<std::string>> table_with_header(const std::string& doc,
                                                               const std::string& header) {
  const std::vector<std::string> lines = lines_of(doc);
  std::vector<std::vector<std::string>> rows;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] != header) continue;
    for (std::size_t j = i + 2; j < lines.size() && lines[j].starts_with('|'); ++j)
      rows.push_back(cells(lines[j]));
    break;
  }
  return rows;
}

}  // namespace vramtrace::testing
