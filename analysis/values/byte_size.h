// Sizes as people write them on a command line: "0", "512", "1.5GiB", "200 MB".
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vramtrace::analysis {

// A byte count with an optional unit: B; KiB, MiB, GiB, TiB (powers of 1024); KB, MB, GB, TB
// (powers of 1000, as disk makers and `ls --si` use them). Units are case-insensitive; a
// fraction is allowed before a unit ("1.5GiB") and rounded down to whole bytes. Empty for
// anything else: a negative number, an unknown unit, or more than 2^64 - 1 bytes.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

}  // namespace vramtrace::analysis
