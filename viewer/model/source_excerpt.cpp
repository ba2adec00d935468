#include "viewer/model/source_excerpt.h"

#include <algorithm>
#include <fstream>

namespace vramtrace::viewer {

std::optional<SourceExcerpt> read_source_excerpt(const std::string& file, int line, int context) {
  if (line < 1) return std::nullopt;
  std::ifstream in(file);
  if (!in) return std::nullopt;
  SourceExcerpt excerpt;
  excerpt.first_line = std::max(1, line - context);
  std::string text;
  for (int number = 1; number <= line + context && std::getline(in, text); ++number)
    if (number >= excerpt.first_line) excerpt.lines.push_back(text);
  if (excerpt.first_line + static_cast<int>(excerpt.lines.size()) <= line) return std::nullopt;
  return excerpt;
}

}  // namespace vramtrace::viewer
