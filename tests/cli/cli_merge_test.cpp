// `vramtrace merge` as a user runs it: the merged trace reads as the union of its inputs in both
// reports; an existing output, a bad input or a missing option is exit status 2 with one line on
// stderr and no file left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class CliMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeTraceSpec a;
    a.host = "node-a";
    NodeTraceSpec b;
    b.host = "node-b";
    b.first_rank = 2;
    b.libtrain_build_id = "b2";
    ASSERT_EQ(write_node_trace(a_, a), "");
    ASSERT_EQ(write_node_trace(b_, b), "");
  }

  CommandResult vramtrace(const std::vector<std::string>& args) {
    return run_vramtrace(args, scratch_.path());
  }

  json report(const std::string& command, const std::filesystem::path& trace) {
    const CommandResult result = vramtrace({command, trace.string(), "--format", "json"});
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return json::parse(result.out);
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path a_ = dir_ / "a.db", b_ = dir_ / "b.db", merged_ = dir_ / "all.db";
};

TEST_F(CliMergeTest, TheMergedTraceReportsTheUnionOfItsInputs) {
  const CommandResult result = vramtrace({"merge", a_.string(), b_.string(), "-o", merged_});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_TRUE(result.err.empty()) << result.err;
  EXPECT_EQ(result.out,
            "vramtrace merge: 2 traces (4 processes) merged into " + merged_.string() + "\n");

  const json summary = report("summary", merged_);
  const json& processes = summary.at("processes");
  ASSERT_EQ(processes.size(), 4u);
  std::vector<std::pair<std::string, int>> hosts_and_ranks;
  for (const json& process : processes) {
    hosts_and_ranks.emplace_back(process.at("host"), process.at("rank"));
    EXPECT_EQ(process.at("world_size"), 4);
  }
  EXPECT_EQ(hosts_and_ranks, (std::vector<std::pair<std::string, int>>{
                                 {"node-a", 0}, {"node-a", 1}, {"node-b", 2}, {"node-b", 3}}));
  EXPECT_EQ(summary.at("virtual_memory").at("reserved").at("live_bytes"), 4 * kGiB);

  const json leaks = report("leaks", merged_);
  EXPECT_EQ(leaks.at("total_bytes"),
            report("leaks", a_).at("total_bytes").get<std::uint64_t>() +
                report("leaks", b_).at("total_bytes").get<std::uint64_t>());
  EXPECT_EQ(leaks.at("total_count"), 14);
}

TEST_F(CliMergeTest, AnExistingOutputNeedsForce) {
  std::ofstream(merged_) << "keep me";
  const CommandResult refused = vramtrace({"merge", a_.string(), b_.string(), "-o", merged_});
  EXPECT_EQ(refused.exit_status, 2);
  EXPECT_EQ(line_count(refused.err), 1u) << refused.err;
  EXPECT_EQ(refused.err.rfind("vramtrace merge: " + merged_.string(), 0), 0u) << refused.err;
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(slurp(merged_), "keep me");

  const CommandResult forced =
      vramtrace({"merge", a_.string(), b_.string(), "-o", merged_, "--force"});
  EXPECT_EQ(forced.exit_status, 0) << forced.err;
  EXPECT_EQ(report("summary", merged_).at("processes").size(), 4u);
}

TEST_F(CliMergeTest, ABadInputIsOneLineAndLeavesNoOutput) {
  const auto notes = dir_ / "notes.txt";
  std::ofstream(notes) << "not a trace\n";
  const auto before = files_in(dir_.path());
  for (const auto& bad : {notes, dir_ / "absent.db"}) {
    SCOPED_TRACE(bad.string());
    const CommandResult result = vramtrace({"merge", a_.string(), bad.string(), "-o", merged_});
    EXPECT_EQ(result.exit_status, 2);
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.rfind("vramtrace merge: " + bad.string() + ": ", 0), 0u) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
    EXPECT_EQ(files_in(dir_.path()), before) << "neither the output nor its temporary file";
  }
}

TEST_F(CliMergeTest, AnIncompleteInputIsMergedWithAWarning) {
  const auto unfinished = dir_ / "unfinished.db";
  NodeTraceSpec spec;
  spec.host = "node-c";
  spec.first_rank = 4;
  ASSERT_EQ(write_node_trace(unfinished, spec, /*finish=*/false), "");
  const CommandResult result =
      vramtrace({"merge", a_.string(), unfinished.string(), "-o", merged_});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "vramtrace merge: warning: " + unfinished.string() +
                            ": the trace is incomplete (its collector did not finish); the "
                            "merged trace is marked incomplete\n");
  EXPECT_EQ(report("leaks", merged_).at("incomplete"), true);
}

TEST_F(CliMergeTest, UsageErrorsAndHelp) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"merge"}, {"merge", "-o", merged_.string()}, {"merge", a_}}) {
    const CommandResult result = vramtrace(args);
    EXPECT_EQ(result.exit_status, 2) << ::testing::PrintToString(args);
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
  }
  EXPECT_FALSE(std::filesystem::exists(merged_));

  const CommandResult help = vramtrace({"merge", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_TRUE(help.err.empty()) << help.err;
  for (const std::string word : {"--output", "--force", "Exit status", "TRACE"}) {
    EXPECT_NE(help.out.find(word), std::string::npos) << word << " in\n" << help.out;
  }
  const CommandResult top = vramtrace({"--help"});
  EXPECT_NE(top.out.find("merge"), std::string::npos) << top.out;
}

}  // namespace
}  // namespace vramtrace::testing
