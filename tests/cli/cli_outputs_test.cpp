// The files the commands write: never over an input (the trace, its baseline, a merge's
// inputs; the same file through a symbolic or a hard link too), never half written (a file-size
// limit leaves no partial file and what was there before), one file never given for two
// outputs, and a FIFO no one reads refused at once.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

namespace fs = std::filesystem;

class CliOutputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(write_synthetic_trace(trace_), "");
    original_ = slurp(trace_);
    ASSERT_FALSE(original_.empty());
  }
  CommandResult run(const std::vector<std::string>& args) {
    return run_vramtrace(args, scratch_.path());
  }
  // Refused with one line naming the input, exit 2, and the trace not touched.
  void expect_input_kept(const CommandResult& result, const std::string& command) {
    EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
    EXPECT_EQ(result.err.rfind("vramtrace " + command + ": ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find("that this command reads"), std::string::npos) << result.err;
    EXPECT_EQ(slurp(trace_), original_) << "the trace was changed";
  }
  // No temporary file left in the directory.
  void expect_no_temporary_files() {
    for (const fs::directory_entry& entry : fs::directory_iterator(dir_.path()))
      EXPECT_EQ(entry.path().filename().string().find(".vramtrace-"), std::string::npos)
          << entry.path();
  }

  TempDir dir_, scratch_;
  fs::path trace_ = dir_ / "synthetic.db";
  std::string original_;
};

TEST_F(CliOutputsTest, NoExportReplacesTheTraceItReads) {
  for (const char* format : {"--chrome", "--perfetto"}) {
    SCOPED_TRACE(format);
    expect_input_kept(run({"export", trace_.string(), format, trace_.string(), "--force"}),
                      "export");
  }
  const fs::path symlink = dir_ / "link.json", hardlink = dir_ / "hard.json";
  fs::create_symlink(trace_, symlink);
  fs::create_hard_link(trace_, hardlink);
  expect_input_kept(run({"export", trace_.string(), "--chrome", symlink.string(), "--force"}),
                    "export");
  expect_input_kept(run({"export", trace_.string(), "--chrome", hardlink.string(), "--force"}),
                    "export");
  // Nor one of SQLite's side files, which are the trace too.
  const fs::path wal = trace_.string() + "-wal";
  { std::ofstream(wal) << "x"; }
  expect_input_kept(run({"export", trace_.string(), "--chrome", wal.string(), "--force"}),
                    "export");
  expect_no_temporary_files();
}

TEST_F(CliOutputsTest, NoGateReportReplacesTheTraceOrItsBaseline) {
  for (const char* report : {"--json", "--junit", "--markdown"}) {
    SCOPED_TRACE(report);
    expect_input_kept(
        run({"gate", trace_.string(), "--max-leaked-bytes", "0", report, trace_.string()}), "gate");
  }
  const fs::path other = dir_ / "other.db";
  ASSERT_EQ(write_synthetic_trace(other), "");
  const std::string baseline = slurp(other);
  const CommandResult over_baseline = run({"gate", trace_.string(), "--baseline", other.string(),
                                           "--max-leak-increase", "0", "--json", other.string()});
  EXPECT_EQ(over_baseline.exit_status, 2) << over_baseline.err;
  EXPECT_EQ(slurp(other), baseline);
}

TEST_F(CliOutputsTest, NoMergeReplacesOneOfItsInputs) {
  const fs::path other = dir_ / "other.db";
  ASSERT_EQ(write_synthetic_trace(other), "");
  expect_input_kept(
      run({"merge", other.string(), trace_.string(), "-o", trace_.string(), "--force"}), "merge");
}

TEST_F(CliOutputsTest, OneFileIsNotTwoOutputs) {
  const fs::path out = dir_ / "out";
  const CommandResult result =
      run({"export", trace_.string(), "--chrome", out.string(), "--perfetto", out.string()});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("are the same file"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(out));
  const CommandResult gate = run({"gate", trace_.string(), "--json", out.string(), "--markdown",
                                  (dir_ / "." / "out").string()});
  EXPECT_EQ(gate.exit_status, 2);
  EXPECT_NE(gate.err.find("are the same file"), std::string::npos) << gate.err;
}

// A file-size limit reached mid-write: one line, exit 2, no partial file, and a file that was to
// be replaced keeps what it held (before, SIGXFSZ killed vramtrace and left half a file).
TEST_F(CliOutputsTest, AFileSizeLimitLeavesNoPartialFileAndKeepsTheOldOne) {
  const fs::path chrome = dir_ / "out.json";
  ASSERT_EQ(run({"export", trace_.string(), "--chrome", chrome.string()}).exit_status, 0);
  const std::uintmax_t whole = fs::file_size(chrome);
  ASSERT_GT(whole, 2048u) << "the export must be larger than the limit below";
  fs::remove(chrome);

  const ProcessLimits limit{.file_size_bytes = 1024};
  const CommandResult fresh = run_vramtrace_limited(
      {"export", trace_.string(), "--chrome", chrome.string()}, scratch_.path(), limit);
  EXPECT_EQ(fresh.exit_status, 2) << fresh.err;
  EXPECT_EQ(line_count(fresh.err), 1u) << fresh.err;
  EXPECT_NE(fresh.err.find("File too large"), std::string::npos) << fresh.err;
  EXPECT_FALSE(fs::exists(chrome));

  { std::ofstream(chrome) << "the previous export"; }
  const CommandResult replace = run_vramtrace_limited(
      {"export", trace_.string(), "--chrome", chrome.string(), "--force"}, scratch_.path(), limit);
  EXPECT_EQ(replace.exit_status, 2) << replace.err;
  EXPECT_EQ(slurp(chrome), "the previous export");
  expect_no_temporary_files();
}

// A FIFO is a stream: written where someone reads it, refused at once where no one does (before,
// export waited on it for ever).
TEST_F(CliOutputsTest, AFifoNoOneReadsIsRefusedAtOnce) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const CommandResult result =
      run({"export", trace_.string(), "--chrome", fifo.string(), "--force"});
  EXPECT_EQ(result.exit_status, 2);
  EXPECT_NE(result.err.find("a FIFO that no one reads"), std::string::npos) << result.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
}

// What the user wrote to a link stays a link, to the new file.
TEST_F(CliOutputsTest, AnOutputThroughALinkReplacesTheFileAndKeepsTheLink) {
  const fs::path target = dir_ / "real.json", link = dir_ / "link.json";
  { std::ofstream(target) << "old"; }
  fs::create_symlink(target, link);
  const CommandResult result =
      run({"export", trace_.string(), "--chrome", link.string(), "--force"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(slurp(target).front(), '{');
}

}  // namespace
}  // namespace vramtrace::testing
