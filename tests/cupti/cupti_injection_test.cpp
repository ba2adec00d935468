// The CUPTI library as a guest in someone else's process: what it links and exports, and that
// when CUPTI cannot be had it says so in one line and the program runs on. There is no GPU or
// driver here, so CUDA's part (loading CUDA_INJECTION64_PATH and calling InitializeInjection) is
// played by injection_probe; the toolkit's real libcupti then refuses to subscribe.
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <sstream>

#include "guest_library.h"
#include "process_runner.h"
#include "sql_query.h"

namespace vramtrace::test {
namespace {

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  for (const std::string& line : lines(text))
    if (line.starts_with(prefix)) out.push_back(line);
  return out;
}

class TraceFile {
 public:
  TraceFile() {
    path_ = std::filesystem::temp_directory_path() /
            ("vramtrace-cupti-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
  }
  ~TraceFile() { std::filesystem::remove(path_); }
  std::string path() const { return path_.string(); }
  std::string query(const std::string& sql) const { return testing::query_one(path_, sql); }

 private:
  std::filesystem::path path_;
};

TEST(CuptiInjection, LinksOnlyTheCLibraryAndTheLoader) {
  expect_links_only_libc(CUPTI_LIB);
}

TEST(CuptiInjection, ExportsOnlyInitializeInjection) {
  ProcessResult nm = run_process({.argv = {"nm", "-D", "--defined-only", CUPTI_LIB}});
  ASSERT_EQ(nm.exit_code(), 0) << nm.err;
  std::vector<std::string> symbols;
  for (const auto& line : lines(nm.out)) symbols.push_back(line.substr(line.rfind(' ') + 1));
  EXPECT_EQ(symbols, std::vector<std::string>{"InitializeInjection"}) << nm.out;
}

TEST(CuptiInjection, OutsideVramtraceItStaysSilent) {
  ProcessResult r = run_process({.argv = {INJECTION_PROBE_BIN},
                                 .extra_env = {std::string("CUDA_INJECTION64_PATH=") + CUPTI_LIB},
                                 .unset_env = {"VRAMTRACE_SOCKET"}});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "InitializeInjection returned 1\n");
  EXPECT_EQ(r.err, "");
}

TEST(CuptiInjection, WithoutLibcuptiOneLineAndTheProgramRunsOn) {
  TraceFile trace;
  ProcessResult r =
      run_process({.argv = {VRAMTRACE_BIN, "run", "--backend", "cupti", "-o", trace.path(), "--",
                            INJECTION_PROBE_BIN},
                   .extra_env = {"VRAMTRACE_CUPTI_LIBRARY=/nonexistent/libcupti.so"}});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "InitializeInjection returned 1\n");
  const auto said = lines_starting(r.err, "vramtrace: CUPTI");
  ASSERT_EQ(said.size(), 1u) << r.err;
  EXPECT_NE(said[0].find("libcupti was not found"), std::string::npos) << said[0];
}

// The toolkit's libcupti is found, and refuses: there is no driver. The refusal is one line on
// stderr and a stat in the trace, whose CUPTI process row says which backend it is.
TEST(CuptiInjection, CuptiThatRefusesIsOneLineAndAStat) {
  TraceFile trace;
  ProcessResult r = run_process({.argv = {VRAMTRACE_BIN, "run", "--backend", "cupti", "-o",
                                          trace.path(), "--", INJECTION_PROBE_BIN}});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "InitializeInjection returned 1\n");
  EXPECT_EQ(lines_starting(r.err, "vramtrace: CUPTI").size(), 1u) << r.err;
  EXPECT_EQ(trace.query("SELECT group_concat(backend) FROM process"), "cupti");
  EXPECT_EQ(trace.query("SELECT value FROM stats WHERE name = 'shim_cupti_unavailable'"), "1");
}

// --backend both: the shim records the program's allocations; CUPTI, refused here, records none,
// and the summary says what the shim alone saw.
TEST(CuptiInjection, BothBackendsAreComparedInTheSummary) {
  TraceFile trace;
  ProcessResult r = run_process({.argv = {VRAMTRACE_BIN, "run", "--backend", "both", "-o",
                                          trace.path(), "--", INJECTION_PROBE_SIM_BIN}});
  ASSERT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(trace.query("SELECT group_concat(backend) FROM (SELECT backend FROM process "
                        "ORDER BY backend)"),
            "cupti,preload");
  ProcessResult summary =
      run_process({.argv = {VRAMTRACE_BIN, "summary", "--format", "json", trace.path()}});
  ASSERT_EQ(summary.exit_code(), 0) << summary.err;
  EXPECT_TRUE(std::regex_search(summary.out, std::regex(R"("only_preload":\s*2\b)")))
      << summary.out;
  EXPECT_TRUE(std::regex_search(summary.out, std::regex(R"("only_cupti":\s*0\b)"))) << summary.out;
  ProcessResult text = run_process({.argv = {VRAMTRACE_BIN, "summary", trace.path()}});
  EXPECT_NE(text.out.find("seen only by the shim: 2; seen only by CUPTI: 0"), std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("warning: the trace holds both the shim's and CUPTI's records"),
            std::string::npos)
      << text.out;

  // One backend's rows: no double count, no warning about it.
  ProcessResult leaks = run_process(
      {.argv = {VRAMTRACE_BIN, "leaks", "--backend", "preload", "--format", "json", trace.path()}});
  EXPECT_EQ(leaks.exit_code(), 0) << leaks.err;
  EXPECT_TRUE(std::regex_search(leaks.out, std::regex(R"("backend":\s*"preload")"))) << leaks.out;
  EXPECT_EQ(leaks.out.find("records of the same processes"), std::string::npos) << leaks.out;
  ProcessResult cupti_only =
      run_process({.argv = {VRAMTRACE_BIN, "summary", "--backend", "cupti", trace.path()}});
  EXPECT_EQ(cupti_only.exit_code(), 0) << cupti_only.err;
  EXPECT_NE(cupti_only.out.find("no allocations recorded"), std::string::npos) << cupti_only.out;
}

TEST(CuptiInjection, PreloadBackendLeavesCudaInjectionAlone) {
  TraceFile trace;
  ProcessResult r =
      run_process({.argv = {VRAMTRACE_BIN, "run", "-o", trace.path(), "--", INJECTION_PROBE_BIN},
                   .unset_env = {"CUDA_INJECTION64_PATH"}});
  EXPECT_EQ(r.exit_code(), 0) << r.err;
  EXPECT_EQ(r.out, "no CUDA_INJECTION64_PATH\n");
  EXPECT_EQ(trace.query("SELECT group_concat(backend) FROM process"), "preload");
}

}  // namespace
}  // namespace vramtrace::test
