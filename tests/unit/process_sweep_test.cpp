// ProcessSweep against the definition, brute force: for random block events on two devices
// and random ranges (nested, overlapping, sharing starts, never ended, starting and ending on
// events and between them), each range's live bytes when it began, the most while it ran, and
// each device's when it began; and the pinned peak.
#include "analysis/scope/process_sweep.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "storage/schema.h"

namespace vramtrace::analysis {
namespace {

namespace kind = storage::allocation_kind;

struct Event {
  std::uint64_t seq;
  bool alloc;
  int kind, device;
  std::uint64_t size;
};

// Live bytes of `kind` (of `device`, or every device) after each event, in event order.
std::vector<std::uint64_t> series(const std::vector<Event>& events, int of_kind,
                                  std::optional<int> device) {
  std::vector<std::uint64_t> values;
  std::uint64_t live = 0;
  for (const Event& e : events) {
    if (e.kind == of_kind && (!device || e.device == *device))
      live = e.alloc ? live + e.size : live - std::min(live, e.size);
    values.push_back(live);
  }
  return values;
}

std::uint64_t value_at(const std::vector<Event>& events, const std::vector<std::uint64_t>& values,
                       std::uint64_t seq) {
  std::uint64_t value = 0;
  for (std::size_t i = 0; i < events.size() && events[i].seq <= seq; ++i) value = values[i];
  return value;
}

TEST(ProcessSweep, EveryRangesLevelsMatchTheDefinition) {
  std::mt19937_64 random(20261130);
  for (int round = 0; round < 200; ++round) {
    SCOPED_TRACE(round);
    // Events at every other sequence number, so that ranges can start and end between them.
    std::vector<Event> events;
    std::vector<std::pair<int, std::uint64_t>> live;  // (device, size) of live blocks
    const int count = 1 + static_cast<int>(random() % 60);
    for (int i = 0; i < count; ++i) {
      const std::uint64_t seq = 2 + 2 * static_cast<std::uint64_t>(i);
      if (random() % 7 == 0) {
        events.push_back({seq, true, kind::kHostPinned, 0, 1 + random() % 50});
      } else if (!live.empty() && random() % 2 == 0) {
        const std::size_t which = random() % live.size();
        events.push_back({seq, false, kind::kBlock, live[which].first, live[which].second});
        live.erase(live.begin() + static_cast<long>(which));
      } else {
        const int device = static_cast<int>(random() % 2);
        const std::uint64_t size = 1 + random() % 1000;
        live.emplace_back(device, size);
        events.push_back({seq, true, kind::kBlock, device, size});
      }
    }
    const std::uint64_t last = events.back().seq;
    std::vector<storage::MarkerRecord> ranges;
    const int range_count = static_cast<int>(random() % 12);
    for (int i = 0; i < range_count; ++i) {
      storage::MarkerRecord m;
      m.start.type = storage::kMarkerRange;
      m.start.start_seq = random() % (last + 3);
      if (i > 0 && random() % 4 == 0) m.start.start_seq = ranges[0].start.start_seq;  // shared
      m.start.depth = static_cast<int>(random() % 2);
      if (random() % 5 != 0)
        m.end = storage::MarkerEndRow{m.start.start_seq + random() % (last + 3), 0, 0};
      ranges.push_back(m);
    }

    ProcessSweep sweep(ranges);
    for (const Event& e : events) sweep.on_event(e.seq, e.alloc, e.kind, e.device, e.size);
    sweep.finish();

    const auto all = series(events, kind::kBlock, std::nullopt);
    ASSERT_EQ(sweep.levels().size(), ranges.size());
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      const storage::MarkerRecord& m = ranges[r];
      const std::uint64_t start = m.start.start_seq;
      const std::uint64_t end = m.end ? m.end->end_seq : UINT64_MAX;
      const std::uint64_t base = value_at(events, all, start);
      std::uint64_t most = base;
      for (std::size_t i = 0; i < events.size(); ++i)
        if (events[i].seq > start && events[i].seq < end) most = std::max(most, all[i]);
      const RangeLevels& got = sweep.levels()[r];
      EXPECT_EQ(got.base, base) << "range " << r;
      EXPECT_EQ(got.most, most) << "range " << r;
      if (m.start.depth != 0) {
        EXPECT_TRUE(got.base_by_device.empty());
        continue;
      }
      for (int device = 0; device < 2; ++device) {
        const auto found = got.base_by_device.find(device);
        EXPECT_EQ(found == got.base_by_device.end() ? 0 : found->second,
                  value_at(events, series(events, kind::kBlock, device), start))
            << "range " << r << ", device " << device;
      }
    }
    const auto pinned = series(events, kind::kHostPinned, std::nullopt);
    std::uint64_t pinned_most = 0, pinned_seq = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (pinned[i] > pinned_most) {
        pinned_most = pinned[i];
        pinned_seq = events[i].seq;
      }
    }
    EXPECT_EQ(sweep.pinned().bytes, pinned_most);
    EXPECT_EQ(sweep.pinned().seq, pinned_seq);
  }
}

}  // namespace
}  // namespace vramtrace::analysis
