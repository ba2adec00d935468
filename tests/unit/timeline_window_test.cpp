// The exact timeline of a window (analysis/time/timeline_window.h): over the index's own bucket
// edges it is `vramtrace timeline` at full resolution; over any window it equals a brute-force
// sweep of every event (the value carried in at the window's start included); inside one of the
// index's buckets it shows where memory rose and fell, which the bucket cannot; and a window
// with too many events gives no series rather than a slow answer.
#include "analysis/time/timeline_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "allocator_trace.h"
#include "analysis/time/report_time_index.h"
#include "burst_trace.h"
#include "random_trace.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;

struct Opened {
  std::unique_ptr<storage::TraceReader> trace;
  std::unique_ptr<storage::TimeIndex> index;
  analysis::Timeline whole;
};

Opened open_trace(const std::filesystem::path& path) {
  Opened opened;
  storage::OpenFailure failure;
  opened.trace = storage::TraceReader::open(path, &failure);
  EXPECT_NE(opened.trace, nullptr) << failure.message;
  if (!opened.trace) return opened;
  opened.index = analysis::open_time_index(*opened.trace);
  opened.whole = analysis::build_timeline(*opened.trace, *opened.index,
                                          analysis::kMaxTimelineBuckets, std::nullopt);
  return opened;
}

// The edges of the timeline's own buckets.
std::vector<std::int64_t> edges_of(const analysis::Timeline& timeline) {
  std::vector<std::int64_t> edges;
  for (const analysis::TimelineBucket& bucket : timeline.series.front().buckets)
    edges.push_back(bucket.start_ns);
  edges.push_back(timeline.series.front().buckets.back().end_ns);
  return edges;
}

void expect_same_buckets(const analysis::Timeline& got, const analysis::Timeline& expected) {
  ASSERT_EQ(got.series.size(), expected.series.size());
  for (std::size_t s = 0; s < got.series.size(); ++s) {
    const auto& g = got.series[s];
    const auto& e = expected.series[s];
    ASSERT_EQ(std::tie(g.upid, g.device, g.kind), std::tie(e.upid, e.device, e.kind));
    ASSERT_EQ(g.buckets.size(), e.buckets.size());
    for (std::size_t b = 0; b < g.buckets.size(); ++b) {
      const auto& gb = g.buckets[b];
      const auto& eb = e.buckets[b];
      ASSERT_EQ(std::tie(gb.start_ns, gb.end_ns, gb.min_bytes, gb.max_bytes, gb.last_bytes),
                std::tie(eb.start_ns, eb.end_ns, eb.min_bytes, eb.max_bytes, eb.last_bytes))
          << "series " << s << " bucket " << b;
    }
    EXPECT_EQ(g.peak_bytes, e.peak_bytes);
  }
}

// Every series of `whole` over `edges`, by replaying every event of the trace.
analysis::Timeline brute_force(const storage::TraceReader& trace, const analysis::Timeline& whole,
                               const std::vector<std::int64_t>& edges) {
  std::map<std::tuple<std::int64_t, int, int>, std::vector<storage::AllocationEvent>> events;
  trace.for_each_allocation_event([&](const storage::AllocationEvent& event) {
    events[{event.upid, event.device, event.kind}].push_back(event);
  });
  analysis::Timeline expected = whole;
  for (analysis::TimelineSeries& series : expected.series) {
    series.buckets.clear();
    series.peak_bytes = 0;
    const auto& mine = events[{series.upid, series.device, series.kind}];
    std::uint64_t value = 0;
    std::size_t e = 0;
    const auto apply = [&](const storage::AllocationEvent& event) {
      value = event.type == storage::AllocationEvent::Type::kFree
                  ? value - std::min(value, event.size)
                  : value + event.size;
    };
    for (; e < mine.size() && mine[e].ns < edges.front(); ++e) apply(mine[e]);
    for (std::size_t j = 0; j + 1 < edges.size(); ++j) {
      analysis::TimelineBucket bucket{edges[j], edges[j + 1], value, value, value};
      for (; e < mine.size() && mine[e].ns < edges[j + 1]; ++e) {
        apply(mine[e]);
        bucket.min_bytes = std::min(bucket.min_bytes, value);
        bucket.max_bytes = std::max(bucket.max_bytes, value);
        bucket.last_bytes = value;
      }
      series.peak_bytes = std::max(series.peak_bytes, bucket.max_bytes);
      series.buckets.push_back(bucket);
    }
  }
  return expected;
}

TEST(TimelineWindow, OverTheIndexBucketsItIsTheTimeline) {
  testing::TempDir dir;
  std::uint64_t last_seq = 0;
  ASSERT_EQ(testing::write_random_trace(dir / "random.db", &last_seq), "");
  ASSERT_EQ(testing::write_allocator_trace(dir / "allocator.db"), "");
  for (const char* name : {"random.db", "allocator.db"}) {
    SCOPED_TRACE(name);
    const Opened opened = open_trace(dir / name);
    ASSERT_NE(opened.index, nullptr);
    const analysis::TimelineWindow window =
        analysis::build_timeline_window(*opened.index, opened.whole, edges_of(opened.whole));
    ASSERT_TRUE(window.exact);
    expect_same_buckets(window.timeline, opened.whole);
  }
}

TEST(TimelineWindow, AnyWindowEqualsABruteForceSweep) {
  testing::TempDir dir;
  std::uint64_t last_seq = 0;
  ASSERT_EQ(testing::write_random_trace(dir / "random.db", &last_seq), "");
  const Opened opened = open_trace(dir / "random.db");
  ASSERT_NE(opened.index, nullptr);
  std::mt19937_64 random(11);
  const std::int64_t start = opened.whole.start_ns, span = opened.whole.end_ns - start + 1;
  std::size_t carried_in = 0;
  for (int i = 0; i < 40; ++i) {
    // Windows from a few ns (inside one of the index's buckets) to the whole trace.
    const std::int64_t width =
        1 +
        static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(i % 2 == 0 ? 20000 : span));
    const std::int64_t from =
        start + static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(span - width + 1));
    const std::int64_t columns = 1 + static_cast<std::int64_t>(random() % 300);
    std::vector<std::int64_t> edges;
    for (std::int64_t c = 0; c <= columns; ++c) edges.push_back(from + width * c / columns);
    edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
    if (edges.size() < 2) continue;
    SCOPED_TRACE("window from " + std::to_string(from) + " width " + std::to_string(width));
    const analysis::TimelineWindow window =
        analysis::build_timeline_window(*opened.index, opened.whole, edges);
    ASSERT_TRUE(window.exact);
    const analysis::Timeline expected = brute_force(*opened.trace, opened.whole, edges);
    expect_same_buckets(window.timeline, expected);
    carried_in += expected.series.front().buckets.front().min_bytes > 0 ? 1 : 0;
  }
  EXPECT_GT(carried_in, 30u);  // the value before the window mattered
}

TEST(TimelineWindow, ShowsTheShapeInsideOneIndexBucket) {
  testing::TempDir dir;
  ASSERT_EQ(testing::write_burst_trace(dir / "burst.db"), "");
  const Opened opened = open_trace(dir / "burst.db");
  ASSERT_NE(opened.index, nullptr);
  ASSERT_EQ(opened.whole.series.size(), 1u);
  // The index's bucket 5 keeps only its extremes: the spike's start and end are lost.
  const analysis::TimelineBucket& bucket = opened.whole.series.front().buckets[5];
  const std::int64_t from = testing::kBurstTraceStartNs + 5 * testing::kBurstTraceBucketNs;
  ASSERT_EQ(bucket.start_ns, from);
  EXPECT_EQ(bucket.min_bytes, 4 * kMiB);
  EXPECT_EQ(bucket.max_bytes, 7 * kMiB);

  // Ten columns of 100 ns over that bucket.
  std::vector<std::int64_t> edges;
  for (std::int64_t c = 0; c <= 10; ++c) edges.push_back(from + 100 * c);
  const analysis::TimelineWindow window =
      analysis::build_timeline_window(*opened.index, opened.whole, edges);
  ASSERT_TRUE(window.exact);
  EXPECT_EQ(window.events, 3u);  // A, B and B's free; X was carried in
  const auto& columns = window.timeline.series.front().buckets;
  ASSERT_EQ(columns.size(), 10u);
  const auto min_max = [&](std::size_t c) {
    return std::pair(columns[c].min_bytes, columns[c].max_bytes);
  };
  EXPECT_EQ(min_max(0), std::pair(4 * kMiB, 5 * kMiB));  // X carried in, then A
  EXPECT_EQ(min_max(1), std::pair(5 * kMiB, 5 * kMiB));
  EXPECT_EQ(min_max(2), std::pair(5 * kMiB, 7 * kMiB));  // B
  for (std::size_t c = 3; c < 6; ++c) EXPECT_EQ(min_max(c), std::pair(7 * kMiB, 7 * kMiB));
  EXPECT_EQ(min_max(6), std::pair(5 * kMiB, 7 * kMiB));  // B freed
  for (std::size_t c = 7; c < 10; ++c) EXPECT_EQ(min_max(c), std::pair(5 * kMiB, 5 * kMiB));
  EXPECT_EQ(columns[9].last_bytes, 5 * kMiB);
  EXPECT_EQ(window.timeline.series.front().peak_bytes, 7 * kMiB);
}

TEST(TimelineWindow, TooManyEventsGiveNoSeries) {
  testing::TempDir dir;
  ASSERT_EQ(testing::write_burst_trace(dir / "burst.db"), "");
  const Opened opened = open_trace(dir / "burst.db");
  ASSERT_NE(opened.index, nullptr);
  const analysis::TimelineWindow window = analysis::build_timeline_window(
      *opened.index, opened.whole, edges_of(opened.whole), /*max_events=*/4);
  EXPECT_FALSE(window.exact);
  EXPECT_TRUE(window.timeline.series.empty());
  EXPECT_EQ(window.events, 5u);  // it stopped at the first event over the limit
  EXPECT_TRUE(analysis::build_timeline_window(*opened.index, opened.whole, edges_of(opened.whole),
                                              /*max_events=*/5)
                  .exact);
}

TEST(TimelineWindow, AnUnindexedTraceIsReadOnlyWhenSmall) {
  // Unfinished: the collector never created the (upid, seq) indexes.
  testing::TempDir dir;
  ASSERT_EQ(testing::write_allocator_trace(dir / "unfinished.db", /*finish=*/false), "");
  const Opened opened = open_trace(dir / "unfinished.db");
  ASSERT_NE(opened.index, nullptr);
  ASSERT_FALSE(opened.index->finds_events_by_seq());
  const std::vector<std::int64_t> edges{testing::kAllocatorTraceStartNs + 2'500'000,
                                        testing::kAllocatorTraceStartNs + 5'500'000,
                                        testing::kAllocatorTraceStartNs + 9'500'000};
  // Its 9 allocations (S1 .. R3) are more than 8 events: the whole table would be read.
  ASSERT_EQ(opened.index->last_allocation_id(), 9);
  const analysis::TimelineWindow refused =
      analysis::build_timeline_window(*opened.index, opened.whole, edges, /*max_events=*/8);
  EXPECT_FALSE(refused.exact);
  EXPECT_EQ(refused.why_not, analysis::TimelineWindow::WhyNot::kUnindexedTrace);
  EXPECT_EQ(refused.events, 0u);
  const analysis::TimelineWindow read =
      analysis::build_timeline_window(*opened.index, opened.whole, edges, /*max_events=*/9);
  ASSERT_TRUE(read.exact);
  expect_same_buckets(read.timeline, brute_force(*opened.trace, opened.whole, edges));
}

}  // namespace
}  // namespace vramtrace
