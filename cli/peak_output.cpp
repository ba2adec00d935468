#include "cli/peak_output.h"

#include <fmt/core.h>

#include "cli/csv_table.h"
#include "cli/stack_json.h"
#include "cli/time_query.h"
#include "storage/live_bytes_rollups.h"
#include "text/stack_folding.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;
using text::format_seconds;

namespace {

using Json = nlohmann::ordered_json;

// Nodes holding less than this share of the peak are folded, so a tree stays readable.
constexpr double kFoldBelow = 0.01;

Json tree_json(const std::vector<analysis::CallsiteNode>& nodes) {
  Json out = Json::array();
  for (const analysis::CallsiteNode& node : nodes) {
    out.push_back(
        {{"frame", node.frame.function || !node.frame.module.empty() ? frame_json(node.frame)
                                                                     : Json(nullptr)},
         {"bytes", node.bytes},
         {"count", node.count},
         {"children", tree_json(node.children)}});
  }
  return out;
}

std::string place(const storage::StackFrame& frame) {
  if (!frame.function && frame.module.empty()) return "(no stack recorded)";
  std::string text = frame.function.value_or("??");
  if (frame.file) {
    text += fmt::format(" at {}", *frame.file);
    if (frame.line) text += fmt::format(":{}", *frame.line);
  }
  if (!frame.function) text += fmt::format(" ({}+{:#x})", frame.module, frame.rel_pc);
  return text;
}

void tree_text(const std::vector<analysis::CallsiteNode>& nodes, std::uint64_t total, int depth,
               std::string* text) {
  std::uint64_t folded_bytes = 0, folded = 0;
  for (const analysis::CallsiteNode& node : nodes) {
    const double share =
        total == 0 ? 0 : static_cast<double>(node.bytes) / static_cast<double>(total);
    if (share < kFoldBelow) {
      folded_bytes += node.bytes;
      folded += 1;
      continue;
    }
    *text += fmt::format("    {:>10} {:>5.1f}% {:>6}  {:{}}{}\n", format_bytes(node.bytes),
                         share * 100, node.count, "", depth * 2, place(node.frame));
    tree_text(node.children, total, depth + 1, text);
  }
  if (folded != 0) {
    *text +=
        fmt::format("    {:>10} {:>5.1f}% {:>6}  {:{}}({} under 1%)\n", format_bytes(folded_bytes),
                    100.0 * static_cast<double>(folded_bytes) / static_cast<double>(total), "", "",
                    depth * 2, count_of(folded, "more frame", "more frames"));
  }
}

std::string group_text(const std::string& group) {
  return group == storage::kPeakGroupBlocks ? "allocator blocks (tensors)" : "device memory in use";
}

}  // namespace

Json peak_report_json(const std::string& trace_path,
                      const std::vector<analysis::DevicePeakAt>& peaks) {
  Json out = Json::array();
  for (const analysis::DevicePeakAt& peak : peaks) {
    out.push_back({{"upid", peak.upid},
                   {"pid", peak.pid},
                   {"device", peak.device},
                   {"level", peak.group},
                   {"bytes", peak.bytes},
                   {"seq", peak.seq},
                   {"time_ns", peak.time_ns},
                   {"live_count", peak.live_count},
                   {"top_down", tree_json(peak.top_down)},
                   {"bottom_up", tree_json(peak.bottom_up)}});
  }
  return {{"trace", trace_path}, {"peaks", std::move(out)}};
}

std::string peak_report_text(const std::string& trace_path,
                             const std::vector<analysis::DevicePeakAt>& peaks,
                             const std::string& scope) {
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  if (peaks.empty()) return fmt::format("vramtrace: no device memory was in use in {}\n", where);
  std::string text = fmt::format("vramtrace: peaks in {}\n", where);
  for (const analysis::DevicePeakAt& peak : peaks) {
    text += fmt::format("\npid {} device {}, {}: peak {} at seq {} (+{}), {} live\n", peak.pid,
                        peak.device, group_text(peak.group), format_bytes_exact(peak.bytes),
                        peak.seq, format_seconds(peak.since_start_ns),
                        count_of(peak.live_count, "allocation", "allocations"));
    text += fmt::format("  top-down (callers first):\n    {:>10} {:>6} {:>6}  frame\n", "bytes",
                        "share", "count");
    tree_text(peak.top_down, peak.bytes, 0, &text);
    text += fmt::format("  bottom-up (allocating frames first):\n    {:>10} {:>6} {:>6}  frame\n",
                        "bytes", "share", "count");
    tree_text(peak.bottom_up, peak.bytes, 0, &text);
  }
  return text;
}

// One row per peak and allocating frame (the bottom-up tree's first level): what was live at
// each peak, by the innermost frame that made it.
std::string peak_report_csv(const std::vector<analysis::DevicePeakAt>& peaks) {
  CsvTable table({"upid", "pid", "device", "level", "peak_bytes", "seq", "time_ns", "function",
                  "file", "line", "bytes", "count"});
  for (const analysis::DevicePeakAt& peak : peaks) {
    for (const analysis::CallsiteNode& node : peak.bottom_up) {
      const storage::StackFrame& frame = node.frame;
      table.row({csv_number(peak.upid), csv_number(peak.pid), csv_number(peak.device), peak.group,
                 csv_number(peak.bytes), csv_number(peak.seq), csv_number(peak.time_ns),
                 frame.function.value_or(""), frame.file.value_or(""),
                 frame.line ? csv_number(*frame.line) : std::string(), csv_number(node.bytes),
                 csv_number(node.count)});
    }
  }
  return table.text();
}

}  // namespace vramtrace::cli
