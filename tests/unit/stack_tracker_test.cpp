// StackTracker: stacks interned to callsites, cached per process, sent by name, and with their
// Python frames in place of the interpreter's.
#include "collector/stack_tracker.h"

#include <gtest/gtest.h>

#include <vector>

#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

wire::Module module(uint64_t start, const std::string& path) {
  wire::Module m;
  m.set_start(start);
  m.set_end(start + 0x10000);
  m.set_load_bias(start);
  m.set_path(path);
  return m;
}

wire::Alloc alloc_with_stack(const std::vector<uint64_t>& stack) {
  wire::Alloc m;
  for (uint64_t ip : stack) m.add_stack(ip);
  return m;
}

class StackTrackerTest : public ::testing::Test {
 protected:
  std::optional<int64_t> intern(const std::vector<uint64_t>& ips) {
    return stacks_.intern(process_, modules_state_, ips, {}, {});
  }
  std::vector<storage::FrameLanguage> languages(std::optional<int64_t> callsite) const {
    std::vector<storage::FrameLanguage> out;
    for (const storage::StackFrame& f : stacks_.stack_of(callsite)) out.push_back(f.language);
    return out;
  }

  testing::TrackerTrace trace_;
  IngestStats stats_;
  ModuleTracker modules_{trace_.writer(), stats_};
  StackTracker stacks_{trace_.writer(), modules_, stats_};
  ModuleTracker::ProcessModules modules_state_;
  StackTracker::ProcessStacks process_;
};

TEST_F(StackTrackerTest, AStackIsOneCallsiteWithItsFramesInnermostFirst) {
  ASSERT_TRUE(modules_.on_module(modules_state_, 1, module(0x10000, "/lib/a.so")));
  const std::optional<int64_t> callsite = intern({0x10101, 0x10201, 0x10301});
  ASSERT_TRUE(callsite);
  EXPECT_EQ(intern({0x10101, 0x10201, 0x10301}), callsite);
  EXPECT_NE(intern({0x10101, 0x10201}), callsite);
  EXPECT_FALSE(intern({}));

  const std::vector<storage::StackFrame> stack = stacks_.stack_of(callsite);
  ASSERT_EQ(stack.size(), 3u);
  // Return addresses are moved back into their call instruction.
  EXPECT_EQ(stack[0].rel_pc, 0x100u);
  EXPECT_EQ(stack[1].rel_pc, 0x200u);
  EXPECT_EQ(stack[2].rel_pc, 0x300u);
  EXPECT_EQ(stack[0].module, "/lib/a.so");
}

TEST_F(StackTrackerTest, AModuleArrivingLaterIsSeenOnceTheCacheIsForgotten) {
  const std::optional<int64_t> before = intern({0x20101});
  ASSERT_EQ(stacks_.stack_of(before).size(), 1u);
  EXPECT_EQ(stacks_.stack_of(before)[0].module, "");  // outside every module
  ASSERT_TRUE(modules_.on_module(modules_state_, 1, module(0x20000, "/lib/late.so")));
  EXPECT_EQ(intern({0x20101}), before);  // still the cached answer
  StackTracker::forget_cached(process_);
  const std::optional<int64_t> after = intern({0x20101});
  EXPECT_NE(after, before);
  EXPECT_EQ(stacks_.stack_of(after)[0].module, "/lib/late.so");
}

TEST_F(StackTrackerTest, AStackSentByNameIsTheOneNamedBefore) {
  wire::Alloc named = alloc_with_stack({0x30101, 0x30201});
  named.set_stack_name(3);
  const std::optional<int64_t> callsite = stacks_.callsite(process_, modules_state_, named);
  ASSERT_TRUE(callsite);

  wire::Alloc by_name;
  by_name.set_same_stack_as(3);
  EXPECT_EQ(stacks_.callsite(process_, modules_state_, by_name), callsite);
  EXPECT_EQ(stats_.value(Stat::kStacksByName), 1);

  by_name.set_same_stack_as(9);  // never defined
  EXPECT_FALSE(stacks_.callsite(process_, modules_state_, by_name));
  EXPECT_EQ(stats_.value(Stat::kStackNameUnknown), 1);

  wire::Alloc far = alloc_with_stack({0x30101});
  far.set_stack_name(1u << 30);  // past the dense table: a broken ring's, still kept
  const std::optional<int64_t> far_callsite = stacks_.callsite(process_, modules_state_, far);
  by_name.set_same_stack_as(1u << 30);
  EXPECT_EQ(stacks_.callsite(process_, modules_state_, by_name), far_callsite);
}

TEST_F(StackTrackerTest, AStackDeeperThanTheWireAllowsDoesNotFit) {
  EXPECT_TRUE(stacks_.fits(alloc_with_stack(std::vector<uint64_t>(256, 0x1000))));
  EXPECT_FALSE(stacks_.fits(alloc_with_stack(std::vector<uint64_t>(257, 0x1000))));
  EXPECT_EQ(stats_.value(Stat::kStackTooDeep), 1);
}

TEST_F(StackTrackerTest, PythonFramesTakeThePlaceOfTheInterpreters) {
  ASSERT_TRUE(modules_.on_module(modules_state_, 1, module(0x40000, "/lib/libcuda.so")));
  ASSERT_TRUE(modules_.on_module(modules_state_, 1, module(0x50000, "/usr/bin/python3")));
  modules_state_.python_interpreter_address = 0x50000;
  wire::PythonCode code;
  code.set_id(1);
  code.set_name("step");
  code.set_filename("train.py");
  modules_.on_python_code(modules_state_, code);

  // Innermost first: libcuda, two interpreter frames, then the interpreter's main.
  wire::Alloc m = alloc_with_stack({0x40101, 0x50201, 0x50301});
  m.add_python_code(1);
  m.add_python_line(10);
  m.add_python_code(1);
  m.add_python_line(20);
  m.set_python_stack(wire::PYTHON_STACK_TRUNCATED);
  const std::optional<int64_t> callsite = stacks_.callsite(process_, modules_state_, m);
  using storage::FrameLanguage;
  EXPECT_EQ(languages(callsite),
            (std::vector<FrameLanguage>{FrameLanguage::kNative, FrameLanguage::kPython,
                                        FrameLanguage::kPython}));
  const std::vector<storage::StackFrame> stack = stacks_.stack_of(callsite);
  EXPECT_EQ(stack[1].line, 10);
  EXPECT_EQ(stack[2].line, 20);
  EXPECT_EQ(stats_.value(Stat::kPythonStackTruncated), 1);

  // Lists of different lengths: the shorter is used, and counted.
  m.add_python_code(1);
  EXPECT_EQ(stacks_.callsite(process_, modules_state_, m), callsite);
  EXPECT_EQ(stats_.value(Stat::kPythonStackMismatched), 1);
}

}  // namespace
}  // namespace vramtrace::collector
