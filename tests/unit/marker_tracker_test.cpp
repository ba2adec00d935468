// MarkerTracker: marks and ranges as marker rows, push/pop ranges nested per thread, and
// unmatched ends counted.
#include "collector/marker_tracker.h"

#include <gtest/gtest.h>

#include "storage/trace_rows.h"
#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

class MarkerTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override { trace_.add_process_and_thread(1, 1, 7); }
  void marker(wire::Marker::Type type, const std::string& name = "", uint64_t range_id = 0) {
    wire::Marker m;
    m.set_type(type);
    m.set_tid(7);
    m.set_name(name);
    m.set_range_id(range_id);
    ++seq_;
    tracker_.on_marker(ranges_, 1, 1, ring::RecordHeader{0, seq_, static_cast<int64_t>(seq_)}, m);
  }

  testing::TrackerTrace trace_;
  IngestStats stats_;
  MarkerTracker tracker_{trace_.writer(), stats_};
  MarkerPairing ranges_;
  uint64_t seq_ = 0;
};

TEST_F(MarkerTrackerTest, PushedRangesNestAndEndAtTheirPop) {
  marker(wire::Marker::TYPE_RANGE_PUSH, "epoch");
  marker(wire::Marker::TYPE_RANGE_PUSH, "step");
  marker(wire::Marker::TYPE_RANGE_POP);
  marker(wire::Marker::TYPE_MARK, "checkpoint");
  const auto markers = trace_.finish().markers();
  ASSERT_EQ(markers.size(), 3u);
  EXPECT_EQ(markers[0].start.name, "epoch");
  EXPECT_EQ(markers[0].start.depth, 0);
  EXPECT_FALSE(markers[0].end);
  EXPECT_EQ(markers[1].start.name, "step");
  EXPECT_EQ(markers[1].start.depth, 1);
  EXPECT_EQ(markers[1].start.parent_id, markers[0].start.id);
  ASSERT_TRUE(markers[1].end);
  EXPECT_EQ(markers[1].end->end_seq, 3u);
  EXPECT_EQ(markers[2].start.type, "mark");
  EXPECT_EQ(markers[2].start.source, storage::kMarkerFromNvtx);
}

TEST_F(MarkerTrackerTest, StartedRangesEndByTheirId) {
  marker(wire::Marker::TYPE_RANGE_START, "load", 42);
  marker(wire::Marker::TYPE_RANGE_END, "", 42);
  const auto markers = trace_.finish().markers();
  ASSERT_EQ(markers.size(), 1u);
  ASSERT_TRUE(markers[0].end);
  EXPECT_EQ(markers[0].end->end_seq, 2u);
}

TEST_F(MarkerTrackerTest, UnmatchedEndsAndUnknownTypesAreCounted) {
  marker(wire::Marker::TYPE_RANGE_POP);
  marker(wire::Marker::TYPE_RANGE_END, "", 5);
  marker(static_cast<wire::Marker::Type>(99));
  EXPECT_EQ(stats_.value(Stat::kMarkerPopWithoutPush), 1);
  EXPECT_EQ(stats_.value(Stat::kMarkerEndWithoutStart), 1);
  EXPECT_EQ(stats_.value(Stat::kMarkerUnknownType), 1);
  EXPECT_TRUE(trace_.finish().markers().empty());
}

}  // namespace
}  // namespace vramtrace::collector
