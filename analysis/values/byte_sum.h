// Sums of byte counts that do not wrap. A trace written by hand, or damaged, can hold sizes no
// device has; a total that wrapped past 2^64 would read as a few bytes, and a gate would pass
// it. A sum that would pass 2^64 - 1 stays there, and the report says its totals overflowed.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

namespace vramtrace::analysis {

// a + b, or the largest count where that does not fit (then *overflowed is set).
inline std::uint64_t add_bytes(std::uint64_t a, std::uint64_t b, bool* overflowed) {
  std::uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) {
    *overflowed = true;
    return std::numeric_limits<std::uint64_t>::max();
  }
  return sum;
}

// The warning of a report whose byte totals overflowed.
inline constexpr std::string_view kByteTotalsOverflowed =
    "byte totals pass 2^64 - 1 (16 EiB): the trace holds sizes no device has (written by hand, "
    "or damaged); totals are shown at the largest count, not wrapped";

}  // namespace vramtrace::analysis
