// How the viewer names frames and byte counts, in the CLI's words: a frame as
// "function (file:line)" (analysis::advice_callsite), an unsymbolized one by module and offset.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::viewer {

// "forward (model.py:42)", "?? (libcuda.so.1+0x2000)", "(no stack)".
QString frame_label(const storage::StackFrame& frame);
// A whole stack in one line, by the frame a person reads first (analysis::first_line_of: the
// user's Python line, else the program's own native frame, never an allocator's or a
// framework's): "<module> (train.py:12)"; "(no stack)" for none.
QString stack_label(const std::vector<storage::StackFrame>& stack);
// A Python frame as the leak tree's "Python line" column names it: "model.py:12 in forward",
// the file without its folder (the tooltip gives the path).
QString python_line_label(const storage::StackFrame& frame);
// "4.0 MiB", "512 B": powers of 1024, one decimal, as the CLI prints sizes in prose.
QString byte_text(std::uint64_t bytes);
// "4.0 MiB in 1 allocation", "512 B in 3 allocations", as the CLI counts.
QString bytes_in_allocations(std::uint64_t bytes, std::uint64_t count);
// "1.234 s", "15.000 ms", "40.000 us" since `origin_ns`.
QString time_text(std::int64_t ns, std::int64_t origin_ns);

}  // namespace vramtrace::viewer
