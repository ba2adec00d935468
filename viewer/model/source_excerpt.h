// The source lines around a frame's line, for the stack panel, where the file is on this disk
// (a trace records paths as the compiler or the interpreter saw them).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace vramtrace::viewer {

struct SourceExcerpt {
  int first_line = 1;  // the number of lines.front()
  std::vector<std::string> lines;
};

// Lines line - context .. line + context of `file`; unset when the file cannot be read or is
// shorter than `line`.
std::optional<SourceExcerpt> read_source_excerpt(const std::string& file, int line, int context);

}  // namespace vramtrace::viewer
