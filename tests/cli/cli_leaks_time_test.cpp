// `vramtrace leaks --at`, `--between` and `--growth` as a user runs them, on the allocator trace
// (tests/unit/allocator_trace.h); and the end of a trace read through the time index gives the
// report the whole-trace scan gives.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "allocator_trace.h"
#include "run_vramtrace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;
constexpr std::uint64_t M = 1024 * 1024, K = 1024;

class CliLeaksTimeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }

  CommandResult leaks(std::vector<std::string> args) {
    args.insert(args.begin(), {"leaks", trace_.string()});
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "allocator.db";
};

// +5ms is 1006 ms: upid 1 had just freed B1 (seq 6); upid 2 had made R3 (seq 1). Live then, at
// the block level: R3 8 MiB, B2 1 MiB, B3 256 KiB; S1 is the allocator's, 768 KiB of it cached.
TEST_F(CliLeaksTimeTest, AtATimeCountsWhatWasLiveThen) {
  const CommandResult result = leaks({"--at", "+5ms", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["at"], json::parse(R"([
      {"upid": 1, "pid": 5000, "seq": 6, "time_ns": 1006000000},
      {"upid": 2, "pid": 5001, "seq": 1, "time_ns": 1006000000}])"));
  EXPECT_EQ(doc["total_bytes"], 8 * M + 1 * M + 256 * K);
  EXPECT_EQ(doc["total_count"], 3);
  ASSERT_EQ(doc["leaks"].size(), 3u);
  EXPECT_EQ(doc["leaks"][0]["kind"], "device");
  EXPECT_EQ(doc["leaks"][0]["bytes"], 8 * M);
  EXPECT_EQ(doc["leaks"][1]["stack"][0]["function"], "backward");
  EXPECT_EQ(doc["leaks"][2]["stack"][0]["function"], "forward");
  EXPECT_EQ(doc["cached"], json({{"bytes", 768 * K}, {"count", 1}}));
  EXPECT_FALSE(doc.contains("since"));
}

// Between the 1st and 2nd 'iter' marks (seq 4 and 9) upid 1 made B3, S2 and B4, all live at 9;
// S2 is the allocator's (1 MiB of it not in B4). upid 2 has no 'iter': left out.
TEST_F(CliLeaksTimeTest, BetweenTwoMarkersCountsWhatTheyLeftBehind) {
  const CommandResult result = leaks({"--between", "iter#1", "iter#2"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "counting what was allocated after iter#1 (pid 5000 at seq 4) and still live at "
            "iter#2 (pid 5000 at seq 9)\n"
            "vramtrace: 3.2 MiB (3407872 bytes) leaked in 2 allocations from 2 stacks in " +
                trace_.string() +
                " (block level)\n"
                "cached by the allocator (not leaks): 1.0 MiB (1048576 bytes) in 1 segment\n"
                "\n"
                "3.0 MiB (3145728 bytes) in 1 block allocation from:\n"
                "    #0 backward at train.py:8 (/usr/bin/python3)\n"
                "    #1 train_step at train.py:5 (/usr/bin/python3)\n"
                "    #2 main at train.py:1 (/usr/bin/python3)\n"
                "\n"
                "256.0 KiB (262144 bytes) in 1 block allocation from:\n"
                "    #0 forward at model.py:10 (/usr/bin/python3)\n"
                "    #1 train_step at train.py:5 (/usr/bin/python3)\n"
                "    #2 main at train.py:1 (/usr/bin/python3)\n");
}

// At the three 'iter' marks (seq 4, 9, 14): backward's blocks 1, 4, 1 MiB; forward's 512, 256,
// 256 KiB; init_workspace's raw allocations 0, 0, 2 MiB: only the last never falls and ends
// higher, by 2 MiB over 2 iterations.
TEST_F(CliLeaksTimeTest, GrowthFindsTheStackThatRisesEachIteration) {
  const CommandResult result = leaks({"--growth", "iter", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["marker"], "iter");
  EXPECT_EQ(doc["level"], "block");
  EXPECT_EQ(doc["processes"], json::parse(R"([{"upid": 1, "pid": 5000, "iterations": 3,
      "found_by": "marker", "marker": "iter", "sampled": [0, 1, 2], "sampled_seq": [4, 9, 14]}])"));
  ASSERT_EQ(doc["growing"].size(), 1u);
  const json& growing = doc["growing"][0];
  EXPECT_EQ(growing["kind"], "device");
  EXPECT_EQ(growing["bytes_per_iteration"], 1.0 * M);
  EXPECT_EQ(growing["bytes"], json({0, 0, 2 * M}));
  EXPECT_EQ(growing["count"], 2);
  EXPECT_EQ(growing["counts"], json({0, 0, 2}));
  EXPECT_EQ(growing["kept"], true);
  EXPECT_EQ(growing["stack"][0]["function"], "init_workspace");

  const CommandResult text = leaks({"--growth", "iter"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_EQ(text.out,
            "pid 5000: 3 iterations of 'iter', 3 looked at\n"
            "vramtrace: 1 stack grows from one 'iter' to the next in " +
                trace_.string() +
                " (block level)\n"
                "\n"
                "+1.0 MiB per iteration in pid 5000, device: 2.0 MiB at the last "
                "looked at, kept: 2 device allocations where the first looked at had 0, from:\n"
                "    #0 init_workspace at lib.cu:3 (/usr/lib/libwork.so)\n"
                "    #1 main at train.py:1 (/usr/bin/python3)\n");
}

// The end read through the index (a finished trace) and by the whole-trace scan (a trace whose
// collector did not finish, which keeps no index) give the same leaks.
TEST_F(CliLeaksTimeTest, TheIndexAndTheScanAgreeAtTheEnd) {
  const auto unfinished = dir_ / "unfinished.db";
  ASSERT_EQ(write_allocator_trace(unfinished, /*finish=*/false), "");
  for (const std::string level : {"block", "segment"}) {
    const CommandResult indexed = leaks({"--format", "json", "--level", level});
    const CommandResult scanned = run_vramtrace(
        {"leaks", unfinished.string(), "--format", "json", "--level", level}, scratch_.path());
    ASSERT_EQ(indexed.exit_status, 0) << indexed.err;
    ASSERT_EQ(scanned.exit_status, 0) << scanned.err;
    EXPECT_EQ(scanned.err, "");  // the scan builds no index, so says nothing about one
    json a = json::parse(indexed.out), b = json::parse(scanned.out);
    for (json* doc : {&a, &b}) {
      doc->erase("trace");
      doc->erase("incomplete");
      doc->erase("warnings");
    }
    EXPECT_EQ(a, b) << level;
    EXPECT_GT(a["total_count"].get<int>(), 0);
  }
  // --at on the unfinished trace builds the index aside and says so, once, on stderr.
  const CommandResult aside =
      run_vramtrace({"leaks", unfinished.string(), "--at", "end"}, scratch_.path());
  ASSERT_EQ(aside.exit_status, 0) << aside.err;
  EXPECT_EQ(line_count(aside.err), 1u) << aside.err;
  EXPECT_NE(aside.err.find("note: "), std::string::npos) << aside.err;
}

TEST_F(CliLeaksTimeTest, BadMomentsAreOneLineErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--at", "nope"},
                                               {"--between", "iter#1"},
                                               {"--at", "end", "--growth", "iter"},
                                               {"--growth", "nope"},
                                               {"--between", "iter#1", "iter#7"},
                                               {"--growth", "iter", "--iterations", "1"},
                                               {"--growth", ""}}) {
    const CommandResult result = leaks(args);
    EXPECT_EQ(result.exit_status, 2) << args[0] << " " << args[1];
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.rfind("vramtrace leaks: ", 0), 0u) << result.err;
  }
}

// A marker that does not repeat is answered with the ones that do, and how to add one.
TEST_F(CliLeaksTimeTest, GrowthWithoutItsMarkerSaysWhichRepeatAndHowToMarkIterations) {
  const CommandResult result = leaks({"--growth", "nope"});
  ASSERT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("no selected process has the marker 'nope' twice"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Markers that repeat: 'iter'"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("with vramtrace.iteration():"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace vramtrace::testing
