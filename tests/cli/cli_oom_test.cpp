// `vramtrace oom` as a user runs it: the JSON contract of docs/cli.md on the synthetic trace's
// out-of-memory (a 64 GiB cudaMalloc of pid 4242 at seq 6, segment level), the text report, a
// trace with no OOM, and the errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliOomTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_synthetic_trace(trace_), ""); }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "synthetic.db";
};

TEST_F(CliOomTest, JsonHasOneRecordPerOomWithWhatWasLive) {
  const CommandResult result =
      run_vramtrace({"oom", trace_.string(), "--format", "json"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  const json doc = json::parse(result.out);
  EXPECT_EQ(doc["trace"], trace_.string());
  EXPECT_FALSE(doc.contains("filters"));
  ASSERT_EQ(doc["ooms"].size(), 1u);
  const json& oom = doc["ooms"][0];
  EXPECT_EQ(oom["upid"], 1);
  EXPECT_EQ(oom["pid"], 4242);
  EXPECT_EQ(oom["tid"], 4242);
  EXPECT_EQ(oom["time_ns"], kFirstStartNs + 600'000'000);
  EXPECT_EQ(oom["seq"], 6);
  EXPECT_EQ(oom["api"], "cudaMalloc");
  EXPECT_EQ(oom["kind"], "device");
  EXPECT_EQ(oom["requested_bytes"], 64 * kGiB);
  EXPECT_EQ(oom["result"], 2);
  ASSERT_EQ(oom["stack"].size(), 3u);
  EXPECT_EQ(oom["stack"][0], json({{"function", "inline_helper"},
                                   {"file", "helpers.h"},
                                   {"line", 7},
                                   {"module", kLeakyExe},
                                   {"language", "native"}}));
  // Live at seq 6: a2 and a3 (device, callsite 3) and a4 (host_pinned, callsite 4); a1 was
  // freed at seq 3.
  EXPECT_EQ(oom["live"]["total_bytes"], 14 * kMiB);
  EXPECT_EQ(oom["live"]["total_count"], 3);
  EXPECT_EQ(oom["live"]["by_kind"], json({{"device", 6 * kMiB}, {"host_pinned", 8 * kMiB}}));
  ASSERT_EQ(oom["live"]["top"].size(), 2u);
  EXPECT_EQ(oom["live"]["top"][0]["kind"], "host_pinned");
  EXPECT_EQ(oom["live"]["top"][0]["bytes"], 8 * kMiB);
  EXPECT_EQ(oom["live"]["top"][0]["count"], 1);
  EXPECT_EQ(oom["live"]["top"][0]["stack"][0]["function"], "make_pinned");
  EXPECT_EQ(oom["live"]["top"][1]["count"], 2);
  EXPECT_TRUE(oom["allocator"].is_null());
  ASSERT_EQ(oom["advice"].size(), 1u);
  EXPECT_EQ(oom["advice"][0]["id"], "top_callsites");
  EXPECT_TRUE(oom["advice"][0]["text"].is_string());
  EXPECT_EQ(oom["advice"][0]["evidence"], json({{"requested_bytes", 64 * kGiB},
                                                {"live_bytes", 14 * kMiB},
                                                {"top_callsite_bytes", 8 * kMiB},
                                                {"top_callsite_count", 1}}));
}

TEST_F(CliOomTest, TopAndFiltersNarrowTheReport) {
  const CommandResult top = run_vramtrace(
      {"oom", trace_.string(), "--format", "json", "--top", "1", "--pid", "4242"}, scratch_.path());
  ASSERT_EQ(top.exit_status, 0) << top.err;
  const json doc = json::parse(top.out);
  EXPECT_EQ(doc["ooms"][0]["live"]["top"].size(), 1u);
  EXPECT_EQ(doc["filters"]["upids"], json({1}));
  // The other process had no OOM.
  const CommandResult other =
      run_vramtrace({"oom", trace_.string(), "--pid", "4300"}, scratch_.path());
  ASSERT_EQ(other.exit_status, 0) << other.err;
  EXPECT_NE(other.out.find("no out-of-memory in"), std::string::npos) << other.out;
}

TEST_F(CliOomTest, AllHasOneSectionPerOom) {
  const CommandResult result = run_vramtrace({"oom", trace_.string(), "--all"}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("1 out-of-memory failure in"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("OOM 1 of 1: pid 4242"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("cudaErrorMemoryAllocation (2)"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("[top_callsites]"), std::string::npos) << result.out;
}

// A failure that is not PyTorch's allocator's went back to the program: it has its screen.
TEST_F(CliOomTest, ByDefaultEachFailureTheProgramSawHasAScreen) {
  const CommandResult result = run_vramtrace({"oom", trace_.string()}, scratch_.path());
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("1 out-of-memory error the program saw in"), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("failed in pid 4242 at +"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(": cudaErrorMemoryAllocation (2)\n  at "), std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("[top_callsites]"), std::string::npos) << result.out;
  EXPECT_NE(result.out.find(" --all (every failure"), std::string::npos) << result.out;
  const json doc =
      json::parse(run_vramtrace({"oom", trace_.string(), "--format", "json"}, scratch_.path()).out);
  EXPECT_EQ(doc["ooms"][0]["outcome"], "returned");
}

TEST_F(CliOomTest, ATraceWithoutOomSaysSoAndExitsZero) {
  const auto path = dir_ / "node.db";
  ASSERT_EQ(write_node_trace(path, {}), "");
  const CommandResult text = run_vramtrace({"oom", path.string()}, scratch_.path());
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_EQ(text.out, "vramtrace: no out-of-memory in " + path.string() + "\n");
  const CommandResult as_json =
      run_vramtrace({"oom", path.string(), "--format", "json"}, scratch_.path());
  ASSERT_EQ(as_json.exit_status, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out)["ooms"], json::array());
}

TEST_F(CliOomTest, ErrorsAreOneLineAndExitTwo) {
  const CommandResult missing =
      run_vramtrace({"oom", (dir_ / "none.db").string()}, scratch_.path());
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_EQ(line_count(missing.err), 1u) << missing.err;
  EXPECT_EQ(missing.err.rfind("vramtrace oom: ", 0), 0u) << missing.err;
  const CommandResult no_match =
      run_vramtrace({"oom", trace_.string(), "--rank", "3"}, scratch_.path());
  EXPECT_EQ(no_match.exit_status, 2);
  EXPECT_EQ(line_count(no_match.err), 1u) << no_match.err;
  const CommandResult bad_top =
      run_vramtrace({"oom", trace_.string(), "--top", "0"}, scratch_.path());
  EXPECT_EQ(bad_top.exit_status, 2);
  const CommandResult help = run_vramtrace({"oom", "--help"}, scratch_.path());
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("Exit status"), std::string::npos);
}

}  // namespace
}  // namespace vramtrace::testing
