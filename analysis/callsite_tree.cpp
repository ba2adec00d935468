#include "analysis/callsite_tree.h"

#include <algorithm>
#include <tuple>

namespace vramtrace::analysis {
namespace {

bool same_place(const storage::StackFrame& a, const storage::StackFrame& b) {
  // Without a symbol, only the address tells frames apart.
  if (!a.function || !b.function)
    return a.module == b.module && a.rel_pc == b.rel_pc && a.function == b.function;
  return std::tie(a.function, a.file, a.line, a.module) ==
         std::tie(b.function, b.file, b.line, b.module);
}

CallsiteNode& child_for(std::vector<CallsiteNode>* children, const storage::StackFrame& frame) {
  for (CallsiteNode& child : *children)
    if (same_place(child.frame, frame)) return child;
  CallsiteNode& added = children->emplace_back();
  added.frame = frame;
  return added;
}

// Level by level, without recursion: a tree is as deep as its deepest stack.
void sort_largest_first(std::vector<CallsiteNode>* roots) {
  std::vector<std::vector<CallsiteNode>*> pending{roots};
  while (!pending.empty()) {
    std::vector<CallsiteNode>* nodes = pending.back();
    pending.pop_back();
    std::stable_sort(nodes->begin(), nodes->end(),
                     [](const CallsiteNode& a, const CallsiteNode& b) {
                       return std::tie(b.bytes, b.count) < std::tie(a.bytes, a.count);
                     });
    // After the sort: the children stay where they are from now on.
    for (CallsiteNode& node : *nodes) pending.push_back(&node.children);
  }
}

}  // namespace

std::vector<CallsiteNode> build_callsite_tree(const std::vector<StackBytes>& stacks,
                                              TreeDirection direction) {
  std::vector<CallsiteNode> roots;
  const std::vector<storage::StackFrame> no_stack{storage::StackFrame{}};
  for (const StackBytes& entry : stacks) {
    const std::vector<storage::StackFrame>& stack =
        entry.stack == nullptr || entry.stack->empty() ? no_stack : *entry.stack;
    std::vector<CallsiteNode>* level = &roots;
    const auto visit = [&](const storage::StackFrame& frame) {
      CallsiteNode& node = child_for(level, frame);
      node.bytes += entry.bytes;
      node.count += entry.count;
      level = &node.children;
    };
    if (direction == TreeDirection::kBottomUp)
      std::for_each(stack.begin(), stack.end(), visit);
    else
      std::for_each(stack.rbegin(), stack.rend(), visit);
  }
  sort_largest_first(&roots);
  return roots;
}

}  // namespace vramtrace::analysis
