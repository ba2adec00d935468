// Where a stack's Python frames go among its native frames.
//
// A native stack taken inside a Python program runs, from the inside out, through the code
// that allocated (a CUDA library, PyTorch, a ctypes callee), then through the interpreter's own
// frames (_PyEval_EvalFrameDefault and the calls around it, many per Python call), then out
// through main and the C library's start-up. The interpreter's frames say nothing a user can
// act on; the Python frames the shim walked say which lines of Python were running. So the
// Python frames take the place of the run of interpreter frames, from the innermost
// interpreter frame to the outermost.
//
// Native frames of other objects inside that run (an extension module's C code between two
// Python calls, as in Python -> C -> Python -> allocation) are dropped with it: the shim's walk
// cannot tell which Python frames each stretch of C sits between, and a wrong order would be
// worse than a missing frame. A stack with no interpreter frame at all (no native stack, or an
// unwinder that stopped early) gets the Python frames at its outer end.
#pragma once

#include <cstddef>
#include <span>

namespace vramtrace::collector {

// Native frames [begin, end) (innermost first) are the interpreter's and are replaced by the
// Python frames; begin == end means nothing is replaced and the Python frames go at `begin`.
struct PythonSplice {
  std::size_t begin = 0;
  std::size_t end = 0;
};

// `in_interpreter[i]`: native frame i is code of the object that holds the interpreter.
PythonSplice find_python_splice(std::span<const bool> in_interpreter);

}  // namespace vramtrace::collector
