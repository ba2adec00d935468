#include "analysis/reports/leak_growth.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>
#include <tuple>

namespace vramtrace::analysis {

bool is_occurrence_of(std::string_view name, std::string_view marker) {
  if (!name.starts_with(marker)) return false;
  name.remove_prefix(marker.size());
  if (name.empty()) return true;
  // "<marker> <n>": vramtrace.iteration() numbers each entry.
  if (name.size() < 2 || name.front() != ' ') return false;
  name.remove_prefix(1);
  return name.find_first_not_of("0123456789") == std::string_view::npos;
}

std::string describe_iterations(const ProcessIterations& process) {
  const std::string count =
      std::to_string(process.iterations) + (process.iterations == 1 ? " iteration" : " iterations");
  if (process.marker.empty()) return count + " found from its backward passes";
  return count + " of '" + process.marker + "'";
}

namespace {

// A marker's name without the number vramtrace.iteration() appends ("iteration 3": "iteration").
std::string_view unnumbered(std::string_view name) {
  const std::size_t space = name.rfind(' ');
  if (space == std::string_view::npos || space + 1 == name.size()) return name;
  const std::string_view number = name.substr(space + 1);
  if (number.find_first_not_of("0123456789") != std::string_view::npos) return name;
  return name.substr(0, space);
}

// Why there are no iterations, and what would make some: the markers that do repeat in the
// selected processes, and how to add one.
std::string no_iterations_message(const storage::TraceReader& trace, const std::string& marker,
                                  const LeakReportOptions& options) {
  std::map<std::pair<std::int64_t, std::string>, std::size_t> occurrences;
  for (const storage::MarkerRecord& record : trace.markers()) {
    if (record.start.source == storage::kMarkerFromShim ||
        !is_selected(options.processes, record.start.upid)) {
      continue;
    }
    ++occurrences[{record.start.upid, std::string(unnumbered(record.start.name))}];
  }
  std::set<std::string> repeating;
  for (const auto& [key, count] : occurrences) {
    if (count >= 2) repeating.insert(key.second);
  }
  std::string message = "no selected process has the marker '" + marker +
                        "' twice: growth compares successive iterations. ";
  if (repeating.empty()) {
    message += "No marker repeats in this trace";
  } else {
    message += "Markers that repeat: ";
    std::size_t listed = 0;
    for (const std::string& name : repeating) {
      if (listed == 5) {
        message += ", ...";
        break;
      }
      message += (listed++ == 0 ? "'" : ", '") + name + "'";
    }
  }
  return message +
         ". To mark the iterations of a training loop, put its body in `with "
         "vramtrace.iteration():` (Python; the marker is 'iteration'), or in an NVTX range of one "
         "name";
}

// Per selected process, where each iteration ends: the occurrences of `marker`, or with no
// marker named, those of "iteration" where the process has two, else the ends of its training
// loop's iterations as its backward passes and steps tell them.
struct IterationPoints {
  std::vector<std::uint64_t> seqs;  // where each iteration ends
  std::string marker;               // empty: found from the backward passes
  std::uint64_t count = 0;          // iterations: occurrences of the marker, or backward passes
};

std::map<std::int64_t, IterationPoints> iteration_points(const storage::TraceReader& trace,
                                                         const storage::TimeIndex& index,
                                                         const std::string& marker,
                                                         const LeakReportOptions& options,
                                                         TrainingPhases* shared_phases) {
  const std::string name = marker.empty() ? std::string(kIterationMarker) : marker;
  std::map<std::int64_t, IterationPoints> points;
  for (const storage::MarkerRecord& record : trace.markers()) {
    if (!is_occurrence_of(record.start.name, name) ||
        !is_selected(options.processes, record.start.upid))
      continue;
    IterationPoints& found = points[record.start.upid];
    found.seqs.push_back(record.end ? record.end->end_seq : record.start.start_seq);
    found.marker = name;
    found.count = found.seqs.size();
  }
  if (!marker.empty()) return points;
  std::optional<TrainingPhases> own_phases;
  TrainingPhases* phases = shared_phases ? shared_phases : &own_phases.emplace(trace);
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  for (const storage::ProcessRecord& process : trace.processes()) {
    const std::int64_t upid = process.start.upid;
    if (!is_selected(options.processes, upid)) continue;
    if (!with_allocator.contains(upid) && !phases->ran_backward(upid)) continue;
    if (auto it = points.find(upid); it != points.end() && it->second.seqs.size() >= 2) continue;
    phases->find(upid);
    if (phases->iteration_ends().size() < 2) continue;
    points[upid] = {phases->iteration_ends(), "", phases->backward_starts().size()};
  }
  return points;
}

}  // namespace

LeakGrowth build_leak_growth(const storage::TraceReader& trace, const storage::TimeIndex& index,
                             const std::string& marker, std::size_t max_iterations,
                             const LeakReportOptions& options, TrainingPhases* phases) {
  LeakGrowth growth;
  growth.marker = marker;
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& process : trace.processes())
    pids[process.start.upid] = process.start.pid;
  std::map<std::int64_t, std::optional<int>> ranks;
  for (const storage::ProcessRecord& process : trace.processes())
    ranks[process.start.upid] = process.start.rank;
  // Each iteration's end, per process, in order.
  auto points = iteration_points(trace, index, marker, options, phases);
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  bool allocator_events = false;
  for (const auto& [upid, seqs] : points) allocator_events |= with_allocator.contains(upid);
  const bool block_level = options.level.value_or(LeakLevel::kBlock) == LeakLevel::kBlock;
  growth.level = block_level && (options.level || allocator_events) ? "block" : "segment";
  const std::unordered_set<std::int64_t> segments = index.allocator_segments();
  const std::size_t samples = std::max<std::size_t>(max_iterations, 2);

  for (auto& [upid, found] : points) {
    std::vector<std::uint64_t>& seqs = found.seqs;
    std::sort(seqs.begin(), seqs.end());
    if (seqs.size() < 2) continue;
    ProcessIterations& process = growth.processes.emplace_back();
    process.upid = upid;
    process.pid = pids[upid];
    process.rank = ranks[upid];
    process.iterations = found.count;
    process.marker = found.marker;
    const std::size_t taken = std::min(samples, seqs.size());
    for (std::size_t i = 0; i < taken; ++i) {
      const std::size_t which = i * (seqs.size() - 1) / (taken - 1);
      process.sampled.push_back(which);
      process.sampled_seq.push_back(seqs[which]);
    }
    // (callsite, kind) -> bytes at each sampled iteration.
    std::map<std::pair<std::optional<std::int64_t>, int>, GrowingGroup> series;
    for (std::size_t i = 0; i < taken; ++i) {
      LiveGrouper grouper(block_level, segments);
      index.for_each_live_at(
          upid, process.sampled_seq[i],
          [&](const storage::AllocationRecord& record) {
            if (options.allocations.matches(record.allocation)) grouper.add(record.allocation);
          },
          storage::AllocationColumns::kLiveByStackAndSegment);
      const LiveGroups live = grouper.take();
      for (const LeakGroup& group : live.groups) {
        GrowingGroup& entry = series[{group.callsite_id, group.kind}];
        entry.bytes.resize(taken, 0);
        entry.counts.resize(taken, 0);
        entry.bytes[i] = group.bytes;
        entry.counts[i] = group.count;
        if (i + 1 == taken) entry.group = group;
      }
    }
    // Still rising over the later half, in half its steps at least: a cache that fills in the
    // first iterations and then holds (torch's pinned-memory cache, DDP's rebuilt buckets,
    // lazily made workspaces) is no leak, and neither is a tensor that once lands in a larger
    // free block than before (the allocator hands out up to 1 MiB more than asked).
    const std::size_t middle = (taken - 1) / 2;
    const std::size_t later_steps = taken - 1 - middle;
    const double span = static_cast<double>(process.sampled.back() - process.sampled.front());
    for (auto& [key, entry] : series) {
      entry.bytes.resize(taken, 0);
      entry.counts.resize(taken, 0);
      std::size_t rises = 0;
      for (std::size_t i = middle; i + 1 < taken; ++i) rises += entry.bytes[i + 1] > entry.bytes[i];
      const bool rising =
          std::is_sorted(entry.bytes.begin(), entry.bytes.end()) && 2 * rises >= later_steps;
      if (!rising) continue;
      entry.upid = upid;
      entry.pid = process.pid;
      entry.group.callsite_id = key.first;
      entry.group.kind = key.second;
      entry.bytes_per_iteration =
          static_cast<double>(entry.bytes.back() - entry.bytes.front()) / span;
      growth.growing.push_back(std::move(entry));
    }
  }
  if (growth.processes.empty()) {
    if (!marker.empty()) throw BadMoment(no_iterations_message(trace, marker, options));
    throw BadMoment(
        "no selected process has iterations to compare: none has the marker '" +
        std::string(kIterationMarker) +
        "' twice, nor two backward passes of PyTorch's autograd (a training loop). To mark the "
        "iterations of any loop, put its body in `with vramtrace.iteration():` (Python), or in "
        "an NVTX range of one name, and give that name");
  }
  for (GrowingGroup& entry : growth.growing) {
    std::vector<LeakGroup> one{entry.group};
    finish_groups(trace, &one);
    entry.group = std::move(one.front());
  }
  std::sort(growth.growing.begin(), growth.growing.end(),
            [](const GrowingGroup& a, const GrowingGroup& b) {
              const auto key = [](const GrowingGroup& g) {
                return std::tuple(-g.bytes_per_iteration, g.upid, !g.group.callsite_id.has_value(),
                                  g.group.callsite_id.value_or(0), g.group.kind);
              };
              return key(a) < key(b);
            });
  return growth;
}

}  // namespace vramtrace::analysis
