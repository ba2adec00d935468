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

// Running sums per process, flushed when the next process's events begin.
void build_live_bytes_rollups(const storage::RollupSource& source,
                              const storage::RollupSink& sink) {
  struct Series {
    std::optional<std::uint32_t> bucket;
    std::uint64_t min = 0, max = 0, last = 0;
  };
  struct Peak {
    std::uint64_t live = 0, bytes = 0, seq = 0;
    std::int64_t ns = 0;
  };
  std::int64_t upid = 0;
  std::map<std::pair<int, int>, Series> series;       // (device, kind)
  std::map<std::pair<int, std::string>, Peak> peaks;  // (device, group)

  const auto flush_bucket = [&](const std::pair<int, int>& key, const Series& s) {
    if (!s.bucket) return;
    sink.add_bucket({upid, key.first, key.second, *s.bucket, s.min, s.max, s.last});
  };
  const auto flush_process = [&] {
    for (const auto& [key, s] : series) flush_bucket(key, s);
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
    if (s.bucket != bucket) {
      flush_bucket(key, s);
      s.bucket = bucket;
      s.min = s.max = s.last;
    }
    s.last = is_free ? s.last - std::min(s.last, event.size) : s.last + event.size;
    s.min = std::min(s.min, s.last);
    s.max = std::max(s.max, s.last);
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
