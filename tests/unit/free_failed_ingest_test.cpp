// Frees go without stacks unless VRAMTRACE_FREE_STACKS=1; a free that fails is a bug to point
// at, so its FreeFailed brings the failed call's stack instead. The collector puts that stack
// on the bad_free row, whether the free's address was live (call_failed: the allocation is
// live again) or unknown (unknown_address: the row written at the free gets its result too).
#include <gtest/gtest.h>

#include <vector>

#include "ingest_harness.h"
#include "vramtrace.pb.h"

namespace vramtrace {
namespace {

constexpr uint64_t kLibrary = 0x10000000;
const std::vector<uint64_t> kAllocStack{kLibrary + 0x100, kLibrary + 0x200};
const std::vector<uint64_t> kFreeStack{kLibrary + 0x300, kLibrary + 0x400, kLibrary + 0x500};

class FreeFailedIngestTest : public ::testing::Test {
 protected:
  void SetUp() override { harness_.feed_module(kLibrary, "/opt/lib/liballoc.so"); }
  void alloc(uint64_t address, const std::vector<uint64_t>& stack) {
    wire::Envelope e = testing_support::IngestHarness::cuda_malloc(address, 4096, stack);
    e.mutable_alloc()->set_requested_size(4096);
    harness_.feed(e);
  }
  // Returns the free's sequence number, for its FreeFailed.
  uint64_t free(uint64_t address, const std::vector<uint64_t>& stack) {
    wire::Envelope e;
    auto* f = e.mutable_free();
    f->set_api(wire::API_CUDA_FREE);
    f->set_address(address);
    for (uint64_t ip : stack) f->add_stack(ip);
    harness_.feed(e);
    return harness_.seq();
  }
  void free_failed(uint64_t free_seq, int result, const std::vector<uint64_t>& stack) {
    wire::Envelope e;
    auto* f = e.mutable_free_failed();
    f->set_free_seq(free_seq);
    f->set_result(result);
    for (uint64_t ip : stack) f->add_stack(ip);
    harness_.feed(e);
  }
  // The return addresses of a stored stack, innermost first, as module offsets.
  std::vector<uint64_t> offsets(std::optional<int64_t> callsite_id) const {
    std::vector<uint64_t> out;
    for (const auto& frame : harness_.reader().stack(callsite_id)) out.push_back(frame.rel_pc);
    return out;
  }
  std::vector<storage::AllocationRecord> allocations() const {
    return harness_.reader().allocations({});
  }

  testing_support::IngestHarness harness_;
};

// The free's own stack is looked up as a return address: one byte before it.
const std::vector<uint64_t> kFreeOffsets{0x2ff, 0x3ff, 0x4ff};

TEST_F(FreeFailedIngestTest, AFailedFreeOfALiveAllocationCarriesTheFailedCallsStack) {
  alloc(0xd000, kAllocStack);
  const uint64_t seq = free(0xd000, {});
  free_failed(seq, 1, kFreeStack);
  harness_.finish();

  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_TRUE(rows[0].live_at_end());  // the free did not happen
  const auto bad = harness_.reader().bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].reason, storage::kBadFreeCallFailed);
  EXPECT_EQ(bad[0].result, 1);
  EXPECT_EQ(bad[0].seq, seq);
  ASSERT_TRUE(bad[0].callsite_id.has_value());
  EXPECT_EQ(offsets(bad[0].callsite_id), kFreeOffsets);
}

TEST_F(FreeFailedIngestTest, AFailedFreeOfAnUnknownAddressGetsItsResultAndStack) {
  const uint64_t seq = free(0xbad0, {});
  free_failed(seq, 1, kFreeStack);
  harness_.finish();

  const auto bad = harness_.reader().bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].reason, storage::kBadFreeUnknownAddress);
  EXPECT_EQ(bad[0].address, 0xbad0u);
  EXPECT_EQ(bad[0].result, 1);
  EXPECT_EQ(offsets(bad[0].callsite_id), kFreeOffsets);
}

TEST_F(FreeFailedIngestTest, AnUnknownAddressThatFreesWithoutErrorHasNoStackWithoutFreeStacks) {
  free(0xbad0, {});
  harness_.finish();

  const auto bad = harness_.reader().bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].result, 0);
  EXPECT_FALSE(bad[0].callsite_id.has_value());
}

TEST_F(FreeFailedIngestTest, WithFreeStacksTheFreesOwnStackIsKept) {
  alloc(0xd000, kAllocStack);
  const uint64_t seq = free(0xd000, kFreeStack);
  free_failed(seq, 1, {});  // the shim sends no second stack when the free had one
  alloc(0xe000, kAllocStack);
  free(0xe000, kFreeStack);
  harness_.finish();

  const auto bad = harness_.reader().bad_frees();
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(offsets(bad[0].callsite_id), kFreeOffsets);
  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].live_at_end());
  ASSERT_TRUE(rows[1].free.has_value());
  EXPECT_EQ(offsets(rows[1].free->free_callsite_id), kFreeOffsets);
}

TEST_F(FreeFailedIngestTest, FreesWithoutStacksLeaveTheFreeCallsiteEmpty) {
  alloc(0xd000, kAllocStack);
  free(0xd000, {});
  harness_.finish();

  const auto rows = allocations();
  ASSERT_EQ(rows.size(), 1u);
  ASSERT_TRUE(rows[0].free.has_value());
  EXPECT_FALSE(rows[0].free->free_callsite_id.has_value());
  EXPECT_TRUE(rows[0].allocation.alloc_callsite_id.has_value());
  EXPECT_TRUE(harness_.reader().bad_frees().empty());
}

// The collector keeps the last 4096 frees for their failures, oldest overwritten first: a
// failure of any of them undoes its free, once the ring of them has wrapped too; one of an older
// free is counted and changes nothing.
TEST_F(FreeFailedIngestTest, TheLastFourThousandFreesCanFailAndOlderOnesAreCounted) {
  std::vector<uint64_t> free_seqs;
  for (uint64_t i = 0; i < 5000; ++i) {
    alloc(0x100000 + i * 0x1000, kAllocStack);
    free_seqs.push_back(free(0x100000 + i * 0x1000, {}));
  }
  free_failed(free_seqs[4999], 1, kFreeStack);         // the newest
  free_failed(free_seqs[5000 - 4096], 2, kFreeStack);  // the oldest kept
  free_failed(free_seqs[5000 - 4097], 3, kFreeStack);  // one older: gone
  harness_.finish();

  std::vector<uint64_t> live;
  for (const auto& r : allocations())
    if (r.live_at_end()) live.push_back(r.allocation.address);
  EXPECT_EQ(live,
            (std::vector<uint64_t>{0x100000 + (5000 - 4096) * 0x1000, 0x100000 + 4999 * 0x1000}));
  EXPECT_EQ(harness_.reader().bad_frees().size(), 2u);
  EXPECT_EQ(harness_.stat("free_failed_unmatched"), 1);
}

}  // namespace
}  // namespace vramtrace
