// The shim reads a thread's Python frames without the GIL by offsets (preload/python_layout.h).
// For the version whose headers are installed, each offset must be what the compiler computes
// from CPython's own structure definitions, internal ones included.
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION >= 11
#include <internal/pycore_frame.h>
#else
#include <frameobject.h>
#endif
#include <gtest/gtest.h>

#include <cstddef>

#include "python_layout.h"

namespace vramtrace::preload {
namespace {

TEST(PythonLayout, MatchesTheInstalledHeaders) {
  const PythonLayout* layout = python_layout_for(PY_MINOR_VERSION);
  ASSERT_NE(layout, nullptr) << "no layout for Python 3." << PY_MINOR_VERSION
                             << ": add one (the shim falls back to native stacks without it)";
  EXPECT_EQ(layout->code_firstlineno, offsetof(PyCodeObject, co_firstlineno));
  EXPECT_EQ(layout->code_filename, offsetof(PyCodeObject, co_filename));
  EXPECT_EQ(layout->ascii_data, sizeof(PyASCIIObject));
  EXPECT_EQ(layout->compact_data, sizeof(PyCompactUnicodeObject));
  // What MemoryReader::is_a and read_str read at fixed offsets in every version.
  EXPECT_EQ(offsetof(PyObject, ob_type), 8u);
  EXPECT_EQ(offsetof(PyASCIIObject, length), 16u);
  EXPECT_EQ(offsetof(PyASCIIObject, state), 32u);
#if PY_MINOR_VERSION >= 11
  EXPECT_EQ(layout->code_qualname, offsetof(PyCodeObject, co_qualname));
  EXPECT_FALSE(layout->frame_objects);
  EXPECT_EQ(layout->frame_previous, offsetof(_PyInterpreterFrame, previous));
  EXPECT_EQ(layout->frame_owner, offsetof(_PyInterpreterFrame, owner));
#else
  EXPECT_EQ(layout->code_qualname, offsetof(PyCodeObject, co_name));
  EXPECT_TRUE(layout->frame_objects);
  EXPECT_EQ(layout->thread_frame, offsetof(PyThreadState, frame));
  EXPECT_EQ(layout->frame_code, offsetof(PyFrameObject, f_code));
  EXPECT_EQ(layout->frame_previous, offsetof(PyFrameObject, f_back));
#endif
#if PY_MINOR_VERSION == 11
  EXPECT_EQ(layout->thread_frame, offsetof(PyThreadState, cframe));
  EXPECT_EQ(layout->cframe_current_frame, offsetof(_PyCFrame, current_frame));
  EXPECT_EQ(layout->frame_code, offsetof(_PyInterpreterFrame, f_code));
  EXPECT_EQ(layout->frame_instruction, offsetof(_PyInterpreterFrame, prev_instr));
  EXPECT_EQ(layout->code_adaptive, offsetof(PyCodeObject, co_code_adaptive));
#elif PY_MINOR_VERSION == 12
  EXPECT_EQ(layout->thread_frame, offsetof(PyThreadState, cframe));
  EXPECT_EQ(layout->cframe_current_frame, offsetof(_PyCFrame, current_frame));
  EXPECT_EQ(layout->frame_code, offsetof(_PyInterpreterFrame, f_code));
  EXPECT_EQ(layout->owner_cstack, FRAME_OWNED_BY_CSTACK);
#elif PY_MINOR_VERSION >= 13
  EXPECT_EQ(layout->thread_frame, offsetof(PyThreadState, current_frame));
  EXPECT_EQ(layout->frame_code, offsetof(_PyInterpreterFrame, f_executable));
  EXPECT_EQ(layout->owner_cstack, FRAME_OWNED_BY_CSTACK);
#endif
}

TEST(PythonLayout, UnknownVersionsHaveNone) {
  EXPECT_EQ(python_layout_for(8), nullptr);
  EXPECT_EQ(python_layout_for(99), nullptr);
}

}  // namespace
}  // namespace vramtrace::preload
