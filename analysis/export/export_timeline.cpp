#include "analysis/export/export_timeline.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "analysis/advice.h"
#include "analysis/oom_report.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

std::string file_name(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class TimelineBuilder {
 public:
  TimelineBuilder(const storage::TraceReader& trace, const ExportOptions& options)
      : trace_(trace), options_(options) {
    for (const storage::ThreadRecord& thread : trace.threads())
      threads_.emplace(thread.utid, thread);
  }

  ExportTimeline build() {
    for (const storage::ProcessRecord& p : trace_.processes()) {
      if (!is_selected(options_.processes, p.start.upid)) continue;
      exported_.insert(p.start.upid);
      timeline_.processes.push_back(
          {p.start.upid, p.start.pid, file_name(p.start.exe), p.start.argv, 0});
      include(p.start.start_ns);
      if (p.end.end_ns) include(*p.end.end_ns);
    }
    add_allocations();
    add_markers();
    for (auto& [key, counter] : counters_) timeline_.counters.push_back(std::move(counter));
    for (const std::int64_t utid : used_threads_) {
      const storage::ThreadRecord& thread = threads_.at(utid);
      timeline_.threads.push_back({utid, thread.upid, thread.tid, thread.name.value_or("")});
    }
    std::stable_sort(timeline_.slices.begin(), timeline_.slices.end(),
                     [](const ExportSlice& a, const ExportSlice& b) {
                       return std::tuple(a.start_ns, -a.end_ns) < std::tuple(b.start_ns, -b.end_ns);
                     });
    std::stable_sort(timeline_.instants.begin(), timeline_.instants.end(),
                     [](const ExportInstant& a, const ExportInstant& b) { return a.ns < b.ns; });
    return std::move(timeline_);
  }

 private:
  void include(std::int64_t ns) {
    timeline_.start_ns = seen_ ? std::min(timeline_.start_ns, ns) : ns;
    timeline_.end_ns = seen_ ? std::max(timeline_.end_ns, ns) : ns;
    seen_ = true;
  }

  // A selected process of the trace: a row of a process the trace does not have (a damaged or
  // hand-written file) has no track to go on, and is left out.
  bool exported(std::int64_t upid) const { return exported_.contains(upid); }

  // A thread the trace knows draws on its own track; an unknown one on its process's.
  ExportPlace place(std::int64_t upid, std::int64_t utid) {
    const auto thread = threads_.find(utid);
    if (thread == threads_.end() || thread->second.upid != upid) return {upid, std::nullopt, 0};
    used_threads_.insert(utid);
    return {upid, utid, 0};
  }

  const std::string& callsite_text(std::optional<std::int64_t> callsite) {
    auto [it, inserted] = callsites_.try_emplace(callsite.value_or(-1));
    if (inserted) it->second = advice_callsite(trace_.stack(callsite));
    return it->second;
  }

  void add_allocations() {
    struct Event {
      std::uint64_t seq;
      std::int64_t ns;
      std::int64_t delta;
      ExportCounter* counter;
    };
    std::vector<Event> events;
    // Counters move in each process's own sequence order: one process at a time.
    const auto sweep = [&] {
      std::sort(events.begin(), events.end(),
                [](const Event& a, const Event& b) { return a.seq < b.seq; });
      for (const Event& e : events) {
        const std::uint64_t now = e.counter->points.back().bytes;
        const std::uint64_t bytes = e.delta >= 0
                                        ? now + static_cast<std::uint64_t>(e.delta)
                                        : now - std::min(now, static_cast<std::uint64_t>(-e.delta));
        e.counter->points.push_back({e.ns, bytes});
      }
      events.clear();
    };
    std::optional<std::int64_t> upid;
    trace_.for_each_allocation({}, [&](const storage::AllocationRecord& r) {
      const storage::AllocationRow& a = r.allocation;
      if (!exported(a.upid) || !options_.allocations.matches(a)) return;
      if (options_.level == MemoryLevel::kSegment && a.kind == storage::allocation_kind::kBlock)
        return;
      if (upid != a.upid) {
        sweep();
        upid = a.upid;
      }
      include(a.alloc_ns);
      const std::string kind = trace_.kind_name(a.kind);
      if (r.failed()) {
        if (a.result == kOutOfMemoryResult) {
          timeline_.instants.push_back(
              {{a.upid, std::nullopt, 0},
               fmt::format("OOM: {} {} {}", trace_.api_name(a.api), kind, advice_bytes(a.size)),
               "oom",
               a.alloc_ns,
               {{"requested_bytes", static_cast<std::int64_t>(a.size)},
                {"device", a.device},
                {"callsite", callsite_text(a.alloc_callsite_id)}}});
        }
        return;
      }
      ExportCounter& counter = counters_[{a.upid, a.device, kind}];
      if (counter.points.empty()) {
        counter = {a.upid,
                   a.device,
                   kind,
                   fmt::format("device {} {} live bytes", a.device, kind),
                   {{a.alloc_ns, 0}}};
      }
      const auto size = static_cast<std::int64_t>(a.size);
      events.push_back({a.alloc_seq, a.alloc_ns, size, &counter});
      if (r.free) {
        include(r.free->free_ns);
        events.push_back({r.free->free_seq, r.free->free_ns, -size, &counter});
      }
      if (!options_.allocation_instants) return;
      std::vector<ExportArg> args{{"address", fmt::format("{:#x}", a.address)},
                                  {"size", size},
                                  {"device", a.device},
                                  {"callsite", callsite_text(a.alloc_callsite_id)}};
      timeline_.instants.push_back({place(a.upid, a.alloc_utid),
                                    fmt::format("alloc {} {}", kind, advice_bytes(a.size)), "alloc",
                                    a.alloc_ns, args});
      if (r.free) {
        args.back() = {"callsite", callsite_text(r.free->free_callsite_id)};
        timeline_.instants.push_back({place(a.upid, r.free->free_utid),
                                      fmt::format("free {} {}", kind, advice_bytes(a.size)), "free",
                                      r.free->free_ns, std::move(args)});
      }
    });
    sweep();
  }

  void add_markers() {
    std::vector<storage::MarkerRecord> ranges;
    for (storage::MarkerRecord& m : trace_.markers()) {
      if (!exported(m.start.upid)) continue;
      include(m.start.start_ns);
      if (m.end) include(m.end->end_ns);
      std::vector<ExportArg> args{{"source", m.start.source}};
      if (m.start.domain) args.push_back({"domain", *m.start.domain});
      const bool point =
          m.start.type == storage::kMarkerMark || (m.end && m.end->end_ns == m.start.start_ns);
      if (point) {
        timeline_.instants.push_back({place(m.start.upid, m.start.utid), m.start.name,
                                      std::string(m.start.type), m.start.start_ns,
                                      std::move(args)});
      } else {
        ranges.push_back(std::move(m));
      }
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
        if (lane == process_lanes.size()) process_lanes.push_back({end});
        where = {m.start.upid, std::nullopt, static_cast<int>(lane + 1)};
      }
      std::vector<ExportArg> args{{"source", m.start.source}};
      if (m.start.domain) args.push_back({"domain", *m.start.domain});
      if (!m.end) args.push_back({"ended", "never: drawn to the trace's end"});
      timeline_.slices.push_back({where, m.start.name, "range", start, end, std::move(args)});
    }
    for (ExportProcess& process : timeline_.processes)
      process.lanes = static_cast<int>(lanes[process.upid].size());
  }

  std::int64_t end_of(const storage::MarkerRecord& m) const {
    return m.end ? m.end->end_ns : timeline_.end_ns;
  }

  const storage::TraceReader& trace_;
  const ExportOptions& options_;
  ExportTimeline timeline_;
  bool seen_ = false;
  std::unordered_map<std::int64_t, storage::ThreadRecord> threads_;
  std::set<std::int64_t> used_threads_;
  std::set<std::int64_t> exported_;  // the selected processes the trace has
  std::unordered_map<std::int64_t, std::string> callsites_;
  std::map<std::tuple<std::int64_t, int, std::string>, ExportCounter> counters_;
};

}  // namespace

ExportTimeline build_export_timeline(const storage::TraceReader& trace,
                                     const ExportOptions& options) {
  return TimelineBuilder(trace, options).build();
}

}  // namespace vramtrace::analysis
