#include "analysis/leak_report.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/allocator_level.h"
#include "analysis/trace_warnings.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

// No stack sorts after every real callsite.
std::tuple<bool, std::int64_t> callsite_order(const std::optional<std::int64_t>& callsite) {
  return {!callsite.has_value(), callsite.value_or(0)};
}

bool larger_first(const LeakGroup& a, const LeakGroup& b) {
  if (a.bytes != b.bytes) return a.bytes > b.bytes;
  if (a.count != b.count) return a.count > b.count;
  const auto a_callsite = callsite_order(a.callsite_id);
  const auto b_callsite = callsite_order(b.callsite_id);
  if (a_callsite != b_callsite) return a_callsite < b_callsite;
  return a.kind < b.kind;
}

}  // namespace

LeakReport build_leak_report(const storage::TraceReader& trace, const LeakReportOptions& options) {
  LeakReport report;
  report.trace_complete = trace.complete();
  report.warnings = trace_warnings(trace, options.processes);

  ProcessSelection selected = options.processes;
  if (options.upid) {
    std::set<std::int64_t> only{*options.upid};
    if (!selected || selected->contains(*options.upid))
      selected = only;
    else
      selected = std::set<std::int64_t>{};
  }
  const AllocatorView allocator = build_allocator_view(trace, selected);
  for (const auto& [upid, totals] : allocator.processes)
    report.allocator_events = report.allocator_events || totals.allocator_events;
  const bool block_level = options.level.value_or(LeakLevel::kBlock) == LeakLevel::kBlock;
  report.level = block_level && (options.level || report.allocator_events) ? "block" : "segment";

  storage::AllocationFilter live_at_end;
  live_at_end.upid = options.upid;
  live_at_end.lifetime = storage::AllocationFilter::Lifetime::kLiveAtEnd;

  std::map<std::pair<std::optional<std::int64_t>, int>, LeakGroup> groups;
  trace.for_each_allocation(live_at_end, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& allocation = record.allocation;
    if (!is_selected(selected, allocation.upid) || !options.allocations.matches(allocation)) return;
    const bool is_block = allocation.kind == storage::allocation_kind::kBlock;
    if (!block_level && is_block) return;  // inside segments, which count at this level
    if (block_level && allocator.allocator_segments.contains(allocation.id)) {
      const auto in_use = allocator.live_block_bytes_in.find(allocation.id);
      const std::uint64_t used = in_use == allocator.live_block_bytes_in.end() ? 0 : in_use->second;
      report.cached.bytes += allocation.size > used ? allocation.size - used : 0;
      report.cached.count += 1;
      return;
    }
    LeakGroup& group = groups[{allocation.alloc_callsite_id, allocation.kind}];
    group.bytes += allocation.size;
    group.count += 1;
    report.total_bytes += allocation.size;
    report.total_count += 1;
  });

  report.groups.reserve(groups.size());
  for (auto& [key, group] : groups) {
    group.callsite_id = key.first;
    group.kind = key.second;
    group.kind_name = trace.kind_name(group.kind);
    group.level = group.kind == storage::allocation_kind::kBlock ? "block" : "segment";
    group.stack = trace.stack(group.callsite_id);
    report.groups.push_back(std::move(group));
  }
  std::sort(report.groups.begin(), report.groups.end(), larger_first);
  return report;
}

}  // namespace vramtrace::analysis
