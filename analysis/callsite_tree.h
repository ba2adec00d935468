// A callsite tree: live allocations' bytes and counts, summed over their stacks' frames.
//
// Top-down, a root is an outermost frame (main) and a path from the root is a stack read from
// the outside in, so a node's bytes are everything allocated beneath that call; bottom-up, a
// root is an innermost frame (the allocating function, or the Python line) and its children are
// its callers. Frames are merged by what a person reads (function, file, line, module), so
// that two return addresses on one line are one node. Children are ordered largest first.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

struct CallsiteNode {
  storage::StackFrame frame;  // the first frame seen for this node
  std::uint64_t bytes = 0, count = 0;
  std::vector<CallsiteNode> children;  // bytes, then count descending, then first seen
};

// Live bytes of one stack (innermost frame first), as a leak group or a live group holds them.
struct StackBytes {
  const std::vector<storage::StackFrame>* stack = nullptr;  // empty: no stack recorded
  std::uint64_t bytes = 0, count = 0;
};

enum class TreeDirection { kTopDown, kBottomUp };

// The roots of the tree. An allocation with no recorded stack is a root whose frame has no
// function (shown as "(no stack)").
std::vector<CallsiteNode> build_callsite_tree(const std::vector<StackBytes>& stacks,
                                              TreeDirection direction);

}  // namespace vramtrace::analysis
