#include "analysis/reports/oom_report.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "analysis/roles/training_phases.h"
#include "analysis/time/process_history.h"
#include "analysis/time/report_time_index.h"
#include "analysis/values/live_callsite_tree.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

bool larger_first(const LiveGroup& a, const LiveGroup& b) {
  const auto key = [](const LiveGroup& g) {
    return std::tuple(-static_cast<double>(g.bytes), -static_cast<double>(g.count),
                      !g.callsite_id.has_value(), g.callsite_id.value_or(0), g.kind);
  };
  return key(a) < key(b);
}

// `rows`: at least those live just after `seq`. `allocator_segments`: empty at the segment level.
// `roles`: each block's role by its alloc_seq (block_lives), empty where the process has none.
std::vector<LiveGroup> live_groups(const storage::TraceReader& trace,
                                   const std::vector<storage::AllocationRecord>& rows,
                                   const std::unordered_set<std::int64_t>& allocator_segments,
                                   std::uint64_t seq, const AllocationScope& allocations,
                                   const std::unordered_map<std::uint64_t, BlockRole>& roles,
                                   LiveAtOom* live) {
  std::map<std::pair<std::optional<std::int64_t>, int>, LiveGroup> groups;
  std::map<std::pair<std::optional<std::int64_t>, int>, RoleTotals> group_roles;
  for (const auto& r : rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq >= seq) break;
    if (!live_after(r, seq) || !allocations.matches(a)) continue;
    // The allocator's segments are described at the block level, not listed (leaks does so).
    if (allocator_segments.contains(a.id)) continue;
    LiveGroup& group = groups[{a.alloc_callsite_id, a.kind}];
    if (const auto role = roles.find(a.alloc_seq); a.kind == kind::kBlock && role != roles.end())
      group_roles[{a.alloc_callsite_id, a.kind}].add(role->second, a.size);
    group.bytes += a.size;
    group.count += 1;
    live->total_bytes += a.size;
    live->total_count += 1;
    live->bytes_by_kind[trace.kind_name(a.kind)] += a.size;
  }
  std::vector<LiveGroup> sorted;
  for (auto& [key, group] : groups) {
    if (const auto found = group_roles.find(key); found != group_roles.end()) {
      const auto& bytes = found->second.bytes;
      group.role =
          static_cast<BlockRole>(std::max_element(bytes.begin(), bytes.end()) - bytes.begin());
    }
    group.callsite_id = key.first;
    group.kind = key.second;
    group.kind_name = trace.kind_name(group.kind);
    sorted.push_back(std::move(group));
  }
  std::sort(sorted.begin(), sorted.end(), larger_first);
  return sorted;
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
                     advice_bytes(oom.live.total_bytes), oom.live.total_count,
                     advice_bytes(request), advice_bytes(top.bytes), top.count, top.kind_name,
                     advice_callsite(top.stack)),
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
        advice_bytes(a.total_free), advice_bytes(request), advice_bytes(a.largest_free_gap),
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
                     advice_bytes(a.releasable_bytes), oom.api_name, advice_bytes(request)),
         {{"requested_bytes", request},
          {"releasable_bytes", a.releasable_bytes},
          {"cached_bytes", a.cached_bytes}},
         std::nullopt});
  }
  if (a.live_block_bytes > 0 && a.live_block_bytes >= a.cached_bytes) {
    const LiveGroup* top = largest_of_kind(groups, kind::kBlock);
    std::string text =
        fmt::format("Live tensors: {} in live blocks against {} cached in the allocator's segments",
                    advice_bytes(a.live_block_bytes), advice_bytes(a.cached_bytes));
    if (top) {
      text += fmt::format("; the largest callsite held {} in {} blocks, at {}",
                          advice_bytes(top->bytes), top->count, advice_callsite(top->stack));
    }
    text += fmt::format(". Reduce live memory: {}.", kReduceLiveTensorsRemedy);
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

// Each failure's outcome, by the failure's allocation id, with the id of the raised one a
// retried one led to. A failed device allocation of PyTorch's allocator is retried when a raised
// one of the same thread follows it with nothing the thread allocated in between still live
// then (torch frees its cache and tries again within the one request); else the allocator got
// past it. `failures`: every failure of the processes, in (upid, seq) order.
struct Judged {
  OomOutcome outcome = OomOutcome::kReturned;
  std::optional<std::int64_t> raised;
};

std::unordered_map<std::int64_t, Judged> judge_outcomes(
    const storage::TraceReader& trace, const ProcessHistory& history,
    const std::vector<storage::AllocationRecord>& failures) {
  std::unordered_map<std::int64_t, Judged> judged;
  std::unordered_map<std::int64_t, bool> by_allocator;  // by callsite
  const auto torch_allocator = [&](const storage::AllocationRow& a) {
    const auto [it, inserted] = by_allocator.try_emplace(a.alloc_callsite_id.value_or(-1), false);
    if (inserted) it->second = made_by_torch_allocator(trace.stack(a.alloc_callsite_id));
    return it->second;
  };
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const storage::AllocationRow& a = failures[i].allocation;
    Judged& verdict = judged[a.id];
    if (a.kind == kind::kBlock) {
      verdict.outcome = OomOutcome::kRaised;
      continue;
    }
    if (!torch_allocator(a)) continue;  // returned
    verdict.outcome = OomOutcome::kRecovered;
    for (std::size_t j = i + 1; j < failures.size(); ++j) {
      const storage::AllocationRow& b = failures[j].allocation;
      if (b.upid != a.upid) break;
      if (b.alloc_utid != a.alloc_utid) continue;
      if (b.kind != kind::kBlock) {
        if (torch_allocator(b)) continue;  // another try of the same request
        break;
      }
      const std::vector<storage::AllocationRecord> live = history.live_at(a.upid, b.alloc_seq);
      const bool went_on = std::any_of(live.begin(), live.end(), [&](const auto& r) {
        return r.allocation.alloc_seq > a.alloc_seq && r.allocation.alloc_seq < b.alloc_seq &&
               r.allocation.alloc_utid == a.alloc_utid;
      });
      if (!went_on) verdict = {OomOutcome::kRetried, b.id};
      break;
    }
  }
  return judged;
}

// Sets backward_call on the failures made in a backward pass with no Python line of their own:
// one pass over each such process's allocations finds its backward() calls (the tensors made
// under torch.autograd.backward from a line of the user's: the seed gradient, at least).
void find_backward_calls(const storage::TraceReader& trace, std::vector<OomRecord>* report) {
  std::set<std::int64_t> processes;
  for (const OomRecord& oom : *report) {
    if (user_python_frame(oom.stack) == nullptr && stack_facts(oom.stack).backward)
      processes.insert(oom.upid);
  }
  for (const std::int64_t upid : processes) {
    std::unordered_map<std::int64_t, std::optional<storage::StackFrame>> call_of;  // by callsite
    std::vector<std::pair<std::uint64_t, storage::StackFrame>> calls;              // by alloc_seq
    storage::AllocationFilter filter;
    filter.upid = upid;
    trace.for_each_allocation(filter, [&](const storage::AllocationRecord& r) {
      const std::int64_t callsite = r.allocation.alloc_callsite_id.value_or(-1);
      auto [it, inserted] = call_of.try_emplace(callsite);
      if (inserted) {
        const std::vector<storage::StackFrame> stack = trace.stack(r.allocation.alloc_callsite_id);
        const storage::StackFrame* line = user_python_frame(stack);
        if (line != nullptr && stack_facts(stack).backward) it->second = *line;
      }
      if (it->second) calls.emplace_back(r.allocation.alloc_seq, *it->second);
    });
    std::sort(calls.begin(), calls.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (OomRecord& oom : *report) {
      if (oom.upid != upid || user_python_frame(oom.stack) != nullptr ||
          !stack_facts(oom.stack).backward)
        continue;
      const auto after =
          std::lower_bound(calls.begin(), calls.end(), oom.seq,
                           [](const auto& call, std::uint64_t seq) { return call.first < seq; });
      if (after != calls.begin()) oom.backward_call = std::prev(after)->second;
    }
  }
}

}  // namespace

std::string_view oom_outcome_name(OomOutcome outcome) {
  switch (outcome) {
    case OomOutcome::kRaised:
      return "raised";
    case OomOutcome::kRetried:
      return "retried";
    case OomOutcome::kRecovered:
      return "recovered";
    case OomOutcome::kReturned:
      break;
  }
  return "returned";
}

bool made_by_torch_allocator(const std::vector<storage::StackFrame>& stack) {
  return std::any_of(stack.begin(), stack.end(), [](const storage::StackFrame& frame) {
    const std::size_t slash = frame.module.rfind('/');
    const std::string_view name =
        std::string_view(frame.module).substr(slash == std::string::npos ? 0 : slash + 1);
    return name.starts_with("libc10_cuda");
  });
}

std::vector<storage::AllocationRecord> find_out_of_memory_failures(
    const storage::TraceReader& trace, const ProcessSelection& processes) {
  storage::AllocationFilter failed;
  failed.outcome = storage::AllocationFilter::Outcome::kFailed;
  std::vector<storage::AllocationRecord> found;
  trace.for_each_allocation(failed, [&](const storage::AllocationRecord& r) {
    if (r.allocation.result == kOutOfMemoryResult && is_selected(processes, r.allocation.upid))
      found.push_back(r);
  });
  return found;
}

std::vector<OomRecord> build_oom_report(const storage::TraceReader& trace,
                                        const OomReportOptions& options) {
  const bool block_level = options.level == MemoryLevel::kBlock;
  std::vector<storage::AllocationRecord> ooms =
      find_out_of_memory_failures(trace, options.processes);
  // Judged before the filters: a retried failure is one whatever part of it is shown.
  const ProcessHistory history(trace);
  const std::unordered_map<std::int64_t, Judged> judged = judge_outcomes(trace, history, ooms);
  std::erase_if(ooms, [&](const storage::AllocationRecord& r) {
    return !options.allocations.matches(r.allocation) ||
           (!block_level && r.allocation.kind == kind::kBlock);
  });
  std::vector<OomRecord> report;
  if (ooms.empty()) return report;
  const std::int64_t origin_ns = time_origin_ns(trace);

  std::unordered_map<std::int64_t, storage::ProcessRecord> processes;
  for (const auto& p : trace.processes()) processes.emplace(p.start.upid, p);
  std::unordered_map<std::int64_t, std::uint32_t> tids;
  for (const auto& t : trace.threads()) tids.emplace(t.utid, t.tid);

  // Each failure reads the live set it met, not its process's history (process_history.h).
  std::unordered_map<std::int64_t, std::size_t> index_of;  // allocation id -> report index
  const std::unordered_set<std::int64_t> no_segments;
  const std::unordered_map<std::uint64_t, BlockRole> no_roles;
  const std::map<std::int64_t, storage::DeviceMemoryRow> device_memory =
      trace.failure_device_memory();
  // Each PyTorch process's blocks by role, read once for all its failures.
  std::map<std::int64_t, std::unordered_map<std::uint64_t, BlockRole>> roles_by_process;
  const auto roles_of = [&](std::int64_t upid) -> const auto& {
    const auto [it, inserted] = roles_by_process.try_emplace(upid);
    if (inserted && history.has_allocator_events(upid)) {
      for (const BlockLife& block : block_lives(trace, upid))
        it->second[block.alloc_seq] = block.role;
    }
    return it->second;
  };
  for (const auto& failure : ooms) {
    const storage::AllocationRow& a = failure.allocation;
    std::vector<storage::AllocationRecord> live = history.live_at(a.upid, a.alloc_seq);
    // The segment level: the process as if it had no allocator events.
    const bool allocator_events = block_level && history.has_allocator_events(a.upid);
    if (!block_level) {
      std::erase_if(live, [](const storage::AllocationRecord& r) {
        return r.allocation.kind == kind::kBlock;
      });
    }
    const std::unordered_set<std::int64_t>& segments =
        allocator_events ? history.allocator_segments() : no_segments;
    index_of[a.id] = report.size();
    OomRecord oom;
    oom.upid = a.upid;
    if (const auto p = processes.find(a.upid); p != processes.end()) {
      oom.pid = p->second.start.pid;
      oom.rank = p->second.start.rank;
    }
    if (const auto t = tids.find(a.alloc_utid); t != tids.end()) oom.tid = t->second;
    oom.time_ns = a.alloc_ns;
    oom.time_origin_ns = origin_ns;
    oom.seq = a.alloc_seq;
    oom.api = a.api;
    oom.kind = a.kind;
    oom.result = a.result;
    oom.device = a.device;
    oom.api_name = trace.api_name(a.api);
    oom.kind_name = trace.kind_name(a.kind);
    oom.requested_bytes = a.size;
    if (const auto memory = device_memory.find(a.id); memory != device_memory.end())
      oom.device_memory = memory->second;
    oom.stack = trace.stack(a.alloc_callsite_id);
    std::vector<LiveGroup> groups =
        live_groups(trace, live, segments, a.alloc_seq, options.allocations,
                    allocator_events ? roles_of(a.upid) : no_roles, &oom.live);
    if (allocator_events) {
      oom.allocator = allocator_layout(live, a.alloc_seq, segments);
      const auto totals = trace.allocator_totals_at(a.upid, a.alloc_seq);
      oom.allocator->allocated = totals.allocated;
      oom.allocator->reserved = totals.reserved;
    }
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
  find_backward_calls(trace, &report);
  for (std::size_t i = 0; i < ooms.size(); ++i) {
    const Judged& verdict = judged.at(ooms[i].allocation.id);
    report[i].outcome = verdict.outcome;
    if (verdict.raised) {
      if (const auto it = index_of.find(*verdict.raised); it != index_of.end())
        report[i].raised = it->second;
    }
  }
  return report;
}

}  // namespace vramtrace::analysis
