// Python-first stacks: how the reports show a stack that has Python frames. A PyTorch tensor's
// stack is the user's Python lines under dozens of frames of libtorch, libc10 and the bindings
// between them; the line the user wrote should come first. So, where a stack has a Python
// frame, each run of interpreter, binding and framework frames between the frames a person
// reads is folded into one line that names its libraries and the operator it ran. The rules
// are here, once (docs/architecture.md, "Python-first stacks"); `--native` shows every frame.
//
// A stack is innermost frame first, as the trace gives it. Shown, in a stack with a Python
// frame:
//   - the innermost frame (the allocation site), and every frame no rule folds (the program's
//     own native code);
//   - every Python frame but the module call's own plumbing (nn.Module._call_impl and
//     _wrapped_call_impl).
// Folded: native frames of the interpreter, of the binding layers and of the framework
// (fold_class), and every native frame outside the outermost Python frame (the interpreter's
// start-up). In a stack without a Python frame, every frame is shown but the way in, folded
// into one line: `_start` and the C library's start of main(), or a thread's start (libc's,
// libstdc++'s and std::thread's invoke chain), where that is two frames or more.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::text {

enum class FoldClass {
  kNone,         // shown
  kInterpreter,  // libpython, the python executable
  kBinding,      // libtorch_python, torch's _C, ctypes and libffi
  kFramework,    // libtorch*, libc10*, the CUDA libraries; nn.Module's call plumbing
};

// The rule a frame falls under, by its module (a native frame) or file and function (Python).
FoldClass fold_class(const storage::StackFrame& frame);

// One line of a folded stack: a frame shown, or a run of frames folded into one.
struct StackLine {
  std::size_t first = 0, last = 0;  // the frames it stands for, indices into the stack
  bool folded = false;
  // A folded run: "aten::add: 21 frames in libc10_cuda.so, libtorch_cpu.so" (the operator, if
  // a frame names one, then the libraries in the order met from the inside out).
  std::string summary;
};

// The lines of `stack` as the reports show it by default. A stack without a Python frame is
// every frame, one line each, but its way in.
std::vector<StackLine> fold_stack(const std::vector<storage::StackFrame>& stack);

// The same stack with each folded run replaced by one frame whose function is its summary in
// brackets (no file, module or frame id): what a callsite tree merges, so that two stacks that
// differ only inside a folded run are one path.
std::vector<storage::StackFrame> folded_frames(const std::vector<storage::StackFrame>& stack);

// "aten::add" for frames of `at::_ops::add_Tensor::call`, the operator of a dispatch frame;
// empty for any other frame.
std::string aten_operator(const std::string& function);

}  // namespace vramtrace::text
