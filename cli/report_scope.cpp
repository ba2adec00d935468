#include "cli/report_scope.h"

#include <fmt/core.h>

#include <map>

#include "cli/trace_command.h"

namespace vramtrace::cli {

std::string ReportScope::describe() const {
  std::string text;
  const auto add = [&](const std::string& part) { text += (text.empty() ? "" : "; ") + part; };
  if (!filter.empty()) {
    add(fmt::format("only processes matching {} ({} of {})", filter.describe(),
                    processes ? processes->size() : processes_in_trace, processes_in_trace));
  }
  if (allocations.device) add(fmt::format("only device {}", *allocations.device));
  if (kind_name) add(fmt::format("only kind {}", *kind_name));
  return text;
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

void add_report_options(CLI::App* command, ReportOptions* options) {
  add_format_option(command, &options->format);
  add_scope_options(command, options);
}

void add_stack_view_option(CLI::App* command, ReportOptions* options) {
  command->add_flag("--native", options->native,
                    "Show every frame of a stack. By default, where a stack has Python frames, "
                    "each run of interpreter, binding and framework (libtorch, libc10) frames "
                    "between the lines a person reads is folded into one line naming its "
                    "libraries and operator");
}

void add_scope_options(CLI::App* command, ReportOptions* options) {
  add_process_filter_options(command, &options->processes);
  constexpr const char* kGroup = "Which allocations";
  command
      ->add_option("--device", options->device,
                   "Only allocations on this device ordinal (pinned host memory is recorded "
                   "on the device that was current)")
      ->check(CLI::NonNegativeNumber)
      ->group(kGroup);
  command
      ->add_option("--kind", options->kind,
                   "Only allocations of this kind: device, managed, host_pinned, async, "
                   "vmm_reservation, vmm_handle, vmm_mapping, block")
      ->group(kGroup);
  static const std::map<std::string, analysis::MemoryLevel> kLevels{
      {"block", analysis::MemoryLevel::kBlock}, {"segment", analysis::MemoryLevel::kSegment}};
  command
      ->add_option_function<std::string>(
          "--level", [options](const std::string& name) { options->level = kLevels.at(name); },
          "block: a caching allocator's live blocks (tensors) count and its segments are "
          "cache; segment: blocks are left out and every other allocation counts. Default: "
          "block, which is the segment level in a process without allocator events")
      ->check(CLI::IsMember({"block", "segment"}).description(""))
      ->type_name("block|segment")
      ->group(kGroup);
}

ReportScope resolve_scope(const storage::TraceReader& trace, const std::string& trace_path,
                          const ReportOptions& options) {
  ReportScope scope = resolve_scope(trace, trace_path, options.processes);
  scope.allocations.device = options.device;
  scope.level = options.level;
  if (options.native) scope.stacks = text::StackView::kNative;
  if (options.kind) {
    scope.allocations.kind = analysis::find_kind(trace, *options.kind);
    if (!scope.allocations.kind) {
      throw ReportRefusal(fmt::format(
          "{} names no allocation kind '{}' (kinds: device, managed, host_pinned, async, "
          "vmm_reservation, vmm_handle, vmm_mapping, block)",
          trace_path, *options.kind));
    }
    scope.kind_name = options.kind;
  }
  return scope;
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
  if (std::optional<nlohmann::ordered_json> filters = filters_json(scope))
    (*document)["filters"] = std::move(*filters);
}

std::optional<nlohmann::ordered_json> filters_json(const ReportScope& scope) {
  if (scope.filter.empty() && scope.allocations.empty()) return std::nullopt;
  nlohmann::ordered_json filters = nlohmann::ordered_json::object();
  if (scope.filter.pid) filters["pid"] = *scope.filter.pid;
  if (scope.filter.rank) filters["rank"] = *scope.filter.rank;
  if (scope.filter.host) filters["host"] = *scope.filter.host;
  if (scope.allocations.device) filters["device"] = *scope.allocations.device;
  if (scope.kind_name) filters["kind"] = *scope.kind_name;
  if (scope.filter.backend) filters["backend"] = *scope.filter.backend;
  if (!scope.filter.empty())
    filters["upids"] = scope.processes ? *scope.processes : std::set<std::int64_t>{};
  return filters;
}

}  // namespace vramtrace::cli
