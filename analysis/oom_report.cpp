#include "analysis/oom_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/fragmentation.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;
using Rows = std::vector<storage::AllocationRecord>;

bool live_at(const storage::AllocationRecord& r, std::uint64_t seq) {
  return !r.failed() && r.allocation.alloc_seq < seq && (!r.free || r.free->free_seq > seq);
}

// "4.0 MiB": advice text is for people; the exact numbers are in its evidence.
std::string bytes_text(std::uint64_t bytes) {
  constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string where(const std::vector<storage::StackFrame>& stack) {
  if (stack.empty()) return "no recorded stack";
  const storage::StackFrame& frame = stack.front();
  std::string text = frame.function.value_or("??");
  if (frame.file) text += fmt::format(" ({}:{})", *frame.file, frame.line.value_or(0));
  return text;
}

bool larger_first(const LiveGroup& a, const LiveGroup& b) {
  const auto key = [](const LiveGroup& g) {
    return std::tuple(-static_cast<double>(g.bytes), -static_cast<double>(g.count),
                      !g.callsite_id.has_value(), g.callsite_id.value_or(0), g.kind);
  };
  return key(a) < key(b);
}

// A process's rows, and what is known about its allocator for the whole trace.
struct ProcessRows {
  Rows rows;  // alloc_seq order
  bool allocator_events = false;
  std::unordered_set<std::int64_t> allocator_segments;  // ids of rows that held a block
};

ProcessRows load_process(const storage::TraceReader& trace, std::int64_t upid) {
  ProcessRows process;
  storage::AllocationFilter filter;
  filter.upid = upid;
  process.rows = trace.allocations(filter);
  for (const auto& r : process.rows) {
    if (r.allocation.kind != kind::kBlock) continue;
    process.allocator_events = true;
    if (r.allocation.segment_id) process.allocator_segments.insert(*r.allocation.segment_id);
  }
  return process;
}

std::vector<LiveGroup> live_groups(const storage::TraceReader& trace, const ProcessRows& process,
                                   std::uint64_t seq, LiveAtOom* live) {
  std::map<std::pair<std::optional<std::int64_t>, int>, LiveGroup> groups;
  for (const auto& r : process.rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq >= seq) break;
    if (!live_at(r, seq)) continue;
    // The allocator's segments are described at the block level, not listed (leaks does so).
    if (process.allocator_events && process.allocator_segments.contains(a.id)) continue;
    LiveGroup& group = groups[{a.alloc_callsite_id, a.kind}];
    group.bytes += a.size;
    group.count += 1;
    live->total_bytes += a.size;
    live->total_count += 1;
    live->bytes_by_kind[trace.kind_name(a.kind)] += a.size;
  }
  std::vector<LiveGroup> sorted;
  for (auto& [key, group] : groups) {
    group.callsite_id = key.first;
    group.kind = key.second;
    group.kind_name = trace.kind_name(group.kind);
    sorted.push_back(std::move(group));
  }
  std::sort(sorted.begin(), sorted.end(), larger_first);
  return sorted;
}

// The segments live at `seq`, with the live blocks laid over them (lay_out_segments(), as
// `vramtrace frag` lays them out): what is left between the blocks is the allocator's free
// (cached) memory, and its largest piece is the largest block the allocator could have handed
// out without a new segment.
AllocatorAtOom allocator_at(const ProcessRows& process, std::uint64_t seq) {
  AllocatorAtOom at;
  std::optional<std::uint64_t> latest;
  const auto note = [&](std::uint64_t when, const std::optional<std::uint64_t>& allocated,
                        const std::optional<std::uint64_t>& reserved) {
    if ((!allocated && !reserved) || when > seq || (latest && when < *latest)) return;
    latest = when;
    at.allocated = allocated;
    at.reserved = reserved;
  };
  Rows live;
  for (const auto& r : process.rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq > seq) break;
    if (a.kind == kind::kBlock) {
      note(a.alloc_seq, a.allocator_allocated, a.allocator_reserved);
      if (r.free) note(r.free->free_seq, r.free->allocator_allocated, r.free->allocator_reserved);
    }
    if (!live_at(r, seq)) continue;
    if (a.kind == kind::kBlock) at.live_block_bytes += a.size;
    live.push_back(r);
  }
  const Fragmentation layout = lay_out_segments(live, process.allocator_segments);
  for (const SegmentLayout& laid : layout.segments) {
    SegmentAtOom segment;
    segment.address = laid.address;
    segment.size = laid.size;
    segment.expandable = laid.expandable;
    for (const SegmentBlock& block : laid.blocks) {
      if (block.used)
        segment.blocks += 1;
      else
        segment.free_gaps.push_back(block.size);
    }
    at.segment_bytes += segment.size;
    if (segment.blocks == 0) at.releasable_bytes += segment.size;
    at.segments.push_back(std::move(segment));
  }
  at.total_free = layout.total_free;
  at.largest_free_gap = layout.largest_free;
  at.cached_bytes = at.total_free;
  at.external_fragmentation = layout.external_fragmentation;
  return at;
}

const LiveGroup* largest_of_kind(const std::vector<LiveGroup>& groups, int kind_id) {
  for (const LiveGroup& group : groups)
    if (group.kind == kind_id) return &group;
  return nullptr;
}

// The rules, few and each on numbers of this OOM alone. Block level: fragmentation, cache
// held by the allocator against another caller's request, and live tensors; segment level:
// the largest live callsites.
std::vector<Advice> advise(const OomRecord& oom, const std::vector<LiveGroup>& groups) {
  std::vector<Advice> advice;
  const std::uint64_t request = oom.requested_bytes;
  if (!oom.allocator) {
    if (groups.empty()) return advice;
    const LiveGroup& top = groups.front();
    advice.push_back(
        {kAdviceTopCallsites,
         fmt::format("No allocator events in this process (segment level): {} was live in {} "
                     "allocations when {} was requested; the largest callsite held {} in {} {} "
                     "allocations, at {}. Free or shrink those first.",
                     bytes_text(oom.live.total_bytes), oom.live.total_count, bytes_text(request),
                     bytes_text(top.bytes), top.count, top.kind_name, where(top.stack)),
         {{"requested_bytes", request},
          {"live_bytes", oom.live.total_bytes},
          {"top_callsite_bytes", top.bytes},
          {"top_callsite_count", top.count}},
         std::nullopt});
    return advice;
  }
  const AllocatorAtOom& a = *oom.allocator;
  if (a.total_free >= request && a.largest_free_gap < request) {
    const bool expandable = std::any_of(a.segments.begin(), a.segments.end(),
                                        [](const SegmentAtOom& s) { return s.expandable; });
    std::string text = fmt::format(
        "Fragmentation: the allocator's segments had {} free, at least the {} requested, but "
        "the largest free gap was {} (external fragmentation {:.2f}), so no free block fit. ",
        bytes_text(a.total_free), bytes_text(request), bytes_text(a.largest_free_gap),
        a.external_fragmentation);
    text += expandable
                ? "Expandable segments are already on (the segments are cuMemMap mappings): the "
                  "gaps lie between live tensors; vary request sizes less, or free the tensors "
                  "between the gaps."
                : "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so that the allocator "
                  "grows a segment in place instead of caching many; or max_split_size_mb:<MB> "
                  "so that large cached blocks are not split for small requests.";
    advice.push_back({kAdviceFragmentation,
                      std::move(text),
                      {{"requested_bytes", request},
                       {"total_free", a.total_free},
                       {"largest_free_gap", a.largest_free_gap},
                       {"segments", a.segments.size()}},
                      a.external_fragmentation});
  }
  // PyTorch's allocator frees its unused segments and retries before it reports an OOM, so
  // empty_cache() can only help a caller that is not the allocator.
  if (oom.kind != kind::kBlock && a.releasable_bytes >= request) {
    advice.push_back(
        {kAdviceCacheHeld,
         fmt::format("PyTorch's allocator held {} in segments with no live tensor when this {} "
                     "of {} failed. If this allocation is not PyTorch's own (another library, "
                     "or another process on the same GPU), call torch.cuda.empty_cache() before "
                     "it: that returns unused cached segments to the driver. It frees no live "
                     "tensor, and does not help PyTorch's own requests, for which the allocator "
                     "already frees its unused segments and retries before it reports an OOM.",
                     bytes_text(a.releasable_bytes), oom.api_name, bytes_text(request)),
         {{"requested_bytes", request},
          {"releasable_bytes", a.releasable_bytes},
          {"cached_bytes", a.cached_bytes}},
         std::nullopt});
  }
  if (a.live_block_bytes > 0 && a.live_block_bytes >= a.cached_bytes) {
    const LiveGroup* top = largest_of_kind(groups, kind::kBlock);
    std::string text =
        fmt::format("Live tensors: {} in live blocks against {} cached in the allocator's segments",
                    bytes_text(a.live_block_bytes), bytes_text(a.cached_bytes));
    if (top) {
      text += fmt::format("; the largest callsite held {} in {} blocks, at {}",
                          bytes_text(top->bytes), top->count, where(top->stack));
    }
    text +=
        ". Reduce live memory: smaller micro-batches with gradient accumulation, activation "
        "checkpointing (torch.utils.checkpoint), mixed precision (torch.autocast), "
        "torch.no_grad() in evaluation, and no references kept to tensors no longer needed "
        "(a loss kept in a list keeps its graph).";
    advice.push_back({kAdviceLiveTensors,
                      std::move(text),
                      {{"requested_bytes", request},
                       {"live_block_bytes", a.live_block_bytes},
                       {"cached_bytes", a.cached_bytes},
                       {"top_callsite_bytes", top ? top->bytes : 0},
                       {"top_callsite_count", top ? top->count : 0}},
                      std::nullopt});
  }
  return advice;
}

}  // namespace

std::vector<OomRecord> build_oom_report(const storage::TraceReader& trace,
                                        const OomReportOptions& options) {
  storage::AllocationFilter failed;
  failed.outcome = storage::AllocationFilter::Outcome::kFailed;
  std::vector<storage::AllocationRecord> ooms;
  trace.for_each_allocation(failed, [&](const storage::AllocationRecord& r) {
    if (r.allocation.result == kOutOfMemoryResult &&
        is_selected(options.processes, r.allocation.upid))
      ooms.push_back(r);
  });
  std::vector<OomRecord> report;
  if (ooms.empty()) return report;

  std::unordered_map<std::int64_t, storage::ProcessRecord> processes;
  for (const auto& p : trace.processes()) processes.emplace(p.start.upid, p);
  std::unordered_map<std::int64_t, std::uint32_t> tids;
  for (const auto& t : trace.threads()) tids.emplace(t.utid, t.tid);

  std::optional<std::int64_t> loaded_upid;
  ProcessRows process;
  for (const auto& failure : ooms) {  // (upid, alloc_seq) order: one load per process
    const storage::AllocationRow& a = failure.allocation;
    if (loaded_upid != a.upid) {
      process = load_process(trace, a.upid);
      loaded_upid = a.upid;
    }
    OomRecord oom;
    oom.upid = a.upid;
    if (const auto p = processes.find(a.upid); p != processes.end()) {
      oom.pid = p->second.start.pid;
      oom.process_start_ns = p->second.start.start_ns;
    }
    if (const auto t = tids.find(a.alloc_utid); t != tids.end()) oom.tid = t->second;
    oom.time_ns = a.alloc_ns;
    oom.seq = a.alloc_seq;
    oom.api = a.api;
    oom.kind = a.kind;
    oom.result = a.result;
    oom.device = a.device;
    oom.api_name = trace.api_name(a.api);
    oom.kind_name = trace.kind_name(a.kind);
    oom.requested_bytes = a.size;
    oom.stack = trace.stack(a.alloc_callsite_id);
    std::vector<LiveGroup> groups = live_groups(trace, process, a.alloc_seq, &oom.live);
    if (process.allocator_events) oom.allocator = allocator_at(process, a.alloc_seq);
    // Stacks only for the groups that are shown or that advice names.
    for (LiveGroup& group : groups) {
      if (&group - groups.data() < static_cast<std::ptrdiff_t>(options.top) ||
          &group == largest_of_kind(groups, kind::kBlock))
        group.stack = trace.stack(group.callsite_id);
    }
    oom.advice = advise(oom, groups);
    oom.live.groups = groups.size();
    if (groups.size() > options.top) groups.resize(options.top);
    oom.live.top = std::move(groups);
    report.push_back(std::move(oom));
  }
  return report;
}

}  // namespace vramtrace::analysis
