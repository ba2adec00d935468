#include "viewer/model/trace_queries.h"

#include <algorithm>
#include <map>
#include <set>

#include "analysis/reports/oom_report.h"
#include "analysis/scope/process_chains.h"

namespace vramtrace::viewer {
namespace {

std::map<std::int64_t, std::uint32_t> pids_by_upid(const storage::TraceReader& trace) {
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& process : trace.processes())
    pids[process.start.upid] = process.start.pid;
  return pids;
}

}  // namespace

TraceOverview load_overview(const storage::TraceReader& trace, const storage::TimeIndex& index) {
  TraceOverview overview;
  overview.path = trace.path().string();
  overview.complete = trace.complete();
  overview.index_note = index.note();
  overview.timeline =
      analysis::build_timeline(trace, index, analysis::kMaxTimelineBuckets, std::nullopt);

  const std::map<std::int64_t, std::uint32_t> pids = pids_by_upid(trace);
  for (const storage::MarkerRecord& record : trace.markers()) {
    TimelineMarker marker;
    marker.name = record.start.name;
    marker.pid = pids.at(record.start.upid);
    marker.range = record.start.type == storage::kMarkerRange;
    marker.start_ns = record.start.start_ns;
    marker.end_ns = record.end     ? record.end->end_ns
                    : marker.range ? std::max(overview.timeline.end_ns, marker.start_ns)
                                   : marker.start_ns;
    marker.depth = record.start.depth;
    marker.color = record.start.color;
    overview.markers.push_back(std::move(marker));
  }
  std::stable_sort(
      overview.markers.begin(), overview.markers.end(),
      [](const TimelineMarker& a, const TimelineMarker& b) { return a.start_ns < b.start_ns; });

  // The processes that recorded GPU memory, as the reports speak of them; all, when none did.
  const std::vector<analysis::ProcessChain> chains =
      analysis::chain_processes(trace.processes(), trace.upids_with_gpu_events());
  const analysis::GpuProcesses gpu = analysis::gpu_processes(chains);
  std::vector<const storage::ProcessRecord*> listed;
  for (const analysis::ProcessChain* chain : gpu.gpu)
    for (const storage::ProcessRecord& image : chain->images)
      if (std::find(chain->gpu_images.begin(), chain->gpu_images.end(), image.start.upid) !=
          chain->gpu_images.end())
        listed.push_back(&image);
  if (listed.empty()) {
    for (const analysis::ProcessChain& chain : chains)
      for (const storage::ProcessRecord& image : chain.images) listed.push_back(&image);
  } else {
    overview.other_processes = gpu.others;
  }
  std::sort(listed.begin(), listed.end(),
            [](const auto* a, const auto* b) { return a->start.upid < b->start.upid; });

  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  for (const storage::ProcessRecord* listed_process : listed) {
    const storage::ProcessRecord& process = *listed_process;
    MapProcess& added = overview.processes.emplace_back();
    added.upid = process.start.upid;
    added.pid = process.start.pid;
    added.name = analysis::image_name(process);
    added.allocator_events = with_allocator.contains(process.start.upid);
    std::set<int> devices;
    for (const analysis::TimelineSeries& series : overview.timeline.series)
      if (series.upid == added.upid) devices.insert(series.device);
    added.devices.assign(devices.begin(), devices.end());
  }

  // analysis's own choice for `frag --at peak` without --pid.
  try {
    analysis::MomentSpec peak;
    peak.kind = analysis::MomentSpec::Kind::kPeak;
    peak.text = "peak";
    const analysis::FragmentationReport at_peak =
        analysis::build_fragmentation_report(trace, index, peak, std::nullopt);
    overview.map_upid = at_peak.at.upid;
    overview.map_pid = at_peak.at.pid;
  } catch (const analysis::BadMoment&) {
    // No device memory was ever in use: no map to show.
  }
  return overview;
}

std::vector<OomFlag> find_oom_flags(const storage::TraceReader& trace) {
  const std::map<std::int64_t, std::uint32_t> pids = pids_by_upid(trace);
  std::vector<OomFlag> ooms;
  for (const storage::AllocationRecord& record : analysis::find_out_of_memory_failures(trace)) {
    const storage::AllocationRow& a = record.allocation;
    ooms.push_back(
        {pids.at(a.upid), a.upid, a.alloc_ns, a.device, a.size, trace.kind_name(a.kind)});
  }
  std::stable_sort(ooms.begin(), ooms.end(),
                   [](const OomFlag& a, const OomFlag& b) { return a.time_ns < b.time_ns; });
  return ooms;
}

analysis::MomentSpec moment_at(std::int64_t ns) {
  analysis::MomentSpec moment;
  moment.kind = analysis::MomentSpec::Kind::kTime;
  moment.ns = ns;
  moment.text = std::to_string(ns);
  return moment;
}

analysis::LeakReport leaks_in(const storage::TraceReader& trace, const storage::TimeIndex& index,
                              const std::optional<TimeRange>& range) {
  if (!range) return analysis::build_leak_report_at(trace, index, {}, std::nullopt);
  return analysis::build_leak_report_at(trace, index, moment_at(range->to_ns),
                                        moment_at(range->from_ns));
}

analysis::LeakReport live_at_peak(const storage::TraceReader& trace,
                                  const storage::TimeIndex& index) {
  analysis::MomentSpec peak;
  peak.kind = analysis::MomentSpec::Kind::kPeak;
  peak.text = "peak";
  return analysis::build_leak_report_at(trace, index, peak, std::nullopt);
}

std::vector<analysis::LeakGroup> live_at(const storage::TraceReader& trace,
                                         const storage::TimeIndex& index, std::int64_t ns,
                                         std::size_t top) {
  std::vector<analysis::LeakGroup> groups =
      analysis::build_leak_report_at(trace, index, moment_at(ns), std::nullopt).groups;
  if (groups.size() > top) groups.resize(top);
  return groups;
}

analysis::FragmentationReport fragmentation_at(const storage::TraceReader& trace,
                                               const storage::TimeIndex& index,
                                               const analysis::MomentSpec& moment,
                                               std::int64_t upid, std::optional<int> device) {
  return analysis::build_fragmentation_report(trace, index, moment, std::set<std::int64_t>{upid},
                                              device);
}

}  // namespace vramtrace::viewer
