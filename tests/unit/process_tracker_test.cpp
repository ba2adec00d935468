// ProcessTracker: process rows from their start to their end, threads, and wait statuses that
// come before or after a ring closes.
#include "collector/process_tracker.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

// Wait statuses as waitpid reports them on Linux.
int exited(int code) {
  return code << 8;
}
int killed_by(int signal) {
  return signal;
}

class ProcessTrackerTest : public ::testing::Test {
 protected:
  testing::TrackerTrace trace_;
  IngestStats stats_;
  ProcessTracker tracker_{trace_.writer(), stats_};
};

TEST_F(ProcessTrackerTest, StartWritesTheRowWithThePidOfTheHandshake) {
  ProcessTracker::Process& p = tracker_.open(100);
  EXPECT_EQ(p.upid, 1);
  EXPECT_EQ(tracker_.open(200).upid, 2);
  wire::ProcessStart start;
  start.set_pid(101);  // not the handshake's
  start.set_exe("/bin/train");
  start.add_argv("train");
  start.add_argv("--fast");
  start.set_unwinder("none");
  tracker_.start(p, 50, start);
  EXPECT_TRUE(p.started);
  EXPECT_EQ(stats_.value(Stat::kProcessPidMismatch), 1);
  EXPECT_EQ(stats_.value(Stat::kProcessWithoutUnwinder), 1);

  const auto processes = trace_.finish().processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].start.upid, 1);
  EXPECT_EQ(processes[0].start.pid, 100u);
  EXPECT_EQ(processes[0].start.exe, "/bin/train");
  EXPECT_EQ(processes[0].start.argv, (std::vector<std::string>{"train", "--fast"}));
  EXPECT_EQ(processes[0].start.start_ns, 50);
}

TEST_F(ProcessTrackerTest, CloseWritesTheEndAndStartsAProcessThatNeverSaidSo) {
  ProcessTracker::Process& p = tracker_.open(100);
  p.last_ns = 70;
  tracker_.said_exit(p, 4);
  tracker_.close(p, true, 60, std::nullopt);
  EXPECT_TRUE(p.closed);

  const auto processes = trace_.finish().processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].start.pid, 100u);
  EXPECT_EQ(processes[0].start.start_ns, 60);
  EXPECT_EQ(processes[0].end.end_ns, 70);  // the latest record's time, past the ring's end
  EXPECT_EQ(processes[0].end.exit_status, 4);
  EXPECT_TRUE(processes[0].end.complete);
}

TEST_F(ProcessTrackerTest, AWaitStatusAfterTheCloseRewritesTheEnd) {
  ProcessTracker::Process& p = tracker_.open(100);
  tracker_.start_unannounced(p, 0);
  tracker_.said_exit(p, 0);
  p.last_ns = 10;
  tracker_.close(p, false, 25, std::nullopt);  // the ring ended after its last record
  tracker_.set_wait_status(100, killed_by(SIGKILL));

  const auto processes = trace_.finish().processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].end.signal, SIGKILL);
  EXPECT_FALSE(processes[0].end.exit_status);
  EXPECT_EQ(processes[0].end.end_ns, 25);  // the close's end, not moved back by the rewrite
  EXPECT_FALSE(processes[0].end.complete);
}

TEST_F(ProcessTrackerTest, AWaitStatusBeforeTheRingOpensWaitsForItsClose) {
  tracker_.set_wait_status(300, exited(3));
  ProcessTracker::Process& p = tracker_.open(300);
  tracker_.start_unannounced(p, 0);
  tracker_.close(p, true, 5, std::nullopt);
  const auto processes = trace_.finish().processes();
  ASSERT_EQ(processes.size(), 1u);
  EXPECT_EQ(processes[0].end.exit_status, 3);
}

TEST_F(ProcessTrackerTest, AWaitStatusGoesToTheLatestProcessWithThePid) {
  ProcessTracker::Process& before_exec = tracker_.open(100);
  ProcessTracker::Process& after_exec = tracker_.open(100);
  tracker_.set_wait_status(100, exited(9));
  EXPECT_FALSE(before_exec.exit_status);
  EXPECT_EQ(after_exec.exit_status, 9);
}

TEST_F(ProcessTrackerTest, EachThreadGetsOneUtid) {
  ProcessTracker::Process& p = tracker_.open(100);
  tracker_.start_unannounced(p, 0);
  ProcessTracker::Threads threads;
  const int64_t first = tracker_.utid(p, threads, 7);
  const int64_t second = tracker_.utid(p, threads, 8);
  EXPECT_NE(first, second);
  EXPECT_EQ(tracker_.utid(p, threads, 7), first);
  EXPECT_EQ(tracker_.utid(p, threads, 8), second);
  const auto thread_rows = trace_.finish().threads();
  ASSERT_EQ(thread_rows.size(), 2u);
  EXPECT_EQ(thread_rows[0].tid, 7u);
  EXPECT_EQ(thread_rows[1].tid, 8u);
  EXPECT_EQ(thread_rows[1].upid, 1);
}

// The shim's word on a thread's name is the name when /proc has none: a thread the collector
// reaches after its process ended. While /proc has the thread, /proc's name stays.
TEST_F(ProcessTrackerTest, TheShimsThreadNameStandsWhereProcHasNone) {
  ProcessTracker::Process& gone = tracker_.open(0x3fffffff);  // above pid_max: no /proc entry
  tracker_.start_unannounced(gone, 0);
  ProcessTracker::Threads gone_threads;
  tracker_.name_thread(gone, gone_threads, 7, "pt_autograd_0");
  tracker_.name_thread(gone, gone_threads, 7, "renamed");  // the first word stands
  tracker_.name_thread(gone, gone_threads, 8, "");         // no name said: none
  const int64_t seven = tracker_.utid(gone, gone_threads, 7);

  const auto self = static_cast<uint32_t>(getpid());
  ProcessTracker::Process& alive = tracker_.open(self);
  tracker_.start_unannounced(alive, 0);
  ProcessTracker::Threads alive_threads;
  tracker_.name_thread(alive, alive_threads, self, "not-the-name");
  char comm[17] = {};
  ASSERT_EQ(prctl(PR_GET_NAME, comm), 0);

  const auto rows = trace_.finish().threads();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].utid, seven);
  EXPECT_EQ(rows[0].name, "pt_autograd_0");
  EXPECT_EQ(rows[1].tid, 8u);
  EXPECT_EQ(rows[1].name, std::nullopt);
  EXPECT_EQ(rows[2].name, std::string(comm));
}

}  // namespace
}  // namespace vramtrace::collector
