// The shim as a guest in someone else's process: what it links, what it exports, and that
// it never changes what the program sees.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "process_runner.h"

namespace vramtrace::test {
namespace {

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

TEST(Shim, LinksOnlyTheCLibraryAndTheLoader) {
  ProcessResult ldd = run_process({.argv = {"ldd", PRELOAD_LIB}});
  ASSERT_EQ(ldd.exit_code(), 0) << ldd.err;
  const std::regex allowed(R"(^\s*(linux-vdso\.so\.1|libc\.so\.6 => \S+|/lib64/ld-linux-x86-64\.so\.2)\s)");
  std::vector<std::string> deps = lines(ldd.out);
  ASSERT_GE(deps.size(), 2u) << ldd.out;
  for (const auto& line : deps) EXPECT_TRUE(std::regex_search(line, allowed)) << line;
}

TEST(Shim, ExportsOnlyHooksAndItsCApi) {
  ProcessResult nm = run_process({.argv = {"nm", "-D", "--defined-only", PRELOAD_LIB}});
  ASSERT_EQ(nm.exit_code(), 0) << nm.err;
  const std::set<std::string> hooks = {
      "cudaMalloc",      "cudaFree",        "cudaMallocManaged",       "cudaMallocHost",
      "cudaHostAlloc",   "cudaFreeHost",    "cudaMallocPitch",         "cudaMalloc3D",
      "cudaMallocAsync", "cudaMallocAsync_ptsz", "cudaMallocFromPoolAsync",
      "cudaMallocFromPoolAsync_ptsz",       "cudaFreeAsync",           "cudaFreeAsync_ptsz"};
  std::set<std::string> exported;
  for (const auto& line : lines(nm.out)) {
    std::string address, type, name;
    std::istringstream(line) >> address >> type >> name;
    exported.insert(name);
    EXPECT_TRUE(hooks.count(name) == 1 || name.rfind("vramtrace_", 0) == 0)
        << "unexpected export: " << line;
  }
  for (const auto& hook : hooks) EXPECT_EQ(exported.count(hook), 1u) << hook << " not exported";
}

// Without a collector to talk to, the shim is a pass-through: same output, same status.
TEST(Shim, WithoutCollectorTheProgramRunsUnchanged) {
  ProcessResult plain = run_process({.argv = {CUDART_CODES_SIM_BIN}});
  ProcessResult preloaded = run_process({.argv = {CUDART_CODES_SIM_BIN},
                                         .extra_env = {std::string("LD_PRELOAD=") + PRELOAD_LIB},
                                         .unset_env = {"VRAMTRACE_SOCKET"}});
  ASSERT_EQ(plain.exit_code(), 0);
  EXPECT_EQ(preloaded.exit_code(), 0);
  EXPECT_EQ(preloaded.out, plain.out);
  EXPECT_EQ(preloaded.err, "");
}

// A collector that cannot be reached: one line on stderr, then the program runs untraced.
TEST(Shim, UnreachableCollectorCostsOneLineAndNothingElse) {
  ProcessResult plain = run_process({.argv = {CUDART_CODES_SIM_BIN}});
  ProcessResult orphan = run_process(
      {.argv = {CUDART_CODES_SIM_BIN},
       .extra_env = {std::string("LD_PRELOAD=") + PRELOAD_LIB,
                     "VRAMTRACE_SOCKET=/nonexistent/vramtrace.sock"}});
  EXPECT_EQ(orphan.exit_code(), 0);
  EXPECT_EQ(orphan.out, plain.out);
  std::vector<std::string> said = lines(orphan.err);
  ASSERT_EQ(said.size(), 1u) << orphan.err;
  EXPECT_EQ(said[0].rfind("vramtrace: ", 0), 0u) << said[0];
}

// Recording must not change a single return code or sticky error the program sees.
void expect_same_codes_under_vramtrace(const char* program) {
  ProcessResult plain = run_process({.argv = {program}});
  ProcessResult traced = run_process(
      {.argv = {VRAMTRACE_BIN, "run", "-o", std::string(testing::TempDir()) + "/codes-" +
                                              std::to_string(getpid()) + ".db",
                "--force", "--", program}});
  EXPECT_EQ(traced.exit_code(), plain.exit_code()) << traced.err;
  EXPECT_EQ(traced.out, plain.out);
  EXPECT_GT(lines(plain.out).size(), 10u) << plain.out;
}

TEST(Shim, SimulatedCudartReturnCodesUnchanged) {
  expect_same_codes_under_vramtrace(CUDART_CODES_SIM_BIN);
}

#ifdef CUDART_CODES_REAL_BIN
// Against the CUDA toolkit's own libcudart. On a machine without a driver every call fails,
// and those errors too must pass through unchanged.
TEST(Shim, RealCudartReturnCodesUnchanged) {
  expect_same_codes_under_vramtrace(CUDART_CODES_REAL_BIN);
}
#endif

}  // namespace
}  // namespace vramtrace::test
