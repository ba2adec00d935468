// `export --memory-viz`'s snapshot of the allocator trace (allocator_trace.h), written as a
// pickle and read back with the test unpickler: the keys torch.cuda.memory._snapshot() has, the
// segment at the end laid out as `frag` lays it out, and every allocator event in order.
#include "analysis/export/memory_viz_export.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "allocator_trace_test_base.h"
#include "pickle_reader.h"

namespace vramtrace::testing {
namespace {

constexpr std::uint64_t K = 1024, M = 1024 * K;

class MemoryVizExportTest : public AllocatorTraceTest {
 protected:
  std::shared_ptr<PickleValue> snapshot(const analysis::MemoryVizOptions& options,
                                        analysis::MemoryVizSnapshot* built = nullptr) {
    const analysis::MemoryVizSnapshot snapshot = analysis::build_memory_viz(*trace_, options);
    if (built != nullptr) *built = snapshot;
    std::ostringstream out;
    analysis::write_memory_viz(*trace_, snapshot, out);
    return unpickle(out.str());
  }

  static std::vector<std::string> names(const PickleValue& frames) {
    std::vector<std::string> out;
    for (const auto& frame : frames.list()) out.push_back(frame->at("name").str());
    return out;
  }
};

std::vector<std::string> keys(const PickleValue& dict) {
  std::vector<std::string> out;
  for (const auto& [key, value] : dict.dict()) out.push_back(key);
  return out;
}

// At the end (seq 13, the last allocation or free): S1 with B2 and B3, B1's place free, and
// 256 KiB free after B3; S2 was given back at 11. R1 and R2 are not the allocator's.
TEST_F(MemoryVizExportTest, SegmentsAtTheEndAreFragsLayout) {
  analysis::MemoryVizSnapshot built;
  const auto root = snapshot({}, &built);
  EXPECT_EQ(built.at.pid, kAllocatorPid);
  EXPECT_EQ(built.at.seq, 13u);
  EXPECT_TRUE(built.allocator_events);
  EXPECT_EQ(keys(*root), (std::vector<std::string>{"device_traces", "segments"}));
  const PickleList& segments = root->at("segments").list();
  ASSERT_EQ(segments.size(), 1u);
  const PickleValue& s1 = *segments[0];
  EXPECT_EQ(keys(s1),
            (std::vector<std::string>{"active_size", "address", "allocated_size", "blocks",
                                      "device", "frames", "is_expandable", "requested_size",
                                      "segment_pool_id", "segment_type", "stream", "total_size"}));
  EXPECT_EQ(s1.at("device").integer(), 0);
  EXPECT_EQ(s1.at("address").unsigned_integer(), 0x10000000u);
  EXPECT_EQ(s1.at("total_size").unsigned_integer(), 2 * M);
  EXPECT_EQ(s1.at("allocated_size").unsigned_integer(), 1 * M + 256 * K);
  EXPECT_EQ(s1.at("active_size").unsigned_integer(), 1 * M + 256 * K);
  EXPECT_EQ(s1.at("requested_size").unsigned_integer(), 1 * M + 200 * K);
  EXPECT_EQ(s1.at("stream").integer(), 0);
  EXPECT_EQ(s1.at("segment_type").str(), "small");
  EXPECT_FALSE(std::get<bool>(s1.at("is_expandable").value));
  EXPECT_EQ(std::get<PickleTuple>(s1.at("segment_pool_id").value).items.size(), 2u);
  EXPECT_EQ(names(s1.at("frames")),
            (std::vector<std::string>{"c10::cuda::CUDACachingAllocator::malloc", "forward",
                                      "train_step", "main"}));

  struct Expected {
    std::uint64_t address, size, requested;
    const char* state;
    std::vector<std::string> frames;
  };
  const std::vector<Expected> expected = {
      {0x10000000, 512 * K, 0, "inactive", {}},
      {0x10080000, 1 * M, 1 * M, "active_allocated", {"backward", "train_step", "main"}},
      {0x10180000, 256 * K, 200 * K, "active_allocated", {"forward", "train_step", "main"}},
      {0x101C0000, 256 * K, 0, "inactive", {}},
  };
  const PickleList& blocks = s1.at("blocks").list();
  ASSERT_EQ(blocks.size(), expected.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    SCOPED_TRACE(i);
    const PickleValue& block = *blocks[i];
    EXPECT_EQ(keys(block),
              (std::vector<std::string>{"address", "frames", "requested_size", "size", "state"}));
    EXPECT_EQ(block.at("address").unsigned_integer(), expected[i].address);
    EXPECT_EQ(block.at("size").unsigned_integer(), expected[i].size);
    EXPECT_EQ(block.at("requested_size").unsigned_integer(), expected[i].requested);
    EXPECT_EQ(block.at("state").str(), expected[i].state);
    EXPECT_EQ(names(block.at("frames")), expected[i].frames);
    total += expected[i].size;
  }
  EXPECT_EQ(total, s1.at("total_size").unsigned_integer());
  // The frame file and line, as torch writes them.
  const PickleValue& forward = *blocks[2]->at("frames").list()[0];
  EXPECT_EQ(forward.at("filename").str(), "model.py");
  EXPECT_EQ(forward.at("line").integer(), 10);
}

// Every block and segment event through seq 13 in sequence order, a block's free as torch
// writes it (free_requested, then free_completed), sizes the blocks' requests.
TEST_F(MemoryVizExportTest, DeviceTracesHoldEveryAllocatorEventInOrder) {
  const auto root = snapshot({});
  const PickleList& devices = root->at("device_traces").list();
  ASSERT_EQ(devices.size(), 1u);
  struct Expected {
    const char* action;
    std::uint64_t address, size;
    std::int64_t time_us;
  };
  const auto us = [](std::int64_t seq) { return kAllocatorTraceStartNs / 1000 + seq * 1000; };
  const std::vector<Expected> expected = {
      {"segment_alloc", 0x10000000, 2 * M, us(1)},
      {"alloc", 0x10000000, 400 * K, us(2)},
      {"alloc", 0x10080000, 1 * M, us(3)},
      {"alloc", 0x10180000, 200 * K, us(5)},
      {"free_requested", 0x10000000, 400 * K, us(6)},
      {"free_completed", 0x10000000, 400 * K, us(6)},
      {"segment_alloc", 0x20000000, 4 * M, us(7)},
      {"alloc", 0x20000000, 3 * M, us(8)},
      {"free_requested", 0x20000000, 3 * M, us(10)},
      {"free_completed", 0x20000000, 3 * M, us(10)},
      {"segment_free", 0x20000000, 4 * M, us(11)},
  };
  const PickleList& entries = devices[0]->list();
  ASSERT_EQ(entries.size(), expected.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    SCOPED_TRACE(i);
    const PickleValue& entry = *entries[i];
    EXPECT_EQ(keys(entry),
              (std::vector<std::string>{"action", "addr", "frames", "size", "stream", "time_us"}));
    EXPECT_EQ(entry.at("action").str(), expected[i].action);
    EXPECT_EQ(entry.at("addr").unsigned_integer(), expected[i].address);
    EXPECT_EQ(entry.at("size").unsigned_integer(), expected[i].size);
    EXPECT_EQ(entry.at("time_us").integer(), expected[i].time_us);
  }
  // Without a free stack, a free carries the allocation's, as torch does.
  EXPECT_EQ(names(entries[4]->at("frames")),
            (std::vector<std::string>{"forward", "train_step", "main"}));
  // One stack, one object: recalled from the memo, not written again.
  EXPECT_EQ(entries[4]->at("frames").list()[0], entries[5]->at("frames").list()[0]);
}

// pid 5001 has no allocator events: its 8 MiB cudaMalloc on device 1 is a segment of one active
// block, and its device_traces a segment_alloc and an alloc on device 1's list.
TEST_F(MemoryVizExportTest, AProcessWithoutAllocatorEventsShowsItsDeviceMemory) {
  analysis::MemoryVizSnapshot built;
  const auto root = snapshot({analysis::ProcessSelection(std::set<std::int64_t>{2})}, &built);
  EXPECT_EQ(built.at.pid, kRawPid);
  EXPECT_FALSE(built.allocator_events);
  const PickleList& segments = root->at("segments").list();
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0]->at("device").integer(), 1);
  EXPECT_EQ(segments[0]->at("total_size").unsigned_integer(), 8 * M);
  EXPECT_EQ(segments[0]->at("segment_type").str(), "large");
  const PickleList& blocks = segments[0]->at("blocks").list();
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks[0]->at("state").str(), "active_allocated");
  EXPECT_EQ(blocks[0]->at("size").unsigned_integer(), 8 * M);
  const PickleList& devices = root->at("device_traces").list();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_TRUE(devices[0]->list().empty());
  ASSERT_EQ(devices[1]->list().size(), 2u);
  EXPECT_EQ(devices[1]->list()[0]->at("action").str(), "segment_alloc");
  EXPECT_EQ(devices[1]->list()[1]->at("action").str(), "alloc");
  EXPECT_EQ(names(blocks[0]->at("frames")), (std::vector<std::string>{"init_workspace", "main"}));
  // A native frame: its source file, as torch's symbolizer gives it.
  EXPECT_EQ(blocks[0]->at("frames").list()[0]->at("filename").str(), "lib.cu");
}

TEST_F(MemoryVizExportTest, DeviceFilterKeepsOneDevice) {
  const auto root = snapshot({std::nullopt, 1});
  EXPECT_TRUE(root->at("segments").list().empty());
  const PickleList& devices = root->at("device_traces").list();
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_TRUE(devices[0]->list().empty());
  EXPECT_TRUE(devices[1]->list().empty());
}

}  // namespace
}  // namespace vramtrace::testing
