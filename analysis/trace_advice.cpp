#include "analysis/trace_advice.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include "analysis/allocator_state.h"
#include "analysis/device_peaks.h"
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

// Live block bytes after each block event, in sequence order: the series the range rules read.
using Series = std::vector<std::pair<std::uint64_t, std::uint64_t>>;  // (seq, bytes after it)

std::uint64_t value_at(const Series& series, std::uint64_t seq) {
  const auto after =
      std::upper_bound(series.begin(), series.end(), seq,
                       [](std::uint64_t s, const std::pair<std::uint64_t, std::uint64_t>& e) {
                         return s < e.first;
                       });
  return after == series.begin() ? 0 : std::prev(after)->second;
}

// How far live blocks rose inside `range` above where they stood when it began.
std::uint64_t growth_in(const Series& series, Interval range) {
  const std::uint64_t base = value_at(series, range.start);
  std::uint64_t most = base;
  auto it = std::upper_bound(series.begin(), series.end(), range.start,
                             [](std::uint64_t s, const std::pair<std::uint64_t, std::uint64_t>& e) {
                               return s < e.first;
                             });
  for (; it != series.end() && it->first < range.end; ++it) most = std::max(most, it->second);
  return most - base;
}

struct Peak {
  std::uint64_t bytes = 0, seq = 0;
};

// One pass over a process's rows in event order: the series and peaks the rules need.
struct ProcessSweep {
  std::map<int, Series> blocks_by_device;
  Series blocks;  // all devices together
  Peak pinned;
  std::uint64_t pinned_allocations = 0;
};

ProcessSweep sweep(const ProcessRows& process) {
  struct Event {
    std::uint64_t seq;
    bool alloc;
    const storage::AllocationRow* row;
  };
  std::vector<Event> events;
  for (const auto& r : process.rows) {
    if (r.failed()) continue;
    events.push_back({r.allocation.alloc_seq, true, &r.allocation});
    if (r.free) events.push_back({r.free->free_seq, false, &r.allocation});
  }
  std::sort(events.begin(), events.end(),
            [](const Event& a, const Event& b) { return a.seq < b.seq; });
  ProcessSweep s;
  std::map<int, std::uint64_t> block_bytes;
  std::uint64_t all_blocks = 0, pinned = 0;
  const auto move = [](std::uint64_t& value, const Event& e) {
    value = e.alloc ? value + e.row->size : value - std::min(value, e.row->size);
  };
  for (const Event& e : events) {
    const storage::AllocationRow& a = *e.row;
    if (a.kind == kind::kBlock) {
      move(block_bytes[a.device], e);
      move(all_blocks, e);
      s.blocks_by_device[a.device].emplace_back(e.seq, block_bytes[a.device]);
      s.blocks.emplace_back(e.seq, all_blocks);
    } else if (a.kind == kind::kHostPinned) {
      move(pinned, e);
      s.pinned_allocations += e.alloc ? 1 : 0;
      if (pinned > s.pinned.bytes) s.pinned = {pinned, e.seq};
    }
  }
  return s;
}

double percent(std::uint64_t part, std::uint64_t whole) {
  return whole == 0 ? 0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// What every rule of one process reads.
struct ProcessFacts {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  ProcessRows rows;
  ProcessSweep sweep;
  std::vector<storage::MarkerRecord> ranges;  // start_seq order
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
  const AllocatorState state = allocator_state_at(p.rows, peak.at_seq, peak.device);
  const bool expandable = std::any_of(state.segments.begin(), state.segments.end(),
                                      [](const SegmentState& s) { return s.expandable; });
  if (!expandable && state.segment_bytes != 0 && state.cached_bytes * 4 >= state.segment_bytes &&
      state.external_fragmentation >= 0.5)
    advice->push_back(expandable_segments(p, peak.device, state));
}

void advise_empty_cache(const ProcessFacts& p, const DevicePeak& peak,
                        std::uint64_t other_processes, std::vector<Advice>* advice) {
  const AllocatorState state = allocator_state_at(p.rows, peak.at_seq, peak.device);
  if (state.releasable_bytes == 0) return;
  std::uint64_t outside = 0;  // device memory live at the peak that is not the allocator's
  for (const auto& r : p.rows.rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq > peak.at_seq) break;
    if (a.device == peak.device && a.kind != kind::kBlock && occupies_device_memory(a.kind) &&
        !p.rows.allocator_segments.contains(a.id) && live_after(r, peak.at_seq))
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
  for (const auto& r : p.rows.rows) {
    const storage::AllocationRow& a = r.allocation;
    if (a.alloc_seq > peak.at_seq) break;
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

  const auto series = p.sweep.blocks_by_device.find(peak.device);
  for (const auto& m : p.ranges) {
    const Interval range = interval(m);
    if (m.start.depth != 0 || is_evaluation(m) || !range.contains(peak.at_seq) ||
        series == p.sweep.blocks_by_device.end())
      continue;
    const std::uint64_t base = value_at(series->second, range.start);
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
  for (const auto& m : p.ranges) {
    const std::uint64_t growth = growth_in(p.sweep.blocks, interval(m));
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
  if (p.sweep.pinned.bytes < kPinnedMemoryAdviceBytes) return;
  advice->push_back(
      {kAdvicePinnedMemory,
       fmt::format("pid {}: {} of pinned (page-locked) host memory was held at once, in {} "
                   "pinned allocations over the run. Pinned memory cannot be swapped and is "
                   "taken from the host's RAM for every process; limit it: fewer DataLoader "
                   "workers or a lower prefetch_factor with pin_memory=True, pinned staging "
                   "buffers reused rather than allocated per batch, or pin_memory=False.",
                   p.pid, advice_bytes(p.sweep.pinned.bytes), p.sweep.pinned_allocations),
       {{"pid", p.pid},
        {"pinned_peak_bytes", p.sweep.pinned.bytes},
        {"pinned_allocations", p.sweep.pinned_allocations}},
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
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (!is_selected(processes, process.start.upid)) continue;
    ProcessFacts p;
    p.upid = process.start.upid;
    p.pid = process.start.pid;
    // Only a process whose tensors the trace saw needs all its rows in memory; for any other
    // the pinned memory rule reads its pinned allocations alone.
    const bool tensors = std::any_of(block_peaks.begin(), block_peaks.end(),
                                     [&](const DevicePeak& peak) { return peak.upid == p.upid; });
    if (tensors) {
      p.rows = load_process_rows(trace, p.upid);
    } else {
      storage::AllocationFilter pinned;
      pinned.upid = p.upid;
      pinned.kind = kind::kHostPinned;
      p.rows.rows = trace.allocations(pinned);
    }
    p.sweep = sweep(p.rows);
    p.ranges = std::move(ranges[p.upid]);
    if (tensors) {
      for (const DevicePeak& peak : block_peaks)
        if (peak.upid == p.upid) advise_fragmentation(p, peak, &advice);
      for (const DevicePeak& peak : device_peaks) {
        if (peak.upid != p.upid) continue;
        const auto others =
            std::count_if(device_peaks.begin(), device_peaks.end(), [&](const DevicePeak& other) {
              return other.upid != p.upid && other.device == peak.device;
            });
        advise_empty_cache(p, peak, static_cast<std::uint64_t>(others), &advice);
      }
      for (const DevicePeak& peak : block_peaks)
        if (peak.upid == p.upid) advise_live_tensors(trace, p, peak, &advice);
      advise_evaluation(p, &advice);
    }
    advise_pinned(p, &advice);
  }
  return advice;
}

}  // namespace vramtrace::analysis
