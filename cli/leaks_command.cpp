#include "cli/leaks_command.h"

#include <fmt/core.h>

#include <map>
#include <memory>
#include <optional>

#include "cli/csv_table.h"
#include "cli/exit_status.h"
#include "cli/output_format.h"
#include "cli/stack_json.h"
#include "cli/text_style.h"
#include "cli/trace_command.h"

namespace vramtrace::cli {

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

Json leak_report_json(const std::string& trace_path, const analysis::LeakReport& report) {
  Json leaks = Json::array();
  for (const analysis::LeakGroup& group : report.groups) {
    Json stack = stack_json(group.stack);
    leaks.push_back({
        {"kind", group.kind_name},
        {"bytes", group.bytes},
        {"count", group.count},
        {"stack", std::move(stack)},
        {"level", group.level},
    });
  }
  return {
      {"trace", trace_path},
      {"total_bytes", report.total_bytes},
      {"total_count", report.total_count},
      {"leaks", std::move(leaks)},
      {"level", report.level},
      {"allocator_events", report.allocator_events},
      {"cached", {{"bytes", report.cached.bytes}, {"count", report.cached.count}}},
      {"incomplete", !report.trace_complete},
      {"warnings", report.warnings},
  };
}

std::string leak_report_text(const std::string& trace_path, const analysis::LeakReport& report,
                             const std::string& scope) {
  std::string text;
  for (const std::string& warning : report.warnings) text += fmt::format("warning: {}\n", warning);
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  std::string cache;
  if (report.level == "block" && report.cached.count != 0) {
    cache = fmt::format("cached by the allocator (not leaks): {} in {}\n",
                        format_bytes_exact(report.cached.bytes),
                        count_of(report.cached.count, "segment", "segments"));
  } else if (report.level == "segment" && !report.allocator_events) {
    cache = "no allocator events: reported at the segment level only\n";
  }
  if (report.groups.empty()) {
    return text +
           fmt::format(
               "vramtrace: no leaks in {} ({} level): every successful allocation was "
               "freed\n",
               where, report.level) +
           cache;
  }
  text += fmt::format("vramtrace: {} leaked in {} from {} in {} ({} level)\n",
                      format_bytes_exact(report.total_bytes),
                      count_of(report.total_count, "allocation", "allocations"),
                      count_of(report.groups.size(), "stack", "stacks"), where, report.level);
  text += cache;
  for (const analysis::LeakGroup& group : report.groups) {
    text += fmt::format(
        "\n{} in {}", format_bytes_exact(group.bytes),
        count_of(group.count, group.kind_name + " allocation", group.kind_name + " allocations"));
    text += group.stack.empty() ? " (no stack recorded)\n" : " from:\n";
    for (std::size_t i = 0; i < group.stack.size(); ++i) {
      text += fmt::format("    {}\n", format_frame(i, group.stack[i]));
    }
  }
  return text;
}

std::string leak_report_csv(const analysis::LeakReport& report) {
  CsvTable table({"kind", "level", "bytes", "count", "function", "file", "line", "stack"});
  for (const analysis::LeakGroup& group : report.groups) {
    std::vector<std::string> fields{group.kind_name, group.level, csv_number(group.bytes),
                                    csv_number(group.count)};
    for (std::string& field : csv_frame_fields(group.stack)) fields.push_back(std::move(field));
    fields.push_back(csv_stack(group.stack));
    table.row(fields);
  }
  return table.text();
}

namespace {

analysis::LeakReport leak_report(const storage::TraceReader& trace, const ReportScope& scope) {
  analysis::LeakReportOptions options;
  options.processes = scope.processes;
  options.level = scope.level;
  options.allocations = scope.allocations;
  return analysis::build_leak_report(trace, options);
}

}  // namespace

void register_leaks_command(CLI::App& app, int* exit_status) {
  register_report_command(
      app, exit_status,
      {"leaks", "Report memory never freed, grouped by allocation stack and kind, largest first",
       [](const std::string& path, const storage::TraceReader& trace, const ReportScope& scope) {
         return leak_report_json(path, leak_report(trace, scope));
       },
       [](const std::string& path, const storage::TraceReader& trace, const ReportScope& scope) {
         return leak_report_text(path, leak_report(trace, scope), scope.describe());
       },
       [](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return leak_report_csv(leak_report(trace, scope));
       }});
}

}  // namespace vramtrace::cli
