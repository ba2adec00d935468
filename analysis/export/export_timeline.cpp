#include "analysis/export/export_timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <queue>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/values/advice.h"
#include "analysis/values/cuda_errors.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

std::string file_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class TimelineBuilder {
 public:
  TimelineBuilder(const storage::TraceReader& trace, const ExportOptions& options, ExportSink& sink)
      : trace_(trace), options_(options), sink_(sink) {
    for (const storage::ThreadRecord& thread : trace.threads())
      threads_.emplace(thread.utid, thread);
  }

  ExportCounts build() {
    std::vector<ExportProcess> processes;
    std::unordered_map<std::uint32_t, int> pid_uses;
    for (const storage::ProcessRecord& p : trace_.processes()) {
      if (!is_selected(options_.processes, p.start.upid)) continue;
      exported_.insert(p.start.upid);
      processes.push_back(
          {p.start.upid, p.start.pid, p.start.pid, file_name(p.start.exe), p.start.argv});
      ++pid_uses[p.start.pid];
      include(p.start.start_ns);
      if (p.end.end_ns) include(*p.end.end_ns);
    }
    for (ExportProcess& process : processes) {
      if (pid_uses[process.pid] > 1)
        process.shown_pid = kMergedPidBase + static_cast<std::uint32_t>(process.upid);
      sink_.process(process);
    }
    counts_.processes = processes.size();
    add_allocations();
    add_markers();
    return counts_;
  }

 private:
  static constexpr std::uint32_t kMergedPidBase = 1'000'000;

  // The trace's end, as far as read: where a range never ended is drawn to.
  void include(std::int64_t ns) {
    end_ns_ = seen_ ? std::max(end_ns_, ns) : ns;
    seen_ = true;
  }

  // A selected process of the trace: a row of a process the trace does not have (a damaged or
  // hand-written file) has no track to go on, and is left out.
  bool exported(std::int64_t upid) const { return exported_.contains(upid); }

  // A thread the trace knows draws on its own track; an unknown one on its process's.
  ExportPlace place(std::int64_t upid, std::int64_t utid) {
    const auto thread = threads_.find(utid);
    if (thread == threads_.end() || thread->second.upid != upid) return {upid, std::nullopt, 0};
    if (used_threads_.insert(utid).second)
      sink_.thread(
          {utid, thread->second.upid, thread->second.tid, thread->second.name.value_or("")});
    return {upid, utid, 0};
  }

  void instant(ExportInstant instant) {
    sink_.instant(instant);
    ++counts_.instants;
  }

  const std::string& callsite_text(std::optional<std::int64_t> callsite) {
    auto [it, inserted] = callsites_.try_emplace(callsite.value_or(-1));
    if (inserted) it->second = advice_callsite(trace_.stack(callsite));
    return it->second;
  }

  // The counter of (process, device, kind), told to the sink with its first point, at 0.
  std::size_t counter_of(const storage::AllocationRow& a, const std::string& kind) {
    const auto [it, inserted] =
        counter_index_.try_emplace({a.upid, a.device, kind}, counters_.size());
    if (inserted) {
      Counter& counter = counters_.emplace_back();
      counter.track = {counters_.size() - 1, a.upid, a.device, kind,
                       fmt::format("device {} {} live bytes", a.device, kind)};
      sink_.counter(counter.track);
      sink_.counter_point(counter.track, a.alloc_ns, 0);
      ++counts_.counters;
    }
    return it->second;
  }

  void move_counter(std::size_t index, std::int64_t ns, std::int64_t delta) {
    Counter& counter = counters_[index];
    counter.bytes =
        delta >= 0 ? counter.bytes + static_cast<std::uint64_t>(delta)
                   : counter.bytes - std::min(counter.bytes, static_cast<std::uint64_t>(-delta));
    sink_.counter_point(counter.track, ns, counter.bytes);
  }

  void add_allocations() {
    // Counters move in each process's own sequence order. Allocations come in that order, one
    // process at a time; the frees wait in a heap, ordered by their sequence number, until an
    // allocation after them (or the process's end) lets them out. The heap holds what is live
    // at that moment, not the trace.
    struct PendingFree {
      std::uint64_t seq;
      std::int64_t ns;
      std::uint64_t size;
      std::size_t counter;
      bool operator>(const PendingFree& other) const { return seq > other.seq; }
    };
    std::priority_queue<PendingFree, std::vector<PendingFree>, std::greater<>> frees;
    const auto free_until = [&](std::uint64_t seq) {
      while (!frees.empty() && frees.top().seq < seq) {
        const PendingFree f = frees.top();
        frees.pop();
        move_counter(f.counter, f.ns, -static_cast<std::int64_t>(f.size));
      }
    };
    std::optional<std::int64_t> upid;
    trace_.for_each_allocation({}, [&](const storage::AllocationRecord& r) {
      const storage::AllocationRow& a = r.allocation;
      if (!exported(a.upid) || !options_.allocations.matches(a)) return;
      if (options_.level == MemoryLevel::kSegment && a.kind == storage::allocation_kind::kBlock)
        return;
      if (upid != a.upid) {
        free_until(UINT64_MAX);
        upid = a.upid;
      }
      include(a.alloc_ns);
      const std::string kind = trace_.kind_name(a.kind);
      if (r.failed()) {
        if (a.result == kOutOfMemoryResult) {
          instant({{a.upid, std::nullopt, 0},
                   fmt::format("OOM: {} {} {}", trace_.api_name(a.api), kind, advice_bytes(a.size)),
                   "oom",
                   a.alloc_ns,
                   {{"requested_bytes", static_cast<std::int64_t>(a.size)},
                    {"device", a.device},
                    {"callsite", callsite_text(a.alloc_callsite_id)}}});
        }
        return;
      }
      const std::size_t counter = counter_of(a, kind);
      free_until(a.alloc_seq);
      const auto size = static_cast<std::int64_t>(a.size);
      move_counter(counter, a.alloc_ns, size);
      if (r.free) {
        include(r.free->free_ns);
        frees.push({r.free->free_seq, r.free->free_ns, a.size, counter});
      }
      if (!options_.allocation_instants) return;
      std::vector<ExportArg> args{{"address", fmt::format("{:#x}", a.address)},
                                  {"size", size},
                                  {"device", a.device},
                                  {"callsite", callsite_text(a.alloc_callsite_id)}};
      instant({place(a.upid, a.alloc_utid), fmt::format("alloc {} {}", kind, advice_bytes(a.size)),
               "alloc", a.alloc_ns, args});
      if (r.free) {
        args.back() = {"callsite", callsite_text(r.free->free_callsite_id)};
        instant({place(a.upid, r.free->free_utid),
                 fmt::format("free {} {}", kind, advice_bytes(a.size)), "free", r.free->free_ns,
                 std::move(args)});
      }
    });
    free_until(UINT64_MAX);
  }

  void add_markers() {
    std::vector<storage::MarkerRecord> points, ranges;
    for (storage::MarkerRecord& m : trace_.markers()) {
      if (!exported(m.start.upid)) continue;
      include(m.start.start_ns);
      if (m.end) include(m.end->end_ns);
      const bool point =
          m.start.type == storage::kMarkerMark || (m.end && m.end->end_ns == m.start.start_ns);
      if (point)
        points.push_back(std::move(m));
      else
        ranges.push_back(std::move(m));
    }
    for (const storage::MarkerRecord& m : points) {
      std::vector<ExportArg> args{{"source", m.start.source}};
      if (m.start.domain) args.push_back({"domain", *m.start.domain});
      instant({place(m.start.upid, m.start.utid), m.start.name, std::string(m.start.type),
               m.start.start_ns, std::move(args)});
    }
    // Outer ranges first, so that each nests inside what is open on its track.
    std::sort(ranges.begin(), ranges.end(), [this](const auto& a, const auto& b) {
      return std::tuple(a.start.upid, a.start.start_ns, -end_of(a)) <
             std::tuple(b.start.upid, b.start.start_ns, -end_of(b));
    });
    // The ends of the slices open on each track, innermost last.
    std::map<std::pair<std::int64_t, std::int64_t>, std::vector<std::int64_t>> thread_tracks;
    std::map<std::int64_t, std::vector<std::vector<std::int64_t>>> lanes;  // by upid
    const auto fits = [](std::vector<std::int64_t>& open, std::int64_t start, std::int64_t end) {
      while (!open.empty() && open.back() <= start) open.pop_back();
      if (!open.empty() && end > open.back()) return false;
      open.push_back(end);
      return true;
    };
    for (const storage::MarkerRecord& m : ranges) {
      const std::int64_t start = m.start.start_ns, end = end_of(m);
      ExportPlace where = place(m.start.upid, m.start.utid);
      const bool on_thread =
          fits(thread_tracks[{m.start.upid, where.utid.value_or(-1)}], start, end);
      if (!on_thread) {
        std::vector<std::vector<std::int64_t>>& process_lanes = lanes[m.start.upid];
        std::size_t lane = 0;
        while (lane < process_lanes.size() && !fits(process_lanes[lane], start, end)) ++lane;
        if (lane == process_lanes.size()) {
          process_lanes.push_back({end});
          sink_.lane(m.start.upid, static_cast<int>(lane + 1));
        }
        where = {m.start.upid, std::nullopt, static_cast<int>(lane + 1)};
      }
      std::vector<ExportArg> args{{"source", m.start.source}};
      if (m.start.domain) args.push_back({"domain", *m.start.domain});
      if (!m.end) args.push_back({"ended", "never: drawn to the trace's end"});
      sink_.slice({where, m.start.name, "range", start, end, std::move(args)});
      ++counts_.slices;
    }
  }

  std::int64_t end_of(const storage::MarkerRecord& m) const {
    return m.end ? m.end->end_ns : end_ns_;
  }

  struct Counter {
    ExportCounter track;
    std::uint64_t bytes = 0;
  };

  const storage::TraceReader& trace_;
  const ExportOptions& options_;
  ExportSink& sink_;
  ExportCounts counts_;
  std::int64_t end_ns_ = 0;
  bool seen_ = false;
  std::unordered_map<std::int64_t, storage::ThreadRecord> threads_;
  std::set<std::int64_t> used_threads_;
  std::set<std::int64_t> exported_;  // the selected processes the trace has
  std::unordered_map<std::int64_t, std::string> callsites_;
  std::map<std::tuple<std::int64_t, int, std::string>, std::size_t> counter_index_;
  std::vector<Counter> counters_;
};

}  // namespace

ExportCounts export_timeline(const storage::TraceReader& trace, const ExportOptions& options,
                             ExportSink& sink) {
  return TimelineBuilder(trace, options, sink).build();
}

}  // namespace vramtrace::analysis
