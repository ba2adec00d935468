// A whole stack as the text reports print it: one line a frame (text_style.h's format_frame),
// or, Python-first, with the runs stack_folding.h folds each on one line.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::text {

enum class StackView {
  kPythonFirst,  // the default: folded where the stack has Python frames
  kNative,       // every frame (`--native`)
};

// Each line starts with `indent` and ends with a newline. A folded run keeps the numbers of
// the frames it stands for, so that a line reads the same as in the --native stack:
//   #1-21 [aten::add: 21 frames in libc10_cuda.so, libtorch_cpu.so, libtorch_python.so]
// At most `max_lines` lines, then "... N more frames".
std::string format_stack(const std::vector<storage::StackFrame>& stack, StackView view,
                         std::string_view indent,
                         std::size_t max_lines = std::numeric_limits<std::size_t>::max());

// One frame as a one-line summary names it: "train.py:23 in Residual.forward", or
// "fill_cache (libfoo.so)" without line information (a C++ name without its parameters and
// anonymous namespaces), "code in libfoo.so" without a name.
std::string frame_where(const storage::StackFrame& frame);

}  // namespace vramtrace::text
