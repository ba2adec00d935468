// `vramtrace peak` as a user runs it, on the allocator trace (tests/unit/allocator_trace.h): per
// process and device the peak of device memory in use and of blocks, each with the live set
// then as callsite trees, top-down and bottom-up.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "allocator_trace.h"
#include "run_vramtrace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliPeakTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "allocator.db";
};

json frame(const std::string& function, const std::string& file, int line,
           const std::string& module) {
  return {{"function", function},
          {"file", file},
          {"line", line},
          {"module", module},
          {"language", "native"}};
}

// Blocks peak at seq 8 with B2 (backward, 1 MiB), B3 (forward, 256 KiB), B4 (backward, 3 MiB).
TEST_F(CliPeakTest, JsonTreesSumTheLiveSetAtThePeak) {
  const CommandResult result =
      run_vramtrace({"peak", trace_.string(), "--format", "json"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["peaks"].size(), 3u);
  const json& device = doc["peaks"][0];
  EXPECT_EQ(device["pid"], 5000);
  EXPECT_EQ(device["level"], "device_memory");
  EXPECT_EQ(device["bytes"], 6 * 1024 * 1024);
  // Reached at S2 (seq 7), taken once its block B4 is in it (seq 8): the allocator's state
  // whole, the device memory the same.
  EXPECT_EQ(device["seq"], 8);
  EXPECT_EQ(device["live_count"], 2);
  const json& blocks = doc["peaks"][1];
  EXPECT_EQ(blocks["level"], "blocks");
  EXPECT_EQ(blocks["bytes"], 4456448);
  EXPECT_EQ(blocks["seq"], 8);
  EXPECT_EQ(blocks["time_ns"], 1'008'000'000);
  const std::string python = "/usr/bin/python3";
  const json backward = frame("backward", "train.py", 8, python);
  const json forward = frame("forward", "model.py", 10, python);
  const json step = frame("train_step", "train.py", 5, python);
  const json main = frame("main", "train.py", 1, python);
  const auto node = [](const json& f, std::uint64_t bytes, int count, json children) {
    return json{{"frame", f}, {"bytes", bytes}, {"count", count}, {"children", children}};
  };
  EXPECT_EQ(blocks["top_down"],
            json::array({node(
                main, 4456448, 3,
                json::array({node(step, 4456448, 3,
                                  json::array({node(backward, 4194304, 2, json::array()),
                                               node(forward, 262144, 1, json::array())}))}))}));
  EXPECT_EQ(blocks["bottom_up"],
            json::array(
                {node(backward, 4194304, 2,
                      json::array({node(step, 4194304, 2,
                                        json::array({node(main, 4194304, 2, json::array())}))})),
                 node(forward, 262144, 1,
                      json::array({node(step, 262144, 1,
                                        json::array({node(main, 262144, 1, json::array())}))}))}));
  EXPECT_EQ(doc["peaks"][2]["pid"], 5001);
  EXPECT_EQ(doc["peaks"][2]["device"], 1);
}

TEST_F(CliPeakTest, TextShowsBothTrees) {
  const CommandResult result =
      run_vramtrace({"peak", trace_.string(), "--pid", "5001"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "vramtrace: peaks in " + trace_.string() +
                ", only processes matching --pid 5001 (1 of 2)\n"
                "\n"
                "pid 5001 device 1, device memory in use: peak 8.0 MiB (8388608 bytes) at seq 1 "
                "(+0.000 s), 1 allocation live\n"
                "  top-down (callers first):\n"
                "         bytes  share  count  frame\n"
                "       8.0 MiB 100.0%      1  main at train.py:1\n"
                "       8.0 MiB 100.0%      1    init_workspace at lib.cu:3\n"
                "  bottom-up (allocating frames first):\n"
                "         bytes  share  count  frame\n"
                "       8.0 MiB 100.0%      1  init_workspace at lib.cu:3\n"
                "       8.0 MiB 100.0%      1    main at train.py:1\n");
}

TEST_F(CliPeakTest, ErrorsAreOneLine) {
  const CommandResult missing =
      run_vramtrace({"peak", (dir_ / "none.db").string()}, scratch_.path());
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_EQ(line_count(missing.err), 1u) << missing.err;
  EXPECT_EQ(missing.err.rfind("vramtrace peak: ", 0), 0u) << missing.err;
  const CommandResult help = run_vramtrace({"peak", "--help"}, scratch_.path());
  EXPECT_EQ(help.exit_status, 0);
}

}  // namespace
}  // namespace vramtrace::testing
