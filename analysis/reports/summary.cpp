#include "analysis/reports/summary.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>

#include "analysis/reports/trace_advice.h"
#include "analysis/reports/trace_warnings.h"
#include "analysis/roles/role_advice.h"
#include "analysis/time/report_time_index.h"
#include "analysis/time/trace_peaks.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

// The span of time the trace covers, widened by each timestamp seen.
class TimeSpan {
 public:
  void include(std::int64_t ns) {
    start_ = seen_ ? std::min(start_, ns) : ns;
    end_ = seen_ ? std::max(end_, ns) : ns;
    seen_ = true;
  }
  std::int64_t start() const { return start_; }
  std::int64_t end() const { return end_; }

 private:
  bool seen_ = false;
  std::int64_t start_ = 0, end_ = 0;
};

bool has_calls(const KindTotals& totals) {
  return totals.allocations != 0 || totals.failed_allocations != 0;
}

// The roles at each block peak that is its process's largest (build_role_report's peak is per
// process): the time index is opened only where some process has allocator events.
// *report: the roles report itself, for the advice the roles support.
std::vector<std::optional<RoleTotals>> roles_at_block_peaks(
    const storage::TraceReader& trace, const ProcessSelection& selected,
    const std::vector<AllocatorTotals>& allocator, const std::vector<DevicePeak>& block_peaks,
    std::vector<ProcessRoles>* report_out) {
  std::vector<std::optional<RoleTotals>> roles(block_peaks.size());
  const bool any = std::any_of(allocator.begin(), allocator.end(),
                               [](const AllocatorTotals& a) { return a.allocator_events; });
  if (!any || block_peaks.empty()) return roles;
  std::vector<ProcessRoles> report;
  try {
    const std::unique_ptr<storage::TimeIndex> index = open_time_index(trace);
    report = build_role_report(trace, *index, parse_moment("peak"), selected);
  } catch (const storage::TraceError&) {
    return roles;  // a trace that cannot be indexed is summed up all the same, without roles
  } catch (const BadMoment&) {
    return roles;
  }
  std::map<std::pair<std::int64_t, std::uint64_t>, std::size_t> peak_at;  // (upid, seq) -> index
  for (std::size_t i = block_peaks.size(); i-- > 0;)
    peak_at[{block_peaks[i].upid, block_peaks[i].at_seq}] = i;
  for (const ProcessRoles& process : report) {
    const auto peak = peak_at.find({process.upid, process.seq});
    if (peak != peak_at.end()) roles[peak->second] = process.live;
  }
  *report_out = std::move(report);
  return roles;
}

// The trace's rules that guess at activations from ranges and stacks, which the roles at the
// blocks' peak measure instead.
bool measured_by_roles(const Advice& advice) {
  return advice.id == kAdviceActivationCheckpointing || advice.id == kAdviceMicroBatches ||
         advice.id == kAdviceMixedPrecision;
}

std::uint64_t advice_pid(const Advice& advice) {
  for (const auto& [name, value] : advice.evidence) {
    if (name == "pid") return value;
  }
  return 0;
}

}  // namespace

bool VirtualMemoryTotals::any() const {
  return has_calls(reserved) || has_calls(created) || has_calls(mapped);
}

Summary build_summary(const storage::TraceReader& trace, const SummaryOptions& options) {
  const ProcessSelection& selected = options.processes;
  Summary summary;
  summary.trace_complete = trace.complete();
  summary.warnings = trace_warnings(trace, selected);
  summary.vramtrace_version = trace.meta_value("vramtrace_version");
  summary.command = trace.recorded_command();
  for (storage::ProcessRecord& process : trace.processes()) {
    if (!is_selected(selected, process.start.upid)) continue;
    if (trace.program_end_seq(process.start.upid))
      summary.ended_at_python_finalizing.push_back(process.start.upid);
    summary.processes.push_back(std::move(process));
  }
  summary.chains = chain_processes(summary.processes, trace.upids_with_gpu_events());
  summary.stats = trace.stats();
  summary.backends = compare_backends(trace);

  TimeSpan span;
  for (const storage::ProcessRecord& process : summary.processes) {
    span.include(process.start.start_ns);
    if (process.end.end_ns) span.include(*process.end.end_ns);
  }

  namespace kind = storage::allocation_kind;
  const bool block_level = options.level == MemoryLevel::kBlock;
  std::map<int, KindTotals> kinds;
  std::map<int, std::map<int, std::uint64_t>> failures_by_kind;  // kind -> result -> count
  // Added up by SQLite per (process, device, kind, result): one pass, no row in memory.
  for (const storage::AllocationTotalsRow& row : trace.allocation_totals()) {
    if (!is_selected(selected, row.upid)) continue;
    span.include(row.first_alloc_ns);
    span.include(row.last_alloc_ns);
    if (!options.allocations.matches(row.device, row.kind) ||
        (!block_level && row.kind == kind::kBlock))
      continue;
    KindTotals& totals = kinds[row.kind];
    if (row.result != 0) {
      totals.failed_allocations += row.count;
      failures_by_kind[row.kind][row.result] += row.count;
      continue;
    }
    totals.allocations += row.count;
    totals.bytes_allocated += row.bytes;
    totals.frees += row.freed_count;
    totals.bytes_freed += row.freed_bytes;
    totals.live_count += row.live_count;
    totals.live_bytes += row.live_bytes;
    if (row.last_free_ns) span.include(*row.last_free_ns);
  }
  for (auto& [kind, totals] : kinds) {
    totals.kind = kind;
    totals.name = trace.kind_name(kind);
    for (const auto& [result, count] : failures_by_kind[kind]) {
      totals.failures.push_back({result, count});
    }
    summary.kinds.push_back(std::move(totals));
  }
  const auto totals_of = [&](int kind_id) {
    for (const KindTotals& totals : summary.kinds) {
      if (totals.kind == kind_id) return totals;
    }
    KindTotals none;
    none.kind = kind_id;
    none.name = trace.kind_name(kind_id);
    return none;
  };
  summary.virtual_memory = {totals_of(kind::kVmmReservation), totals_of(kind::kVmmHandle),
                            totals_of(kind::kVmmMapping)};

  std::map<std::string, std::uint64_t> bad_free_counts;
  for (const storage::BadFreeRow& bad_free : trace.bad_frees()) {
    if (!is_selected(selected, bad_free.upid)) continue;
    span.include(bad_free.ns);
    bad_free_counts[bad_free.reason] += 1;
  }
  for (const auto& [reason, count] : bad_free_counts) summary.bad_frees.push_back({reason, count});

  summary.level = options.level;
  TracePeaks peaks = find_trace_peaks(trace, selected, options.allocations);
  summary.peaks = peaks.device;
  if (block_level) {
    summary.block_peaks = peaks.blocks;
    for (auto& [upid, totals] : build_allocator_view(trace, selected).processes)
      summary.allocator.push_back(totals);
    std::vector<ProcessRoles> roles;
    summary.block_peak_roles =
        options.roles
            ? roles_at_block_peaks(trace, selected, summary.allocator, summary.block_peaks, &roles)
            : std::vector<std::optional<RoleTotals>>(summary.block_peaks.size());
    // The advice looks at whole processes: the peaks found above serve unless they were
    // narrowed to a kind or a device.
    const bool whole = options.allocations.empty();
    for (Advice& advice : build_trace_advice(trace, selected, whole ? &peaks : nullptr)) {
      const auto device = std::find_if(advice.evidence.begin(), advice.evidence.end(),
                                       [](const auto& e) { return e.first == "device"; });
      if (options.allocations.device && device != advice.evidence.end() &&
          device->second != static_cast<std::uint64_t>(*options.allocations.device))
        continue;
      // Where the roles were measured, their advice replaces the guesses about the same
      // remedies.
      const bool measured = std::any_of(roles.begin(), roles.end(), [&](const ProcessRoles& p) {
        return p.pid == advice_pid(advice);
      });
      if (measured && measured_by_roles(advice)) continue;
      summary.advice.push_back(std::move(advice));
    }
    if (!options.allocations.device) {
      for (const ProcessRoles& process : roles) {
        for (Advice& advice :
             role_advice(process, "the peak of live tensors", process.world_size)) {
          advice.text = fmt::format("pid {}: {}", process.pid, advice.text);
          summary.advice.push_back(std::move(advice));
        }
      }
    }
  }
  summary.start_ns = span.start();
  summary.time_origin_ns = time_origin_ns(trace);
  summary.end_ns = span.end();
  summary.duration_ns = span.end() - span.start();
  return summary;
}

}  // namespace vramtrace::analysis
