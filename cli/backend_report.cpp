#include "cli/backend_report.h"

#include <fmt/core.h>

#include "text/text_style.h"

namespace vramtrace::cli {

using text::format_bytes;
using Json = nlohmann::ordered_json;

std::string backend_comparison_text(const analysis::BackendComparison& comparison) {
  if (!comparison.both) return {};
  std::string text =
      "\nbackends (run --backend both: the LD_PRELOAD shim and CUPTI, successful "
      "allocations):\n";
  text += fmt::format("  {:<15} {:>11} {:>12} {:>11} {:>12}\n", "kind", "preload", "bytes", "cupti",
                      "bytes");
  for (const analysis::BackendKindTotals& k : comparison.kinds) {
    text += fmt::format("  {:<15} {:>11} {:>12} {:>11} {:>12}\n", k.name, k.preload_allocations,
                        format_bytes(k.preload_bytes), k.cupti_allocations,
                        format_bytes(k.cupti_bytes));
  }
  if (comparison.only_preload == 0 && comparison.only_cupti == 0) {
    text += "  every allocation was seen by both\n";
    return text;
  }
  text += fmt::format("  seen only by the shim: {}; seen only by CUPTI: {}\n",
                      comparison.only_preload, comparison.only_cupti);
  for (const analysis::UnmatchedAllocation& u : comparison.unmatched) {
    text += fmt::format("    only {}: pid {} {} {} of {} at {:#x} (allocation {})\n", u.seen_by,
                        u.pid, u.kind, u.api, format_bytes(u.size), u.address, u.allocation_id);
  }
  const std::uint64_t shown = comparison.unmatched.size();
  if (comparison.only_preload + comparison.only_cupti > shown)
    text += fmt::format("    ... and {} more\n",
                        comparison.only_preload + comparison.only_cupti - shown);
  return text;
}

nlohmann::ordered_json backend_comparison_json(const analysis::BackendComparison& comparison) {
  if (!comparison.both) return nullptr;
  Json kinds = Json::array();
  for (const analysis::BackendKindTotals& k : comparison.kinds) {
    kinds.push_back({{"kind", k.name},
                     {"kind_id", k.kind},
                     {"preload_allocations", k.preload_allocations},
                     {"preload_bytes", k.preload_bytes},
                     {"cupti_allocations", k.cupti_allocations},
                     {"cupti_bytes", k.cupti_bytes}});
  }
  Json unmatched = Json::array();
  for (const analysis::UnmatchedAllocation& u : comparison.unmatched) {
    unmatched.push_back({{"seen_by", u.seen_by},
                         {"pid", u.pid},
                         {"allocation_id", u.allocation_id},
                         {"kind", u.kind},
                         {"api", u.api},
                         {"address", u.address},
                         {"size", u.size}});
  }
  return {{"kinds", std::move(kinds)},
          {"only_preload", comparison.only_preload},
          {"only_cupti", comparison.only_cupti},
          {"unmatched", std::move(unmatched)}};
}

}  // namespace vramtrace::cli
