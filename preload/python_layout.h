// Where CPython keeps a thread's frames, per minor version: what the shim needs to read the
// calling thread's Python frames when it does not hold the GIL (python_stack.h).
//
// The C API cannot be called without the GIL, but a thread's own frames cannot change while
// that thread is inside a C call (here: inside the hook), and the fields read below are set
// when the objects are made and never change after. So the walk reads memory directly, with
// these offsets (x86-64 and aarch64, release builds with the GIL; a debug or free-threaded build
// fails the checks below and is not walked).
//
// The numbers come from each version's headers (Include/cpython/pystate.h, code.h,
// unicodeobject.h, Include/internal/pycore_frame.h). 3.11 is checked against the installed
// headers by tests/python_layout (python_layout_test.cpp); every version is also checked at run
// time before it is trusted: the first walk of a process reads through process_vm_readv, which
// fails instead of faulting, and must find code objects (their type is PyCode_Type) all the way
// down, or the layout is rejected for the life of the process.
#pragma once

#include <cstdint>

namespace vramtrace::preload {

struct PythonLayout {
  int minor;  // 3.minor
  // Thread state -> innermost frame. 3.9/3.10: tstate->frame (a PyFrameObject). 3.11/3.12:
  // tstate->cframe->current_frame. 3.13: tstate->current_frame.
  int thread_frame;          // offset in PyThreadState
  int cframe_current_frame;  // offset in _PyCFrame; -1: no _PyCFrame in between
  bool frame_objects;        // 3.9/3.10: frames are PyFrameObjects
  int frame_code;            // f_code / f_executable
  int frame_previous;        // previous / f_back
  int frame_instruction;     // 3.11: prev_instr (the line is computed from it); -1 otherwise
  int frame_owner;           // -1: no owner field (3.9/3.10)
  int owner_cstack;          // owner value of the C stack's shim frames; -1: none (3.11)
  // PyCodeObject.
  int code_firstlineno;
  int code_filename;
  int code_qualname;  // co_qualname (3.11+), else co_name
  int code_adaptive;  // 3.11: co_code_adaptive, the bytecode prev_instr points into
  // PyUnicodeObject: sizeof(PyASCIIObject) and sizeof(PyCompactUnicodeObject), where the
  // characters of a compact ASCII and a compact non-ASCII string start.
  int ascii_data;
  int compact_data;
};

inline constexpr PythonLayout kPythonLayouts[] = {
    // minor, frame, cframe, objects, code, previous, instruction, owner, cstack,
    // firstlineno, filename, qualname, adaptive, ascii, compact
    {9, 24, -1, true, 32, 24, -1, -1, -1, 40, 104, 112, -1, 48, 72},
    {10, 24, -1, true, 32, 24, -1, -1, -1, 40, 104, 112, -1, 48, 72},
    {11, 56, 8, false, 32, 48, 56, 69, -1, 72, 112, 128, 184, 48, 72},
    {12, 56, 0, false, 0, 8, -1, 70, 3, 68, 112, 128, -1, 40, 56},
    {13, 72, -1, false, 0, 8, -1, 70, 3, 68, 112, 128, -1, 40, 56},
};

// The layout for 3.minor, or null for a version the shim does not know.
inline const PythonLayout* python_layout_for(int minor) {
  for (const PythonLayout& layout : kPythonLayouts)
    if (layout.minor == minor) return &layout;
  return nullptr;
}

}  // namespace vramtrace::preload
