#include "analysis/values/live_callsite_tree.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <tuple>
#include <unordered_map>

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

// A stack's identity as the tree merges frames (same_place): two entries with one key walk the
// same path, so they are one stack.
std::string stack_key(const std::vector<storage::StackFrame>& stack) {
  std::string key;
  for (const storage::StackFrame& frame : stack) {
    if (frame.function) {
      key += *frame.function;
      key += '\0';
      key += frame.file.value_or("");
      key += '\0';
      key += std::to_string(frame.line.value_or(0));
    } else {
      key += std::to_string(frame.rel_pc);
    }
    key += '\0';
    key += frame.module;
    key += '\1';
  }
  return key;
}

// Each entry's stack bytes: its own plus those of every other entry of the same stack. Only the
// stacks with a Python frame are asked about, so only theirs are keyed.
std::vector<std::uint64_t> stack_bytes(const std::vector<StackBytes>& stacks) {
  std::vector<std::uint64_t> totals(stacks.size(), 0);
  std::unordered_map<std::string, std::vector<std::size_t>> entries_of;
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    if (stacks[i].stack == nullptr || user_python_frame(*stacks[i].stack) == nullptr) continue;
    entries_of[stack_key(*stacks[i].stack)].push_back(i);
  }
  for (const auto& [key, entries] : entries_of) {
    std::uint64_t total = 0;
    for (const std::size_t i : entries) total += stacks[i].bytes;
    for (const std::size_t i : entries) totals[i] = total;
  }
  return totals;
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

// "python3.11" or "python3": the name of an interpreter's library folder.
bool python_lib_folder(std::string_view name) {
  if (!name.starts_with("python")) return false;
  const std::string_view version = name.substr(6);
  return !version.empty() && std::all_of(version.begin(), version.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
  });
}

}  // namespace

bool python_library_file(std::string_view path) {
  if (path.starts_with("<frozen ")) return true;
  std::string_view previous;
  while (!path.empty()) {
    const std::size_t slash = path.find('/');
    const std::string_view component = path.substr(0, slash);
    if (component == "site-packages" || component == "dist-packages") return true;
    // Under lib/pythonX.Y/ and past it: the standard library, or a package below it.
    if ((previous == "lib" || previous == "lib64") && python_lib_folder(component) &&
        slash != std::string_view::npos)
      return true;
    previous = component;
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  return false;
}

const storage::StackFrame* user_python_frame(const std::vector<storage::StackFrame>& stack) {
  const storage::StackFrame* innermost = nullptr;
  for (const storage::StackFrame& frame : stack) {
    if (frame.language != storage::FrameLanguage::kPython || frame.cut != storage::StackCut::kNone)
      continue;
    if (!frame.file || !python_library_file(*frame.file)) return &frame;
    if (innermost == nullptr) innermost = &frame;
  }
  return innermost;
}

bool framework_module(std::string_view path) {
  if (python_library_file(path)) return true;
  const std::size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string_view::npos ? path : path.substr(slash + 1);
  static constexpr std::string_view kPrefixes[] = {
      "libc10",      "libtorch",    "libcuda",   "libcudart",    "libcublas", "libcudnn",
      "libnccl",     "libnvrtc",    "libnvJit",  "libcupti",     "libcufft",  "libcurand",
      "libcusparse", "libcusolver", "libpython", "libstdc++",    "libc.so",   "libc-",
      "libpthread",  "libgcc_s",    "ld-linux",  "libvramtrace", "libdl",     "libm.so"};
  return std::any_of(std::begin(kPrefixes), std::end(kPrefixes),
                     [&](std::string_view prefix) { return name.starts_with(prefix); });
}

const storage::StackFrame* first_line_of(const std::vector<storage::StackFrame>& stack) {
  if (const storage::StackFrame* python = user_python_frame(stack)) return python;
  for (const storage::StackFrame& frame : stack) {
    if (frame.language == storage::FrameLanguage::kNative &&
        frame.cut == storage::StackCut::kNone && !frame.module.empty() &&
        !framework_module(frame.module))
      return &frame;
  }
  return stack.empty() ? nullptr : &stack.front();
}

std::vector<CallsiteNode> build_callsite_tree(const std::vector<StackBytes>& stacks,
                                              TreeDirection direction) {
  std::vector<CallsiteNode> roots;
  const std::vector<storage::StackFrame> no_stack{storage::StackFrame{}};
  const std::vector<std::uint64_t> totals = stack_bytes(stacks);
  for (std::size_t i = 0; i < stacks.size(); ++i) {
    const StackBytes& entry = stacks[i];
    const std::vector<storage::StackFrame>& stack =
        entry.stack == nullptr || entry.stack->empty() ? no_stack : *entry.stack;
    const storage::StackFrame* python = user_python_frame(stack);
    std::vector<CallsiteNode>* level = &roots;
    const auto visit = [&](const storage::StackFrame& frame) {
      CallsiteNode& node = child_for(level, frame);
      node.bytes += entry.bytes;
      node.count += entry.count;
      if (python != nullptr && (!node.python_frame || totals[i] > node.python_stack_bytes)) {
        node.python_frame = *python;
        node.python_stack_bytes = totals[i];
      }
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
