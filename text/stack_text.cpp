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

namespace {

std::string short_function(std::string name) {
  constexpr std::string_view kAnonymous = "(anonymous namespace)::";
  for (std::size_t at; (at = name.find(kAnonymous)) != std::string::npos;)
    name.erase(at, kAnonymous.size());
  if (const std::size_t open = name.find('('); open != std::string::npos && open > 0)
    name.resize(open);
  return name;
}

}  // namespace

std::string frame_where(const storage::StackFrame& frame) {
  if (!frame.function) return fmt::format("code in {}", storage::path_base_name(frame.module));
  const std::string function = short_function(frame.function.value_or("??"));
  if (frame.file && frame.line)
    return fmt::format("{}:{} in {}", storage::path_base_name(*frame.file), *frame.line, function);
  return fmt::format("{} ({})", function, storage::path_base_name(frame.module));
}

}  // namespace vramtrace::text
