#include "analysis/values/advice.h"

#include <fmt/core.h>

#include <iterator>

#include "analysis/values/live_callsite_tree.h"

namespace vramtrace::analysis {

std::string advice_bytes(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string advice_callsite(const std::vector<storage::StackFrame>& stack) {
  if (stack.empty()) return "no recorded stack";
  const storage::StackFrame& frame = *first_line_of(stack);
  std::string text = frame.function.value_or("??");
  if (frame.file) text += fmt::format(" ({}:{})", *frame.file, frame.line.value_or(0));
  return text;
}

}  // namespace vramtrace::analysis
