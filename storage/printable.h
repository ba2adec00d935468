// Names from a trace as a terminal, a log or a summary may show them. A name is the program's,
// or whoever wrote the file: raw, an escape sequence in it would reach the terminal, and a
// newline would forge a line of a report. The reader gives every name it reads (frames,
// processes, threads, markers) through printable(), so that every output, text, Markdown, JSON
// or the viewer, shows the same characters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vramtrace::storage {

// `text` with control characters (C0, DEL and C1, newlines and tabs included) and bytes that
// are not UTF-8 written as \xNN; everything else as it is.
std::string printable(std::string_view text);
// The length of the valid UTF-8 sequence that starts at text[i] (1 for ASCII), with its code
// point in *code_point; 0 where the bytes there are not UTF-8 (overlong, a surrogate, past
// U+10FFFF, cut short).
std::size_t utf8_sequence(std::string_view text, std::size_t i,
                          std::uint32_t* code_point = nullptr);
// As printable(), line by line: newlines and tabs stay.
std::string printable_text(std::string_view text);

}  // namespace vramtrace::storage
