#include "storage/trace_rows.h"

namespace vramtrace::storage {

std::string_view severity_name(Severity severity) {
  switch (severity) {
    case Severity::kInfo:
      return "info";
    case Severity::kDataLoss:
      return "data_loss";
    case Severity::kError:
      return "error";
  }
  return "error";
}

std::optional<Severity> parse_severity(std::string_view name) {
  for (const Severity severity : {Severity::kInfo, Severity::kDataLoss, Severity::kError}) {
    if (severity_name(severity) == name) return severity;
  }
  return std::nullopt;
}

std::string_view frame_language_name(FrameLanguage language) {
  return language == FrameLanguage::kPython ? "python" : "native";
}

FrameLanguage frame_language_from_name(std::string_view name) {
  return name == "python" ? FrameLanguage::kPython : FrameLanguage::kNative;
}

}  // namespace vramtrace::storage
