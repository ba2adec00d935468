#include "analysis/run_digest.h"

#include <algorithm>

#include "analysis/callsite_tree.h"
#include "analysis/leak_report.h"
#include "analysis/live_bytes_rollups.h"
#include "analysis/oom_report.h"
#include "analysis/process_chains.h"
#include "analysis/trace_warnings.h"

namespace vramtrace::analysis {

const storage::StackFrame* first_line_of(const std::vector<storage::StackFrame>& stack) {
  if (const storage::StackFrame* python = user_python_frame(stack)) return python;
  return stack.empty() ? nullptr : &stack.front();
}

RunDigest digest_run(const storage::TraceReader& trace, const storage::TimeIndex& index) {
  const std::vector<ProcessChain> chains =
      chain_processes(trace.processes(), trace.upids_with_gpu_events());
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  const std::vector<storage::LiveBytesPeak> peaks = index.peaks();
  const auto out_of_memory = trace.failures_by_process_and_kind(kOutOfMemoryResult);
  RunDigest digest;
  digest.processes = chains.size();
  digest.gaps = recording_gaps(trace);
  for (const ProcessChain* chain : gpu_processes(chains).gpu) {
    ProcessDigest& p = digest.gpu.emplace_back();
    p.process = chain->process();
    const std::int64_t upid = p.process.start.upid;
    p.allocator_events = with_allocator.contains(upid);
    for (const storage::LiveBytesPeak& peak : peaks) {
      if (peak.upid != upid || peak.group != kPeakGroupDeviceMemory || peak.bytes <= p.peak_bytes)
        continue;
      p.peak_device = peak.device;
      p.peak_bytes = peak.bytes;
    }
    for (const storage::LiveBytesPeak& peak : peaks) {
      if (peak.upid == upid && peak.group == kPeakGroupBlocks && p.peak_device == peak.device)
        p.peak_block_bytes = peak.bytes;
    }
    LeakReportOptions options;
    options.processes = std::set<std::int64_t>{upid};
    const LeakReport leaks = build_leak_report_at_end(trace, &index, options);
    p.leaked_bytes = leaks.total_bytes;
    p.leaked_count = leaks.total_count;
    for (const LibraryMemory& library : leaks.held_by_libraries) {
      p.library_bytes += library.bytes;
      p.libraries.push_back(library.library);
    }
    if (!leaks.groups.empty()) {
      p.top_leak_bytes = leaks.groups.front().bytes;
      p.top_leak_stack = leaks.groups.front().stack;
    }
    for (const auto& [key, count] : out_of_memory) {
      if (key.first == upid) p.out_of_memory += count;
    }
  }
  return digest;
}

}  // namespace vramtrace::analysis
