#include "analysis/reports/trace_advice.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "analysis/allocator/allocator_state.h"
#include "analysis/scope/process_sweep.h"
#include "analysis/time/device_peaks.h"
#include "analysis/time/process_history.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

bool name_has(std::string_view name, std::initializer_list<std::string_view> words) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view word) { return lower.find(word) != std::string::npos; });
}

bool is_forward(const storage::MarkerRecord& m) {
  return name_has(m.start.name, {"forward"});
}
bool is_evaluation(const storage::MarkerRecord& m) {
  return name_has(m.start.name, {"eval", "valid", "infer", "test"});
}

// A range as an interval of the process's sequence; one never ended runs to the end.
struct Interval {
  std::uint64_t start, end;
  bool contains(std::uint64_t seq) const { return start <= seq && seq < end; }
};
Interval interval(const storage::MarkerRecord& m) {
  return {m.start.start_seq, m.end ? m.end->end_seq : UINT64_MAX};
}

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// What every rule of one process reads.
struct ProcessFacts {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::vector<storage::MarkerRecord> ranges;  // start_seq order
  std::vector<RangeLevels> levels;            // ranges[i]'s in levels[i]
  SeqPeak pinned;
  std::uint64_t pinned_allocations = 0;
  // Processes with tensors: where the live sets at their peaks come from.
  const ProcessHistory* history = nullptr;
  mutable std::map<std::uint64_t, std::vector<storage::AllocationRecord>> live_sets;

  // The allocations live just after event `seq`, read once.
  const std::vector<storage::AllocationRecord>& live_at(std::uint64_t seq) const {
    auto [it, inserted] = live_sets.try_emplace(seq);
    if (inserted) it->second = history->live_at(upid, seq);
    return it->second;
  }
  AllocatorState allocator_at(std::uint64_t seq, int device) const {
    return allocator_layout(live_at(seq), seq, history->allocator_segments(), device);
  }
};

Advice expandable_segments(const ProcessFacts& p, int device, const AllocatorState& state) {
  return {kAdviceExpandableSegments,
          fmt::format(
              "pid {}, device {}: at the peak of live tensors, the allocator's segments held {} "
              "in {}, of which {} ({:.0f}%) was cached between live tensors in gaps of at most {} "
              "(external fragmentation {:.2f}): reserved, but of no use to a larger tensor. Set "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, so that the allocator grows a "
              "segment in place instead of caching many; or max_split_size_mb:<MB>, so that "
              "large cached blocks are not split for small requests.",
              p.pid, device, advice_bytes(state.segment_bytes),
              state.segments.size() == 1 ? "1 segment"
                                         : fmt::format("{} segments", state.segments.size()),
              advice_bytes(state.cached_bytes), percent(state.cached_bytes, state.segment_bytes),
              advice_bytes(state.largest_free_gap), state.external_fragmentation),
          {{"pid", p.pid},
           {"device", static_cast<std::uint64_t>(device)},
           {"segment_bytes", state.segment_bytes},
           {"cached_bytes", state.cached_bytes},
           {"largest_free_gap", state.largest_free_gap},
           {"segments", state.segments.size()}},
          state.external_fragmentation};
}

void advise_fragmentation(const ProcessFacts& p, const DevicePeak& peak,
                          std::vector<Advice>* advice) {
  const AllocatorState state = p.allocator_at(peak.at_seq, peak.device);
  const bool expandable = std::any_of(state.segments.begin(), state.segments.end(),
                                      [](const SegmentState& s) { return s.expandable; });
  if (!expandable && state.segment_bytes != 0 && state.cached_bytes * 4 >= state.segment_bytes &&
      state.external_fragmentation >= 0.5)
    advice->push_back(expandable_segments(p, peak.device, state));
}

void advise_empty_cache(const ProcessFacts& p, const DevicePeak& peak,
                        std::uint64_t other_processes, std::vector<Advice>* advice) {
  const AllocatorState state = p.allocator_at(peak.at_seq, peak.device);
  if (state.releasable_bytes == 0) return;
  std::uint64_t outside = 0;  // device memory live at the peak that is not the allocator's
  for (const auto& r : p.live_at(peak.at_seq)) {
    const storage::AllocationRow& a = r.allocation;
    if (a.device == peak.device && a.kind != kind::kBlock && occupies_device_memory(a.kind) &&
        !p.history->allocator_segments().contains(a.id) && live_after(r, peak.at_seq))
      outside += a.size;
  }
  if (outside == 0 && other_processes == 0) return;
  advice->push_back(
      {kAdviceEmptyCache,
       fmt::format(
           "pid {}, device {}: at the device's peak ({}), PyTorch's allocator held {} in "
           "segments with no live tensor, while {} on the device was not the allocator's "
           "(and {} other traced processes used the device). torch.cuda.empty_cache() before "
           "that other memory is allocated returns the unused segments to the driver; it frees "
           "no live tensor, and PyTorch's own requests reuse the cache without it.",
           p.pid, peak.device, advice_bytes(peak.bytes), advice_bytes(state.releasable_bytes),
           advice_bytes(outside), other_processes),
       {{"pid", p.pid},
        {"device", static_cast<std::uint64_t>(peak.device)},
        {"device_peak_bytes", peak.bytes},
        {"releasable_bytes", state.releasable_bytes},
        {"outside_allocator_bytes", outside},
        {"other_processes", other_processes}},
       std::nullopt});
}

// Does any frame of these stacks run through autocast or torch.amp?
bool mixed_precision_seen(const storage::TraceReader& trace,
                          const std::set<std::int64_t>& callsites) {
  for (const std::int64_t id : callsites) {
    for (const storage::StackFrame& f : trace.stack(id)) {
      if ((f.function && name_has(*f.function, {"autocast", "gradscaler"})) ||
          (f.file && name_has(*f.file, {"/amp/", "autocast"})))
        return true;
    }
  }
  return false;
}

void advise_live_tensors(const storage::TraceReader& trace, const ProcessFacts& p,
                         const DevicePeak& peak, std::vector<Advice>* advice) {
  if (peak.bytes == 0) return;
  // Every rule here starts its evidence with the process, the device and the peak.
  const auto fire = [&](const char* id, std::string text,
                        std::vector<std::pair<std::string, std::uint64_t>> numbers) {
    std::vector<std::pair<std::string, std::uint64_t>> evidence{
        {"pid", p.pid},
        {"device", static_cast<std::uint64_t>(peak.device)},
        {"peak_live_block_bytes", peak.bytes}};
    evidence.insert(evidence.end(), numbers.begin(), numbers.end());
    advice->push_back({id, std::move(text), std::move(evidence), std::nullopt});
  };
  bool activations = false;

  std::vector<Interval> forward;
  for (const auto& m : p.ranges)
    if (is_forward(m)) forward.push_back(interval(m));
  std::uint64_t forward_bytes = 0, forward_blocks = 0;
  std::set<std::int64_t> live_callsites;
  constexpr std::size_t kStacksChecked = 256;  // enough to see autocast, few enough to be quick
  for (const auto& r : p.live_at(peak.at_seq)) {
    const storage::AllocationRow& a = r.allocation;
    if (a.kind != kind::kBlock || a.device != peak.device || !live_after(r, peak.at_seq)) continue;
    if (a.alloc_callsite_id && live_callsites.size() < kStacksChecked)
      live_callsites.insert(*a.alloc_callsite_id);
    if (std::any_of(forward.begin(), forward.end(),
                    [&](const Interval& f) { return f.contains(a.alloc_seq); })) {
      forward_bytes += a.size;
      forward_blocks += 1;
    }
  }
  if (forward_bytes > 0 && forward_bytes * 4 >= peak.bytes) {
    activations = true;
    fire(kAdviceActivationCheckpointing,
         fmt::format("pid {}, device {}: at the peak of live tensors ({}), {} ({:.0f}%) in {} "
                     "blocks had been allocated inside a 'forward' range and were still held: "
                     "activations kept for the backward pass. Activation checkpointing "
                     "(torch.utils.checkpoint) keeps fewer of them and recomputes the rest.",
                     p.pid, peak.device, advice_bytes(peak.bytes), advice_bytes(forward_bytes),
                     percent(forward_bytes, peak.bytes), forward_blocks),
         {{"forward_bytes", forward_bytes}, {"forward_blocks", forward_blocks}});
  }

  for (std::size_t i = 0; i < p.ranges.size(); ++i) {
    const storage::MarkerRecord& m = p.ranges[i];
    if (m.start.depth != 0 || is_evaluation(m) || !interval(m).contains(peak.at_seq)) continue;
    const auto at_start = p.levels[i].base_by_device.find(peak.device);
    const std::uint64_t base = at_start == p.levels[i].base_by_device.end() ? 0 : at_start->second;
    const std::uint64_t transient = peak.bytes > base ? peak.bytes - base : 0;
    if (transient * 2 < peak.bytes) break;
    activations = true;
    fire(kAdviceMicroBatches,
         fmt::format("pid {}, device {}: the peak of live tensors ({}) came inside range '{}', "
                     "{} of it ({:.0f}%) allocated since the range began with {} live: memory "
                     "that grows with the batch. Smaller micro-batches with gradient "
                     "accumulation (several backward passes per optimizer step) lower it in "
                     "proportion.",
                     p.pid, peak.device, advice_bytes(peak.bytes), m.start.name,
                     advice_bytes(transient), percent(transient, peak.bytes), advice_bytes(base)),
         {{"bytes_at_range_start", base}, {"grown_in_range_bytes", transient}});
    break;
  }

  if (activations && !mixed_precision_seen(trace, live_callsites)) {
    fire(kAdviceMixedPrecision,
         fmt::format("pid {}, device {}: the peak of live tensors ({}) is made of activations "
                     "or batch-sized memory (above), and none of the {} stacks of the tensors "
                     "live then runs through torch.autocast or torch.amp. If training runs in "
                     "float32, mixed precision (torch.autocast with bfloat16 or float16) "
                     "halves the bytes of activations.",
                     p.pid, peak.device, advice_bytes(peak.bytes), live_callsites.size()),
         {{"stacks_checked", live_callsites.size()}});
  }
}

void advise_evaluation(const ProcessFacts& p, std::vector<Advice>* advice) {
  const storage::MarkerRecord* evaluation = nullptr;
  const storage::MarkerRecord* training = nullptr;
  std::uint64_t evaluation_growth = 0, training_growth = 0;
  for (std::size_t i = 0; i < p.ranges.size(); ++i) {
    const storage::MarkerRecord& m = p.ranges[i];
    const std::uint64_t growth = p.levels[i].growth();
    if (is_evaluation(m)) {
      if (growth > evaluation_growth || !evaluation) evaluation = &m;
      evaluation_growth = std::max(evaluation_growth, growth);
    } else if (m.start.depth == 0) {
      if (growth > training_growth || !training) training = &m;
      training_growth = std::max(training_growth, growth);
    }
  }
  if (!evaluation || !training || evaluation_growth == 0 || training_growth == 0 ||
      evaluation_growth * 2 < training_growth)
    return;
  advice->push_back(
      {kAdviceNoGradInEvaluation,
       fmt::format("pid {}: evaluation range '{}' grew live tensors by {}, {:.0f}% of what "
                   "training range '{}' grew them by ({}). Under torch.no_grad() (or "
                   "torch.inference_mode()) evaluation keeps no activations for a backward "
                   "pass and needs far less than training; run evaluation under it.",
                   p.pid, evaluation->start.name, advice_bytes(evaluation_growth),
                   percent(evaluation_growth, training_growth), training->start.name,
                   advice_bytes(training_growth)),
       {{"pid", p.pid},
        {"evaluation_growth_bytes", evaluation_growth},
        {"training_growth_bytes", training_growth}},
       std::nullopt});
}

void advise_pinned(const ProcessFacts& p, std::vector<Advice>* advice) {
  if (p.pinned.bytes < kPinnedMemoryAdviceBytes) return;
  advice->push_back(
      {kAdvicePinnedMemory,
       fmt::format("pid {}: {} of pinned (page-locked) host memory was held at once, in {} "
                   "pinned allocations over the run. Pinned memory cannot be swapped and is "
                   "taken from the host's RAM for every process; limit it: fewer DataLoader "
                   "workers or a lower prefetch_factor with pin_memory=True, pinned staging "
                   "buffers reused rather than allocated per batch, or pin_memory=False.",
                   p.pid, advice_bytes(p.pinned.bytes), p.pinned_allocations),
       {{"pid", p.pid},
        {"pinned_peak_bytes", p.pinned.bytes},
        {"pinned_allocations", p.pinned_allocations}},
       std::nullopt});
}

}  // namespace

std::vector<Advice> build_trace_advice(const storage::TraceReader& trace,
                                       const ProcessSelection& processes, const TracePeaks* peaks) {
  std::vector<Advice> advice;
  const TracePeaks found = peaks != nullptr ? TracePeaks{} : find_trace_peaks(trace, processes);
  const std::vector<DevicePeak>& device_peaks = (peaks != nullptr ? *peaks : found).device;
  const std::vector<DevicePeak>& block_peaks = (peaks != nullptr ? *peaks : found).blocks;
  std::map<std::int64_t, std::vector<storage::MarkerRecord>> ranges;
  for (storage::MarkerRecord& m : trace.markers()) {
    if (m.start.type == storage::kMarkerRange && is_selected(processes, m.start.upid))
      ranges[m.start.upid].push_back(std::move(m));
  }
  // What each process needs, found once for all of them: a job can have 100,000 processes, and a
  // query or a walk of every peak per process made the summary quadratic in them.
  std::unordered_map<std::int64_t, std::vector<const DevicePeak*>> block_peaks_of, device_peaks_of;
  for (const DevicePeak& peak : block_peaks) block_peaks_of[peak.upid].push_back(&peak);
  for (const DevicePeak& peak : device_peaks) device_peaks_of[peak.upid].push_back(&peak);
  std::map<int, std::uint64_t> processes_on_device;
  for (const DevicePeak& peak : device_peaks) ++processes_on_device[peak.device];
  // Each process's pinned allocations and frees, as (seq, is a free, size), from one scan.
  std::unordered_map<std::int64_t, std::vector<std::tuple<std::uint64_t, bool, std::uint64_t>>>
      pinned_events;
  {
    storage::AllocationFilter pinned;
    pinned.kind = kind::kHostPinned;
    pinned.outcome = storage::AllocationFilter::Outcome::kSucceeded;
    trace.for_each_allocation(pinned, [&](const storage::AllocationRecord& r) {
      if (!is_selected(processes, r.allocation.upid)) return;
      auto& events = pinned_events[r.allocation.upid];
      events.emplace_back(r.allocation.alloc_seq, false, r.allocation.size);
      if (r.free) events.emplace_back(r.free->free_seq, true, r.allocation.size);
    });
  }
  std::unique_ptr<ProcessHistory> history;
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (!is_selected(processes, process.start.upid)) continue;
    ProcessFacts p;
    p.upid = process.start.upid;
    p.pid = process.start.pid;
    p.ranges = std::move(ranges[p.upid]);
    ProcessSweep sweep(p.ranges);
    // A process whose tensors the trace saw has its rules read the live sets at its peaks, and,
    // when it has ranges, is swept event by event for the range rules; otherwise the sweep reads
    // its pinned allocations alone, for the pinned memory rule.
    const bool tensors = block_peaks_of.contains(p.upid);
    if (tensors) {
      if (!history) history = std::make_unique<ProcessHistory>(trace);
      p.history = history.get();
    }
    // Every event only for the range rules; without ranges the sweep needs the pinned ones.
    if (tensors && !p.ranges.empty()) {
      p.history->for_each_event(p.upid, [&](const storage::AllocationEvent& e) {
        sweep.on_event(e.seq, e.type == storage::AllocationEvent::Type::kAlloc, e.kind, e.device,
                       e.size);
      });
    } else {
      // Frees sort before allocations of the same number.
      auto& events = pinned_events[p.upid];
      std::sort(events.begin(), events.end(), [](const auto& a, const auto& b) {
        return std::get<0>(a) != std::get<0>(b) ? std::get<0>(a) < std::get<0>(b)
                                                : std::get<1>(a) > std::get<1>(b);
      });
      for (const auto& [seq, free, size] : events)
        sweep.on_event(seq, !free, kind::kHostPinned, 0, size);
    }
    sweep.finish();
    p.levels = sweep.levels();
    p.pinned = sweep.pinned();
    p.pinned_allocations = sweep.pinned_allocations();
    if (tensors) {
      for (const DevicePeak* peak : block_peaks_of[p.upid]) advise_fragmentation(p, *peak, &advice);
      for (const DevicePeak* peak : device_peaks_of[p.upid]) {
        // The other processes that used the device (a process has one peak per device).
        const std::uint64_t others = processes_on_device[peak->device] - 1;
        advise_empty_cache(p, *peak, others, &advice);
      }
      for (const DevicePeak* peak : block_peaks_of[p.upid])
        advise_live_tensors(trace, p, *peak, &advice);
      advise_evaluation(p, &advice);
    }
    advise_pinned(p, &advice);
  }
  return advice;
}

}  // namespace vramtrace::analysis
