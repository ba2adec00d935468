#include "analysis/reports/run_digest.h"

#include <algorithm>

#include "analysis/reports/leak_growth.h"
#include "analysis/reports/leak_report.h"
#include "analysis/reports/oom_report.h"
#include "analysis/reports/trace_warnings.h"
#include "analysis/scope/process_chains.h"
#include "analysis/values/live_callsite_tree.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema_enums.h"

namespace vramtrace::analysis {

namespace {

// Iterations to look at for growth, as the gate looks at them.
constexpr std::size_t kGrowthIterations = 32;

// A training process's leaks are its growing stacks, and what it holds at its end is told by
// role: every training script holds its model, gradients and optimizer state until it exits.
void judge_by_iterations(const storage::TraceReader& trace, const storage::TimeIndex& index,
                         const LeakReport& at_end, TrainingPhases& phases, ProcessDigest* p) {
  const std::int64_t upid = p->process.start.upid;
  LeakReportOptions options;
  options.processes = std::set<std::int64_t>{upid};
  LeakGrowth growth;
  try {
    growth = build_leak_growth(trace, index, "", kGrowthIterations, options, &phases);
  } catch (const BadMoment&) {
    return;  // no iterations: the leaks are what is live at its end
  }
  if (growth.processes.empty()) return;
  p->iterations = growth.processes.front().iterations;
  p->iteration_marker = growth.processes.front().marker;
  std::set<std::optional<std::int64_t>> growing;
  for (const GrowingGroup& entry : growth.growing) {  // fastest first
    if (!entry.kept()) {
      if (p->top_larger_stack.empty()) {
        p->top_larger_stack = entry.group.stack;
        p->top_larger_count = entry.counts.back();
      }
      p->larger_per_iteration += entry.bytes_per_iteration;
      continue;
    }
    if (p->top_growth_stack.empty()) {
      p->top_growth_stack = entry.group.stack;
      p->top_growth_per_iteration = entry.bytes_per_iteration;
    }
    p->growth_per_iteration += entry.bytes_per_iteration;
    growing.insert(entry.group.callsite_id);
  }
  p->leaked_bytes = p->leaked_count = p->top_leak_bytes = 0;
  p->top_leak_stack.clear();
  for (const LeakGroup& group : at_end.groups) {
    if (!growing.contains(group.callsite_id)) continue;
    p->leaked_bytes += group.bytes;
    p->leaked_count += group.count;
  }
  MomentSpec end;
  const std::vector<ProcessRoles> roles =
      build_role_report(trace, index, end, options.processes, &phases);
  if (!roles.empty()) p->held = roles.front().live;
}

}  // namespace

RunDigest digest_run(const storage::TraceReader& trace, const storage::TimeIndex& index) {
  const std::vector<ProcessChain> chains =
      chain_processes(trace.processes(), trace.upids_with_gpu_events());
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  const std::vector<storage::LiveBytesPeak> peaks = index.peaks();
  const auto out_of_memory = trace.failures_by_process_and_kind(kOutOfMemoryResult);
  TrainingPhases phases(trace);  // each process's blocks read once, for its growth and roles
  RunDigest digest;
  digest.processes = chains.size();
  digest.gaps = recording_gaps(trace);
  for (const ProcessChain* chain : gpu_processes(chains).gpu) {
    ProcessDigest& p = digest.gpu.emplace_back();
    p.process = chain->process();
    const std::int64_t upid = p.process.start.upid;
    p.allocator_events = with_allocator.contains(upid);
    for (const storage::LiveBytesPeak& peak : peaks) {
      if (peak.upid != upid || peak.group != storage::kPeakGroupDeviceMemory ||
          peak.bytes <= p.peak_bytes)
        continue;
      p.peak_device = peak.device;
      p.peak_bytes = peak.bytes;
    }
    for (const storage::LiveBytesPeak& peak : peaks) {
      if (peak.upid == upid && peak.group == storage::kPeakGroupBlocks &&
          p.peak_device == peak.device)
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
    if (p.allocator_events || phases.ran_backward(upid))
      judge_by_iterations(trace, index, leaks, phases, &p);
    for (const auto& [key, count] : out_of_memory) {
      if (key.first != upid) continue;
      p.out_of_memory += count;
      if (key.second == storage::allocation_kind::kBlock) p.torch_out_of_memory += count;
    }
  }
  return digest;
}

}  // namespace vramtrace::analysis
