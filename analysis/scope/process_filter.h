// Which processes a report is about: `--pid`, `--rank` and `--host`, each optional, combined
// with AND. A trace merged from several nodes holds many processes, and the same pid can come
// back on every host (a pid names a process only within a host), so a filter selects processes
// by what the trace recorded of them and every report is then restricted to their upids.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// Upids of the processes a report covers; unset: every process in the trace.
using ProcessSelection = std::optional<std::set<std::int64_t>>;

struct ProcessFilter {
  std::optional<std::uint32_t> pid;  // every process with this pid, on any host
  std::optional<int> rank;           // processes that recorded this rank (never those without)
  std::optional<std::string> host;   // processes on this host, as the process named it
  // `run --backend both` records each process twice: the rows of this backend only
  // (storage::kBackendPreload or kBackendCupti).
  std::optional<std::string> backend;

  // No condition given: every process matches, and reports are not restricted at all.
  bool empty() const;
  bool matches(const storage::ProcessRecord& process) const;
  // The conditions as they are written on the command line: "--pid 4242 --rank 3".
  std::string describe() const;
};

// The processes of `trace` that the filter matches: unset for an empty filter (everything),
// else the matching upids, possibly none.
ProcessSelection select_processes(const storage::TraceReader& trace, const ProcessFilter& filter);

// True when `upid` is one of the selected processes.
bool is_selected(const ProcessSelection& selection, std::int64_t upid);

}  // namespace vramtrace::analysis
