// analysis/roles/role_timeline.h on role_trace.h's blocks: the sweep's steps per role, and buckets
// whose max and last follow TimelineBucket's rule.
#include "analysis/roles/role_timeline.h"

#include <gtest/gtest.h>

#include "role_trace.h"
#include "storage/trace_reader.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

class RoleTimelineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto path = dir_.path() / "roles.db";
    ASSERT_EQ(testing::write_role_trace(path), "");
    storage::OpenFailure failure;
    auto trace = storage::TraceReader::open(path, &failure);
    ASSERT_NE(trace, nullptr) << failure.message;
    sweep_ = sweep_block_roles(block_lives(*trace, 1));
  }

  const TimelineSeries* series(const Timeline& timeline, BlockRole role) const {
    for (const TimelineSeries& s : timeline.series)
      if (s.kind == static_cast<int>(role)) return &s;
    return nullptr;
  }

  testing::TempDir dir_;
  RoleSweep sweep_;
};

TEST_F(RoleTimelineTest, OneStepSeriesPerRoleThatHasABlock) {
  EXPECT_EQ(sweep_.blocks, 8u);
  ASSERT_EQ(sweep_.series.size(), 5u);  // no unknown block
  for (const RoleSteps& steps : sweep_.series) EXPECT_NE(steps.role, BlockRole::kUnknown);
  const RoleSteps& temporary = sweep_.series[4];
  EXPECT_EQ(temporary.role, BlockRole::kTemporary);
  EXPECT_EQ(temporary.peak_bytes, 4 * kMiB);
  EXPECT_EQ(temporary.bytes.back(), 0u);  // every temporary was freed
}

TEST_F(RoleTimelineTest, ABucketsMaxIsItsHighestAndLastItsEnd) {
  // Buckets [seq 3, seq 6) and [seq 6, seq 16).
  const std::vector<std::int64_t> edges{testing::ns_of_seq(3), testing::ns_of_seq(6),
                                        testing::ns_of_seq(16)};
  const Timeline timeline = role_timeline(sweep_, edges);
  ASSERT_EQ(timeline.series.size(), 5u);
  const TimelineSeries* temporary = series(timeline, BlockRole::kTemporary);
  ASSERT_NE(temporary, nullptr);
  EXPECT_EQ(temporary->level, "role");
  EXPECT_EQ(temporary->kind_name, "temporary");
  ASSERT_EQ(temporary->buckets.size(), 2u);
  EXPECT_EQ(temporary->buckets[0].max_bytes, 4 * kMiB);  // made at seq 4, freed at seq 5
  EXPECT_EQ(temporary->buckets[0].last_bytes, 0u);
  EXPECT_EQ(temporary->buckets[1].max_bytes, 2 * kMiB + 512);  // seq 8: the seed and the engine's
  const TimelineSeries* parameter = series(timeline, BlockRole::kParameter);
  ASSERT_NE(parameter, nullptr);
  // Made before the first bucket: live at its start.
  EXPECT_EQ(parameter->buckets[0].min_bytes, 1 * kMiB);
  EXPECT_EQ(series(timeline, BlockRole::kOptimizerState)->buckets[1].last_bytes, 2 * kMiB);
  EXPECT_EQ(series(timeline, BlockRole::kActivation)->buckets[1].last_bytes, 0u);
}

}  // namespace
}  // namespace vramtrace::analysis
