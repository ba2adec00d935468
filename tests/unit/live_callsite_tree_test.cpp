// Callsite trees from hand-built stacks: frames merge by what a person reads, children come
// largest first, and allocations without a stack get a root of their own.
#include "analysis/callsite_tree.h"

#include "analysis/leak_report.h"

#include <gtest/gtest.h>

namespace vramtrace {
namespace {

storage::StackFrame frame(const char* function, int line, std::uint64_t rel_pc = 0) {
  storage::StackFrame f;
  f.function = function;
  f.file = "train.py";
  f.line = line;
  f.module = "/usr/bin/python3";
  f.rel_pc = rel_pc;
  return f;
}

storage::StackFrame unsymbolized(std::uint64_t rel_pc) {
  storage::StackFrame f;
  f.module = "/usr/lib/libcuda.so.1";
  f.rel_pc = rel_pc;
  return f;
}

TEST(CallsiteTree, MergesFramesByPlaceAndSortsLargestFirst) {
  // Innermost first. Two return addresses on line 7 of small() are one node; two unknown
  // addresses in libcuda are two.
  const std::vector<storage::StackFrame> a{frame("small", 7, 0x10), frame("main", 1)};
  const std::vector<storage::StackFrame> b{frame("small", 7, 0x18), frame("main", 1)};
  const std::vector<storage::StackFrame> c{unsymbolized(0x100), frame("big", 9), frame("main", 1)};
  const std::vector<storage::StackFrame> d{unsymbolized(0x200), frame("big", 9), frame("main", 1)};
  const std::vector<analysis::StackBytes> stacks{
      {&a, 100, 1}, {&b, 50, 2}, {&c, 1000, 1}, {&d, 10, 1}, {nullptr, 5, 1}};

  const auto top_down = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kTopDown);
  ASSERT_EQ(top_down.size(), 2u);
  EXPECT_EQ(top_down[0].frame.function, "main");
  EXPECT_EQ(top_down[0].bytes, 1160u);
  EXPECT_EQ(top_down[0].count, 5u);
  ASSERT_EQ(top_down[0].children.size(), 2u);
  EXPECT_EQ(top_down[0].children[0].frame.function, "big");
  EXPECT_EQ(top_down[0].children[0].bytes, 1010u);
  EXPECT_EQ(top_down[0].children[0].children.size(), 2u);  // two unknown addresses
  EXPECT_EQ(top_down[0].children[1].frame.function, "small");
  EXPECT_EQ(top_down[0].children[1].bytes, 150u);
  EXPECT_EQ(top_down[0].children[1].count, 3u);
  EXPECT_TRUE(top_down[0].children[1].children.empty());
  // No stack: a root without a function or module.
  EXPECT_EQ(top_down[1].frame.function, std::nullopt);
  EXPECT_EQ(top_down[1].frame.module, "");
  EXPECT_EQ(top_down[1].bytes, 5u);

  const auto bottom_up = analysis::build_callsite_tree(stacks, analysis::TreeDirection::kBottomUp);
  ASSERT_EQ(bottom_up.size(), 4u);  // libcuda+0x100, small, libcuda+0x200, no stack
  EXPECT_EQ(bottom_up[0].frame.rel_pc, 0x100u);
  EXPECT_EQ(bottom_up[0].children[0].frame.function, "big");
  EXPECT_EQ(bottom_up[1].frame.function, "small");
  EXPECT_EQ(bottom_up[1].bytes, 150u);
  EXPECT_EQ(bottom_up[1].children[0].frame.function, "main");
  EXPECT_EQ(bottom_up[2].bytes, 10u);
  EXPECT_EQ(bottom_up[3].bytes, 5u);
}

TEST(CallsiteTree, LeakTreeSumsTheReportsGroupsKindsOfOneStackTogether) {
  analysis::LeakGroup device, pinned, no_stack;
  device.stack = {frame("alloc", 3), frame("main", 1)};
  device.bytes = 400;
  device.count = 2;
  pinned.stack = device.stack;  // the same stack, another kind
  pinned.bytes = 100;
  pinned.count = 1;
  no_stack.bytes = 7;
  no_stack.count = 1;

  const auto top_down =
      analysis::build_leak_tree({pinned, device, no_stack}, analysis::TreeDirection::kTopDown);
  ASSERT_EQ(top_down.size(), 2u);
  EXPECT_EQ(top_down[0].frame.function, "main");
  EXPECT_EQ(top_down[0].bytes, 500u);
  EXPECT_EQ(top_down[0].count, 3u);
  ASSERT_EQ(top_down[0].children.size(), 1u);
  EXPECT_EQ(top_down[0].children[0].frame.function, "alloc");
  EXPECT_EQ(top_down[1].bytes, 7u);

  const auto bottom_up =
      analysis::build_leak_tree({device, no_stack}, analysis::TreeDirection::kBottomUp);
  ASSERT_EQ(bottom_up.size(), 2u);
  EXPECT_EQ(bottom_up[0].frame.function, "alloc");
  EXPECT_EQ(bottom_up[0].children[0].frame.function, "main");
}

}  // namespace
}  // namespace vramtrace
