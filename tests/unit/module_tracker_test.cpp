// ModuleTracker: modules and mappings per process, native frames by address (symbolized once),
// Python frames by code object and line.
#include "collector/module_tracker.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

__attribute__((noinline)) void module_tracker_test_anchor() {
  asm volatile("");
}

wire::Module module(uint64_t start, uint64_t end, const std::string& path) {
  wire::Module m;
  m.set_start(start);
  m.set_end(end);
  m.set_load_bias(start);
  m.set_path(path);
  return m;
}

class ModuleTrackerTest : public ::testing::Test {
 protected:
  testing::TrackerTrace trace_;
  IngestStats stats_;
  ModuleTracker tracker_{trace_.writer(), stats_};
  ModuleTracker::ProcessModules process_;
};

TEST_F(ModuleTrackerTest, AModuleWithoutRangeOrPathIsCountedAndIgnored) {
  EXPECT_FALSE(tracker_.on_module(process_, 1, module(0x2000, 0x1000, "/lib/a.so")));
  EXPECT_FALSE(tracker_.on_module(process_, 1, module(0x1000, 0x2000, "")));
  EXPECT_EQ(stats_.value(Stat::kModuleInvalid), 2);
  EXPECT_TRUE(process_.mappings.empty());
}

TEST_F(ModuleTrackerTest, AnAddressOutsideEveryModuleIsAFrameOfModuleZero) {
  const std::vector<int64_t> frames = tracker_.frames_for_pc(process_, 0x1234);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(tracker_.frames_for_pc(process_, 0x1234), frames);  // made once
  EXPECT_EQ(stats_.value(Stat::kFrameOutsideModules), 1);
  const std::optional<storage::StackFrame> frame = tracker_.stack_frame(frames[0]);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->rel_pc, 0x1234u);
  EXPECT_EQ(frame->module, "");
  EXPECT_FALSE(tracker_.stack_frame(frames[0] + 1));
}

TEST_F(ModuleTrackerTest, AModuleLoadedOverAnotherTakesItsAddresses) {
  ASSERT_TRUE(tracker_.on_module(process_, 1, module(0x10000, 0x20000, "/lib/old.so")));
  ASSERT_TRUE(tracker_.on_module(process_, 1, module(0x18000, 0x30000, "/lib/new.so")));
  ASSERT_EQ(process_.mappings.size(), 1u);
  const std::vector<int64_t> frames = tracker_.frames_for_pc(process_, 0x19000);
  ASSERT_FALSE(frames.empty());
  const std::optional<storage::StackFrame> frame = tracker_.stack_frame(frames[0]);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->module, "/lib/new.so");
  EXPECT_EQ(frame->rel_pc, 0x1000u);  // relative to the load bias
  EXPECT_EQ(tracker_.symbolizer_stats().modules_missing, 1);
}

TEST_F(ModuleTrackerTest, FramesOfThisProgramAreSymbolized) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ASSERT_GT(n, 0);
  exe[n] = '\0';
  Dl_info self{};
  ASSERT_NE(dladdr(reinterpret_cast<void*>(&module_tracker_test_anchor), &self), 0);
  const auto base = reinterpret_cast<uint64_t>(self.dli_fbase);
  ASSERT_TRUE(tracker_.on_module(process_, 1, module(base, base + (256ull << 20), exe)));
  const auto pc = reinterpret_cast<uint64_t>(&module_tracker_test_anchor);
  const std::vector<int64_t> frames = tracker_.frames_for_pc(process_, pc);
  ASSERT_FALSE(frames.empty());
  const std::optional<storage::StackFrame> frame = tracker_.stack_frame(frames.back());
  ASSERT_TRUE(frame && frame->function);
  EXPECT_NE(frame->function->find("module_tracker_test_anchor"), std::string::npos)
      << *frame->function;
}

TEST_F(ModuleTrackerTest, PythonFramesAreOnePerCodeAndLine) {
  wire::PythonCode code;
  code.set_id(5);
  code.set_name("train_step");
  code.set_filename("train.py");
  tracker_.on_python_code(process_, code);
  const int64_t line_3 = tracker_.python_frame_id(process_, 5, 3);
  EXPECT_EQ(tracker_.python_frame_id(process_, 5, 3), line_3);
  EXPECT_NE(tracker_.python_frame_id(process_, 5, 4), line_3);
  const std::optional<storage::StackFrame> frame = tracker_.stack_frame(line_3);
  ASSERT_TRUE(frame);
  EXPECT_EQ(frame->function, "train_step");
  EXPECT_EQ(frame->file, "train.py");
  EXPECT_EQ(frame->line, 3);
  EXPECT_EQ(frame->module, "train.py");
  EXPECT_EQ(frame->language, storage::FrameLanguage::kPython);

  tracker_.python_frame_id(process_, 6, 1);  // never announced
  EXPECT_EQ(stats_.value(Stat::kPythonCodeUnknown), 1);
  code.set_id(0);
  tracker_.on_python_code(process_, code);
  EXPECT_EQ(stats_.value(Stat::kPythonCodeInvalid), 1);
}

TEST_F(ModuleTrackerTest, TheInterpreterIsTheObjectHoldingItsAddress) {
  ASSERT_TRUE(tracker_.on_module(process_, 1, module(0x10000, 0x20000, "/usr/bin/python3")));
  ASSERT_TRUE(tracker_.on_module(process_, 1, module(0x40000, 0x50000, "/lib/libcuda.so")));
  EXPECT_FALSE(ModuleTracker::in_interpreter(process_, 0x10100));  // address not known yet
  process_.python_interpreter_address = 0x10500;
  EXPECT_TRUE(ModuleTracker::in_interpreter(process_, 0x10100));
  EXPECT_FALSE(ModuleTracker::in_interpreter(process_, 0x40100));
}

}  // namespace
}  // namespace vramtrace::collector
