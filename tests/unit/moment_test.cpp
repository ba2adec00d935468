// Moments: how `--at` is parsed, and how each form resolves per process on the allocator trace
// (allocator_trace.h: upid 1 has 'iter' marks at seq 4, 9, 14 and its events 1 ms apart from
// 1001 ms; upid 2 has one allocation at seq 1).
#include "analysis/time/moment.h"
#include "analysis/time/whole_moment.h"

#include <gtest/gtest.h>

#include "allocator_trace_test_base.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

using analysis::MomentSpec;
using Kind = MomentSpec::Kind;

TEST(Moment, ParsesEachForm) {
  EXPECT_EQ(analysis::parse_moment("end").kind, Kind::kEnd);
  EXPECT_EQ(analysis::parse_moment("peak").kind, Kind::kPeak);
  EXPECT_EQ(analysis::parse_moment("oom").kind, Kind::kOom);
  const MomentSpec seq = analysis::parse_moment("seq:42");
  EXPECT_EQ(seq.kind, Kind::kSeq);
  EXPECT_EQ(seq.seq, 42u);
  const MomentSpec time = analysis::parse_moment("1500000000");
  EXPECT_EQ(time.kind, Kind::kTime);
  EXPECT_EQ(time.ns, 1'500'000'000);
  EXPECT_EQ(analysis::parse_moment("+1.5s").ns, 1'500'000'000);
  EXPECT_EQ(analysis::parse_moment("+250ms").ns, 250'000'000);
  EXPECT_EQ(analysis::parse_moment("+40us").ns, 40'000);
  EXPECT_EQ(analysis::parse_moment("+100ns").ns, 100);
  const MomentSpec marker = analysis::parse_moment("epoch 3");
  EXPECT_EQ(marker.kind, Kind::kMarker);
  EXPECT_EQ(marker.marker, "epoch 3");
  EXPECT_EQ(marker.occurrence, std::nullopt);
  const MomentSpec nth = analysis::parse_moment("iter#2");
  EXPECT_EQ(nth.marker, "iter");
  EXPECT_EQ(nth.occurrence, 2u);
  EXPECT_EQ(analysis::parse_moment("#2").marker, "#2");    // no name before the #
  EXPECT_EQ(analysis::parse_moment("a#b").marker, "a#b");  // not a number after it
  EXPECT_THROW(analysis::parse_moment("seq:"), analysis::BadMoment);
  EXPECT_THROW(analysis::parse_moment("seq:-1"), analysis::BadMoment);
  EXPECT_THROW(analysis::parse_moment("+5"), analysis::BadMoment);
  EXPECT_THROW(analysis::parse_moment("+fast"), analysis::BadMoment);
  // Past the latest time a trace holds: refused, not wrapped to a time before every event.
  EXPECT_EQ(analysis::parse_moment("9223372036854775807").ns, INT64_MAX);
  EXPECT_THROW(analysis::parse_moment("9223372036854775808"), analysis::BadMoment);
  EXPECT_THROW(analysis::parse_moment("18446744073709551615"), analysis::BadMoment);
  EXPECT_THROW(analysis::parse_moment("+9300000000s"), analysis::BadMoment);
}

class MomentOnTrace : public testing::AllocatorTraceTest {
 protected:
  void SetUp() override {
    AllocatorTraceTest::SetUp();
    if (HasFatalFailure()) return;
    index_ = analysis::open_time_index(*trace_);
  }

  std::vector<analysis::ProcessMoment> resolve(const std::string& text,
                                               analysis::ProcessSelection processes = {}) {
    return analysis::resolve_moment(*trace_, *index_, analysis::parse_moment(text), processes);
  }

  std::unique_ptr<storage::TimeIndex> index_;
};

TEST_F(MomentOnTrace, ASegmentsMomentIsTakenWithTheBlockItWasMadeFor) {
  EXPECT_EQ(analysis::with_new_segments_blocks(*index_, 1, 1), 2u);  // S1, then B1 in it
  EXPECT_EQ(analysis::with_new_segments_blocks(*index_, 1, 7), 8u);  // S2, then B4
  EXPECT_EQ(analysis::with_new_segments_blocks(*index_, 1, 5), 5u);  // a block
  EXPECT_EQ(analysis::with_new_segments_blocks(*index_, 1, 6), 6u);  // a free
  // Device memory outside the allocator: no block of its comes.
  EXPECT_EQ(analysis::with_new_segments_blocks(*index_, 1, 12), 12u);
  // A process without allocator events.
  EXPECT_EQ(analysis::with_new_segments_blocks(*index_, 2, 1), 1u);
}

TEST_F(MomentOnTrace, ResolvesPerProcess) {
  const auto end = resolve("end");
  ASSERT_EQ(end.size(), 2u);
  EXPECT_EQ(end[0].seq, 13u);
  EXPECT_EQ(end[1].seq, 1u);
  const auto peak = resolve("peak");
  ASSERT_EQ(peak.size(), 2u);
  // Device memory's peak, reached at S2 (7), taken with its block B4 in it (8).
  EXPECT_EQ(peak[0].seq, 8u);
  const auto last_iter = resolve("iter");
  ASSERT_EQ(last_iter.size(), 1u);  // upid 2 has no marker
  EXPECT_EQ(last_iter[0].seq, 14u);
  EXPECT_EQ(last_iter[0].time_ns, testing::kAllocatorTraceStartNs + 14'000'000);
  EXPECT_EQ(resolve("iter#1")[0].seq, 4u);
  const auto time = resolve("+5ms");  // 1006 ms: upid 1's seq 6, upid 2's seq 1
  ASSERT_EQ(time.size(), 2u);
  EXPECT_EQ(time[0].seq, 6u);
  EXPECT_EQ(time[1].seq, 1u);
  EXPECT_EQ(resolve("seq:3", std::set<std::int64_t>{1})[0].seq, 3u);
}

TEST_F(MomentOnTrace, MomentsTheTraceDoesNotHaveAreErrors) {
  EXPECT_THROW(resolve("oom"), analysis::BadMoment);
  EXPECT_THROW(resolve("iter#4"), analysis::BadMoment);
  EXPECT_THROW(resolve("no such marker"), analysis::BadMoment);
  EXPECT_THROW(resolve("seq:3"), analysis::BadMoment);  // two processes selected
}

}  // namespace
}  // namespace vramtrace
