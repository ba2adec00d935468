// `vramtrace frag` as a user runs it, on the allocator trace (tests/unit/allocator_trace.h): the
// JSON contract of docs/cli.md at seq 7 (two segments, one empty), the text map at the 2nd
// 'iter' mark, how the process is chosen, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "allocator_trace.h"
#include "run_vramtrace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliFragTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }

  CommandResult frag(std::vector<std::string> args) {
    args.insert(args.begin(), {"frag", trace_.string()});
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "allocator.db";
};

// Live at seq 7: S1 (2 MiB at 0x10000000) with B2 (1 MiB at +512 KiB, requested 1 MiB) and B3
// (256 KiB at +1.5 MiB, requested 200 KiB); B1 was freed at 6. S2 (4 MiB) was just made.
// Free: 512 KiB + 256 KiB + 4 MiB = 4980736, largest 4 MiB: external 1 - 4/4.75 = 0.157894...;
// internal (262144 - 204800) / (1048576 + 262144) = 0.04375.
TEST_F(CliFragTest, JsonFollowsTheContract) {
  const CommandResult result = frag({"--at", "seq:7", "--pid", "5000", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const json expected = json::parse(R"({
    "at": {"seq": 7, "time_ns": 1007000000},
    "segments": [
      {"device": 0, "address": 268435456, "size": 2097152, "blocks": [
        {"address": 268435456, "size": 524288, "requested": null, "state": "free"},
        {"address": 268959744, "size": 1048576, "requested": 1048576, "state": "used"},
        {"address": 270008320, "size": 262144, "requested": 204800, "state": "used"},
        {"address": 270270464, "size": 262144, "requested": null, "state": "free"}]},
      {"device": 0, "address": 536870912, "size": 4194304, "blocks": [
        {"address": 536870912, "size": 4194304, "requested": null, "state": "free"}]}],
    "total_free": 4980736,
    "largest_free": 4194304,
    "external_fragmentation": 0.1578947368421053,
    "internal_fragmentation": 0.04375,
    "process": {"upid": 1, "pid": 5000},
    "allocator_events": true,
    "largest_request": 4194304,
    "free_block_sizes": [
      {"from": 262144, "to": 524288, "count": 1, "bytes": 262144},
      {"from": 524288, "to": 1048576, "count": 1, "bytes": 524288},
      {"from": 4194304, "to": 8388608, "count": 1, "bytes": 4194304}],
    "raw": [],
    "filters": {"pid": 5000, "upids": [1]}})");
  EXPECT_EQ(json::parse(result.out), expected) << result.out;
  // The contract's keys come first, in its order.
  const std::vector<std::string> contract{"at",
                                          "segments",
                                          "total_free",
                                          "largest_free",
                                          "external_fragmentation",
                                          "internal_fragmentation"};
  const nlohmann::ordered_json ordered = nlohmann::ordered_json::parse(result.out);
  std::vector<std::string> first;
  for (const auto& [key, value] : ordered.items()) {
    if (first.size() < contract.size()) first.push_back(key);
  }
  EXPECT_EQ(first, contract);
}

// At the 2nd 'iter' mark (seq 9): S2 holds B4 (3 MiB) and 1 MiB free. Free 1792 KiB, largest
// 1 MiB: external 1 - 1/1.75 = 0.429. Each map slice of S1 is 32 KiB: 16 free, 40 used, 8 free.
TEST_F(CliFragTest, TextIsAMapWithOneRowPerSegment) {
  const CommandResult result = frag({"--at", "iter#2"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out,
            "vramtrace: fragmentation of pid 5000 in " + trace_.string() +
                " at seq 9 (1009000000 ns)\n"
                "2 segments of 6.0 MiB: 4.2 MiB used, 1.8 MiB free (largest free block 1.0 MiB)\n"
                "external fragmentation 0.429, internal 0.013; largest request without a new "
                "segment: 1.0 MiB\n"
                "\n"
                "dev  address                size  map (64 slices: # used, . free, + both)\n"
                "  0  0x10000000          2.0 MiB  "
                "|................########################################........|\n"
                "  0  0x20000000          4.0 MiB  "
                "|################################################................|\n"
                "\n"
                "free blocks by size:\n"
                "  [256.0 KiB, 512.0 KiB): 1 block, 256.0 KiB\n"
                "  [512.0 KiB, 1.0 MiB): 1 block, 512.0 KiB\n"
                "  [1.0 MiB, 2.0 MiB): 1 block, 1.0 MiB\n");
}

// At the end, by default: the only process with an allocator is chosen; R1 and R2 are raw
// allocations 1 MiB apart.
TEST_F(CliFragTest, EndChoosesTheProcessWithAnAllocatorAndListsRawGaps) {
  const CommandResult result = frag({"--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["at"]["seq"], 13);
  EXPECT_EQ(doc["process"]["pid"], 5000);
  EXPECT_EQ(doc["segments"].size(), 1u);
  EXPECT_EQ(doc["total_free"], 786432);
  EXPECT_EQ(doc["largest_free"], 524288);
  EXPECT_DOUBLE_EQ(doc["external_fragmentation"].get<double>(), 1.0 - 524288.0 / 786432.0);
  EXPECT_EQ(doc["raw"], json::parse(R"([{"device": 0, "count": 2, "bytes": 2097152,
                                         "gaps": [{"address": 806354944, "size": 1048576}]}])"));
}

TEST_F(CliFragTest, ProcessWithoutAllocatorSaysSo) {
  const CommandResult result = frag({"--pid", "5001", "--at", "peak"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.out, "vramtrace: fragmentation of pid 5001 in " + trace_.string() +
                            " at seq 1 (1001000000 ns)\n"
                            "no allocator events in this process: no segments to map\n"
                            "\n"
                            "raw allocations (outside the allocator):\n"
                            "  device 1: 1 allocation, 8.0 MiB; 0 gaps between them\n");
}

TEST_F(CliFragTest, BadMomentsAreOneLineErrors) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"--at", "no-such-marker"},
                                               {"--at", "seq:x"},
                                               {"--at", "seq:3"} /* two processes */,
                                               {"--at", "oom"} /* none in this trace */,
                                               {"--at", "+5parsecs"}}) {
    const CommandResult result = frag(args);
    EXPECT_EQ(result.exit_status, 2) << args[1];
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.rfind("vramtrace frag: ", 0), 0u) << result.err;
    EXPECT_EQ(result.out, "");
  }
  const CommandResult help = run_vramtrace({"frag", "--help"}, scratch_.path());
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("--at"), std::string::npos);
}

}  // namespace
}  // namespace vramtrace::testing
