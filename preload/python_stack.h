// Python frames for the shim's stacks (docs/architecture.md, "Python stacks").
//
// Where the process runs CPython and the calling thread holds the GIL, the shim walks the
// thread's Python frames through the C API, resolved at run time from whatever object defines
// it (libpython, or a python executable that exports its symbols): the shim never links
// libpython. Only functions that exist from 3.9 on are used (PyThreadState_GetFrame,
// PyFrame_GetBack, PyFrame_GetCode, PyFrame_GetLineNumber), so the walk knows nothing of the
// interpreter's internal layouts and an unknown version cannot make it read a wrong offset.
//
// Without the GIL the C API may not be called, and taking the GIL inside a hook could deadlock
// (PyTorch calls its allocator reports under the allocator's lock, while a thread that holds
// the GIL may be waiting for that lock to free a tensor). There the shim reads the thread's
// frames directly, by the interpreter's known layout (python_layout.h), and the event says
// PYTHON_STACK_CAPTURED_WITHOUT_GIL; where no layout is known or the first walk rejected it,
// the event keeps its native stack alone and says PYTHON_STACK_WITHOUT_GIL. The collector
// counts both.
//
// Code objects are interned: the first time one appears, the shim takes a reference to it (so
// that its address, the id on the wire, stays its own for the life of the process) and sends a
// PythonCode message with its file, name and first line. Events then carry (id, line) pairs.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vramtrace::preload {

inline constexpr int kMaxPythonDepth = 128;  // the wire's limit (vramtrace.options)

// vramtrace_wire_PythonStackStatus
enum class PythonStackStatus : int {
  kNone = 0,
  kCaptured = 1,
  kWithoutGil = 2,
  kUnavailable = 3,
  kTruncated = 4,
  kCapturedWithoutGil = 5,
};

struct PythonFrames {
  uint64_t code[kMaxPythonDepth];  // PythonCode ids, innermost first
  uint32_t line[kMaxPythonDepth];
  int depth = 0;
  PythonStackStatus status = PythonStackStatus::kNone;
};

// How many of the frames go on the wire: all of them, within its limit.
inline int sent_depth(const PythonFrames& frames) {
  return frames.depth < kMaxPythonDepth ? frames.depth : kMaxPythonDepth;
}

// Writes one encoded message to the ring; returns false when recording stopped.
using PythonMessageSink = bool (*)(const uint8_t* payload, size_t bytes);

// Fills `out` with the calling thread's Python frames. Messages the collector needs first (the
// interpreter, new code objects) go to `sink` before this returns. Call inside an outermost
// ReentryGuard, before any lock of the shim's is taken. Cheap when there is no Python: after
// the first look, the loader is asked again only when `loader_generation` moves.
void capture_python_stack(PythonFrames* out, uint64_t loader_generation, PythonMessageSink sink);

// Whether the process's interpreter has begun to finalize (Py_IsFinalizing): from then on its
// teardown frees what the program still held. False where no interpreter was found yet. Cheap
// (a load and a call that reads one word), and safe on any thread, with or without the GIL.
bool python_is_finalizing();

// After fork: the child's collector has been told nothing yet.
void forget_sent_python_code();

}  // namespace vramtrace::preload
