#include "cli/oom_command.h"

#include <fmt/core.h>

#include <memory>

#include "analysis/cuda_errors.h"
#include "cli/advice_output.h"
#include "cli/csv_table.h"
#include "cli/stack_json.h"
#include "cli/trace_command.h"
#include "storage/schema.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;
using text::format_seconds;
using text::format_stack;

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

// The error as the failing API names it: the runtime's cudaError_t, the driver's CUresult, or
// PyTorch's allocator, which returns no code of its own.
std::string error_name(const analysis::OomRecord& oom) {
  if (oom.api == storage::api::kC10ReportOutOfMemory) return "out of memory (PyTorch's allocator)";
  const bool driver = oom.api_name.starts_with("cu") && !oom.api_name.starts_with("cuda");
  if (driver && oom.result == analysis::kOutOfMemoryResult) return "CUDA_ERROR_OUT_OF_MEMORY (2)";
  const auto name = analysis::cuda_error_name(oom.result);
  return fmt::format("{} ({})", name ? std::string(*name) : "error", oom.result);
}

Json allocator_json(const analysis::AllocatorAtOom& a) {
  Json segments = Json::array();
  for (const analysis::SegmentAtOom& s : a.segments) {
    segments.push_back({{"address", s.address},
                        {"size", s.size},
                        {"blocks", s.blocks},
                        {"free_gaps", s.free_gaps},
                        {"expandable", s.expandable}});
  }
  return {
      {"allocated", a.allocated ? Json(*a.allocated) : Json(nullptr)},
      {"reserved", a.reserved ? Json(*a.reserved) : Json(nullptr)},
      {"live_block_bytes", a.live_block_bytes},
      {"segment_bytes", a.segment_bytes},
      {"cached_bytes", a.cached_bytes},
      {"releasable_bytes", a.releasable_bytes},
      {"largest_free_gap", a.largest_free_gap},
      {"total_free", a.total_free},
      {"external_fragmentation", a.external_fragmentation},
      {"segments", std::move(segments)},
  };
}

std::string allocator_text(const analysis::AllocatorAtOom& a) {
  const auto total = [](const std::optional<std::uint64_t>& v) {
    return v ? format_bytes(*v) : std::string("unknown");
  };
  std::string text = fmt::format(
      "  allocator: allocated {}, reserved {} (its own totals)\n"
      "    live blocks {}, segments {} in {}, cached {} ({} in segments with no live block)\n",
      total(a.allocated), total(a.reserved), format_bytes(a.live_block_bytes),
      format_bytes(a.segment_bytes), count_of(a.segments.size(), "segment", "segments"),
      format_bytes(a.cached_bytes), format_bytes(a.releasable_bytes));
  if (a.total_free != 0) {
    text += fmt::format("    largest free gap {} of {} free (external fragmentation {:.2f})\n",
                        format_bytes(a.largest_free_gap), format_bytes(a.total_free),
                        a.external_fragmentation);
  }
  for (const analysis::SegmentAtOom& s : a.segments) {
    std::string gaps;
    for (const std::uint64_t gap : s.free_gaps)
      gaps += (gaps.empty() ? "" : ", ") + format_bytes(gap);
    text += fmt::format("    segment 0x{:x} {}{}: {}, free gaps: {}\n", s.address,
                        format_bytes(s.size), s.expandable ? " (expandable)" : "",
                        count_of(s.blocks, "block", "blocks"), gaps.empty() ? "none" : gaps);
  }
  return text;
}

std::string oom_text(const analysis::OomRecord& oom, std::size_t index, std::size_t total,
                     text::StackView stacks) {
  std::string text =
      fmt::format("\nOOM {} of {}: pid {}{} at +{} (seq {}), device {}\n", index + 1, total,
                  oom.pid, oom.tid ? fmt::format(" tid {}", *oom.tid) : "",
                  format_seconds(oom.time_ns - oom.time_origin_ns), oom.seq, oom.device);
  text += fmt::format("  {} ({}) of {} failed: {}\n", oom.api_name, oom.kind_name,
                      format_bytes_exact(oom.requested_bytes), error_name(oom));
  text += oom.stack.empty() ? "  (no stack recorded)\n" : "  requested from:\n";
  text += format_stack(oom.stack, stacks, "    ");

  std::string kinds;
  for (const auto& [kind, bytes] : oom.live.bytes_by_kind)
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", kind, format_bytes(bytes));
  text += fmt::format("  live then{}: {} in {}{}\n",
                      oom.allocator ? " (beside the allocator's segments)" : "",
                      format_bytes_exact(oom.live.total_bytes),
                      count_of(oom.live.total_count, "allocation", "allocations"),
                      kinds.empty() ? "" : " (" + kinds + ")");
  for (const analysis::LiveGroup& group : oom.live.top) {
    text += fmt::format(
        "    {} in {}{}\n", format_bytes_exact(group.bytes),
        count_of(group.count, group.kind_name + " allocation", group.kind_name + " allocations"),
        group.stack.empty() ? " (no stack recorded)" : " from:");
    text += format_stack(group.stack, stacks, "        ");
  }
  if (oom.live.groups > oom.live.top.size())
    text +=
        fmt::format("    ... and {} more stacks (--top)\n", oom.live.groups - oom.live.top.size());
  text += oom.allocator ? allocator_text(*oom.allocator)
                        : "  no allocator events: segment level only\n";
  if (!oom.advice.empty()) text += "  advice:\n";
  text += advice_text(oom.advice, "    ");
  return text;
}

}  // namespace

Json oom_report_json(const std::string& trace_path, const std::vector<analysis::OomRecord>& ooms) {
  Json records = Json::array();
  for (const analysis::OomRecord& oom : ooms) {
    Json top = Json::array();
    for (const analysis::LiveGroup& group : oom.live.top) {
      top.push_back({{"kind", group.kind_name},
                     {"bytes", group.bytes},
                     {"count", group.count},
                     {"stack", stack_json(group.stack)}});
    }
    records.push_back({
        {"upid", oom.upid},
        {"pid", oom.pid},
        {"tid", oom.tid ? Json(*oom.tid) : Json(nullptr)},
        {"time_ns", oom.time_ns},
        {"seq", oom.seq},
        {"device", oom.device},
        {"api", oom.api_name},
        {"kind", oom.kind_name},
        {"requested_bytes", oom.requested_bytes},
        {"result", oom.result},
        {"stack", stack_json(oom.stack)},
        {"live",
         {{"total_bytes", oom.live.total_bytes},
          {"total_count", oom.live.total_count},
          {"by_kind", oom.live.bytes_by_kind},
          {"top", std::move(top)}}},
        {"allocator", oom.allocator ? allocator_json(*oom.allocator) : Json(nullptr)},
        {"advice", advice_json(oom.advice)},
    });
  }
  return {{"trace", trace_path}, {"ooms", std::move(records)}};
}

std::string oom_report_text(const std::string& trace_path,
                            const std::vector<analysis::OomRecord>& ooms, const std::string& scope,
                            text::StackView stacks) {
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  if (ooms.empty()) return fmt::format("vramtrace: no out-of-memory in {}\n", where);
  std::string text =
      fmt::format("vramtrace: {} in {}\n",
                  count_of(ooms.size(), "out-of-memory failure", "out-of-memory failures"), where);
  for (std::size_t i = 0; i < ooms.size(); ++i) text += oom_text(ooms[i], i, ooms.size(), stacks);
  return text;
}

std::string oom_report_csv(const std::vector<analysis::OomRecord>& ooms) {
  CsvTable table({"upid", "pid", "seq", "time_ns", "device", "api", "kind", "requested_bytes",
                  "result", "live_bytes", "live_count", "function", "file", "line", "advice"});
  for (const analysis::OomRecord& oom : ooms) {
    std::vector<std::string> fields{csv_number(oom.upid),
                                    csv_number(oom.pid),
                                    csv_number(oom.seq),
                                    csv_number(oom.time_ns),
                                    csv_number(oom.device),
                                    oom.api_name,
                                    oom.kind_name,
                                    csv_number(oom.requested_bytes),
                                    csv_number(oom.result),
                                    csv_number(oom.live.total_bytes),
                                    csv_number(oom.live.total_count)};
    for (std::string& field : csv_frame_fields(oom.stack)) fields.push_back(std::move(field));
    std::string ids;
    for (const analysis::Advice& advice : oom.advice) ids += (ids.empty() ? "" : ";") + advice.id;
    fields.push_back(ids);
    table.row(fields);
  }
  return table.text();
}

void register_oom_command(CLI::App& app, int* exit_status) {
  auto top = std::make_shared<std::size_t>(10);
  const auto report = [top](const storage::TraceReader& trace, const ReportScope& scope) {
    analysis::OomReportOptions options;
    options.processes = scope.processes;
    options.top = *top;
    options.allocations = scope.allocations;
    options.level = scope.level.value_or(analysis::MemoryLevel::kBlock);
    return analysis::build_oom_report(trace, options);
  };
  register_report_command(
      app, exit_status,
      {"oom",
       "Explain every out-of-memory failure: the request, what was live then by stack, the "
       "allocator's cache and fragmentation, and advice",
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) { return oom_report_json(path, report(trace, scope)); },
       [report](const std::string& path, const storage::TraceReader& trace,
                const ReportScope& scope) {
         return oom_report_text(path, report(trace, scope), scope.describe(), scope.stacks);
       },
       [report](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return oom_report_csv(report(trace, scope));
       },
       [top](CLI::App* sub) {
         sub->add_option("--top", *top, "Live stacks listed per OOM, largest first (default 10)")
             ->check(CLI::PositiveNumber);
       },
       true});
}

}  // namespace vramtrace::cli
