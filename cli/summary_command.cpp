#include "cli/summary_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "analysis/values/cuda_errors.h"
#include "cli/advice_output.h"
#include "cli/backend_report.h"
#include "cli/csv_table.h"
#include "cli/exit_status.h"
#include "cli/output_format.h"
#include "cli/summary_output.h"
#include "cli/trace_command.h"
#include "text/text_style.h"

namespace vramtrace::cli {

namespace {

// `roles`: with the roles at each blocks' peak (the CSV form has no place for them).
analysis::Summary summary_of(const storage::TraceReader& trace, const ReportScope& scope,
                             bool roles = true) {
  analysis::SummaryOptions options;
  options.roles = roles;
  options.processes = scope.processes;
  options.allocations = scope.allocations;
  options.level = scope.level.value_or(analysis::MemoryLevel::kBlock);
  return analysis::build_summary(trace, options);
}

}  // namespace

void register_summary_command(CLI::App& app, int* exit_status) {
  auto all_processes = std::make_shared<bool>(false);
  ReportCommand summary{
      "summary",
      "Summarize a trace: processes, duration, memory by kind, peaks, problems, advice",
      nullptr,
      [all_processes](const std::string& path, const storage::TraceReader& trace,
                      const ReportScope& scope) {
        return summary_text(path, summary_of(trace, scope), scope.describe(), *all_processes);
      },
      [](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
        return summary_csv(summary_of(trace, scope, /*roles=*/false));
      },
      [all_processes](CLI::App* command) {
        command->add_flag(
            "--all-processes", *all_processes,
            "List every process, also those that recorded no GPU memory, and each image a pid "
            "exec'd (by default they are summed up in one line; a process filter lists what it "
            "matches)");
      }};
  summary.json_members = [](const std::string& path, const storage::TraceReader& trace,
                            const ReportScope& scope, JsonObjectWriter& writer) {
    write_summary_json(path, summary_of(trace, scope), writer);
  };
  register_report_command(app, exit_status, std::move(summary));
}

}  // namespace vramtrace::cli
