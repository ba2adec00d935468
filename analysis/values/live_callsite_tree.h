// A callsite tree: live allocations' bytes and counts, summed over their stacks' frames.
//
// Top-down, a root is an outermost frame (main) and a path from the root is a stack read from
// the outside in, so a node's bytes are everything allocated beneath that call; bottom-up, a
// root is an innermost frame (the allocating function, or the Python line) and its children are
// its callers. Frames are merged by what a person reads (function, file, line, module), so
// that two return addresses on one line are one node. Children are ordered largest first.
//
// Each node also keeps the Python line that led to it: in a PyTorch process the allocating frame
// is a libc10 one, and what a person wants beside it is their own line of Python. Of the stacks
// through the node, the largest (by bytes) that has a Python frame gives its user's line
// (user_python_frame below).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

struct CallsiteNode {
  storage::StackFrame frame;  // the first frame seen for this node
  std::uint64_t bytes = 0, count = 0;
  std::vector<CallsiteNode> children;  // bytes, then count descending, then first seen
  // The user's Python line (user_python_frame) of the largest stack through this node that has
  // a Python frame, whichever direction the tree reads; none where no stack through it has a
  // Python frame. A stack's bytes are summed over its entries (a leak report gives one stack
  // once per kind); between stacks of equal bytes the first seen wins. `python_stack_bytes`: that
  // stack's bytes.
  std::optional<storage::StackFrame> python_frame;
  std::uint64_t python_stack_bytes = 0;
};

// Live bytes of one stack (innermost frame first), as a leak group or a live group holds them.
struct StackBytes {
  const std::vector<storage::StackFrame>* stack = nullptr;  // empty: no stack recorded
  std::uint64_t bytes = 0, count = 0;
};

// A Python file of an installed package or of the standard library, not the user's own: a path
// with a component `site-packages` or `dist-packages`, one under an interpreter's library
// folder (`.../lib/python3.11/...`), or a frozen standard module (`<frozen runpy>`).
bool python_library_file(std::string_view path);

// The Python line a person wrote that led to this stack (innermost frame first): its innermost
// Python frame whose file is not a library's (python_library_file), else its innermost Python
// frame when every one is a library's (torch's own Python called from a C++ program), else none.
// Frames marking a stack cut are passed over.
const storage::StackFrame* user_python_frame(const std::vector<storage::StackFrame>& stack);

// Whether a native module is a framework's or a runtime's, not the program's own: PyTorch's
// libraries (libc10, libtorch), CUDA's (libcuda, libcudart, cuBLAS, cuDNN, NCCL, ...), the
// interpreter's, the C and C++ runtimes', the loader's, vramtrace's own, and native code
// installed under a Python library folder (python_library_file).
bool framework_module(std::string_view path);

// The line a person reads first in a stack (innermost frame first), the one every one-line
// summary names: the user's Python line (user_python_frame), else the innermost native frame of
// the program's own code (not of a framework_module), else the innermost frame. Null for an
// empty stack.
const storage::StackFrame* first_line_of(const std::vector<storage::StackFrame>& stack);

enum class TreeDirection { kTopDown, kBottomUp };

// The roots of the tree. An allocation with no recorded stack is a root whose frame has no
// function (shown as "(no stack)").
std::vector<CallsiteNode> build_callsite_tree(const std::vector<StackBytes>& stacks,
                                              TreeDirection direction);

}  // namespace vramtrace::analysis
