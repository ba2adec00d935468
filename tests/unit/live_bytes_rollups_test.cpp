// The time index's rollups (storage/live_bytes_rollups.h) on their own: kept up through many
// merges of their slices they are what the build makes from the same events, and the build
// takes a slice up again, or makes one between others, when times fall.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"

namespace vramtrace {
namespace {

using storage::AllocationEvent;
using Type = AllocationEvent::Type;

struct Rows {
  std::vector<storage::LiveBytesBucket> buckets;
  std::vector<storage::LiveBytesPeak> peaks;
  std::vector<storage::LiveAtPeak> live_at_peak;
};

auto bucket_tuple(const storage::LiveBytesBucket& b) {
  return std::tuple(b.upid, b.device, b.kind, b.bucket, b.min_bytes, b.max_bytes, b.last_bytes);
}
auto peak_tuple(const storage::LiveBytesPeak& p) {
  return std::tuple(p.upid, p.device, std::string(p.group), p.bytes, p.seq, p.ns);
}
auto live_tuple(const storage::LiveAtPeak& l) {
  return std::tuple(l.upid, l.device, std::string(l.group), l.callsite_id, l.count, l.bytes);
}

// Rows in a stable order: the sink may get them in any.
template <class T, class Key>
std::vector<decltype(std::declval<Key>()(std::declval<T>()))> sorted(const std::vector<T>& rows,
                                                                     Key key) {
  std::vector<decltype(key(rows.front()))> keys;
  for (const T& row : rows) keys.push_back(key(row));
  std::sort(keys.begin(), keys.end());
  return keys;
}

storage::RollupSink sink_into(Rows* rows) {
  return {[rows](const storage::LiveBytesBucket& b) { rows->buckets.push_back(b); },
          [rows](const storage::LiveBytesPeak& p) { rows->peaks.push_back(p); },
          [rows](const storage::LiveAtPeak& l) { rows->live_at_peak.push_back(l); }};
}

Rows build(const std::vector<AllocationEvent>& events, std::int64_t start_ns, std::int64_t end_ns) {
  Rows rows;
  storage::RollupSource source;
  source.start_ns = start_ns;
  source.end_ns = end_ns;
  source.for_each_event = [&](const std::function<void(const AllocationEvent&)>& visit) {
    for (const AllocationEvent& e : events) visit(e);
  };
  storage::build_live_bytes_rollups(source, sink_into(&rows));
  return rows;
}

// A storm of short lives from a few callsites, with a slowly growing set held, over two kinds:
// times rise by 1 to 3,000 ns, so that the kept series' slices, starting at 1 ns, are merged
// about 17 times on the way to the index's size.
std::vector<AllocationEvent> storm_events(int pairs) {
  std::mt19937_64 random(7);
  std::vector<AllocationEvent> events;
  std::int64_t ns = 1'000'000;
  std::uint64_t seq = 1;
  std::int64_t id = 1;
  std::vector<AllocationEvent> held;
  for (int i = 0; i < pairs; ++i) {
    const int kind =
        i % 3 == 0 ? storage::allocation_kind::kManaged : storage::allocation_kind::kDevice;
    const std::uint64_t size = 256 + (random() % 64) * 512;
    const std::int64_t callsite = 1 + static_cast<std::int64_t>(random() % 5);
    AllocationEvent alloc{Type::kAlloc, id++, 1, seq++, ns, 0, kind, size, callsite};
    events.push_back(alloc);
    ns += 1 + static_cast<std::int64_t>(random() % 3000);
    if (random() % 50 == 0) {
      held.push_back(alloc);  // lives on, freed later
    } else {
      AllocationEvent free = alloc;
      free.type = Type::kFree;
      free.seq = seq++;
      free.ns = ns;
      events.push_back(free);
      ns += 1 + static_cast<std::int64_t>(random() % 3000);
    }
    if (held.size() > 40) {
      AllocationEvent free = held.front();
      held.erase(held.begin());
      free.type = Type::kFree;
      free.seq = seq++;
      free.ns = ns;
      events.push_back(free);
      ns += 1 + static_cast<std::int64_t>(random() % 3000);
    }
  }
  return events;
}

TEST(LiveBytesRollups, KeptUpThroughManyMergesTheyAreWhatTheBuildMakes) {
  const std::vector<AllocationEvent> events = storm_events(200'000);
  const std::int64_t start_ns = events.front().ns - 12'345;
  const std::int64_t end_ns = events.back().ns + 678;
  ASSERT_GT(storage::live_bytes_bucket_shift(start_ns, end_ns), 15);

  const auto kept = storage::keep_live_bytes_rollups();
  for (const AllocationEvent& e : events) kept->add(e);
  Rows kept_rows;
  kept->write(start_ns, end_ns, sink_into(&kept_rows));
  const Rows built = build(events, start_ns, end_ns);

  ASSERT_GT(built.buckets.size(), 10'000u);
  EXPECT_EQ(sorted(kept_rows.buckets, bucket_tuple), sorted(built.buckets, bucket_tuple));
  EXPECT_EQ(sorted(kept_rows.peaks, peak_tuple), sorted(built.peaks, peak_tuple));
  EXPECT_EQ(sorted(kept_rows.live_at_peak, live_tuple), sorted(built.live_at_peak, live_tuple));
}

TEST(LiveBytesRollups, TheBuildTakesUpASliceAgainWhenTimesFall) {
  // A span of 65,532 ns: slices of 4 ns (the smallest power of two that cuts it into 16,384).
  const std::int64_t start_ns = 0, end_ns = 65'532;
  ASSERT_EQ(storage::live_bytes_bucket_shift(start_ns, end_ns), 2);
  const int kind = storage::allocation_kind::kDevice;
  const std::vector<AllocationEvent> events = {
      {Type::kAlloc, 1, 1, 1, 40, 0, kind, 100, 1},  // slice 10: 0 -> 100
      {Type::kAlloc, 2, 1, 2, 80, 0, kind, 50, 1},   // slice 20: 100 -> 150
      {Type::kFree, 1, 1, 3, 41, 0, kind, 100, 1},   // slice 10 again: 150 -> 50
      {Type::kAlloc, 3, 1, 4, 400, 0, kind, 10, 1},  // slice 100: 50 -> 60
      {Type::kFree, 2, 1, 5, 60, 0, kind, 50, 1},    // slice 15, new, between: 60 -> 10
      {Type::kAlloc, 4, 1, 6, 401, 0, kind, 5, 1}};  // slice 100 again: 10 -> 15
  const Rows rows = build(events, start_ns, end_ns);
  using Bucket = std::tuple<std::int64_t, int, int, std::uint32_t, std::uint64_t, std::uint64_t,
                            std::uint64_t>;
  // Each slice holds the value it was entered with each time, its extremes and its last.
  EXPECT_EQ(sorted(rows.buckets, bucket_tuple), (std::vector<Bucket>{
                                                    {1, 0, kind, 10, 0, 150, 50},
                                                    {1, 0, kind, 15, 10, 60, 10},
                                                    {1, 0, kind, 20, 100, 150, 150},
                                                    {1, 0, kind, 100, 10, 60, 15},
                                                }));
}

}  // namespace
}  // namespace vramtrace
