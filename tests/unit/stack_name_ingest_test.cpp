// Stack names in the collector (preload/stack_names.h): an event that names its stack is
// interned as any other; an event that uses a name gets the callsite of the name's latest
// definition; a name never defined is counted, and its event kept without a stack.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ingest_harness.h"
#include "vramtrace.pb.h"

namespace vramtrace {
namespace {

constexpr uint64_t kLibrary = 0x10000000;

class StackNameIngestTest : public ::testing::Test {
 protected:
  void SetUp() override { harness_.feed_module(kLibrary, "/opt/lib/liballoc.so"); }
  // An allocation at `address`: with `ips` as its frames (innermost first) and, if `name` is
  // not 0, named so; or, with `same_as` not 0, with that name instead of frames.
  void alloc(uint64_t address, const std::vector<uint64_t>& ips, uint32_t name, uint32_t same_as,
             wire::PythonStackStatus python = wire::PYTHON_STACK_NONE) {
    wire::Envelope e = testing_support::IngestHarness::cuda_malloc(address, 512, ips);
    auto* a = e.mutable_alloc();
    a->set_stack_name(name);
    a->set_same_stack_as(same_as);
    a->set_python_stack(python);
    harness_.feed(e);
  }
  void free(uint64_t address, uint32_t same_as) {
    wire::Envelope e;
    e.mutable_free()->set_address(address);
    e.mutable_free()->set_same_stack_as(same_as);
    harness_.feed(e);
  }
  const storage::AllocationRecord& record_at(uint64_t address) {
    if (records_.empty()) records_ = harness_.reader().allocations({});
    for (const auto& r : records_)
      if (r.allocation.address == address) return r;
    ADD_FAILURE() << "no allocation at " << address;
    return records_.front();
  }
  std::optional<int64_t> callsite_at(uint64_t address) {
    return record_at(address).allocation.alloc_callsite_id;
  }
  // The relative addresses of the callsite's frames, innermost first.
  std::vector<uint64_t> frames_of(std::optional<int64_t> callsite) {
    std::vector<uint64_t> out;
    for (const storage::StackFrame& f : harness_.reader().stack(callsite)) out.push_back(f.rel_pc);
    return out;
  }

  testing_support::IngestHarness harness_;
  std::vector<storage::AllocationRecord> records_;
};

TEST_F(StackNameIngestTest, AUseOfANameHasTheCallsiteOfItsDefinition) {
  alloc(0x1000, {kLibrary + 0x101, kLibrary + 0x201}, 7, 0);
  alloc(0x2000, {}, 0, 7);
  free(0x2000, 7);                          // a free's stack by name too (run --free-stacks)
  alloc(0x3000, {kLibrary + 0x301}, 0, 0);  // unnamed, as before names
  harness_.finish();
  ASSERT_TRUE(callsite_at(0x1000).has_value());
  EXPECT_EQ(callsite_at(0x2000), callsite_at(0x1000));
  ASSERT_TRUE(record_at(0x2000).free.has_value());
  EXPECT_EQ(record_at(0x2000).free->free_callsite_id, callsite_at(0x1000));
  EXPECT_EQ(frames_of(callsite_at(0x2000)), (std::vector<uint64_t>{0x100, 0x200}));
  EXPECT_EQ(frames_of(callsite_at(0x3000)), (std::vector<uint64_t>{0x300}));
  EXPECT_EQ(harness_.stat("stack_name_unknown"), 0);
  EXPECT_EQ(harness_.stat("stacks_by_name"), 2);
}

// The shim gives a slot's name to another stack when the slot is taken: uses after that mean
// the new stack, uses before it the old one.
TEST_F(StackNameIngestTest, ANameDefinedAgainMeansTheNewStackFromThenOn) {
  alloc(0x1000, {kLibrary + 0x101}, 9, 0);
  alloc(0x2000, {}, 0, 9);
  alloc(0x3000, {kLibrary + 0x501, kLibrary + 0x601}, 9, 0);
  alloc(0x4000, {}, 0, 9);
  harness_.finish();
  EXPECT_EQ(frames_of(callsite_at(0x2000)), (std::vector<uint64_t>{0x100}));
  EXPECT_EQ(frames_of(callsite_at(0x4000)), (std::vector<uint64_t>{0x500, 0x600}));
}

// Only a broken ring uses a name it never defined: the event is kept, without a stack, and
// counted. Names far past the shim's tables still work.
TEST_F(StackNameIngestTest, AnUnknownNameIsCountedAndItsEventKeptWithoutAStack) {
  alloc(0x1000, {}, 0, 12345);
  alloc(0x2000, {kLibrary + 0x101}, 0xfffffff0u, 0);
  alloc(0x3000, {}, 0, 0xfffffff0u);
  // A name given to no frames at all (the shim names none such) means no stack, and is known.
  alloc(0x4000, {}, 5, 0);
  alloc(0x5000, {}, 0, 5);
  harness_.finish();
  EXPECT_FALSE(callsite_at(0x1000).has_value());
  EXPECT_EQ(harness_.stat("stack_name_unknown"), 1);
  ASSERT_TRUE(callsite_at(0x2000).has_value());
  EXPECT_EQ(callsite_at(0x3000), callsite_at(0x2000));
  EXPECT_FALSE(callsite_at(0x5000).has_value());
  EXPECT_EQ(harness_.stat("stacks_by_name"), 2);
}

// What a name stands for is the frames; whether this event's Python frames were there is the
// event's own, and counted per event.
TEST_F(StackNameIngestTest, EachUseStillCountsItsOwnPythonStatus) {
  alloc(0x1000, {kLibrary + 0x101}, 3, 0, wire::PYTHON_STACK_WITHOUT_GIL);
  alloc(0x2000, {}, 0, 3, wire::PYTHON_STACK_WITHOUT_GIL);
  alloc(0x3000, {}, 0, 3, wire::PYTHON_STACK_NONE);
  harness_.finish();
  EXPECT_EQ(harness_.stat("python_stack_without_gil"), 2);
}

}  // namespace
}  // namespace vramtrace
