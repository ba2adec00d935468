#include "analysis/reports/trace_warnings.h"

#include <map>
#include <memory>

#include "analysis/time/report_time_index.h"

namespace vramtrace::analysis {
namespace {

// "process 4242 on node1 (/usr/bin/leaky)"
std::string process_name(const storage::ProcessRecord& process) {
  // A merged trace holds several hosts, whose pids can be the same.
  const std::string on_host =
      process.start.host.empty() ? std::string() : " on " + process.start.host;
  return "process " + std::to_string(process.start.pid) + on_host + " (" + process.start.exe + ")";
}

// The index's time problems, from `index` or the one the trace keeps; none where neither is.
std::vector<storage::TimeProblem> time_problems(const storage::TraceReader& trace,
                                                const storage::TimeIndex* index) {
  if (index != nullptr) return index->time_problems();
  try {
    const std::unique_ptr<storage::TimeIndex> kept = open_time_index_if_kept(trace);
    if (kept) return kept->time_problems();
  } catch (const storage::TraceError&) {
    // A trace that cannot be indexed says so in the reports that need the index.
  }
  return {};
}

constexpr std::string_view kIncompleteTrace =
    "the trace is incomplete: the collector has not finished (still running, or stopped early); "
    "memory freed after the last recorded event shows as live";

std::string not_recorded_to_its_end(const storage::ProcessRecord& process) {
  return process_name(process) + " was not recorded to its end; its last events may be missing";
}

std::string stat_warning(const storage::StatRecord& stat) {
  return std::string(storage::severity_name(stat.severity)) + ": " + stat.name + " = " +
         std::to_string(stat.value) + " (" + stat.description + ")";
}

// Data-loss stats that lose a stack's frames or names, never an event: the allocations and
// frees are all there, and so every leak, peak and growth; only where they came from is not.
bool loses_only_stacks(std::string_view stat) {
  return stat == "process_without_unwinder" || stat == "python_code_unknown" ||
         stat == "stack_name_unknown";
}

}  // namespace

std::vector<std::string> recording_gaps(const storage::TraceReader& trace,
                                        const ProcessSelection& processes) {
  std::vector<std::string> gaps;
  if (!trace.complete()) gaps.emplace_back(kIncompleteTrace);
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (is_selected(processes, process.start.upid) && !process.end.complete)
      gaps.push_back(not_recorded_to_its_end(process));
  }
  for (const storage::StatRecord& stat : trace.stats()) {
    if (stat.severity == storage::Severity::kDataLoss && stat.value != 0 &&
        !loses_only_stacks(stat.name))
      gaps.push_back(stat_warning(stat));
  }
  return gaps;
}

std::string time_problem_warning(const storage::ProcessRecord& process,
                                 const storage::TimeProblem& problem) {
  const bool one = problem.events == 1;
  std::string what, taken;
  if (problem.problem == storage::kTimeBeforeProcessStart) {
    what = "timed before the process started";
    taken = "reports over time take " + std::string(one ? "it" : "them") + " as at its start";
  } else if (problem.problem == storage::kTimeAfterProcessEnd) {
    what = "timed after the process ended";
    taken = "reports over time take " + std::string(one ? "it" : "them") + " as at its end";
  } else {
    what = std::string("timed earlier than the event before ") + (one ? "it" : "them");
    taken =
        "a moment given as a time can fall on either side of " + std::string(one ? "it" : "them");
  }
  return process_name(process) + ": " + std::to_string(problem.events) +
         (one ? " event " : " events ") + what + " (time_problem " + problem.problem +
         ", the first at seq " + std::to_string(problem.first_seq) + "); " + taken;
}

std::vector<std::string> trace_warnings(const storage::TraceReader& trace,
                                        const ProcessSelection& processes,
                                        const storage::TimeIndex* index) {
  std::vector<std::string> warnings;
  if (!trace.complete()) warnings.emplace_back(kIncompleteTrace);
  for (const std::string& field : trace.damaged_fields())
    warnings.push_back("the trace is damaged: " + field);
  std::map<std::int64_t, std::vector<storage::TimeProblem>> problems;  // by upid
  for (storage::TimeProblem& problem : time_problems(trace, index))
    problems[problem.upid].push_back(std::move(problem));
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (!is_selected(processes, process.start.upid)) continue;
    if (!process.end.complete) warnings.push_back(not_recorded_to_its_end(process));
    if (const auto found = problems.find(process.start.upid); found != problems.end()) {
      for (const storage::TimeProblem& problem : found->second)
        warnings.push_back(time_problem_warning(process, problem));
    }
  }
  bool preload = false, cupti = false;
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (!is_selected(processes, process.start.upid)) continue;
    preload |= process.start.backend == storage::kBackendPreload;
    cupti |= process.start.backend == storage::kBackendCupti;
  }
  if (preload && cupti) {
    warnings.push_back(
        "the trace holds both the shim's and CUPTI's records of the same processes (run "
        "--backend both): every count here includes both; pass --backend preload or --backend "
        "cupti to report one");
  }
  for (const storage::StatRecord& stat : trace.stats()) {
    if (stat.severity == storage::Severity::kInfo || stat.value == 0) continue;
    warnings.push_back(stat_warning(stat));
  }
  return warnings;
}

}  // namespace vramtrace::analysis
