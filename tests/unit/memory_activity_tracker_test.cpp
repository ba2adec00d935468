// MemoryActivityTracker: CUPTI's activity records as memory_activity rows, each allocation or
// release tied to the callback's allocation row by correlation id, else by address.
#include "collector/memory_activity_tracker.h"

#include <gtest/gtest.h>

#include "sql_query.h"
#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

class MemoryActivityTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override { trace_.add_process_and_thread(1, 1, 7); }
  void activity(wire::MemoryActivity::Operation operation, uint32_t correlation_id,
                uint64_t address) {
    wire::MemoryActivity m;
    m.set_operation(operation);
    m.set_kind(wire::KIND_DEVICE);
    m.set_correlation_id(correlation_id);
    m.set_address(address);
    m.set_size(4096);
    tracker_.on_activity(callbacks_, 1, m);
  }
  std::string column(int64_t id, const std::string& name) {
    return testing::query_one(
        trace_.path(), "SELECT " + name + " FROM memory_activity WHERE id = " + std::to_string(id));
  }

  testing::TrackerTrace trace_;
  IngestStats stats_;
  MemoryActivityTracker tracker_{trace_.writer(), stats_};
  CorrelationIndex callbacks_;
};

TEST_F(MemoryActivityTrackerTest, RecordsNameTheAllocationsTheirCallbacksMade) {
  callbacks_.on_alloc(10, 0x1000, 5);
  callbacks_.on_free(11, 0x1000, 5);
  callbacks_.on_alloc(12, 0x2000, 6);
  activity(wire::MemoryActivity::OPERATION_ALLOCATION, 10, 0x1000);
  activity(wire::MemoryActivity::OPERATION_RELEASE, 11, 0x1000);
  activity(wire::MemoryActivity::OPERATION_ALLOCATION, 99, 0x2000);  // by address
  trace_.finish();
  EXPECT_EQ(column(1, "operation"), "allocation");
  EXPECT_EQ(column(1, "allocation_id"), "5");
  EXPECT_EQ(column(2, "operation"), "release");
  EXPECT_EQ(column(2, "allocation_id"), "5");
  EXPECT_EQ(column(3, "allocation_id"), "6");
  EXPECT_EQ(stats_.value(Stat::kCuptiActivityMatchedByAddress), 1);
}

TEST_F(MemoryActivityTrackerTest, OneCallsRecordsNameTheAllocationsAtTheirAddresses) {
  // One call (id 18) freed three allocations; its records come in another order, and one of
  // them at an address the callback did not see (matched by the id all the same).
  callbacks_.on_free(18, 0x1000, 5);
  callbacks_.on_free(18, 0x2000, 6);
  callbacks_.on_free(18, 0x3000, 7);
  activity(wire::MemoryActivity::OPERATION_RELEASE, 18, 0x2000);
  activity(wire::MemoryActivity::OPERATION_RELEASE, 18, 0x1000);
  activity(wire::MemoryActivity::OPERATION_RELEASE, 18, 0x9000);
  activity(wire::MemoryActivity::OPERATION_RELEASE, 18, 0x3000);
  trace_.finish();
  EXPECT_EQ(column(1, "allocation_id"), "6");
  EXPECT_EQ(column(2, "allocation_id"), "5");
  EXPECT_EQ(column(3, "allocation_id"), "7");
  EXPECT_EQ(column(4, "allocation_id"), "<null>") << "its entry went to the record before";
  EXPECT_EQ(stats_.value(Stat::kCuptiActivityReleaseWithoutCallback), 1);
  EXPECT_EQ(stats_.value(Stat::kCuptiActivityMatchedByAddress), 0);
}

TEST_F(MemoryActivityTrackerTest, RecordsWithoutACallbackAreCounted) {
  activity(wire::MemoryActivity::OPERATION_ALLOCATION, 1, 0x1000);
  activity(wire::MemoryActivity::OPERATION_RELEASE, 2, 0x1000);
  activity(wire::MemoryActivity::OPERATION_POOL_CREATED, 3, 0x8000);
  trace_.finish();
  EXPECT_EQ(column(1, "allocation_id"), "<null>");
  EXPECT_EQ(column(2, "allocation_id"), "<null>");
  EXPECT_EQ(column(3, "operation"), "pool_created");
  EXPECT_EQ(stats_.value(Stat::kCuptiActivityAllocationWithoutCallback), 1);
  EXPECT_EQ(stats_.value(Stat::kCuptiActivityReleaseWithoutCallback), 1);
}

}  // namespace
}  // namespace vramtrace::collector
