// The collector's own faults: killed in the middle of a recording, and out of disk space.
// Either way the traced program must run to its end with its own exit status, and what the
// collector had committed must stay a readable trace that says it is incomplete.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "announcements.h"
#include "process_runner.h"
#include "scratch_dir_test.h"
#include "trace_query.h"

namespace vramtrace::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

using CollectorFaultTest = ScratchDirTest;

// The successful allocations in the trace at `path`, or -1 while it cannot be read yet.
int64_t committed_allocations(const std::string& path) {
  try {
    return TraceQuery(path).integer("SELECT count(*) FROM allocation WHERE result = 0");
  } catch (const std::exception&) {
    return -1;
  }
}

std::string file_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// vramtrace is SIGKILLed once the program's first 100 allocations are committed; the program,
// orphaned, then makes 20,000 more with a 64 KiB ring that no one drains. The program is a
// grandchild of `run` (started by a shell in the background): `run`'s own child dies with it
// (RunControlTest.ACommandDoesNotOutliveARunKilledOutright), a process that child started
// runs on, and its shim must not hang on the collector that is gone.
TEST_F(CollectorFaultTest, KilledCollectorLeavesAnIncompleteTraceAndTheProgramItsStatus) {
  // Orphans come to this process, so that it can reap the program and see its status.
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  const std::string output = (dir_ / "trace.db").string();
  ProcessOptions o;
  o.argv = {VRAMTRACE_BIN,
            "run",
            "--ring-size",
            "64K",
            "-o",
            output,
            "--",
            "sh",
            "-c",
            "\"$0\" \"$@\" & wait $!",
            OUTLIVE_COLLECTOR_BIN,
            "100",
            "20000"};
  bool killed = false;
  o.on_stdout = [&](const std::string& chunk, pid_t vramtrace) {
    if (killed || chunk.find("waiting") == std::string::npos) return;
    const auto deadline = std::chrono::steady_clock::now() + 20s;
    while (committed_allocations(output) < 100 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(20ms);
    kill(vramtrace, SIGKILL);
    killed = true;
  };
  ProcessResult run = run_process(o);  // returns when the program, too, closed its output
  ASSERT_TRUE(killed);
  EXPECT_EQ(run.signal(), SIGKILL);

  TraceQuery q(output);
  const std::string program = "(SELECT upid FROM process WHERE exe LIKE '%outlive_collector')";
  const int64_t pid = q.integer("SELECT pid FROM process WHERE upid = " + program);
  int status = 0;
  ASSERT_EQ(waitpid(static_cast<pid_t>(pid), &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << "wait status " << status;
  EXPECT_NE(run.err.find("the collector went away; recording stopped"), std::string::npos)
      << run.err;

  // Everything announced before the kill is kept, and nothing after it.
  const auto announced = parse_announcements(run.out);
  ASSERT_EQ(announced.size(), 100u + 50 + 20000 + 10000);
  const std::vector<AnnouncedEvent> before_kill(announced.begin(), announced.begin() + 150);
  expect_trace_holds(q, q.integer("SELECT " + program), before_kill, Holds::kExactly);
  EXPECT_EQ(q.rows("SELECT value FROM meta WHERE key = 'complete'"),
            (std::vector<std::vector<std::string>>{{"0"}}));

  // The reports read it and say it is incomplete; reading changes nothing (a read-write
  // connection would checkpoint the WAL into the file and delete it on close).
  ASSERT_TRUE(fs::exists(output + "-wal"));
  const std::string db_before = file_bytes(output), wal_before = file_bytes(output + "-wal");
  ProcessResult summary = run_process({.argv = {VRAMTRACE_BIN, "summary", output}});
  EXPECT_EQ(summary.exit_code(), 0) << summary.err;
  EXPECT_NE((summary.out + summary.err).find("the trace is incomplete"), std::string::npos)
      << summary.out << summary.err;
  ProcessResult leaks = run_process({.argv = {VRAMTRACE_BIN, "leaks", output}});
  EXPECT_EQ(leaks.exit_code(), 0) << leaks.err;
  EXPECT_EQ(file_bytes(output), db_before);
  ASSERT_TRUE(fs::exists(output + "-wal"));
  EXPECT_EQ(file_bytes(output + "-wal"), wal_before);
}

// A live query (the pytest plugin's and the GoogleTest listener's, at each test's end) asked of a
// collector that is gone: answered at once that it went away, not after the whole wait with
// "no answer in time" (before, the plugin said "did not answer within 120 s" at once).
TEST_F(CollectorFaultTest, ALiveQueryOfAGoneCollectorSaysSoAtOnce) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  ProcessOptions o;
  o.argv = {VRAMTRACE_BIN,
            "run",
            "-o",
            (dir_ / "trace.db").string(),
            "--",
            "sh",
            "-c",
            "\"$0\" & wait $!",
            LIVE_QUERY_ORPHAN_BIN};
  o.on_stdout = [](const std::string& chunk, pid_t vramtrace) {
    if (chunk.find("ready") != std::string::npos) kill(vramtrace, SIGKILL);
  };
  o.deadline = 60s;
  const ProcessResult run = run_process(o);
  while (waitpid(-1, nullptr, WNOHANG) > 0) {
  }
  const std::regex said(R"(status (-?\d+) after (\d+) ms)");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(run.out, match, said)) << run.out << run.err;
  EXPECT_EQ(match[1], "-4") << run.out;
  EXPECT_LT(std::stol(match[2]), 10000) << run.out;
}

// The trace lives on a 2 MiB tmpfs (an empty trace takes about 0.75 MB), mounted in a private
// mount namespace, and the program makes 100,000 allocations: the disk fills long before the
// end.
TEST_F(CollectorFaultTest, FullDiskIsAClearErrorAndTheProgramRunsToItsEnd) {
  const fs::path mount = dir_ / "small";
  const fs::path kept = dir_ / "kept";
  fs::create_directories(mount);
  fs::create_directories(kept);
  // As root a mount namespace is enough; otherwise a user namespace makes us its root.
  const std::vector<std::string> unshare = getuid() == 0
                                               ? std::vector<std::string>{"unshare", "-m"}
                                               : std::vector<std::string>{"unshare", "-Urm"};
  ProcessOptions probe;
  probe.argv = unshare;
  probe.argv.insert(probe.argv.end(),
                    {"mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mount.string()});
  if (run_process(probe).exit_code() != 0)
    GTEST_SKIP() << "cannot mount a tmpfs in a private mount namespace here (no unshare, or "
                    "user namespaces are disabled)";

  const std::string output = (mount / "trace.db").string();
  ProcessOptions o;
  o.argv = unshare;
  o.argv.insert(o.argv.end(),
                {"sh", "-c",
                 "mount -t tmpfs -o size=2m tmpfs \"$1\" || exit 99; \"$2\" run -o \"$3\" -- "
                 "\"$4\" 1 100000; status=$?; cp \"$3\"* \"$5\"; exit $status",
                 "sh", mount.string(), VRAMTRACE_BIN, output, THREAD_STORM_BIN, kept.string()});
  ProcessResult run = run_process(o);
  // The program ran to its end and saw no failure...
  EXPECT_NE(run.out.find("thread_storm: 1 threads x 100000 pairs, 0 failures"), std::string::npos)
      << run.out << run.err;
  // ...and vramtrace says, in one line naming the file, that the trace is incomplete and why;
  // with the program's status 0, its own is 2 ("could not record").
  EXPECT_EQ(run.exit_code(), 2) << run.err;
  EXPECT_NE(run.err.find("the trace " + output + " is incomplete"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("full"), std::string::npos) << run.err;
  // What fit is still a trace, one that says it is incomplete.
  const std::string copy = (kept / "trace.db").string();
  ASSERT_TRUE(fs::exists(copy));
  TraceQuery q(copy);
  EXPECT_NE(q.rows("SELECT value FROM meta WHERE key = 'complete'"),
            (std::vector<std::vector<std::string>>{{"1"}}));
}

// `vramtrace run -o OUTPUT -- sh -c 'thread_storm 1 100000; exit STATUS'` under a 2 MiB
// file-size limit (ulimit -f, in dash's 512-byte blocks), which also works where no mount
// namespace can be made: room for the new trace's schema and indexes, not for the storm.
ProcessResult run_under_file_size_limit(const std::string& output, int status) {
  ProcessOptions o;
  o.argv = {"sh",
            "-c",
            "ulimit -f 4096 && exec \"$1\" run --keep all -o \"$2\" -- sh -c '\"$0\" 1 100000; "
            "exit " +
                std::to_string(status) + "' \"$3\"",
            "sh",
            VRAMTRACE_BIN,
            output,
            THREAD_STORM_BIN};
  return run_process(o);
}

// vramtrace must report a file-size limit as it reports a full disk, not die of SIGXFSZ (it
// did).
TEST_F(CollectorFaultTest, FileSizeLimitIsAClearErrorAndTheProgramRunsToItsEnd) {
  const std::string output = trace();
  ProcessResult run = run_under_file_size_limit(output, 0);
  EXPECT_NE(run.out.find("thread_storm: 1 threads x 100000 pairs, 0 failures"), std::string::npos)
      << run.out << run.err;
  EXPECT_EQ(run.exit_code(), 2) << run.err;
  // SQLite reports the failed write (EFBIG) as "disk I/O error".
  EXPECT_NE(run.err.find("the trace " + output + " is incomplete: cannot write trace"),
            std::string::npos)
      << run.err;
  TraceQuery q(output);
  EXPECT_NE(q.rows("SELECT value FROM meta WHERE key = 'complete'"),
            (std::vector<std::vector<std::string>>{{"1"}}));
}

// When the trace cannot be written, a command that failed keeps its own status: 2 stands in
// for it only when it exited 0 (a wrapper passes the program's failure through).
TEST_F(CollectorFaultTest, FileSizeLimitKeepsTheCommandsOwnFailure) {
  const std::string output = trace();
  ProcessResult run = run_under_file_size_limit(output, 5);
  EXPECT_NE(run.out.find("thread_storm: 1 threads x 100000 pairs, 0 failures"), std::string::npos)
      << run.out << run.err;
  EXPECT_EQ(run.exit_code(), 5) << run.err;
  EXPECT_NE(run.err.find("the trace " + output + " is incomplete"), std::string::npos) << run.err;
}

}  // namespace
}  // namespace vramtrace::test
