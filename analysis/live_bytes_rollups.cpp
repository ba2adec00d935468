#include "analysis/live_bytes_rollups.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "analysis/device_peaks.h"
#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

// Time offsets times kLiveBytesBuckets overflow 64 bits on long traces.
__extension__ using Wide = unsigned __int128;

std::uint32_t bucket_of(const storage::RollupSource& source, std::int64_t ns) {
  if (source.end_ns <= source.start_ns || ns <= source.start_ns) return 0;
  const Wide offset = static_cast<Wide>(ns - source.start_ns) * kLiveBytesBuckets;
  const Wide bucket = offset / static_cast<Wide>(source.end_ns - source.start_ns + 1);
  return static_cast<std::uint32_t>(std::min<Wide>(bucket, kLiveBytesBuckets - 1));
}

}  // namespace

// Running sums per process, flushed when the next process's events begin. Times need not rise
// with the sequence (storage::RollupSource): a slice that an earlier event left is taken up
// again where it was, so each slice is one row, whatever order its events come in.
void build_live_bytes_rollups(const storage::RollupSource& source,
                              const storage::RollupSink& sink) {
  struct Slice {
    std::uint64_t min = 0, max = 0, last = 0;
  };
  struct Series {
    std::uint64_t live = 0;
    std::map<std::uint32_t, Slice> slices;  // by bucket
    std::uint32_t bucket = 0;
    Slice* at = nullptr;  // the slice of the last event, `bucket`
  };
  struct Peak {
    std::uint64_t live = 0, bytes = 0, seq = 0;
    std::int64_t ns = 0;
  };
  std::int64_t upid = 0;
  std::map<std::pair<int, int>, Series> series;       // (device, kind)
  std::map<std::pair<int, std::string>, Peak> peaks;  // (device, group)

  const auto flush_process = [&] {
    for (const auto& [key, s] : series) {
      for (const auto& [bucket, slice] : s.slices)
        sink.add_bucket({upid, key.first, key.second, bucket, slice.min, slice.max, slice.last});
    }
    for (const auto& [key, peak] : peaks) {
      if (peak.bytes == 0) continue;
      sink.add_peak({upid, key.first, key.second, peak.bytes, peak.seq, peak.ns});
    }
    series.clear();
    peaks.clear();
  };
  source.for_each_event([&](const storage::AllocationEvent& event) {
    const bool is_free = event.type == storage::AllocationEvent::Type::kFree;
    if (event.upid != upid) {
      flush_process();
      upid = event.upid;
    }
    const std::pair<int, int> key{event.device, event.kind};
    Series& s = series[key];
    const std::uint32_t bucket = bucket_of(source, event.ns);
    if (s.at == nullptr || s.bucket != bucket) {
      // The value the slice starts with (or has again) is in its range.
      Slice& slice = s.slices.try_emplace(bucket, Slice{s.live, s.live, s.live}).first->second;
      slice.min = std::min(slice.min, s.live);
      slice.max = std::max(slice.max, s.live);
      s.bucket = bucket;
      s.at = &slice;
    }
    s.live = is_free ? s.live - std::min(s.live, event.size) : s.live + event.size;
    s.at->last = s.live;
    s.at->min = std::min(s.at->min, s.live);
    s.at->max = std::max(s.at->max, s.live);
    const char* group = event.kind == storage::allocation_kind::kBlock ? kPeakGroupBlocks
                        : occupies_device_memory(event.kind)           ? kPeakGroupDeviceMemory
                                                                       : nullptr;
    if (group == nullptr) return;
    Peak& peak = peaks[{event.device, group}];
    peak.live = is_free ? peak.live - std::min(peak.live, event.size) : peak.live + event.size;
    if (peak.live > peak.bytes) peak = {peak.live, peak.live, event.seq, event.ns};
  });
  flush_process();
}

}  // namespace vramtrace::analysis
