#include "cli/oom_command.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <memory>

#include "analysis/roles/training_phases.h"
#include "analysis/scope/process_chains.h"
#include "analysis/values/cuda_errors.h"
#include "analysis/values/live_callsite_tree.h"
#include "cli/advice_output.h"
#include "cli/csv_table.h"
#include "cli/oom_output.h"
#include "cli/stack_json.h"
#include "cli/trace_command.h"
#include "storage/schema.h"
#include "text/text_style.h"

namespace vramtrace::cli {

void register_oom_command(CLI::App& app, int* exit_status) {
  auto top = std::make_shared<std::size_t>(10);
  auto all = std::make_shared<bool>(false);
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
       [report, all](const std::string& path, const storage::TraceReader& trace,
                     const ReportScope& scope) {
         if (*all)
           return oom_report_text(path, report(trace, scope), scope.describe(), scope.stacks);
         return oom_brief_text(path, report(trace, scope), scope.describe());
       },
       [report](const std::string&, const storage::TraceReader& trace, const ReportScope& scope) {
         return oom_report_csv(report(trace, scope));
       },
       [top, all](CLI::App* sub) {
         sub->add_option("--top", *top, "Live stacks listed per OOM, largest first (default 10)")
             ->check(CLI::PositiveNumber);
         sub->add_flag("--all", *all,
                       "Text: every failure in full (whole stacks, every segment of the "
                       "allocator), the failures inside PyTorch's allocator too. By default, "
                       "each failure the program saw on a screen and the others a line each");
       },
       true});
}

}  // namespace vramtrace::cli
