// Every report on traces that a scribbled ring or a hostile file can leave (docs/security.md):
// times that cannot be right, and callsites whose parents loop. Each report answers (exit 0,
// or gate's 1 for a failed check) and says what it could not take as it was.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliUntrustedTimesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_untrusted_times_trace(trace_), ""); }

  CommandResult vramtrace(std::vector<std::string> args) {
    args.insert(args.begin() + 1, trace_.string());
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "times.db";
};

TEST_F(CliUntrustedTimesTest, EveryReportAnswers) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"summary"},
                                               {"leaks"},
                                               {"leaks", "--at", "peak"},
                                               {"timeline"},
                                               {"peak"},
                                               {"frag"},
                                               {"frag", "--at", "+1.5s"}}) {
    const CommandResult result = vramtrace(args);
    EXPECT_EQ(result.exit_status, 0) << args[0] << ": " << result.out << result.err;
    EXPECT_EQ(result.err, "") << args[0];
  }
}

TEST_F(CliUntrustedTimesTest, SummaryAndLeaksNameEachProblem) {
  const CommandResult summary = vramtrace({"summary"});
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_NE(summary.out.find("warning: process 7000 (/usr/bin/leaky): 1 event timed before the "
                             "process started (time_problem before_process_start, the first at "
                             "seq 3); reports over time take it as at its start\n"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("time_problem after_process_end, the first at seq 7"),
            std::string::npos);
  EXPECT_NE(summary.out.find("time_problem out_of_order, the first at seq 6"), std::string::npos);
  const CommandResult leaks = vramtrace({"leaks", "--format", "json"});
  ASSERT_EQ(leaks.exit_status, 0) << leaks.err;
  const json doc = json::parse(leaks.out);
  EXPECT_EQ(doc["warnings"].size(), 3u) << doc["warnings"];
  EXPECT_EQ(doc["total_bytes"], 4 * kMiB);  // a1, a3, a5, a6
}

TEST_F(CliUntrustedTimesTest, PeakIsTheFirstEventToReachTheMost) {
  const CommandResult result = vramtrace({"peak", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["peaks"].size(), 1u);
  EXPECT_EQ(doc["peaks"][0]["bytes"], 4 * kMiB);
  EXPECT_EQ(doc["peaks"][0]["seq"], 4);
}

class CliCallsiteCycleTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_callsite_cycle_trace(trace_), ""); }

  CommandResult vramtrace(std::vector<std::string> args) {
    args.insert(args.begin() + 1, trace_.string());
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "cycle.db";
  const std::string mark_ = "[stack cut: its callsites loop back in the trace]";
};

TEST_F(CliCallsiteCycleTest, PeakFinishesAndShowsTheCut) {
  const CommandResult text = vramtrace({"peak"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find(mark_), std::string::npos) << text.out;
  EXPECT_LT(line_count(text.out), 40u) << text.out;
  const CommandResult result = vramtrace({"peak", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["peaks"].size(), 1u);
  EXPECT_EQ(doc["peaks"][0]["bytes"], 7 * kMiB);
}

TEST_F(CliCallsiteCycleTest, LeaksPrintEachStackToItsCut) {
  const CommandResult text = vramtrace({"leaks"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("    #2 " + mark_ + "\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    #1 " + mark_ + "\n"), std::string::npos) << text.out;
  EXPECT_LT(line_count(text.out), 30u) << text.out;
  const CommandResult result = vramtrace({"leaks", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["leaks"].size(), 3u);
  std::size_t cut = 0;
  for (const json& leak : doc["leaks"]) {
    const json& stack = leak["stack"];
    ASSERT_LE(stack.size(), 3u) << stack;
    if (stack.back().contains("cut")) {
      EXPECT_EQ(stack.back()["cut"], "cycle");
      EXPECT_EQ(stack.back()["function"], mark_);
      ++cut;
    }
  }
  EXPECT_EQ(cut, 2u);
}

TEST_F(CliCallsiteCycleTest, GateFinishesAndShowsTheCut) {
  const CommandResult result = vramtrace({"gate", "--max-leaked-bytes", "0"});
  EXPECT_EQ(result.exit_status, 1) << result.out << result.err;  // the check fails, no more
  EXPECT_NE(result.out.find(mark_), std::string::npos) << result.out;
  EXPECT_LT(line_count(result.out), 40u) << result.out;
}

}  // namespace
}  // namespace vramtrace::testing
