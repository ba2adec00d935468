// `vramtrace run` as the wrapper of a job that others act on: signals sent to `run` reach the
// command (and `run` records to its end), a closed stderr does not end `run`, a `run` killed
// outright takes the command with it, and the trace is held for the whole recording against
// another `run --force` and is never reported once it is gone.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "process_runner.h"
#include "scratch_dir_test.h"
#include "trace_query.h"

namespace vramtrace::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class RunControlTest : public ScratchDirTest {
 protected:
  // `vramtrace run -o trace -- sh -c SCRIPT`; `on_ready(vramtrace_pid, out)` is called once,
  // when the script has printed "ready". SIGKILLed, as a failure, if it has not ended in 30 s.
  ProcessResult record_script(const std::string& script,
                              const std::function<void(pid_t, const std::string&)>& on_ready,
                              std::vector<std::string> run_options = {}) {
    ProcessOptions o;
    o.argv = {VRAMTRACE_BIN, "run"};
    o.argv.insert(o.argv.end(), run_options.begin(), run_options.end());
    o.argv.insert(o.argv.end(), {"-o", trace(), "--", "sh", "-c", script});
    std::string out;
    bool ready = false;
    o.on_stdout = [&](const std::string& chunk, pid_t pid) {
      out += chunk;
      if (!ready && out.find("ready\n") != std::string::npos) {
        ready = true;
        on_ready(pid, out);
      }
    };
    o.deadline = 30s;
    ProcessResult result = run_process(o);
    EXPECT_TRUE(ready) << result.out << result.err;
    EXPECT_FALSE(result.timed_out) << "the recording did not end within 30 s: " << result.err;
    return result;
  }
};

// Whether `pid` is gone (or a zombie no one has reaped yet) within `wait`.
bool ends_within(pid_t pid, std::chrono::milliseconds wait) {
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (std::chrono::steady_clock::now() < deadline) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const std::size_t close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z')
      return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

// `timeout -s INT` and `Popen.send_signal` send SIGINT to `run`'s pid alone: the command must get
// it (before, `run` ignored it and the command ran to its end).
TEST_F(RunControlTest, AnInterruptSentToRunReachesTheCommand) {
  const ProcessResult run =
      record_script("trap 'echo interrupted; exit 7' INT; echo ready; while :; do sleep 0.05; done",
                    [](pid_t vramtrace, const std::string&) { kill(vramtrace, SIGINT); });
  EXPECT_EQ(run.exit_code(), 7) << run.err;
  EXPECT_NE(run.out.find("interrupted"), std::string::npos) << run.out;
}

// A signal whose default is to end a process, sent to `run`: the command ends of it, and `run`
// lives to finish the trace (before, SIGUSR1 killed `run` and left the command running untraced).
TEST_F(RunControlTest, ASignalThatWouldKillRunEndsTheCommandAndTheTraceIsFinished) {
  const ProcessResult run =
      record_script("echo ready; exec sleep 30",
                    [](pid_t vramtrace, const std::string&) { kill(vramtrace, SIGUSR1); });
  EXPECT_EQ(run.signal(), 0) << "run itself was killed: " << run.err;
  EXPECT_EQ(run.exit_code(), 128 + SIGUSR1) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT value FROM meta WHERE key = 'complete'"), 1);
  // The process's last image (the shell's, or the `sleep` it exec'd if the signal came after the
  // exec) ended of it.
  EXPECT_EQ(q.integer("SELECT signal FROM process ORDER BY upid DESC LIMIT 1"), SIGUSR1);
}

// `run` killed outright (SIGKILL cannot be passed on): the command dies with it rather than run
// on untraced.
TEST_F(RunControlTest, ACommandDoesNotOutliveARunKilledOutright) {
  pid_t command = 0;
  const ProcessResult run = record_script("echo $$; echo ready; exec sleep 30",
                                          [&](pid_t vramtrace, const std::string& out) {
                                            command = static_cast<pid_t>(std::stol(out));
                                            kill(vramtrace, SIGKILL);
                                          });
  EXPECT_EQ(run.signal(), SIGKILL);
  ASSERT_GT(command, 0);
  EXPECT_TRUE(ends_within(command, 10s)) << "the command outlived run";
  if (!ends_within(command, 0ms)) kill(command, SIGKILL);
}

// A CI log reader that has gone away (the pipe's reader closed) must not turn a run whose
// command succeeded into a failure: `run` ignores SIGPIPE, and its status is the command's.
TEST_F(RunControlTest, AClosedStderrDoesNotKillRun) {
  ProcessOptions o;
  o.argv = {"bash", "-c",
            "set -o pipefail; \"$0\" run -o \"$1\" -- sh -c 'sleep 0.3' 2>&1 >/dev/null | true",
            VRAMTRACE_BIN, trace()};
  const ProcessResult run = run_process(o);
  EXPECT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT value FROM meta WHERE key = 'complete'"), 1);
}

// A second `run --force` with the same output, while the first records: refused, and the first
// trace is left whole (before, it was removed under the recording, and the first `run` reported
// a file that was gone).
TEST_F(RunControlTest, ASecondRunWithForceDoesNotTakeATraceBeingRecorded) {
  ProcessResult second;
  const ProcessResult first = record_script("echo ready; sleep 1", [&](pid_t, const std::string&) {
    second = run_process({{VRAMTRACE_BIN, "run", "--force", "-o", trace(), "--", "true"}});
  });
  EXPECT_EQ(second.exit_code(), 2) << second.err;
  EXPECT_NE(second.err.find("is being recorded by another 'vramtrace run'"), std::string::npos)
      << second.err;
  EXPECT_EQ(first.exit_code(), 0) << first.err;
  EXPECT_NE(first.err.find("in " + trace()), std::string::npos) << first.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT value FROM meta WHERE key = 'complete'"), 1);
  EXPECT_GE(q.integer("SELECT count(*) FROM process WHERE argv LIKE '%sleep 1%'"), 1);
  // Once the first has ended, --force replaces its trace.
  const ProcessResult third =
      run_process({{VRAMTRACE_BIN, "run", "--force", "-o", trace(), "--", "true"}});
  EXPECT_EQ(third.exit_code(), 0) << third.err;
}

// The trace removed while it is recorded: `run` says so and does not report it.
TEST_F(RunControlTest, ATraceRemovedWhileRecordedIsNotReported) {
  const ProcessResult run = record_script("echo ready; sleep 0.5",
                                          [&](pid_t, const std::string&) { fs::remove(trace()); });
  EXPECT_EQ(run.exit_code(), 2) << run.err;
  EXPECT_NE(run.err.find("was removed or replaced while it was recorded"), std::string::npos)
      << run.err;
  EXPECT_EQ(run.err.find("recorded 0 allocation"), std::string::npos) << run.err;
  EXPECT_FALSE(fs::exists(trace()));
}

// A program built with GCC's AddressSanitizer checks that its runtime comes first in the
// process, which the preloaded shim is not: before, it aborted ("ASan runtime does not come
// first in initial library list") and `run` recorded nothing. The user's own ASAN_OPTIONS stay.
TEST_F(RunControlTest, AProgramBuiltWithAddressSanitizerIsRecorded) {
  ProcessOptions o;
  o.argv = {VRAMTRACE_BIN, "run", "-o", trace(), "--", ASAN_BUILT_BIN, "10"};
  // The simulated GPU's memory is the host's: blocks left live are LeakSanitizer's leaks too.
  o.extra_env = {"ASAN_OPTIONS=detect_leaks=0"};
  o.deadline = 60s;
  const ProcessResult run = run_process(o);
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  EXPECT_NE(run.out.find("done"), std::string::npos) << run.out;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE result = 0"), 10);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NULL"), 5);
}

// A sanitizer runtime the user preloads stays first, the shim after it, their other preloads
// last; the user's ASAN_OPTIONS are kept, with the link-order check turned off.
TEST_F(RunControlTest, ASanitizerTheUserPreloadsStaysFirst) {
  ProcessOptions o;
  o.argv = {VRAMTRACE_BIN, "run", "-o", trace(),
            "--",          "sh",  "-c", "echo \"$LD_PRELOAD\"; echo \"$ASAN_OPTIONS\""};
  o.extra_env = {"LD_PRELOAD=/opt/other.so:/opt/sanitizers/libasan.so.8",
                 "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1"};
  o.deadline = 60s;
  const ProcessResult run = run_process(o);
  const std::string first = run.out.substr(0, run.out.find('\n'));
  EXPECT_EQ(first.rfind("/opt/sanitizers/libasan.so.8:", 0), 0u) << run.out << run.err;
  EXPECT_NE(first.find("libvramtrace_preload.so:/opt/other.so"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("\ndetect_leaks=0:halt_on_error=1:verify_asan_link_order=0\n"),
            std::string::npos)
      << run.out;
}

// Arguments past the shim's 16 KiB: the process's argv keeps the whole arguments that fit and
// leaves out the first that does not, with all after it, and a stat says so (before, the last
// one was cut mid-argument, without a word).
TEST_F(RunControlTest, ArgumentsPastTheShimsBufferAreLeftOutWholeAndCounted) {
  const std::string kept(10000, 'A'), left_out(10000, 'B');
  ProcessOptions o;
  o.argv = {VRAMTRACE_BIN, "run", "-o", trace(), "--", "sh", "-c", "true", kept, left_out, "C"};
  o.deadline = 60s;
  const ProcessResult run = run_process(o);
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  const std::string sh = "(SELECT argv FROM process WHERE argv LIKE '%AAAA%')";
  EXPECT_EQ(q.integer("SELECT json_array_length(" + sh + ")"), 4);
  EXPECT_EQ(q.integer("SELECT length(json_extract(" + sh + ", '$[3]'))"), 10000);
  EXPECT_EQ(q.integer("SELECT count(*) FROM process WHERE argv LIKE '%BBBB%'"), 0);
  EXPECT_EQ(q.integer("SELECT value FROM stats WHERE name = 'process_argv_cut'"), 1);
}

// A process that execs a program with LD_PRELOAD taken out of its environment runs that
// program untraced: the trace says so (exec_untraced, data loss), `run`'s last lines warn, and
// the gate does not vouch for it. A program exec'd with the shim kept is no gap.
TEST_F(RunControlTest, AProgramExecdWithoutTheShimIsAGapInTheTrace) {
  for (const bool keep : {false, true}) {
    SCOPED_TRACE(keep ? "LD_PRELOAD kept" : "LD_PRELOAD removed");
    fs::remove(trace());
    ProcessOptions o;
    o.argv = {VRAMTRACE_BIN, "run",
              "-o",          trace(),
              "--",          "sh",
              "-c",          keep ? "exec env sleep 0.2" : "exec env -u LD_PRELOAD sleep 0.2"};
    o.deadline = 60s;
    const ProcessResult run = run_process(o);
    ASSERT_EQ(run.exit_code(), 0) << run.err;
    TraceQuery q(trace());
    EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE name = 'exec_untraced'"), keep ? 0 : 1);
    const ProcessResult gate =
        run_process({{VRAMTRACE_BIN, "gate", trace(), "--max-leaked-bytes", "0"}});
    EXPECT_EQ(gate.exit_code(), keep ? 0 : 3) << gate.out << gate.err;
    EXPECT_EQ(run.err.find("warning: data_loss: exec_untraced = 1") != std::string::npos, !keep)
        << run.err;
  }
}

}  // namespace
}  // namespace vramtrace::test
