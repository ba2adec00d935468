#include "text/stack_text.h"

#include <fmt/core.h>

#include "text/stack_folding.h"
#include "text/text_style.h"

namespace vramtrace::text {

std::string format_stack(const std::vector<storage::StackFrame>& stack, StackView view,
                         std::string_view indent, std::size_t max_lines) {
  std::vector<StackLine> lines;
  if (view == StackView::kNative) {
    for (std::size_t i = 0; i < stack.size(); ++i) lines.push_back({i, i, false, {}});
  } else {
    lines = fold_stack(stack);
  }
  std::string text;
  for (std::size_t n = 0; n < lines.size(); ++n) {
    const StackLine& line = lines[n];
    if (n == max_lines) {
      text += fmt::format("{}... {} more frames\n", indent, stack.size() - line.first);
      break;
    }
    if (!line.folded) {
      text += fmt::format("{}{}\n", indent, format_frame(line.first, stack[line.first]));
    } else if (line.first == line.last) {
      text += fmt::format("{}#{} [{}]\n", indent, line.first, line.summary);
    } else {
      text += fmt::format("{}#{}-{} [{}]\n", indent, line.first, line.last, line.summary);
    }
  }
  return text;
}

}  // namespace vramtrace::text
