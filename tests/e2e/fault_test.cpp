// Fault tests: programs that crash, exit from signal handlers, fork a hundred times, run 64
// threads, recurse 1,000 deep, close every descriptor or unload the CUDA driver, and a
// collector that is killed or runs out of disk. Each test checks what was kept against what the
// program announced after each call had returned (programs/announce.h).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <random>
#include <regex>
#include <thread>

#include "announcements.h"
#include "process_runner.h"
#include "scratch_dir_test.h"
#include "trace_query.h"

namespace vramtrace::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class FaultTest : public ScratchDirTest {
 protected:
  // `vramtrace run [run_options] -o trace -- command`, killed (SIGTERM, which vramtrace passes
  // on to the command) if it has not ended after `deadline`: a hang fails the test instead of
  // stalling the suite.
  ProcessResult record(std::vector<std::string> command, std::vector<std::string> run_options = {},
                       std::chrono::seconds deadline = 60s,
                       std::vector<std::string> extra_env = {}) const {
    ProcessOptions o;
    o.extra_env = std::move(extra_env);
    o.argv = {VRAMTRACE_BIN, "run"};
    o.argv.insert(o.argv.end(), run_options.begin(), run_options.end());
    o.argv.insert(o.argv.end(), {"-o", trace(), "--"});
    o.argv.insert(o.argv.end(), command.begin(), command.end());
    o.deadline = deadline;
    o.deadline_signal = SIGTERM;
    ProcessResult result = run_process(o);
    EXPECT_FALSE(result.timed_out)
        << "the recording did not end within " << deadline.count() << " s";
    return result;
  }

  // Runs programs/dlclose_driver.cpp with `args`: it must finish, and the trace hold exactly
  // the six allocations and frees it announced, before and after the reload. Returns the
  // count of allocations recorded by `api`.
  int64_t expect_kept_across_reload(std::vector<std::string> args, const std::string& api) const {
    args.insert(args.begin(), DLCLOSE_DRIVER_BIN);
    ProcessResult run = record(args);
    EXPECT_EQ(run.exit_code(), 0) << run.err << run.out;
    EXPECT_NE(run.out.find("reloaded elsewhere"), std::string::npos);
    TraceQuery q(trace());
    const auto announced = parse_announcements(run.out);
    EXPECT_EQ(announced.size(), 6u) << run.out;
    expect_trace_holds(q, q.integer("SELECT upid FROM process"), announced, Holds::kExactly);
    return q.integer(
        "SELECT count(*) FROM allocation a JOIN api ON api.id = a.api WHERE "
        "api.name = '" +
        api + "'");
  }
};

// One process: its allocations are exactly what it announced, and it ended by `signal`.
void expect_one_process_killed_by(const std::string& path, const ProcessResult& run, int signal) {
  EXPECT_EQ(run.exit_code(), 128 + signal) << run.err;
  TraceQuery q(path);
  ASSERT_EQ(q.integer("SELECT count(*) FROM process"), 1);
  EXPECT_EQ(q.integer("SELECT signal FROM process"), signal);
  const auto announced = parse_announcements(run.out);
  ASSERT_EQ(announced.size(), 500u + 167u) << run.out;  // every third one, from the second, freed
  expect_trace_holds(q, q.integer("SELECT upid FROM process"), announced, Holds::kExactly);
}

TEST_F(FaultTest, SegfaultKeepsEveryAnnouncedAllocation) {
  ProcessResult run = record({DIE_AFTER_ALLOCS_BIN, "segv", "500"});
  expect_one_process_killed_by(trace(), run, SIGSEGV);
}

TEST_F(FaultTest, AbortKeepsEveryAnnouncedAllocation) {
  ProcessResult run = record({DIE_AFTER_ALLOCS_BIN, "abort", "500"});
  expect_one_process_killed_by(trace(), run, SIGABRT);
}

TEST_F(FaultTest, ExitFromASignalHandlerKeepsEverything) {
  ProcessResult run = record({DIE_AFTER_ALLOCS_BIN, "handler-exit", "500"});
  ASSERT_EQ(run.exit_code(), 42) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT exit_status FROM process"), 42);
  EXPECT_EQ(q.integer("SELECT complete FROM process"), 1);
  expect_trace_holds(q, q.integer("SELECT upid FROM process"), parse_announcements(run.out),
                     Holds::kExactly);
}

// The handler interrupts the program anywhere, the shim's record path (and its ring lock)
// included, and calls exit(), whose handlers include the shim's: it must not wait on a lock
// held beneath it.
TEST_F(FaultTest, ExitFromATimerSignalAnywhereNeitherHangsNorLoses) {
  std::mt19937 random(2026);
  // Before the shim left its exit record out in this case, about one run in six hung.
  for (int trial = 0; trial < 24; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    fs::remove(trace());
    const int after_ms = std::uniform_int_distribution<int>(5, 45)(random);
    ProcessResult run =
        record({DIE_AFTER_ALLOCS_BIN, "timer-exit", std::to_string(after_ms)}, {}, 30s);
    ASSERT_EQ(run.exit_code(), 43) << run.err;
    TraceQuery q(trace());
    EXPECT_EQ(q.integer("SELECT exit_status FROM process"), 43);
    const auto announced = parse_announcements(run.out);
    ASSERT_FALSE(announced.empty());
    expect_trace_holds(q, q.integer("SELECT upid FROM process"), announced, Holds::kAtLeast);
  }
}

// A SIGALRM handler frees every block the main loop allocated, while the main loop is inside
// the shim's hooks: each of its frees is recorded (at once, or deferred past the ring's lock held
// beneath the handler), so nothing is left live, no free is bad, nothing is counted as lost, and
// the leak gate passes a program that leaks nothing. Before, most of those frees went unrecorded.
// The ring is made large enough for every marker of a slow run: on a loaded machine (the timer's
// signals late, the collector under a sanitizer) the main loop marks for seconds, and a handler
// that fires while a mark waits on a full ring may defer only 16 frees; those past it are lost,
// and counted (fault_test's ring tests hold that part).
TEST_F(FaultTest, FreesInASignalHandlerThatInterruptsAHookAreAllRecorded) {
  constexpr int kBlocks = 4000;
  ProcessResult run =
      record({FREE_IN_SIGNAL_HANDLER_BIN, std::to_string(kBlocks)}, {"--ring-size", "512M"}, 60s);
  ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
  EXPECT_NE(run.out.find("handler freed 4000 failed 0"), std::string::npos) << run.out;
  {
    TraceQuery q(trace());
    EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE size = 12345"), kBlocks);
    EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE size = 12345 AND free_seq IS NULL"),
              0);
    EXPECT_EQ(q.integer("SELECT count(*) FROM bad_free"), 0);
    EXPECT_EQ(q.integer("SELECT coalesce(sum(value), 0) FROM stats WHERE severity != 'info'"), 0);
  }
  const ProcessResult gate =
      run_process({{VRAMTRACE_BIN, "gate", trace(), "--max-leaked-bytes", "0"}});
  EXPECT_EQ(gate.exit_code(), 0) << gate.out << gate.err;
}

// The collector stops (SIGSTOP) while the program fills its ring: the program does not wait
// for it longer than the stall limit (VRAMTRACE_STALL_SECONDS), says so in one line, and runs
// to its end untraced. The trace knows it: the process is not recorded to its end, a data-loss
// stat counts it, `run` says so last, and the leak the program makes after the stall, which the
// trace cannot hold, does not let the gate pass.
TEST_F(FaultTest, StoppedCollectorHoldsTheProgramNoLongerThanTheStallLimitAndTheTraceSaysSo) {
  ProcessOptions o;
  // The shell says its pid (vramtrace's, after the exec) before the program starts.
  o.argv = {"sh",
            "-c",
            "echo started; exec \"$0\" \"$@\"",
            VRAMTRACE_BIN,
            "run",
            "--ring-size",
            "64K",
            "-o",
            trace(),
            "--",
            RING_FAULTS_BIN,
            "2000000",
            "--say-first",
            "--leak-at-end"};
  o.extra_env = {"VRAMTRACE_STALL_SECONDS=1"};
  std::atomic<pid_t> vramtrace_pid{0};
  std::atomic<bool> program_started{false}, program_ended{false};
  std::string out;
  o.on_stdout = [&](const std::string& chunk, pid_t pid) {
    vramtrace_pid = pid;
    out += chunk;
    if (out.find("first event\n") != std::string::npos) program_started = true;
    if (out.find("faults ") != std::string::npos) program_ended = true;
  };
  std::atomic<bool> done{false};
  ProcessResult result;
  std::thread runner([&] {
    result = run_process(o);
    done = true;
  });
  // Stopped before the program starts, `run` would hold it from starting at all (a loaded
  // machine can take longer than any fixed wait to get there): wait for its first event.
  while (!program_started && !done) std::this_thread::sleep_for(1ms);
  std::this_thread::sleep_for(300ms);  // the program is in its loop, filling its ring
  const bool stopped_while_running = !program_ended;
  if (stopped_while_running) kill(vramtrace_pid, SIGSTOP);
  // The program prints its line when it ends; `run` stays stopped till then. The deadline tells
  // a program held for good from one that goes on untraced: the asan build's unoptimized shim
  // needs about 13 s for the rest of the loop alone, longer beside another test.
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (!program_ended && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(10ms);
  const bool ended_in_time = program_ended;
  kill(vramtrace_pid, SIGCONT);
  runner.join();
  ASSERT_TRUE(stopped_while_running) << "the program ended before the collector was stopped";
  EXPECT_TRUE(ended_in_time);
  EXPECT_EQ(result.exit_code(), 0) << result.err;
  EXPECT_NE(result.err.find("vramtrace: the collector has not read this process's events for 1 s "
                            "(stopped?); recording stopped, the program continues untraced"),
            std::string::npos)
      << result.err;

  {
    TraceQuery q(trace());
    EXPECT_EQ(q.integer("SELECT complete FROM process"), 0);
    EXPECT_EQ(q.integer("SELECT value FROM stats WHERE name = 'recording_stopped'"), 1);
    EXPECT_EQ(q.rows("SELECT severity FROM stats WHERE name = 'recording_stopped'").at(0).at(0),
              "data_loss");
    // The 64 MiB made after the stall is not in the trace: only the gaps say it may be missing.
    EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE size = 67108864"), 0);
  }
  // The stall can come between an allocation and its free: that allocation's free is lost with
  // the rest, and it reads as live (a limit of 0 then fails on it, exit 1, not 3).
  EXPECT_NE(result.err.find("NOT recorded to its end"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("vramtrace: warning: process "), std::string::npos) << result.err;
  const ProcessResult strict =
      run_process({{VRAMTRACE_BIN, "gate", trace(), "--max-leaked-bytes", "0"}});
  EXPECT_NE(strict.exit_code(), 0) << strict.out << strict.err;
  // A limit that what was recorded keeps: before, it passed the 64 MiB the program leaked after
  // the stall; now the gate does not vouch for what it did not see.
  const ProcessResult gate =
      run_process({{VRAMTRACE_BIN, "gate", trace(), "--max-leaked-bytes", "1MiB"}});
  EXPECT_EQ(gate.exit_code(), 3) << gate.out << gate.err;
  EXPECT_NE(gate.out.find("NOT VOUCHED"), std::string::npos) << gate.out;
  EXPECT_NE(gate.out.find("gap: process "), std::string::npos) << gate.out;
  EXPECT_NE(gate.out.find("gap: data_loss: recording_stopped = 1"), std::string::npos) << gate.out;
  const ProcessResult accepted = run_process(
      {{VRAMTRACE_BIN, "gate", trace(), "--max-leaked-bytes", "1MiB", "--accept-data-loss"}});
  EXPECT_EQ(accepted.exit_code(), 0) << accepted.out << accepted.err;
}

TEST_F(FaultTest, HundredForksEachKeepTheirOwnAllocation) {
  ProcessResult run = record({FORK_MANY_BIN, "100"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM process"), 101);
  EXPECT_EQ(q.integer("SELECT count(*) FROM process WHERE complete = 0"), 0);
  const int64_t parent = q.integer("SELECT upid FROM process ORDER BY upid LIMIT 1");
  expect_trace_holds(q, parent, parse_announcements(run.out), Holds::kExactly);

  std::regex child_line(R"(child (\d+) alloc (0x[0-9a-f]+) (\d+))");
  int children = 0;
  for (std::sregex_iterator it(run.out.begin(), run.out.end(), child_line), end; it != end;
       ++it, ++children) {
    const std::string pid = (*it)[1];
    const int64_t size = std::stoll((*it)[3]);
    SCOPED_TRACE("child " + pid);
    const auto rows = q.rows(
        "SELECT a.address, a.size, a.free_seq IS NULL, p.exit_status FROM process p "
        "JOIN allocation a ON a.upid = p.upid WHERE p.pid = " +
        pid + " AND p.upid != " + std::to_string(parent));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0][0], hex_to_decimal((*it)[2]));
    EXPECT_EQ(rows[0][1], std::to_string(size));
    EXPECT_EQ(rows[0][2], "1");                                      // left live
    EXPECT_EQ(rows[0][3], std::to_string((size / 4096 - 1) % 100));  // reaped by the parent
  }
  EXPECT_EQ(children, 100);
  // Each child's stack is the one its parent sent by name before the fork: the child sent it
  // whole, under its own name (preload/stack_names.h), and every stack is in the trace.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE alloc_callsite_id IS NULL"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE name = 'stack_name_unknown'"), 0);
  EXPECT_EQ(q.integer("SELECT count(DISTINCT alloc_callsite_id) FROM allocation"), 1);
}

TEST_F(FaultTest, SixtyFourThreadsLoseNothing) {
  ProcessResult run = record({THREAD_STORM_BIN, "64", "300"}, {"--ring-size", "256K"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), 64 * 300);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NULL"), 0);
  EXPECT_EQ(q.integer("SELECT count(DISTINCT alloc_utid) FROM allocation"), 64);
  EXPECT_EQ(q.integer("SELECT count(*) FROM bad_free"), 0);
}

// A storm of back-to-back pairs, through rings of two sizes, given by the option and by the
// environment: a ring smaller than the storm fills, and the shim says how often it waited; a
// ring larger than everything the program writes never does. Either way the trace holds every
// event.
TEST_F(FaultTest, TheRingSizeAskedForIsTheRingUsedAndAStormLosesNothing) {
  constexpr int kPairs = 100000;  // about 8 MB of records
  struct Case {
    std::vector<std::string> options, env;
    bool fills;
  };
  for (const Case& c :
       {Case{{"--ring-size", "64K"}, {}, true}, Case{{"--ring-size", "64M"}, {}, false},
        Case{{}, {"VRAMTRACE_RING_BYTES=64K"}, true}, Case{{}, {"VRAMTRACE_RING_BYTES=64M"}, false},
        Case{{"--ring-size", "64M"}, {"VRAMTRACE_RING_BYTES=64K"}, false}}) {
    SCOPED_TRACE(::testing::PrintToString(c.options) + " " + ::testing::PrintToString(c.env));
    fs::remove(trace());
    ProcessResult run =
        record({THREAD_STORM_BIN, "1", std::to_string(kPairs)}, c.options, 120s, c.env);
    ASSERT_EQ(run.exit_code(), 0) << run.err;
    TraceQuery q(trace());
    EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), kPairs);
    EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NULL"), 0);
    // Most of them packed many to a row, as `run` stores short lives, and most of those in
    // runs of repeated bins: the view shows each.
    EXPECT_GT(
        q.integer("SELECT sum(count) FROM allocation_chunk") +
            q.integer("SELECT coalesce(sum(repeats * count), 0) FROM allocation_chunk_repeat"),
        kPairs / 2);
    EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE severity != 'info'"), 0);
    const int64_t waits =
        q.integer("SELECT ifnull(sum(value), 0) FROM stats WHERE name = 'shim_ring_full_waits'");
    const int64_t waited_ms =
        q.integer("SELECT ifnull(sum(value), 0) FROM stats WHERE name = 'shim_ring_full_wait_ms'");
    if (c.fills) {
      EXPECT_GT(waits, 0);
      EXPECT_GT(waited_ms, 0);
    } else {
      EXPECT_EQ(waits, 0);
      EXPECT_EQ(waited_ms, 0);
    }
  }
}

TEST_F(FaultTest, StackThousandDeepIsCutAtTheLimitWithItsInnermostFrames) {
  ProcessResult run = record({DEEP_STACK_BIN, "1000"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  const auto announced = parse_announcements(run.out);
  ASSERT_EQ(announced.size(), 1u) << run.out;
  expect_trace_holds(q, q.integer("SELECT upid FROM process"), announced, Holds::kExactly);
  // The leaf's depth is the number of frames kept below it; the kept frames are the innermost
  // ones, so all but the few above `descend` are `descend`.
  const int64_t depth =
      q.integer("SELECT c.depth FROM allocation a JOIN callsite c ON c.id = a.alloc_callsite_id");
  EXPECT_GE(depth, 200);
  EXPECT_LT(depth, 1000);
  const int64_t descend_frames = q.integer(
      "WITH RECURSIVE s(id) AS (SELECT alloc_callsite_id FROM allocation UNION ALL "
      "SELECT c.parent_id FROM s JOIN callsite c ON c.id = s.id WHERE c.parent_id IS NOT NULL) "
      "SELECT count(*) FROM s JOIN callsite c ON c.id = s.id JOIN frame f ON f.id = c.frame_id "
      "WHERE f.function LIKE '%descend%'");
  EXPECT_GE(descend_frames, depth + 1 - 4);
}

// The program closes the shim's socket and reuses its number for a pipe. The ring is small, so
// the shim soon waits for space that the collector (which took the hang-up for the end of the
// process) will never free: it must notice that its descriptor is no longer its socket, stop
// recording and let the program run on.
// The program closes the shim's socket, then fills a small ring many times over: the
// collector, seeing the hang-up of a process that is still there, reads its ring on until it
// exits, and the shim, without the socket, goes by the reader's progress. Nothing is lost.
TEST_F(FaultTest, ProgramThatClosesEveryDescriptorRunsOnAndKeepsEverything) {
  ProcessResult run = record({CLOSE_EVERY_FD_BIN, "2000"}, {"--ring-size", "64K"}, 60s);
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  EXPECT_EQ(run.err.find("recording stopped"), std::string::npos) << run.err;
  const auto announced = parse_announcements(run.out);
  ASSERT_EQ(announced.size(), 2u + 2000 + 1000) << run.out;
  TraceQuery q(trace());
  const int64_t upid = q.integer("SELECT upid FROM process");
  expect_trace_holds(q, upid, announced, Holds::kExactly);
  EXPECT_EQ(q.rows("SELECT complete, exit_status FROM process"),
            (std::vector<std::vector<std::string>>{{"1", "0"}}));
}

TEST_F(FaultTest, DlcloseOfTheDriverAndALoadElsewhere) {
  EXPECT_EQ(expect_kept_across_reload({SIMCUDA_DRIVER_LIB}, "cuMemAlloc"), 4);
}

// The same with the runtime, brought in by a library loaded RTLD_LOCAL (as a Python extension
// is) whose cudaMalloc calls the shim interposes: the shim's pointers to the real cudaMalloc
// and cudaFree point into the first copy of the runtime.
TEST_F(FaultTest, DlcloseOfTheRuntimeAndALoadElsewhere) {
  EXPECT_EQ(expect_kept_across_reload({RUNTIME_USER_LIB, "runtime"}, "cudaMalloc"), 4);
}

// Linux paths and arguments are bytes: a program in a directory named in Latin-1, given a
// Latin-1 argument, must keep its process row, its module (the stacks are symbolized) and
// its allocation; nothing may be undecodable.
TEST_F(FaultTest, PathsAndArgumentsThatAreNotUtf8AreKept) {
  const fs::path latin1_dir = dir_ / "caf\xe9";
  fs::create_directories(latin1_dir);
  const fs::path program = latin1_dir / "exit_with";
  fs::copy_file(EXIT_WITH_BIN, program);
  ProcessResult run = record({program.string(), "exit", "0", "na\xefve"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM process WHERE exe LIKE '%exit_with'"), 1);
  EXPECT_EQ(q.integer("SELECT json_array_length(argv) FROM process"), 4);
  EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE severity != 'info' AND value > 0"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), 1);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation a JOIN callsite c ON c.id = "
                      "a.alloc_callsite_id JOIN frame f ON f.id = c.frame_id "
                      "WHERE f.function = 'main'"),
            1);
}

}  // namespace
}  // namespace vramtrace::test
