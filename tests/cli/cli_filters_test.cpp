// `--pid`, `--rank` and `--host` on `vramtrace leaks|summary`, over two node traces merged into
// one (synthetic_trace.h): what each selects, the "filters" object, the text's note, and the
// one-line error when nothing matches.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "storage/trace_merge.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

// Each process of a node leaks 1 GiB + 64 MiB + 64 MiB of virtual memory; odd ranks 2 MiB more.
constexpr std::uint64_t kEvenRankLeak = kGiB + 128 * kMiB;
constexpr std::uint64_t kOddRankLeak = kEvenRankLeak + 2 * kMiB;

class CliFiltersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    NodeTraceSpec a;
    a.host = "node-a";
    NodeTraceSpec b;
    b.host = "node-b";
    b.first_rank = 2;
    ASSERT_EQ(write_node_trace(dir_ / "a.db", a), "");
    ASSERT_EQ(write_node_trace(dir_ / "b.db", b), "");
    const storage::MergeResult merged = storage::merge_traces({dir_ / "a.db", dir_ / "b.db"}, job_);
    ASSERT_TRUE(merged.ok) << merged.error;
  }

  json run_json(std::vector<std::string> args) {
    args.insert(args.begin() + 1, job_.string());
    args.insert(args.end(), {"--format", "json"});
    const CommandResult result = run_vramtrace(args, scratch_.path());
    EXPECT_EQ(result.exit_status, 0) << result.err;
    return result.exit_status == 0 ? json::parse(result.out) : json();
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path job_ = dir_ / "job.db";
};

TEST_F(CliFiltersTest, ARankSelectsItsProcessAndSaysSo) {
  const json leaks = run_json({"leaks", "--rank", "1"});
  EXPECT_EQ(leaks.at("total_bytes"), kOddRankLeak);
  EXPECT_EQ(leaks.at("filters"), (json{{"rank", 1}, {"upids", {2}}}));

  const json summary = run_json({"summary", "--rank", "2"});
  ASSERT_EQ(summary.at("processes").size(), 1u);
  EXPECT_EQ(summary.at("processes")[0].at("host"), "node-b");
  EXPECT_EQ(summary.at("processes")[0].at("rank"), 2);
  EXPECT_EQ(summary.at("peaks").size(), 1u);
  EXPECT_EQ(summary.at("filters"), (json{{"rank", 2}, {"upids", {3}}}));
}

TEST_F(CliFiltersTest, APidSelectsItOnEveryHostAndAHostNarrowsIt) {
  const json both = run_json({"leaks", "--pid", "1001"});
  EXPECT_EQ(both.at("total_bytes"), 2 * kOddRankLeak);
  EXPECT_EQ(both.at("filters").at("upids"), json({2, 4}));

  const json one = run_json({"leaks", "--pid", "1001", "--host", "node-b"});
  EXPECT_EQ(one.at("total_bytes"), kOddRankLeak);
  EXPECT_EQ(one.at("filters"), (json{{"pid", 1001}, {"host", "node-b"}, {"upids", {4}}}));

  const json host = run_json({"summary", "--host", "node-a"});
  EXPECT_EQ(host.at("processes").size(), 2u);
  EXPECT_EQ(host.at("virtual_memory").at("reserved").at("allocations"), 2);

  const json everything = run_json({"leaks"});
  EXPECT_EQ(everything.at("total_bytes"), 2 * (kEvenRankLeak + kOddRankLeak));
  EXPECT_FALSE(everything.contains("filters"));
}

TEST_F(CliFiltersTest, TheTextReportsSayWhichProcessesTheyCover) {
  const CommandResult leaks =
      run_vramtrace({"leaks", job_.string(), "--rank", "1"}, scratch_.path());
  ASSERT_EQ(leaks.exit_status, 0) << leaks.err;
  EXPECT_NE(leaks.out.find("in " + job_.string() + ", only processes matching --rank 1 (1 of 4)"),
            std::string::npos)
      << leaks.out;
  const CommandResult summary =
      run_vramtrace({"summary", job_.string(), "--host", "node-b"}, scratch_.path());
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  const std::string& text = summary.out;
  EXPECT_NE(text.find("only processes matching --host node-b (2 of 4)"), std::string::npos) << text;
  EXPECT_NE(text.find("pid 1000 on node-b, rank 2 of 4 (local rank 0): python3 train.py"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("node-a"), std::string::npos) << text;
  EXPECT_NE(text.find("address space reserved:  2.0 GiB in 2 reservations, 2.0 GiB live"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("pid 1001 on node-b, rank 3 of 4, device 0: 96.0 MiB"), std::string::npos)
      << text;
}

TEST_F(CliFiltersTest, AFilterThatMatchesNothingIsOneLineAndExit2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--rank", "3", "--host", "node-a"}, "--rank 3 --host node-a"},
      {{"--rank", "7"}, "--rank 7"},
      {{"--pid", "42"}, "--pid 42"},
      {{"--host", "node-z"}, "--host node-z"},
  };
  for (const std::string command : {"leaks", "summary"}) {
    for (const std::string format : {"text", "json"}) {
      for (const auto& [filters, described] : cases) {
        std::vector<std::string> args{command, job_.string(), "--format", format};
        args.insert(args.end(), filters.begin(), filters.end());
        SCOPED_TRACE(::testing::PrintToString(args));
        const CommandResult result = run_vramtrace(args, scratch_.path());
        EXPECT_EQ(result.exit_status, 2);
        EXPECT_EQ(result.err, "vramtrace " + command + ": no process matches " + described +
                                  " in " + job_.string() + "\n");
        EXPECT_TRUE(result.out.empty()) << result.out;
      }
    }
  }
}

TEST_F(CliFiltersTest, MalformedFiltersAreUsageErrors) {
  for (const std::vector<std::string>& filters :
       {std::vector<std::string>{"--rank", "one"}, {"--pid", "-5"}, {"--host"}}) {
    std::vector<std::string> args{"leaks", job_.string()};
    args.insert(args.end(), filters.begin(), filters.end());
    const CommandResult result = run_vramtrace(args, scratch_.path());
    EXPECT_EQ(result.exit_status, 2) << ::testing::PrintToString(args);
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
  }
}

TEST_F(CliFiltersTest, TheHelpOfBothReportsListsTheFilters) {
  for (const std::string command : {"leaks", "summary"}) {
    const CommandResult help = run_vramtrace({command, "--help"}, scratch_.path());
    EXPECT_EQ(help.exit_status, 0);
    for (const std::string option : {"--pid", "--rank", "--host", "matches no process"}) {
      EXPECT_NE(help.out.find(option), std::string::npos) << option << " in\n" << help.out;
    }
  }
}

}  // namespace
}  // namespace vramtrace::testing
