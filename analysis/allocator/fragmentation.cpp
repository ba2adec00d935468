#include "analysis/allocator/fragmentation.h"

#include <algorithm>
#include <bit>
#include <map>
#include <string>

#include "analysis/time/device_peaks.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

struct Range {
  std::uint64_t start = 0, end = 0;
  std::optional<std::uint64_t> requested;
};

// The segments in (device, address) order, contiguous mappings merged.
std::vector<SegmentLayout> segments_of(const std::vector<storage::AllocationRecord>& live,
                                       const std::unordered_set<std::int64_t>& allocator_segments) {
  std::vector<const storage::AllocationRow*> rows;
  for (const storage::AllocationRecord& record : live) {
    const storage::AllocationRow& a = record.allocation;
    if (a.kind != kind::kBlock && allocator_segments.contains(a.id)) rows.push_back(&a);
  }
  std::sort(rows.begin(), rows.end(), [](const auto* x, const auto* y) {
    return std::pair(x->device, x->address) < std::pair(y->device, y->address);
  });
  std::vector<SegmentLayout> segments;
  for (const storage::AllocationRow* a : rows) {
    const bool mapping = a->kind == kind::kVmmMapping;
    if (!segments.empty() && mapping && segments.back().expandable &&
        segments.back().device == a->device &&
        segments.back().address + segments.back().size == a->address) {
      segments.back().size += a->size;
      continue;
    }
    segments.push_back({a->device, a->address, a->size, mapping, {}});
  }
  return segments;
}

void lay_blocks(SegmentLayout* segment, const std::vector<Range>& blocks) {
  const std::uint64_t end = segment->address + segment->size;
  std::uint64_t cursor = segment->address;
  // Blocks are sorted by start and do not overlap, so their ends are sorted too.
  auto block = std::lower_bound(blocks.begin(), blocks.end(), segment->address,
                                [](const Range& b, std::uint64_t start) { return b.end <= start; });
  for (; block != blocks.end() && block->start < end; ++block) {
    const std::uint64_t start = std::max(block->start, cursor);
    const std::uint64_t stop = std::min(block->end, end);
    if (stop <= start) continue;
    if (start > cursor) segment->blocks.push_back({cursor, start - cursor, std::nullopt, false});
    segment->blocks.push_back({start, stop - start, block->requested, true});
    cursor = stop;
  }
  if (end > cursor) segment->blocks.push_back({cursor, end - cursor, std::nullopt, false});
}

std::vector<RawAllocations> raw_of(const std::vector<storage::AllocationRecord>& live,
                                   const std::unordered_set<std::int64_t>& allocator_segments) {
  std::map<int, std::vector<Range>> by_device;
  for (const storage::AllocationRecord& record : live) {
    const storage::AllocationRow& a = record.allocation;
    if (!occupies_device_memory(a.kind) || allocator_segments.contains(a.id)) continue;
    by_device[a.device].push_back({a.address, a.address + a.size, std::nullopt});
  }
  std::vector<RawAllocations> raw;
  for (auto& [device, ranges] : by_device) {
    std::sort(ranges.begin(), ranges.end(),
              [](const Range& x, const Range& y) { return x.start < y.start; });
    RawAllocations& out = raw.emplace_back();
    out.device = device;
    std::uint64_t reach = 0;
    for (const Range& range : ranges) {
      out.count += 1;
      out.bytes += range.end - range.start;
      if (out.count > 1 && range.start > reach) out.gaps.push_back({reach, range.start - reach});
      reach = std::max(reach, range.end);
    }
  }
  return raw;
}

}  // namespace

Fragmentation lay_out_segments(const std::vector<storage::AllocationRecord>& live,
                               const std::unordered_set<std::int64_t>& allocator_segments) {
  Fragmentation out;
  out.segments = segments_of(live, allocator_segments);
  std::vector<Range> blocks;
  for (const storage::AllocationRecord& record : live) {
    const storage::AllocationRow& a = record.allocation;
    if (a.kind != kind::kBlock) continue;
    std::optional<std::uint64_t> requested;
    if (a.requested_size != 0 && a.requested_size <= a.size) requested = a.requested_size;
    blocks.push_back({a.address, a.address + a.size, requested});
  }
  std::sort(blocks.begin(), blocks.end(),
            [](const Range& x, const Range& y) { return x.start < y.start; });

  std::map<int, FreeSizeBin> bins;  // by log2 of the size
  std::uint64_t rounded = 0, wasted = 0;
  for (SegmentLayout& segment : out.segments) {
    lay_blocks(&segment, blocks);
    for (const SegmentBlock& block : segment.blocks) {
      if (block.used) {
        out.used_bytes += block.size;
        if (block.requested) {
          rounded += block.size;
          wasted += block.size - *block.requested;
        }
        continue;
      }
      out.total_free += block.size;
      out.largest_free = std::max(out.largest_free, block.size);
      const int log2 = std::bit_width(block.size) - 1;
      FreeSizeBin& bin = bins[log2];
      bin.from = std::uint64_t{1} << log2;
      bin.to = log2 >= 63 ? UINT64_MAX : std::uint64_t{1} << (log2 + 1);
      bin.count += 1;
      bin.bytes += block.size;
    }
  }
  for (const auto& [log2, bin] : bins) out.free_sizes.push_back(bin);
  if (out.total_free != 0) {
    out.external_fragmentation =
        1.0 - static_cast<double>(out.largest_free) / static_cast<double>(out.total_free);
  }
  if (rounded != 0)
    out.internal_fragmentation = static_cast<double>(wasted) / static_cast<double>(rounded);
  out.largest_request = out.largest_free;
  out.raw = raw_of(live, allocator_segments);
  return out;
}

namespace {
std::vector<storage::AllocationRecord> on_device(std::vector<storage::AllocationRecord> live,
                                                 std::optional<int> device) {
  if (device)
    std::erase_if(
        live, [&](const storage::AllocationRecord& r) { return r.allocation.device != *device; });
  return live;
}
// The moment of the one process that `qualifies`, if exactly one does; *count: how many did.
template <typename Qualifies>
const ProcessMoment* only_one(const std::vector<ProcessMoment>& moments, std::size_t& count,
                              const Qualifies& qualifies) {
  const ProcessMoment* only = nullptr;
  for (const ProcessMoment& at : moments) {
    if (!qualifies(at.upid)) continue;
    ++count;
    only = &at;
  }
  return count == 1 ? only : nullptr;
}
}  // namespace

FragmentationReport build_fragmentation_report(const storage::TraceReader& trace,
                                               const storage::TimeIndex& index,
                                               const MomentSpec& moment,
                                               const ProcessSelection& processes,
                                               std::optional<int> device) {
  std::vector<ProcessMoment> moments = resolve_moment(trace, index, moment, processes);
  const std::set<std::int64_t> with_allocator = index.processes_with_allocator_events();
  const ProcessMoment* chosen = moments.size() == 1 ? &moments.front() : nullptr;
  if (chosen == nullptr && moment.kind == MomentSpec::Kind::kPeak) {
    // The largest peak among the processes with an allocator to map, if any has one.
    const bool any_allocator = std::any_of(moments.begin(), moments.end(), [&](const auto& at) {
      return with_allocator.contains(at.upid);
    });
    std::uint64_t largest = 0;
    for (const storage::LiveBytesPeak& peak : index.peaks()) {
      if (peak.group != storage::kPeakGroupDeviceMemory || peak.bytes <= largest) continue;
      for (const ProcessMoment& at : moments) {
        if (at.upid != peak.upid || (any_allocator && !with_allocator.contains(at.upid))) continue;
        largest = peak.bytes;
        chosen = &at;
      }
    }
  } else if (chosen == nullptr && moment.kind == MomentSpec::Kind::kOom) {
    chosen = &*std::min_element(moments.begin(), moments.end(), [](const auto& x, const auto& y) {
      return x.time_ns.value_or(0) < y.time_ns.value_or(0);
    });
  }
  // Else the one process with an allocator to map, or else the one that recorded GPU memory:
  // a job started through a shell has many processes and one that matters.
  std::size_t with_allocator_count = 0, gpu_count = 0;
  if (chosen == nullptr) {
    chosen = only_one(moments, with_allocator_count,
                      [&](std::int64_t upid) { return with_allocator.contains(upid); });
  }
  if (chosen == nullptr && with_allocator_count == 0) {
    const std::vector<std::int64_t> gpu = trace.upids_with_gpu_events();
    chosen = only_one(moments, gpu_count, [&](std::int64_t upid) {
      return std::binary_search(gpu.begin(), gpu.end(), upid);
    });
  }
  if (chosen == nullptr) {
    const std::string how_many =
        with_allocator_count > 1
            ? std::to_string(with_allocator_count) + " processes have allocator events"
        : gpu_count > 1 ? std::to_string(gpu_count) + " processes recorded GPU memory"
                        : std::to_string(moments.size()) + " processes are selected";
    throw BadMoment("frag maps one process, and " + how_many +
                    ": choose one with --pid, --rank or --host");
  }
  FragmentationReport report;
  report.at = *chosen;
  report.allocator_events = with_allocator.contains(chosen->upid);
  report.layout = lay_out_segments(on_device(index.live_at(chosen->upid, chosen->seq), device),
                                   index.allocator_segments());
  return report;
}

}  // namespace vramtrace::analysis
