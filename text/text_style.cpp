#include "text/text_style.h"

#include <fmt/core.h>

#include <array>

namespace vramtrace::text {

std::string format_bytes(std::uint64_t bytes) {
  constexpr std::array<std::string_view, 5> kUnits{"B", "KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  auto value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < kUnits.size()) {
    value /= 1024.0;
    ++unit;
  }
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string format_bytes_exact(std::uint64_t bytes) {
  if (bytes < 1024) return format_bytes(bytes);
  return fmt::format("{} ({} bytes)", format_bytes(bytes), bytes);
}

std::string format_seconds(std::int64_t ns) {
  const auto magnitude = ns < 0 ? -ns : ns;
  if (magnitude >= 1'000'000'000 || ns == 0) {
    return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
  }
  if (magnitude >= 1'000'000) return fmt::format("{:.3f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.3f} us", static_cast<double>(ns) / 1e3);
}

std::string count_of(std::uint64_t count, std::string_view singular, std::string_view plural) {
  return fmt::format("{} {}", count, count == 1 ? singular : plural);
}

std::string format_frame(std::size_t index, const storage::StackFrame& frame) {
  std::string line = fmt::format("#{} {}", index, frame.function.value_or("??"));
  // The mark of a stack cut short (StackFrame::cut) says it all.
  if (frame.cut != storage::StackCut::kNone) return line;
  if (frame.file) {
    line += fmt::format(" at {}", *frame.file);
    if (frame.line) line += fmt::format(":{}", *frame.line);
  }
  // A Python frame's module is its file, already shown.
  if (frame.language == storage::FrameLanguage::kPython) return line + " (python)";
  const std::string_view module = frame.module.empty() ? std::string_view("??") : frame.module;
  if (frame.function) return line + fmt::format(" ({})", module);
  return line + fmt::format(" ({}+{:#x})", module, frame.rel_pc);
}

}  // namespace vramtrace::text
