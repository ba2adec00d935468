#include "analysis/scope/process_filter.h"

namespace vramtrace::analysis {

bool ProcessFilter::empty() const {
  return !pid && !rank && !host && !backend;
}

bool ProcessFilter::matches(const storage::ProcessRecord& process) const {
  if (pid && process.start.pid != *pid) return false;
  if (rank && process.start.rank != rank) return false;
  if (host && process.start.host != *host) return false;
  if (backend && process.start.backend != *backend) return false;
  return true;
}

std::string ProcessFilter::describe() const {
  std::string words;
  const auto add = [&](const std::string& option) {
    if (!words.empty()) words += ' ';
    words += option;
  };
  if (pid) add("--pid " + std::to_string(*pid));
  if (rank) add("--rank " + std::to_string(*rank));
  if (host) add("--host " + *host);
  if (backend) add("--backend " + *backend);
  return words;
}

ProcessSelection select_processes(const storage::TraceReader& trace, const ProcessFilter& filter) {
  if (filter.empty()) return std::nullopt;
  std::set<std::int64_t> upids;
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (filter.matches(process)) upids.insert(process.start.upid);
  }
  return upids;
}

bool is_selected(const ProcessSelection& selection, std::int64_t upid) {
  return !selection || selection->contains(upid);
}

}  // namespace vramtrace::analysis
