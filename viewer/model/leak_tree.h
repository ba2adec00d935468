// The leak tree as the viewer shows it: a leak report's groups as one callsite tree
// (analysis::build_leak_tree's sums), Python-first by default as the CLI's text reports are
// (docs/architecture.md, "Python-first stacks"): each stack passed through text::folded_frames,
// so that a run of interpreter, binding and framework frames is one row, and two stacks that
// differ only inside such a run are one path. text::StackView::kNative keeps every frame.
#pragma once

#include <cstddef>
#include <vector>

#include "analysis/reports/leak_report.h"
#include "analysis/values/live_callsite_tree.h"
#include "text/stack_text.h"

namespace vramtrace::viewer {

std::vector<analysis::CallsiteNode> leak_tree(const std::vector<analysis::LeakGroup>& groups,
                                              analysis::TreeDirection direction,
                                              text::StackView view);

// How many recorded frames a frame of a folded stack stands for: the length of the run that
// text::folded_frames made it of (its summary names it: "aten::add: 21 frames in ..."), or 0
// for a frame as recorded.
std::size_t folded_run_length(const storage::StackFrame& frame);

}  // namespace vramtrace::viewer
