#include "viewer/model/leak_tree.h"

#include <cctype>
#include <string_view>

#include "text/stack_folding.h"

namespace vramtrace::viewer {

std::vector<analysis::CallsiteNode> leak_tree(const std::vector<analysis::LeakGroup>& groups,
                                              analysis::TreeDirection direction,
                                              text::StackView view) {
  if (view == text::StackView::kNative) return analysis::build_leak_tree(groups, direction);
  // The folded stacks live while the tree is built; its nodes keep copies of their frames.
  std::vector<std::vector<storage::StackFrame>> folded;
  folded.reserve(groups.size());
  for (const analysis::LeakGroup& group : groups)
    folded.push_back(text::folded_frames(group.stack));
  std::vector<analysis::StackBytes> stacks;
  stacks.reserve(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i)
    stacks.push_back({&folded[i], groups[i].bytes, groups[i].count});
  return analysis::build_callsite_tree(stacks, direction);
}

std::size_t folded_run_length(const storage::StackFrame& frame) {
  // folded_frames' run: a bracketed function, and no module, file or frame of its own (a stack
  // cut's mark is bracketed too, but says it is a cut).
  if (!frame.function || frame.cut != storage::StackCut::kNone || !frame.module.empty() ||
      frame.file || frame.frame_id != 0)
    return 0;
  const std::string_view function = *frame.function;
  if (function.size() < 2 || function.front() != '[' || function.back() != ']') return 0;
  // "[OP: N frames in ...]" or "[N frame in ...]": the number before the first " frame".
  const std::size_t word = function.find(" frame");
  if (word == std::string_view::npos) return 0;
  std::size_t start = word;
  while (start > 0 && std::isdigit(static_cast<unsigned char>(function[start - 1]))) --start;
  std::size_t length = 0;
  for (std::size_t i = start; i < word; ++i)
    length = length * 10 + static_cast<std::size_t>(function[i] - '0');
  return length;
}

}  // namespace vramtrace::viewer
