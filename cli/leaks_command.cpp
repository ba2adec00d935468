#include "cli/leaks_command.h"

#include <fmt/core.h>

#include <memory>

#include "cli/exit_status.h"
#include "cli/output_format.h"
#include "cli/text_style.h"
#include "cli/trace_command.h"

namespace vramtrace::cli {

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

Json frame_json(const storage::StackFrame& frame) {
  return {
      {"function", frame.function.value_or("??")},
      {"file", frame.file ? Json(*frame.file) : Json(nullptr)},
      {"line", frame.line ? Json(*frame.line) : Json(nullptr)},
      {"module", frame.module},
  };
}

}  // namespace

Json leak_report_json(const std::string& trace_path, const analysis::LeakReport& report) {
  Json leaks = Json::array();
  for (const analysis::LeakGroup& group : report.groups) {
    Json stack = Json::array();
    for (const storage::StackFrame& frame : group.stack) stack.push_back(frame_json(frame));
    leaks.push_back({
        {"kind", group.kind_name},
        {"bytes", group.bytes},
        {"count", group.count},
        {"stack", std::move(stack)},
    });
  }
  return {
      {"trace", trace_path},
      {"total_bytes", report.total_bytes},
      {"total_count", report.total_count},
      {"leaks", std::move(leaks)},
      {"incomplete", !report.trace_complete},
      {"warnings", report.warnings},
  };
}

std::string leak_report_text(const std::string& trace_path, const analysis::LeakReport& report,
                             const std::string& scope) {
  std::string text;
  for (const std::string& warning : report.warnings) text += fmt::format("warning: {}\n", warning);
  const std::string where = scope.empty() ? trace_path : trace_path + ", " + scope;
  if (report.groups.empty()) {
    return text +
           fmt::format("vramtrace: no leaks in {}: every successful allocation was freed\n", where);
  }
  text += fmt::format("vramtrace: {} leaked in {} from {} in {}\n",
                      format_bytes_exact(report.total_bytes),
                      count_of(report.total_count, "allocation", "allocations"),
                      count_of(report.groups.size(), "stack", "stacks"), where);
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

namespace {

analysis::LeakReport leak_report(const storage::TraceReader& trace, const ReportScope& scope) {
  analysis::LeakReportOptions options;
  options.processes = scope.processes;
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
       }});
}

}  // namespace vramtrace::cli
