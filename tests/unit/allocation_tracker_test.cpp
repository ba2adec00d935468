// AllocationTracker: each free matched to what it ends, frees of unknown addresses and failed
// frees as bad_free rows, and the CUPTI backend's correlation ids kept for activity records.
#include "collector/allocation_tracker.h"

#include <gtest/gtest.h>

#include "storage/trace_rows.h"
#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

constexpr int64_t kUpid = 1;

class AllocationTrackerTest : public ::testing::Test {
 protected:
  void SetUp() override { trace_.add_process_and_thread(kUpid, kUtid, 7); }

  ring::RecordHeader next() { return ring::RecordHeader{0, ++seq_, static_cast<int64_t>(seq_)}; }
  void alloc(uint64_t address, uint64_t size, uint32_t correlation_id = 0) {
    wire::Alloc m;
    m.set_kind(wire::KIND_DEVICE);
    m.set_api(wire::API_CUDA_MALLOC);
    m.set_address(address);
    m.set_size(size);
    m.set_correlation_id(correlation_id);
    tracker_.on_alloc(process_, next(), m, {kUpid, kUtid, std::nullopt});
  }
  uint64_t free(uint64_t address, bool nested = false) {
    wire::Free m;
    m.set_api(wire::API_CUDA_FREE);
    m.set_address(address);
    m.set_nested(nested);
    tracker_.on_free(process_, next(), m, {kUpid, kUtid, std::nullopt});
    return seq_;
  }
  void free_failed(uint64_t free_seq, int result) {
    wire::FreeFailed m;
    m.set_free_seq(free_seq);
    m.set_result(result);
    tracker_.on_free_failed(process_, kUpid, m, [] { return std::nullopt; });
  }
  std::vector<storage::AllocationRecord> allocations() {
    return trace_.finish().allocations(storage::AllocationFilter{});
  }

  static constexpr int64_t kUtid = 1;
  testing::TrackerTrace trace_;
  IngestStats stats_;
  AllocationTracker tracker_{trace_.writer(), stats_};
  AllocationTracker::ProcessAllocations process_;
  uint64_t seq_ = 0;
};

TEST_F(AllocationTrackerTest, AFreeEndsTheAllocationAtItsAddress) {
  alloc(0x1000, 64);
  alloc(0x2000, 128);
  const uint64_t freed_at = free(0x1000);
  EXPECT_EQ(tracker_.allocations(), 2);
  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 2u);
  ASSERT_TRUE(rows[0].free);
  EXPECT_EQ(rows[0].free->free_seq, freed_at);
  EXPECT_FALSE(rows[1].free);
  EXPECT_TRUE(trace_.finish().bad_frees().empty());
}

// The wire leaves out a requested size equal to the size; one that is there, 0 included, is
// what the call asked for.
TEST_F(AllocationTrackerTest, ARequestedSizeLeftOutIsTheSize) {
  alloc(0x1000, 4096);
  wire::Alloc pitched;
  pitched.set_kind(wire::KIND_DEVICE);
  pitched.set_api(wire::API_CUDA_MALLOC_PITCH);
  pitched.set_address(0x2000);
  pitched.set_size(8192);
  pitched.set_requested_size(6000);
  tracker_.on_alloc(process_, next(), pitched, {kUpid, kUtid, std::nullopt});
  pitched.set_address(0x4000);
  pitched.set_requested_size(0);
  tracker_.on_alloc(process_, next(), pitched, {kUpid, kUtid, std::nullopt});
  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].allocation.requested_size, 4096u);
  EXPECT_EQ(rows[1].allocation.requested_size, 6000u);
  EXPECT_EQ(rows[2].allocation.requested_size, 0u);
}

TEST_F(AllocationTrackerTest, AFreeOfAnUnknownAddressIsABadFree) {
  const uint64_t freed_at = free(0x3000);
  const auto bad = trace_.finish().bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].seq, freed_at);
  EXPECT_EQ(bad[0].address, 0x3000u);
  EXPECT_EQ(bad[0].reason, storage::kBadFreeUnknownAddress);
  EXPECT_EQ(bad[0].result, 0);
}

// A free made inside another hook (a signal handler's, or the library's own work) ends a live
// allocation as any free does; one of an address that is not live is the library's bookkeeping,
// counted, and not a bad free.
TEST_F(AllocationTrackerTest, ANestedFreeOfAnUnknownAddressIsCountedNotABadFree) {
  alloc(0x1000, 64);
  const uint64_t freed_at = free(0x1000, /*nested=*/true);
  free(0x7000, /*nested=*/true);
  EXPECT_EQ(stats_.value(Stat::kNestedFreeUnmatched), 1);
  const auto& reader = trace_.finish();
  EXPECT_TRUE(reader.bad_frees().empty());
  const auto rows = reader.allocations(storage::AllocationFilter{});
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].free);
  EXPECT_EQ(rows[0].free->free_seq, freed_at);
}

TEST_F(AllocationTrackerTest, AFailedFreeLeavesTheAllocationLive) {
  alloc(0x1000, 64);
  const uint64_t freed_at = free(0x1000);
  free_failed(freed_at, 1);
  free(0x1000);  // live again, so this free ends it
  const auto& reader = trace_.finish();
  const auto bad = reader.bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].seq, freed_at);
  EXPECT_EQ(bad[0].reason, storage::kBadFreeCallFailed);
  EXPECT_EQ(bad[0].result, 1);
  const auto rows = reader.allocations(storage::AllocationFilter{});
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].free);
  EXPECT_EQ(rows[0].free->free_seq, freed_at + 1);  // FreeFailed takes no sequence number here
}

TEST_F(AllocationTrackerTest, AFailedFreeOfAnUnknownAddressMarksItsBadFree) {
  const uint64_t freed_at = free(0x5000);
  free_failed(freed_at, 2);
  free_failed(12345, 1);  // no such free
  EXPECT_EQ(stats_.value(Stat::kFreeFailedUnmatched), 1);
  const auto bad = trace_.finish().bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].result, 2);
}

TEST_F(AllocationTrackerTest, AnAllocationOverALiveAddressIsCounted) {
  alloc(0x1000, 64);
  alloc(0x1000, 64);
  EXPECT_EQ(stats_.value(Stat::kAllocOverLiveAddress), 1);
}

TEST_F(AllocationTrackerTest, AnUnmapOfSeveralMappingsNamesEachForItsRecord) {
  // Two adjacent 2 MiB mappings, unmapped by one cuMemUnmap of the whole range (call 18), as
  // PyTorch's expandable segments shrink: CUPTI sends a release record for each mapping.
  for (const uint64_t address : {uint64_t{0x200000}, uint64_t{0x400000}}) {
    wire::Alloc m;
    m.set_kind(wire::KIND_VMM_MAPPING);
    m.set_api(wire::API_CU_MEM_MAP);
    m.set_address(address);
    m.set_size(0x200000);
    m.set_correlation_id(static_cast<uint32_t>(address >> 20));
    tracker_.on_alloc(process_, next(), m, {kUpid, kUtid, std::nullopt});
  }
  wire::Free unmap;
  unmap.set_api(wire::API_CU_MEM_UNMAP);
  unmap.set_address(0x200000);
  unmap.set_size(0x400000);
  unmap.set_correlation_id(18);
  tracker_.on_free(process_, next(), unmap, {kUpid, kUtid, std::nullopt});

  const auto second = process_.correlations.take_free(18, 0x400000);
  const auto first = process_.correlations.take_free(18, 0x200000);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->allocation_id, 1);
  EXPECT_EQ(second->allocation_id, 2);
  EXPECT_EQ(first->how, CorrelationIndex::How::kCorrelationId);
  EXPECT_EQ(second->how, CorrelationIndex::How::kCorrelationId);
  EXPECT_FALSE(process_.correlations.take_free(18, 0x200000)) << "each is taken once";
}

TEST_F(AllocationTrackerTest, CorrelationIdsNameTheAllocationRows) {
  alloc(0x1000, 64, 77);
  free(0x1000);
  const auto made = process_.correlations.take_alloc(77, 0x1000);
  ASSERT_TRUE(made);
  EXPECT_EQ(made->allocation_id, 1);
  EXPECT_EQ(made->how, CorrelationIndex::How::kCorrelationId);
}

}  // namespace
}  // namespace vramtrace::collector
