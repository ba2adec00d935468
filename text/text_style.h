// How numbers, times and stack frames look in text: the CLI's reports, and the collector's
// answers to live queries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "storage/printable.h"
#include "storage/trace_rows.h"

namespace vramtrace::text {

// 512 B, 1.5 KiB, 12.0 MiB, 3.2 GiB: binary units, one decimal.
std::string format_bytes(std::uint64_t bytes);
// "12.0 MiB (12582912 bytes)"
std::string format_bytes_exact(std::uint64_t bytes);
// 12.345 s, 800.000 ms, 12.500 us: three decimals of the largest unit that fits.
std::string format_seconds(std::int64_t ns);
// "1 allocation", "3 allocations"
std::string count_of(std::uint64_t count, std::string_view singular, std::string_view plural);
// How a name from a trace reads in text (storage/printable.h): the reader already gives every
// name so; a report applies printable_text() to its whole text as the last step.
using storage::printable;
using storage::printable_text;

// "#3 function at file:line (module)", as LeakSanitizer and heaptrack_print write a frame.
// An unknown function is "??" and is followed by the module offset, as in (libfoo.so+0x12a0).
// The mark of a stack cut short is "#3 [stack cut: ...]".
std::string format_frame(std::size_t index, const storage::StackFrame& frame);

}  // namespace vramtrace::text
