#include "analysis/reports/leak_report.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/allocator/allocator_level.h"
#include "analysis/reports/trace_warnings.h"
#include "analysis/values/byte_sum.h"
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
  if (a.kind != b.kind) return a.kind < b.kind;
  return a.upid < b.upid;
}

}  // namespace

LiveGrouper::LiveGrouper(bool block_level,
                         const std::unordered_set<std::int64_t>& allocator_segments,
                         bool by_process)
    : block_level_(block_level), allocator_segments_(allocator_segments), by_process_(by_process) {}

void LiveGrouper::add(const storage::AllocationRow& a, std::uint64_t count) {
  const bool is_block = a.kind == storage::allocation_kind::kBlock;
  if (!block_level_) {
    if (is_block) return;  // inside segments, which count at this level
  } else {
    if (is_block && a.segment_id) {
      std::uint64_t& in_segment = live_block_bytes_in_[*a.segment_id];
      in_segment = add_bytes(in_segment, a.size, &bytes_overflowed_);
    }
    if (!allocator_segments_.empty() && allocator_segments_.contains(a.id)) {
      // Cache or not is known once every live block in it has been added.
      live_segments_.emplace_back(a.id, a.size);
      return;
    }
  }
  LeakGroup& group = groups_[{by_process_ ? a.upid : -1, a.alloc_callsite_id, a.kind}];
  group.bytes = add_bytes(group.bytes, a.size, &bytes_overflowed_);
  group.count += count;
}

LiveGroups LiveGrouper::take() {
  LiveGroups out;
  for (const auto& [id, size] : live_segments_) {
    const auto in_use = live_block_bytes_in_.find(id);
    const std::uint64_t used = in_use == live_block_bytes_in_.end() ? 0 : in_use->second;
    out.cached.bytes =
        add_bytes(out.cached.bytes, size > used ? size - used : 0, &bytes_overflowed_);
    out.cached.count += 1;
  }
  out.groups.reserve(groups_.size());
  for (auto& [key, group] : groups_) {
    const auto& [upid, callsite, kind] = key;
    group.callsite_id = callsite;
    group.kind = kind;
    if (by_process_) group.upid = upid;
    out.groups.push_back(std::move(group));
  }
  out.bytes_overflowed = bytes_overflowed_;
  groups_.clear();
  live_segments_.clear();
  live_block_bytes_in_.clear();
  bytes_overflowed_ = false;
  return out;
}

void finish_groups(const storage::TraceReader& trace, std::vector<LeakGroup>* groups) {
  std::map<std::int64_t, std::pair<std::uint32_t, std::optional<int>>> processes;
  if (std::any_of(groups->begin(), groups->end(), [](const LeakGroup& g) { return g.upid; })) {
    for (const storage::ProcessRecord& p : trace.processes())
      processes[p.start.upid] = {p.start.pid, p.start.rank};
  }
  for (LeakGroup& group : *groups) {
    if (group.upid) {
      if (const auto found = processes.find(*group.upid); found != processes.end())
        std::tie(group.pid, group.rank) = found->second;
    }
    group.kind_name = trace.kind_name(group.kind);
    group.level = group.kind == storage::allocation_kind::kBlock ? "block" : "segment";
    group.stack = trace.stack(group.callsite_id);
  }
  std::sort(groups->begin(), groups->end(), larger_first);
}

namespace {

ProcessSelection selected_processes(const LeakReportOptions& options) {
  ProcessSelection selected = options.processes;
  if (options.upid) {
    std::set<std::int64_t> only{*options.upid};
    if (!selected || selected->contains(*options.upid))
      selected = only;
    else
      selected = std::set<std::int64_t>{};
  }
  return selected;
}

// Whether the report keeps processes apart: two selected processes or more recorded a rank.
bool keep_ranks_apart(const storage::TraceReader& trace, const LeakReportOptions& options,
                      const ProcessSelection& selected) {
  if (options.merge_ranks) return false;
  std::size_t ranks = 0;
  for (const storage::ProcessRecord& process : trace.processes())
    ranks += process.start.rank.has_value() && is_selected(selected, process.start.upid);
  return ranks >= 2;
}

// Within the allocation range asked for, if any.
bool allocated_in(const LeakReportOptions& options, const storage::AllocationRow& allocation) {
  return !options.allocated_in || (allocation.alloc_seq >= options.allocated_in->first &&
                                   allocation.alloc_seq <= options.allocated_in->last);
}

// "block" when asked for, or by default where a selected process had allocator events.
std::string level_name(const LeakReportOptions& options, bool allocator_events) {
  const bool block_level = options.level.value_or(LeakLevel::kBlock) == LeakLevel::kBlock;
  return block_level && (options.level || allocator_events) ? "block" : "segment";
}

// Whether a group is virtual memory of PyTorch's expandable segments: a reservation or a
// handle made in the caching allocator's library.
bool expandable_segment_part(const LeakGroup& group) {
  if (group.kind != storage::allocation_kind::kVmmReservation &&
      group.kind != storage::allocation_kind::kVmmHandle) {
    return false;
  }
  for (const storage::StackFrame& frame : group.stack) {
    if (frame.module.empty()) continue;
    return storage::path_base_name(frame.module).starts_with("libc10_cuda.so");
  }
  return false;
}

// Moves out of the leaks the groups a CUDA library allocated for itself (library_memory.h) and,
// at the block level, the expandable segments' reservations and handles. Stacks must be
// resolved.
void set_aside_held_memory(LeakReport* report) {
  std::map<std::string, LibraryMemory> held;
  std::vector<LeakGroup> leaks;
  for (LeakGroup& group : report->groups) {
    if (report->level == "block" && expandable_segment_part(group)) {
      LeakReport::ExpandableSegments& parts = report->expandable_segments;
      if (group.kind == storage::allocation_kind::kVmmReservation) {
        parts.reserved_bytes += group.bytes;
        parts.reservations += group.count;
      } else {
        parts.handles += group.count;
      }
      report->total_bytes -= group.bytes;
      report->total_count -= group.count;
      continue;
    }
    const std::optional<std::string> library = group.kind == storage::allocation_kind::kBlock
                                                   ? std::nullopt
                                                   : allocating_cuda_library(group.stack);
    if (!library) {
      leaks.push_back(std::move(group));
      continue;
    }
    LibraryMemory& memory = held[*library];
    memory.library = *library;
    memory.bytes += group.bytes;
    memory.count += group.count;
    report->total_bytes -= group.bytes;
    report->total_count -= group.count;
  }
  report->groups = std::move(leaks);
  for (auto& [library, memory] : held) report->held_by_libraries.push_back(std::move(memory));
  std::sort(report->held_by_libraries.begin(), report->held_by_libraries.end(),
            [](const LibraryMemory& a, const LibraryMemory& b) {
              return a.bytes != b.bytes ? a.bytes > b.bytes : a.library < b.library;
            });
}

void add_totals(LeakReport* report, LiveGroups live) {
  report->cached = live.cached;
  report->groups = std::move(live.groups);
  bool overflowed = live.bytes_overflowed;
  for (const LeakGroup& group : report->groups) {
    report->total_bytes = add_bytes(report->total_bytes, group.bytes, &overflowed);
    report->total_count += group.count;
  }
  if (overflowed) report->warnings.emplace_back(kByteTotalsOverflowed);
}

// The selected processes whose end of the trace is their program's end (the reports' "end").
std::vector<std::int64_t> ended_at_python_finalizing(const storage::TraceReader& trace,
                                                     const ProcessSelection& selected,
                                                     const std::optional<std::int64_t>& only) {
  std::vector<std::int64_t> ended;
  for (const storage::ProcessRecord& process : trace.processes()) {
    const std::int64_t upid = process.start.upid;
    if (only && upid != *only) continue;
    if (is_selected(selected, upid) && trace.program_end_seq(upid)) ended.push_back(upid);
  }
  return ended;
}

}  // namespace

LeakReport build_leak_report(const storage::TraceReader& trace, const LeakReportOptions& options) {
  LeakReport report;
  report.trace_complete = trace.complete();
  report.warnings = trace_warnings(trace, options.processes);
  const ProcessSelection selected = selected_processes(options);
  const AllocatorView allocator = build_allocator_view(trace, selected);
  for (const auto& [upid, totals] : allocator.processes)
    report.allocator_events = report.allocator_events || totals.allocator_events;
  report.level = level_name(options, report.allocator_events);

  storage::AllocationFilter live_at_end;
  live_at_end.upid = options.upid;
  live_at_end.lifetime = storage::AllocationFilter::Lifetime::kLiveAtEnd;
  // Added up as they come, so any order will do: one pass over the table.
  live_at_end.in_table_order = true;
  live_at_end.columns = storage::AllocationFilter::Columns::kLiveByStackAndSegment;
  const bool block_level = options.level.value_or(LeakLevel::kBlock) == LeakLevel::kBlock;
  LiveGrouper live(block_level, allocator.allocator_segments,
                   keep_ranks_apart(trace, options, selected));
  trace.for_each_allocation(live_at_end, [&](const storage::AllocationRecord& record) {
    const storage::AllocationRow& allocation = record.allocation;
    if (!is_selected(selected, allocation.upid) || !options.allocations.matches(allocation)) return;
    if (!allocated_in(options, allocation)) return;
    live.add(allocation);
  });
  report.ended_at_python_finalizing = ended_at_python_finalizing(trace, selected, options.upid);
  add_totals(&report, live.take());
  finish_groups(trace, &report.groups);
  set_aside_held_memory(&report);
  return report;
}

LeakReport build_leak_report_at(const storage::TraceReader& trace, const storage::TimeIndex& index,
                                const MomentSpec& at, const std::optional<MomentSpec>& since,
                                const LeakReportOptions& options) {
  LeakReport report;
  report.trace_complete = trace.complete();
  report.warnings = trace_warnings(trace, options.processes, &index);
  const ProcessSelection selected = selected_processes(options);
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  for (const std::int64_t upid : with_allocator)
    report.allocator_events = report.allocator_events || is_selected(selected, upid);
  report.level = level_name(options, report.allocator_events);

  report.at = resolve_moment(trace, index, at, selected);
  if (at.kind == MomentSpec::Kind::kEnd && !since)
    report.ended_at_python_finalizing = ended_at_python_finalizing(trace, selected, options.upid);
  std::map<std::int64_t, std::uint64_t> since_seq;
  if (since) {
    report.since = resolve_moment(trace, index, *since, selected);
    for (const ProcessMoment& moment : report.since) since_seq[moment.upid] = moment.seq;
  }
  const bool block_level = options.level.value_or(LeakLevel::kBlock) == LeakLevel::kBlock;
  const std::unordered_set<std::int64_t> allocator_segments = index.allocator_segments();
  LiveGrouper live(block_level, allocator_segments, keep_ranks_apart(trace, options, selected));
  // At a process's last event, what it left live is kept added up: unless a range of
  // allocations is asked for, the groups are read rather than the allocations.
  const bool groups_at_end = !since && !options.allocated_in;
  for (const ProcessMoment& moment : report.at) {
    if (groups_at_end && moment.seq >= index.last_seq(moment.upid)) {
      index.for_each_live_at_end(moment.upid,
                                 [&](const storage::AllocationRow& group, std::uint64_t count) {
                                   if (options.allocations.matches(group)) live.add(group, count);
                                 });
      continue;
    }
    const auto after = since_seq.find(moment.upid);
    if (since && after == since_seq.end()) continue;  // M1 never happened in this process
    index.for_each_live_at(
        moment.upid, moment.seq,
        [&](const storage::AllocationRecord& record) {
          const storage::AllocationRow& allocation = record.allocation;
          if (since && allocation.alloc_seq <= after->second) return;
          if (!options.allocations.matches(allocation) || !allocated_in(options, allocation))
            return;
          live.add(allocation);
        },
        storage::AllocationColumns::kLiveByStackAndSegment);
  }
  add_totals(&report, live.take());
  finish_groups(trace, &report.groups);
  set_aside_held_memory(&report);
  return report;
}

LeakReport build_leak_report_at_end(const storage::TraceReader& trace,
                                    const storage::TimeIndex* index,
                                    const LeakReportOptions& options) {
  if (index == nullptr) return build_leak_report(trace, options);
  return build_leak_report_at(trace, *index, MomentSpec{}, std::nullopt, options);
}

std::vector<CallsiteNode> build_leak_tree(const std::vector<LeakGroup>& groups,
                                          TreeDirection direction) {
  std::vector<StackBytes> stacks;
  stacks.reserve(groups.size());
  for (const LeakGroup& group : groups) stacks.push_back({&group.stack, group.bytes, group.count});
  return build_callsite_tree(stacks, direction);
}

}  // namespace vramtrace::analysis
