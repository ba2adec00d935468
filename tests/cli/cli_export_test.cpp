// `vramtrace export` as a user runs it, on the synthetic trace of synthetic_trace.h: both files
// written and readable, the filters, and the errors; and `--memory-viz` on the allocator trace
// of allocator_trace.h. The files' contents are checked in depth by tests/unit/export_test.cpp
// and memory_viz_export_test.cpp.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "allocator_trace.h"
#include "pickle_reader.h"
#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

// `vramtrace export` run on a trace in a directory of its own.
class ExportCommandTest : public ::testing::Test {
 protected:
  CommandResult run(std::vector<std::string> args) { return run_vramtrace(args, scratch_.path()); }

  TempDir dir_;
  TempDir scratch_;
};

class CliExportTest : public ExportCommandTest {
 protected:
  void SetUp() override { ASSERT_EQ(write_synthetic_trace(trace_), ""); }

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
            "vramtrace export: nothing to write: give --perfetto OUT, --chrome OUT.json, "
            "--memory-viz OUT.pickle, or several\n");
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
  EXPECT_NE(help.out.find("--memory-viz"), std::string::npos);
}

class CliMemoryVizTest : public ExportCommandTest {
 protected:
  void SetUp() override { ASSERT_EQ(write_allocator_trace(trace_), ""); }
  // `export TRACE --memory-viz PICKLE` and `more`.
  CommandResult export_pickle(const std::filesystem::path& trace,
                              const std::vector<std::string>& more = {}) {
    std::vector<std::string> args = {"export", trace.string(), "--memory-viz", pickle_.string()};
    args.insert(args.end(), more.begin(), more.end());
    return run(args);
  }
  // Exit status 2, one line on stderr, and no pickle left.
  void expect_refused(const CommandResult& result, const std::string& why) {
    EXPECT_EQ(result.exit_status, 2);
    EXPECT_EQ(result.err, "vramtrace export: " + why + "\n");
    EXPECT_FALSE(std::filesystem::exists(pickle_));
  }

  std::filesystem::path trace_ = dir_ / "allocator.db";
  std::filesystem::path pickle_ = dir_ / "snapshot.pickle";
};

// Two processes, one with allocator events (pid 5000): that one, without a filter. At its end
// (seq 13): S1 with B2 and B3 live; 11 allocator events before (memory_viz_export_test.cpp).
TEST_F(CliMemoryVizTest, WritesThePickleOfTheAllocatorProcess) {
  const CommandResult result = export_pickle(trace_);
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_EQ(result.err, "");
  EXPECT_EQ(result.out, "vramtrace export: wrote " + pickle_.string() +
                            " (PyTorch memory snapshot: pid 5000 at seq 13: 1 segments, 2 active "
                            "blocks, 11 trace entries)\n");
  const auto root = unpickle(slurp(pickle_));
  ASSERT_EQ(root->at("segments").list().size(), 1u);
  EXPECT_EQ(root->at("segments").list()[0]->at("total_size").unsigned_integer(), 2u << 20);
  EXPECT_EQ(root->at("device_traces").list()[0]->list().size(), 11u);
}

TEST_F(CliMemoryVizTest, TakesTheOtherFormatsAndTheProcessFilter) {
  const auto chrome = dir_ / "out.json";
  const CommandResult both = export_pickle(trace_, {"--chrome", chrome.string(), "--pid", "5001"});
  ASSERT_EQ(both.exit_status, 0) << both.err;
  EXPECT_NE(both.out.find("Chrome trace events"), std::string::npos) << both.out;
  // pid 5001 has no allocator: its 8 MiB cudaMalloc on device 1 is a segment of one block.
  EXPECT_NE(both.out.find("pid 5001 at seq 1: 1 segments, 1 active blocks, 2 trace entries"),
            std::string::npos)
      << both.out;
  const auto root = unpickle(slurp(pickle_));
  EXPECT_EQ(root->at("device_traces").list().size(), 2u);
}

TEST_F(CliMemoryVizTest, RefusesAnExistingFileWithoutForce) {
  ASSERT_EQ(export_pickle(trace_).exit_status, 0);
  const std::string first = slurp(pickle_);
  const CommandResult exists = export_pickle(trace_);
  EXPECT_EQ(exists.exit_status, 2);
  EXPECT_EQ(line_count(exists.err), 1u) << exists.err;
  EXPECT_NE(exists.err.find("--force"), std::string::npos) << exists.err;
  EXPECT_EQ(exists.out, "");
  const CommandResult forced = export_pickle(trace_, {"--force", "--pid", "5001"});
  ASSERT_EQ(forced.exit_status, 0) << forced.err;
  EXPECT_NE(slurp(pickle_), first);
}

// The same trace twice, merged: two processes with allocator blocks, and a pid that both have.
TEST_F(CliMemoryVizTest, RefusesSeveralAllocatorProcessesNamingPid) {
  const auto second = dir_ / "second.db", job = dir_ / "job.db";
  ASSERT_EQ(write_allocator_trace(second), "");
  const CommandResult merged = run({"merge", trace_.string(), second.string(), "-o", job.string()});
  ASSERT_EQ(merged.exit_status, 0) << merged.err;
  for (const std::vector<std::string>& filter :
       {std::vector<std::string>{}, std::vector<std::string>{"--pid", "5000"}}) {
    expect_refused(export_pickle(job, filter),
                   "2 selected processes recorded allocator blocks, and a memory_viz snapshot is "
                   "one process's: choose one with --pid, --rank or --host");
  }
}

TEST_F(CliMemoryVizTest, RefusesKindAndLevel) {
  for (const std::vector<std::string>& option : {std::vector<std::string>{"--kind", "block"},
                                                 std::vector<std::string>{"--level", "segment"}}) {
    expect_refused(export_pickle(trace_, option),
                   "--memory-viz takes no --kind or --level: the snapshot is the allocator's view");
  }
}

}  // namespace
}  // namespace vramtrace::testing
