#include "analysis/trace_warnings.h"

namespace vramtrace::analysis {

std::vector<std::string> trace_warnings(const storage::TraceReader& trace,
                                        const ProcessSelection& processes) {
  std::vector<std::string> warnings;
  if (!trace.complete()) {
    warnings.push_back(
        "the trace is incomplete: the collector has not finished (still running, or stopped "
        "early); memory freed after the last recorded event shows as live");
  }
  for (const std::string& field : trace.damaged_fields())
    warnings.push_back("the trace is damaged: " + field);
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (!process.end.complete && is_selected(processes, process.start.upid)) {
      // A merged trace holds several hosts, whose pids can be the same.
      const std::string on_host =
          process.start.host.empty() ? std::string() : " on " + process.start.host;
      warnings.push_back("process " + std::to_string(process.start.pid) + on_host + " (" +
                         process.start.exe +
                         ") was not recorded to its end; its last events may be missing");
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
    warnings.push_back(std::string(storage::severity_name(stat.severity)) + ": " + stat.name +
                       " = " + std::to_string(stat.value) + " (" + stat.description + ")");
  }
  return warnings;
}

}  // namespace vramtrace::analysis
