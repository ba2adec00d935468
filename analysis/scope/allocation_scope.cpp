#include "analysis/scope/allocation_scope.h"

namespace vramtrace::analysis {

std::string_view level_name(MemoryLevel level) {
  return level == MemoryLevel::kBlock ? "block" : "segment";
}

std::optional<int> find_kind(const storage::TraceReader& trace, std::string_view name) {
  // Kind ids are small and dense (storage/schema.h); an unnamed id reads back as "kind_<id>".
  constexpr int kKindsToTry = 64;
  for (int kind = 0; kind < kKindsToTry; ++kind)
    if (trace.kind_name(kind) == name) return kind;
  return std::nullopt;
}

}  // namespace vramtrace::analysis
