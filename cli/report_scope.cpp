#include "cli/report_scope.h"

#include <fmt/core.h>

#include "cli/trace_command.h"

namespace vramtrace::cli {

std::string ReportScope::describe() const {
  if (filter.empty()) return {};
  return fmt::format("only processes matching {} ({} of {})", filter.describe(),
                     processes ? processes->size() : processes_in_trace, processes_in_trace);
}

void add_process_filter_options(CLI::App* command, analysis::ProcessFilter* filter) {
  constexpr const char* kGroup = "Which processes (given together, all must match)";
  command->add_option("--pid", filter->pid, "Only processes with this pid, on any host")
      ->group(kGroup);
  command
      ->add_option("--rank", filter->rank,
                   "Only processes of this rank in a distributed job (as RANK or SLURM_PROCID "
                   "gave it)")
      ->group(kGroup);
  command->add_option("--host", filter->host, "Only processes on this host")->group(kGroup);
  command
      ->add_option("--backend", filter->backend,
                   "Only what this backend recorded, in a trace of `run --backend both`")
      ->check(CLI::IsMember({"preload", "cupti"}))
      ->group(kGroup);
}

ReportScope resolve_scope(const storage::TraceReader& trace, const std::string& trace_path,
                          const analysis::ProcessFilter& filter) {
  ReportScope scope;
  scope.filter = filter;
  scope.processes_in_trace = trace.processes().size();
  scope.processes = analysis::select_processes(trace, filter);
  if (scope.processes && scope.processes->empty()) {
    throw ReportRefusal(fmt::format("no process matches {} in {}", filter.describe(), trace_path));
  }
  return scope;
}

void add_filters_json(nlohmann::ordered_json* document, const ReportScope& scope) {
  if (scope.filter.empty()) return;
  nlohmann::ordered_json filters = nlohmann::ordered_json::object();
  if (scope.filter.pid) filters["pid"] = *scope.filter.pid;
  if (scope.filter.rank) filters["rank"] = *scope.filter.rank;
  if (scope.filter.host) filters["host"] = *scope.filter.host;
  if (scope.filter.backend) filters["backend"] = *scope.filter.backend;
  filters["upids"] = scope.processes ? *scope.processes : std::set<std::int64_t>{};
  (*document)["filters"] = std::move(filters);
}

}  // namespace vramtrace::cli
