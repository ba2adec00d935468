#include "analysis/reports/trace_diff.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/allocator/allocator_level.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

// What a frame says, the same in any trace that ran the same code.
std::string frame_key(const storage::StackFrame& frame) {
  if (frame.function) {
    return fmt::format("{}|{}|{}", *frame.function, frame.file.value_or(""),
                       frame.line.value_or(0));
  }
  const auto slash = frame.module.rfind('/');
  return fmt::format("{}+{:#x}",
                     slash == std::string::npos ? frame.module : frame.module.substr(slash + 1),
                     frame.rel_pc);
}

struct Group {
  std::string kind_name;
  std::vector<storage::StackFrame> stack;
  std::uint64_t peak = 0, leaked = 0;
};

// kind name + "\n" + frame keys, innermost first -> the group's numbers in one trace.
using Groups = std::map<std::string, Group>;

Groups groups_of(const storage::TraceReader& trace, const ProcessSelection& processes,
                 const TraceDiffOptions& options) {
  const AllocatorView allocator = build_allocator_view(trace, processes);
  const bool block_level = options.level == MemoryLevel::kBlock;
  Groups groups;
  std::map<std::pair<std::optional<std::int64_t>, int>, Group*> interned;
  const auto group_of = [&](const storage::AllocationRow& a) -> Group* {
    auto [it, inserted] = interned.try_emplace({a.alloc_callsite_id, a.kind}, nullptr);
    if (!inserted) return it->second;
    std::vector<storage::StackFrame> stack = trace.stack(a.alloc_callsite_id);
    std::string key = trace.kind_name(a.kind);
    for (const storage::StackFrame& frame : stack) key += "\n" + frame_key(frame);
    Group& group = groups[key];
    if (group.kind_name.empty()) {
      group.kind_name = trace.kind_name(a.kind);
      group.stack = std::move(stack);
    }
    it->second = &group;
    return &group;
  };

  // One process at a time: its allocations and frees in its own sequence order.
  struct Event {
    std::uint64_t seq;
    std::int64_t delta;
    Group* group;
  };
  std::vector<Event> events;
  const auto sweep = [&] {
    std::sort(events.begin(), events.end(),
              [](const Event& x, const Event& y) { return x.seq < y.seq; });
    std::unordered_map<Group*, std::pair<std::int64_t, std::int64_t>> live;  // live, most
    for (const Event& e : events) {
      auto& [now, most] = live[e.group];
      now += e.delta;
      most = std::max(most, now);
    }
    for (const auto& [group, numbers] : live)
      group->peak += static_cast<std::uint64_t>(numbers.second);
    events.clear();
  };
  std::optional<std::int64_t> upid;
  trace.for_each_allocation({}, [&](const storage::AllocationRecord& r) {
    const storage::AllocationRow& a = r.allocation;
    if (r.failed() || !is_selected(processes, a.upid) || !options.allocations.matches(a)) return;
    const bool is_block = a.kind == storage::allocation_kind::kBlock;
    if (block_level ? allocator.allocator_segments.contains(a.id) : is_block) return;
    if (upid != a.upid) {
      sweep();
      upid = a.upid;
    }
    Group* group = group_of(a);
    const auto size = static_cast<std::int64_t>(a.size);
    events.push_back({a.alloc_seq, size, group});
    if (r.free)
      events.push_back({r.free->free_seq, -size, group});
    else
      group->leaked += a.size;
  });
  sweep();
  return groups;
}

std::string stack_text(const CallsiteChange& change) {
  std::string text = change.kind_name;
  for (const storage::StackFrame& frame : change.stack) text += "\n" + frame_key(frame);
  return text;
}

}  // namespace

std::int64_t CallsiteChange::peak_change() const {
  return static_cast<std::int64_t>(peak_b) - static_cast<std::int64_t>(peak_a);
}
std::int64_t CallsiteChange::leaked_change() const {
  return static_cast<std::int64_t>(leaked_b) - static_cast<std::int64_t>(leaked_a);
}

TraceDiff diff_traces(const storage::TraceReader& a, const storage::TraceReader& b,
                      const TraceDiffOptions& options) {
  TraceDiff diff;
  diff.level = std::string(level_name(options.level));
  Groups before = groups_of(a, options.processes_a, options);
  Groups after = groups_of(b, options.processes_b, options);
  std::map<std::string, CallsiteChange> changes;
  // B's stack replaces A's: the same frames, and B is the code as it is now.
  const auto pair_up = [&changes](Groups& groups, bool is_b) {
    for (auto& [key, group] : groups) {
      CallsiteChange& change = changes[key];
      change.kind_name = group.kind_name;
      change.stack = std::move(group.stack);
      (is_b ? change.peak_b : change.peak_a) = group.peak;
      (is_b ? change.leaked_b : change.leaked_a) = group.leaked;
    }
  };
  pair_up(before, false);
  pair_up(after, true);
  for (auto& [key, change] : changes) {
    diff.peak_a += change.peak_a;
    diff.peak_b += change.peak_b;
    diff.leaked_a += change.leaked_a;
    diff.leaked_b += change.leaked_b;
    if (change.peak_change() == 0 && change.leaked_change() == 0) {
      diff.unchanged += 1;
      continue;
    }
    diff.changes.push_back(std::move(change));
  }
  std::sort(diff.changes.begin(), diff.changes.end(),
            [](const CallsiteChange& x, const CallsiteChange& y) {
              return std::tuple(-x.score(), -x.peak_change(), stack_text(x)) <
                     std::tuple(-y.score(), -y.peak_change(), stack_text(y));
            });
  return diff;
}

}  // namespace vramtrace::analysis
