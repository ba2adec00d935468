// TraceIngest parses the shim's Alloc and Free records (an Envelope holding that one field) on
// a fast path, straight into reused messages. Records framed any other way must still mean
// what the Envelope says they mean: the general path takes them.
#include <gtest/gtest.h>

#include "ingest_harness.h"

namespace vramtrace {
namespace {

using testing_support::IngestHarness;

wire::Envelope an_alloc(uint64_t address) {
  wire::Envelope envelope;
  wire::Alloc* alloc = envelope.mutable_alloc();
  alloc->set_tid(1);
  alloc->set_kind(wire::KIND_DEVICE);
  alloc->set_api(wire::API_CUDA_MALLOC);
  alloc->set_address(address);
  alloc->set_size(4096);
  alloc->add_stack(0x401000);
  return envelope;
}

wire::Envelope its_free(uint64_t address) {
  wire::Envelope envelope;
  wire::Free* free = envelope.mutable_free();
  free->set_tid(1);
  free->set_api(wire::API_CUDA_FREE);
  free->set_address(address);
  free->add_stack(0x401000);
  return envelope;
}

TEST(RecordFraming, AllocAndFreeAsTheShimFramesThemMakeOneFreedRow) {
  IngestHarness harness;
  harness.feed(an_alloc(0x7f0000001000));
  harness.feed(an_alloc(0x7f0000002000));
  harness.feed(its_free(0x7f0000001000));
  const auto& reader = harness.finish();
  const auto allocations = reader.allocations({});
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0].allocation.address, 0x7f0000001000u);
  EXPECT_EQ(allocations[0].allocation.size, 4096u);
  ASSERT_TRUE(allocations[0].free.has_value());
  EXPECT_EQ(allocations[0].free->free_seq, 4u);
  EXPECT_FALSE(allocations[1].free.has_value());
  EXPECT_EQ(harness.stat("record_undecodable"), 0);
}

TEST(RecordFraming, AnAllocFollowedByAFieldThisCollectorDoesNotKnowIsStillAnAlloc) {
  IngestHarness harness;
  // Field 100, varint 7: what a newer shim could add after the body.
  harness.feed_bytes(an_alloc(0x7f0000001000).SerializeAsString() + std::string("\xa0\x06\x07", 3));
  // The same body split in two Alloc fields: protobuf merges them into one message.
  wire::Envelope first = an_alloc(0x7f0000002000);
  first.mutable_alloc()->clear_size();
  wire::Envelope second;
  second.mutable_alloc()->set_size(8192);
  harness.feed_bytes(first.SerializeAsString() + second.SerializeAsString());
  const auto& reader = harness.finish();
  const auto allocations = reader.allocations({});
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0].allocation.address, 0x7f0000001000u);
  EXPECT_EQ(allocations[0].allocation.size, 4096u);
  EXPECT_EQ(allocations[1].allocation.address, 0x7f0000002000u);
  EXPECT_EQ(allocations[1].allocation.size, 8192u);
  EXPECT_EQ(harness.stat("record_undecodable"), 0);
}

TEST(RecordFraming, AnAllocCutShortIsCountedAndWritesNothing) {
  IngestHarness harness;
  const std::string whole = an_alloc(0x7f0000001000).SerializeAsString();
  harness.feed_bytes(whole.substr(0, whole.size() - 3));  // its length now runs past the end
  std::string inner_cut = whole;
  inner_cut[1] = static_cast<char>(inner_cut[1] - 1);  // the body ends inside its last field
  harness.feed_bytes(inner_cut.substr(0, inner_cut.size() - 1));
  const auto& reader = harness.finish();
  EXPECT_TRUE(reader.allocations({}).empty());
  EXPECT_EQ(harness.stat("record_undecodable"), 2);
}

}  // namespace
}  // namespace vramtrace
