#include "storage/live_bytes_rollups.h"

#include <algorithm>
#include <climits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "storage/schema.h"
#include "storage/schema_enums.h"

namespace vramtrace::storage {
namespace {

// Running sums per (process, device, kind) and per peak group. With a fixed shift (the build,
// which knows the span first) times need not rise with the sequence (RollupSource): a
// slice that an earlier event left is taken up again where it was, so each slice is one row,
// whatever order its events come in. Without one (kept up as rows arrive) they rise, and the
// slices grow as the series' span does.
class LiveBytesRollups final : public RollupKeeper {
 public:
  // `slices`: the build's [first, last] slice at `fixed_shift`, which every time is held to.
  LiveBytesRollups(std::optional<int> fixed_shift, std::int64_t first_slice = 0,
                   std::int64_t last_slice = 0)
      : fixed_shift_(fixed_shift), first_slice_(first_slice), last_slice_(last_slice) {}

  void add(const AllocationEvent& event) override {
    const bool is_free = event.type == AllocationEvent::Type::kFree;
    Series& s = series_of(event);
    std::int64_t slice = slice_of(s, event.ns);
    if (!fixed_shift_) {
      if (s.at == nullptr && s.slices.empty()) s.lowest = s.highest = slice;
      while (std::max(s.highest, slice) - std::min(s.lowest, slice) >=
             std::int64_t{kLiveBytesBuckets}) {
        merge_neighbours(s);
        slice = slice_of(s, event.ns);
      }
      s.lowest = std::min(s.lowest, slice);
      s.highest = std::max(s.highest, slice);
    }
    if (s.at == nullptr || s.at_slice != slice) {
      // The value the slice starts with (or has again) is in its range.
      Slice& entered = s.slices.enter(slice, Slice{s.live, s.live, s.live});
      entered.min = std::min(entered.min, s.live);
      entered.max = std::max(entered.max, s.live);
      s.at_slice = slice;
      s.at = &entered;
    }
    s.live = is_free ? s.live - std::min(s.live, event.size) : s.live + event.size;
    s.at->last = s.live;
    s.at->min = std::min(s.at->min, s.live);
    s.at->max = std::max(s.at->max, s.live);

    if (s.peak == nullptr) return;
    Peak& peak = *s.peak;
    peak.live = is_free ? peak.live - std::min(peak.live, event.size) : peak.live + event.size;
    const std::int64_t count = is_free ? -1 : 1;
    const auto bytes = static_cast<std::int64_t>(event.size) * count;
    CallsiteLive& by_callsite = peak.callsite(event.callsite_id);
    by_callsite.count += count;
    by_callsite.bytes += bytes;
    if (peak.live > peak.bytes) {
      peak.bytes = peak.live;
      peak.seq = event.seq;
      peak.ns = event.ns;
      ++peak.generation;  // every callsite's changes since the peak are now none
      return;
    }
    if (by_callsite.since_generation != peak.generation) {
      by_callsite.since_count = by_callsite.since_bytes = 0;
      by_callsite.since_generation = peak.generation;
    }
    by_callsite.since_count += count;
    by_callsite.since_bytes += bytes;
  }

  void write(std::int64_t start_ns, std::int64_t end_ns, const RollupSink& sink) const override {
    const int shift = live_bytes_bucket_shift(start_ns, end_ns);
    const std::int64_t first = start_ns >> shift;
    for (const auto& [key, kept] : series_) {
      // Kept up, a series' slices are as fine as its own span needs: at most the index's.
      Series s = kept;
      while (s.shift < shift) merge_neighbours(s);
      // Named outside the lambda: a structured binding cannot be captured before C++20's P1091,
      // which clang 14 lacks.
      const std::int64_t upid = std::get<0>(key);
      const int device = std::get<1>(key), kind = std::get<2>(key);
      s.slices.for_each([&](std::int64_t slice, const Slice& values) {
        const std::int64_t bucket =
            std::clamp<std::int64_t>(slice - first, 0, std::int64_t{kLiveBytesBuckets} - 1);
        sink.add_bucket({upid, device, kind, static_cast<std::uint32_t>(bucket), values.min,
                         values.max, values.last});
      });
    }
    for (const auto& [key, peak] : peaks_) {
      if (peak.bytes == 0) continue;
      const auto& [upid, device, group] = key;
      sink.add_peak({upid, device, group, peak.bytes, peak.seq, peak.ns});
      for (const auto& [callsite, live] : peak.callsites) {
        const bool changed = live.since_generation == peak.generation;
        const std::int64_t count = live.count - (changed ? live.since_count : 0);
        const std::int64_t bytes = live.bytes - (changed ? live.since_bytes : 0);
        if (count <= 0) continue;  // none of it was live at the peak
        sink.add_live_at_peak(
            {upid, device, group,
             callsite == kNoCallsite ? std::nullopt : std::optional<std::int64_t>(callsite),
             static_cast<std::uint64_t>(count),
             static_cast<std::uint64_t>(std::max<std::int64_t>(bytes, 0))});
      }
    }
  }

 private:
  struct Slice {
    std::uint64_t min = 0, max = 0, last = 0;
  };
  // Allocations of one callsite in a peak group: live now, and the change since the peak (the
  // events after it), so that what was live at the peak is the one less the other, without a
  // copy of the live set at each new peak (a program's growth reaches one at every allocation).
  struct CallsiteLive {
    std::int64_t count = 0, bytes = 0;
    std::int64_t since_count = 0, since_bytes = 0;
    std::uint64_t since_generation = 0;  // the peak the since_ sums follow; older ones are none
  };
  static constexpr std::int64_t kNoCallsite = INT64_MIN;  // alloc_callsite_id NULL
  struct Peak {
    std::uint64_t live = 0, bytes = 0, seq = 0;
    std::int64_t ns = 0;
    std::uint64_t generation = 0;  // raised at each new peak
    std::unordered_map<std::int64_t, CallsiteLive> callsites;
    // The last callsite met: a storm repeats one, which is then compared, not hashed. The map's
    // elements stay where they are as it grows.
    std::int64_t last_callsite = 0;
    CallsiteLive* last = nullptr;

    CallsiteLive& callsite(std::optional<std::int64_t> id) {
      const std::int64_t key = id.value_or(kNoCallsite);
      if (last == nullptr || last_callsite != key) {
        last = &callsites[key];
        last_callsite = key;
      }
      return *last;
    }
  };
  // A series' slices, by key (ns >> shift), in key order. Their times almost always rise (kept
  // up they must), so a new slice is appended to a vector: no allocation per slice, and a merge
  // compacts it in place. In a storm, a node of a map made and freed for every slice (the
  // slices start at 1 ns and double) was most of the writer's cost of the rollups. The first
  // slice before the last one moves them to a map for good, so that events in any order (the
  // build's, where clocks jump) still cost a logarithm each.
  class Slices {
   public:
    bool empty() const { return in_order_.empty() && scattered_.empty(); }

    // The slice `key`, made with `initial` when it is new. The reference holds until the next
    // enter() or merge_neighbours().
    Slice& enter(std::int64_t key, const Slice& initial) {
      if (scattered_.empty()) {
        if (in_order_.empty() || in_order_.back().first < key)
          return in_order_.emplace_back(key, initial).second;
        if (in_order_.back().first == key) return in_order_.back().second;
        const auto it = std::lower_bound(
            in_order_.begin(), in_order_.end(), key,
            [](const std::pair<std::int64_t, Slice>& a, std::int64_t k) { return a.first < k; });
        if (it->first == key) return it->second;
        scattered_.insert(in_order_.begin(), in_order_.end());
        in_order_.clear();
        in_order_.shrink_to_fit();
      }
      return scattered_.try_emplace(key, initial).first->second;
    }

    // Each two neighbours become one slice at key >> 1: the lower one's start, the extremes of
    // both, the later one's last (the times rise, so its events came last). Only a kept series
    // merges, and its keys come in order; slices in the map go back to the vector first.
    void merge_neighbours() {
      if (!scattered_.empty()) {
        in_order_.assign(scattered_.begin(), scattered_.end());
        scattered_.clear();
      }
      std::size_t kept = 0;
      for (std::size_t i = 0; i < in_order_.size(); ++i) {
        const std::int64_t key = in_order_[i].first >> 1;
        const Slice& next = in_order_[i].second;
        if (kept != 0 && in_order_[kept - 1].first == key) {
          Slice& merged = in_order_[kept - 1].second;
          merged.min = std::min(merged.min, next.min);
          merged.max = std::max(merged.max, next.max);
          merged.last = next.last;
        } else {
          in_order_[kept++] = {key, next};
        }
      }
      in_order_.resize(kept);
    }

    template <class F>
    void for_each(F&& f) const {
      for (const auto& [key, values] : in_order_) f(key, values);
      for (const auto& [key, values] : scattered_) f(key, values);
    }

   private:
    std::vector<std::pair<std::int64_t, Slice>> in_order_;  // while every key came in order
    std::map<std::int64_t, Slice> scattered_;               // from the first that did not
  };

  struct Series {
    int shift = 0;
    std::uint64_t live = 0;
    Slices slices;
    std::int64_t lowest = 0, highest = 0;  // of the slices' keys (kept up only)
    std::int64_t at_slice = 0;
    Slice* at = nullptr;   // the slice of the last event, `at_slice`
    Peak* peak = nullptr;  // of its peak group; none for kinds outside the groups
  };

  std::int64_t slice_of(const Series& s, std::int64_t ns) const {
    if (!fixed_shift_) return ns >> s.shift;
    return std::clamp(ns >> *fixed_shift_, first_slice_, last_slice_);
  }

  // Each two neighbours at s.shift become one slice at s.shift + 1 (Slices::merge_neighbours).
  static void merge_neighbours(Series& s) {
    s.slices.merge_neighbours();
    ++s.shift;
    s.lowest >>= 1;
    s.highest >>= 1;
    s.at = nullptr;
  }

  Series& series_of(const AllocationEvent& event) {
    const std::tuple<std::int64_t, int, int> key{event.upid, event.device, event.kind};
    if (last_ != nullptr && last_key_ == key) return *last_;
    const auto [it, added] = series_.try_emplace(key);
    Series& s = it->second;
    if (added) {
      if (fixed_shift_) s.shift = *fixed_shift_;
      // The kind decides the group: the series finds its peak once, not at every event.
      const char* group = event.kind == allocation_kind::kBlock     ? kPeakGroupBlocks
                          : kind_occupies_device_memory(event.kind) ? kPeakGroupDeviceMemory
                                                                    : nullptr;
      if (group != nullptr) s.peak = &peaks_[{event.upid, event.device, group}];
    }
    last_key_ = key;
    last_ = &s;
    return s;
  }

  std::optional<int> fixed_shift_;
  std::int64_t first_slice_, last_slice_;
  std::map<std::tuple<std::int64_t, int, int>, Series> series_;       // (upid, device, kind)
  std::map<std::tuple<std::int64_t, int, const char*>, Peak> peaks_;  // (upid, device, group)
  std::tuple<std::int64_t, int, int> last_key_;
  Series* last_ = nullptr;
};

}  // namespace

void build_live_bytes_rollups(const RollupSource& source, const RollupSink& sink) {
  const int shift = live_bytes_bucket_shift(source.start_ns, source.end_ns);
  LiveBytesRollups rollups(shift, source.start_ns >> shift, source.end_ns >> shift);
  source.for_each_event([&](const AllocationEvent& event) { rollups.add(event); });
  rollups.write(source.start_ns, source.end_ns, sink);
}

std::unique_ptr<RollupKeeper> keep_live_bytes_rollups() {
  return std::make_unique<LiveBytesRollups>(std::nullopt);
}

}  // namespace vramtrace::storage
