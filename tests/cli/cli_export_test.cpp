// `vramtrace export` as a user runs it, on the synthetic trace of synthetic_trace.h: both files
// written and readable, the filters, and the errors. The files' contents are checked in depth
// by tests/unit/export_test.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliExportTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_synthetic_trace(trace_), ""); }
  CommandResult run(std::vector<std::string> args) { return run_vramtrace(args, scratch_.path()); }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "synthetic.db";
  std::filesystem::path perfetto_ = dir_ / "out.pftrace", chrome_ = dir_ / "out.json";
};

TEST_F(CliExportTest, WritesBothFormats) {
  const CommandResult result = run(
      {"export", trace_.string(), "--perfetto", perfetto_.string(), "--chrome", chrome_.string()});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  // Two processes; counters: pid 4242 device, host_pinned and async on device 1 (3), pid 4300
  // device (1); no ranges; instants: 7 allocations (a5 failed), 2 frees (a8's free failed), 1
  // OOM for 4242, and 4 allocations, 1 free for 4300.
  const std::string contents = "2 processes, 4 counters, 0 ranges, 15 instants";
  EXPECT_EQ(result.out, "vramtrace export: wrote " + perfetto_.string() +
                            " (Perfetto trace: " + contents + ")\nvramtrace export: wrote " +
                            chrome_.string() + " (Chrome trace events: " + contents + ")\n");
  const std::string perfetto = slurp(perfetto_);
  ASSERT_FALSE(perfetto.empty());
  EXPECT_EQ(perfetto[0], '\x0a');  // Trace.packet, field 1, length-delimited
  const json chrome = json::parse(slurp(chrome_));
  std::set<std::string> counters;
  for (const json& e : chrome["traceEvents"])
    if (e["ph"] == "C")
      counters.insert(std::to_string(e["pid"].get<int>()) + " " + e["name"].get<std::string>());
  EXPECT_EQ(counters, (std::set<std::string>{
                          "4242 device 0 device live bytes", "4242 device 0 host_pinned live bytes",
                          "4242 device 1 async live bytes", "4300 device 0 device live bytes"}));
}

TEST_F(CliExportTest, FiltersNarrowWhatIsExported) {
  const CommandResult result = run({"export", trace_.string(), "--chrome", chrome_.string(),
                                    "--pid", "4300", "--no-allocation-events"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("1 processes, 1 counters, 0 ranges, 0 instants"), std::string::npos)
      << result.out;
}

TEST_F(CliExportTest, ErrorsAreOneLineAndExitTwo) {
  const CommandResult nothing = run({"export", trace_.string()});
  EXPECT_EQ(nothing.exit_status, 2);
  EXPECT_EQ(nothing.err,
            "vramtrace export: nothing to write: give --perfetto OUT, --chrome OUT.json, or "
            "both\n");
  ASSERT_EQ(run({"export", trace_.string(), "--chrome", chrome_.string()}).exit_status, 0);
  const CommandResult exists = run({"export", trace_.string(), "--chrome", chrome_.string()});
  EXPECT_EQ(exists.exit_status, 2);
  EXPECT_EQ(line_count(exists.err), 1u) << exists.err;
  EXPECT_NE(exists.err.find("--force"), std::string::npos) << exists.err;
  EXPECT_EQ(run({"export", trace_.string(), "--chrome", chrome_.string(), "--force"}).exit_status,
            0);
  const CommandResult unwritable = run(
      {"export", trace_.string(), "--perfetto", (dir_ / "no" / "such" / "dir.pftrace").string()});
  EXPECT_EQ(unwritable.exit_status, 2);
  EXPECT_EQ(line_count(unwritable.err), 1u) << unwritable.err;
  const CommandResult missing =
      run({"export", (dir_ / "none.db").string(), "--chrome", chrome_.string(), "--force"});
  EXPECT_EQ(missing.exit_status, 2);
  EXPECT_EQ(line_count(missing.err), 1u) << missing.err;
  const CommandResult help = run({"export", "--help"});
  EXPECT_EQ(help.exit_status, 0);
  EXPECT_NE(help.out.find("--perfetto"), std::string::npos);
}

}  // namespace
}  // namespace vramtrace::testing
