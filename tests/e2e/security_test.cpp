// The transport is private to the user who records (docs/security.md): the socket's
// directory is 0700 and the socket 0600, another uid's connection is refused (SO_PEERCRED),
// and no descriptor of vramtrace's (the collector's or the shim's) reaches the programs that
// the traced program starts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "process_runner.h"
#include "scratch_dir_test.h"
#include "trace_query.h"

namespace vramtrace::test {
namespace {

namespace fs = std::filesystem;

class SecurityTest : public ScratchDirTest {
 protected:
  ProcessResult record_shell(const std::string& script, std::vector<std::string> args = {}) {
    ProcessOptions o;
    o.argv = {VRAMTRACE_BIN, "run", "-o", trace(), "--", "/bin/sh", "-c", script, "sh"};
    o.argv.insert(o.argv.end(), args.begin(), args.end());
    return run_process(o);
  }
};

TEST_F(SecurityTest, SocketDirectoryIs0700AndTheSocket0600) {
  ProcessResult run =
      record_shell("stat -c '%a %u %F' \"$(dirname \"$VRAMTRACE_SOCKET\")\" \"$VRAMTRACE_SOCKET\"");
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  const std::string uid = std::to_string(getuid());
  EXPECT_EQ(run.out, "700 " + uid + " directory\n600 " + uid + " socket\n");
}

// A traced program forks a child that execs a program that is not traced (no LD_PRELOAD) and
// lists its own descriptors: it inherits every descriptor that any process above it left
// without close-on-exec, the collector's trace and socket and the shims' rings included.
TEST_F(SecurityTest, NoDescriptorOfOursReachesTheProgramsChildren) {
  ProcessResult run = record_shell(
      "exec \"$1\" /usr/bin/env -u LD_PRELOAD -u NVTX_INJECTION64_PATH ls -l /proc/self/fd",
      {FORK_AND_EXEC_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  std::istringstream lines(run.out);
  std::string line;
  int descriptors = 0;
  bool saw_listing_itself = false;
  while (std::getline(lines, line)) {
    const size_t arrow = line.find(" -> ");
    if (arrow == std::string::npos) continue;
    ++descriptors;
    const std::string target = line.substr(arrow + 4);
    saw_listing_itself |= target.rfind("/proc/", 0) == 0;
    EXPECT_EQ(target.find("socket:"), std::string::npos) << line;
    EXPECT_EQ(target.find("memfd:"), std::string::npos) << line;
    EXPECT_EQ(target.find("vramtrace"), std::string::npos) << line;
    EXPECT_EQ(target.find(dir_.string()), std::string::npos) << line;
  }
  EXPECT_TRUE(saw_listing_itself) << run.out;  // the listing really ran
  EXPECT_GE(descriptors, 4) << run.out;        // stdin, stdout, stderr, the directory
}

// The test opens the socket to everyone (as only its owner can), then runs a traced program
// as nobody (65534): its shim reaches the socket, and the collector must still refuse it for
// its uid alone.
TEST_F(SecurityTest, RefusesAnotherUid) {
  if (getuid() != 0)
    GTEST_SKIP() << "switching to another uid needs root; running as uid " << getuid();
  if (access("/usr/bin/setpriv", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/setpriv (util-linux)";
  ProcessResult run = record_shell(
      "chmod 755 \"$(dirname \"$VRAMTRACE_SOCKET\")\" && chmod 777 \"$VRAMTRACE_SOCKET\" && "
      "exec /usr/bin/setpriv --reuid=65534 --regid=65534 --clear-groups \"$1\" exit 0",
      {EXIT_WITH_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM process WHERE exe LIKE '%e2e_exit_with'"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM process WHERE uid != " + std::to_string(getuid())), 0);
  EXPECT_EQ(q.integer("SELECT value FROM stats WHERE name = 'connections_refused'"), 1);
}

}  // namespace
}  // namespace vramtrace::test
