// The collector's run loop (collector/recording.h) without `vramtrace run`: traced processes
// are children of the test that connect as the shim does, and the trace is read as it is
// written, by a second SQLite connection.
#include "collector/recording.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "collector_link.h"
#include "shm_ring.h"
#include "sql_query.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"
#include "vramtrace.pb.h"

namespace vramtrace::collector {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::query_one;

// Longer than any test waits: a traced child that the test forgot, or a loop that never ends,
// fails the test instead of hanging it.
constexpr unsigned kChildLifetimeSeconds = 30;
// How long a test waits for what it expects to see in the trace.
constexpr auto kPatience = 10s;

// A traced process as the shim makes one: a forked child that hands the collector a sealed
// ring over the socket (preload/collector_link.h), says it started, publishes `allocations`
// cudaMallocs, and then either exits at once with `exit_code`, marking its ring closed as the
// shim does, or (`wait_for_release`) keeps its connection open until the test releases it.
// The constructor returns once the child has connected and published its records. Forked
// before any thread of the test starts, so the child may use anything.
class TracedChild {
 public:
  TracedChild(const std::string& socket, int allocations, int exit_code, bool wait_for_release) {
    int ready[2] = {-1, -1};
    int release[2] = {-1, -1};
    if (pipe(ready) != 0 || (wait_for_release && pipe(release) != 0)) ADD_FAILURE() << "no pipe";
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      if (release[1] >= 0) close(release[1]);
      alarm(kChildLifetimeSeconds);
      _exit(trace(socket, allocations, ready[1], release[0], exit_code));
    }
    close(ready[1]);
    if (release[0] >= 0) close(release[0]);
    release_fd_ = release[1];
    char byte = 0;
    EXPECT_EQ(read(ready[0], &byte, 1), 1) << "the traced child did not connect";
    close(ready[0]);
  }
  ~TracedChild() {
    release();
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  TracedChild(const TracedChild&) = delete;
  TracedChild& operator=(const TracedChild&) = delete;

  pid_t pid() const { return pid_; }

  // Lets a waiting child go on to its exit.
  void release() {
    if (release_fd_ >= 0) close(release_fd_);
    release_fd_ = -1;
  }

  // The child's wait status once it has ended (WNOHANG), as `vramtrace run` reads its command.
  std::optional<int> ended() {
    int status = 0;
    if (reaped_ || waitpid(pid_, &status, WNOHANG) != pid_) return std::nullopt;
    reaped_ = true;
    return status;
  }

  // Waits for the child's end.
  int reap() {
    int status = 0;
    waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }

 private:
  // In the child: its exit code.
  static int trace(const std::string& socket, int allocations, int ready_fd, int release_fd,
                   int exit_code) {
    const auto pid = static_cast<uint32_t>(getpid());
    preload::CollectorLink link;
    const char* why = nullptr;
    if (!link.open(socket.c_str(), 1 << 20, pid, &why)) return 100;
    ring::RingProducer ring;
    if (!ring.init(link.ring(), link.capacity(), pid)) return 101;
    auto publish = [&](const wire::Envelope& record) {
      const std::string bytes = record.SerializeAsString();
      uint64_t seq = 0;
      return ring.write(bytes.data(), static_cast<uint32_t>(bytes.size()), &seq,
                        [] { return true; }) == ring::RingProducer::WriteResult::kOk;
    };
    wire::Envelope start;
    start.mutable_process_start()->set_pid(pid);
    if (!publish(start)) return 102;
    for (int i = 0; i < allocations; ++i) {
      wire::Envelope record;
      auto* alloc = record.mutable_alloc();
      alloc->set_kind(wire::KIND_DEVICE);
      alloc->set_api(wire::API_CUDA_MALLOC);
      alloc->set_address(0x7f0000000000 + static_cast<uint64_t>(i) * 4096);
      alloc->set_size(4096);
      if (!publish(record)) return 103;
    }
    if (write(ready_fd, "r", 1) != 1) return 104;
    if (release_fd >= 0) {
      char byte = 0;
      while (read(release_fd, &byte, 1) != 0) {
      }
      return exit_code;
    }
    ring.mark_closed();
    return exit_code;
  }

  pid_t pid_ = -1;
  int release_fd_ = -1;
  bool reaped_ = false;
};

// A trace file in a fresh directory, and the recording over it.
class RecordingTest : public ::testing::Test {
 protected:
  void start(const RecordingPolicy& policy) {
    std::string error;
    writer_ = storage::TraceWriter::create(path(), &error);
    ASSERT_TRUE(writer_) << error;
    recording_ = Recording::create(*writer_, policy, dir_.path().string(), &error);
    ASSERT_TRUE(recording_) << error;
  }

  std::filesystem::path path() const { return dir_ / "trace.db"; }
  const std::string& socket() const { return recording_->socket_path(); }

  // The allocation rows a reader of the trace sees now.
  std::string allocation_rows() const {
    return query_one(path(), "SELECT count(*) FROM allocation");
  }

  // Waits until a reader sees `rows` allocation rows; false if it never did.
  bool wait_for_allocation_rows(int rows) const {
    const auto deadline = Clock::now() + kPatience;
    while (allocation_rows() != std::to_string(rows)) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(5ms);
    }
    return true;
  }

  // A command that publishes `allocations` and then waits to be let go: until then the
  // recording cannot end, so a reader that sees the allocations sees a commit. The recording
  // runs on its own thread meanwhile, started after the child (see TracedChild).
  void expect_committed_while_the_command_runs(const RecordingPolicy& policy, int allocations) {
    ASSERT_NO_FATAL_FAILURE(start(policy));
    TracedChild command(socket(), allocations, 0, /*wait_for_release=*/true);
    RecordingResult result;
    std::thread recording([&] {
      result =
          recording_->run(static_cast<uint32_t>(command.pid()), [&] { return command.ended(); });
    });
    EXPECT_TRUE(wait_for_allocation_rows(allocations)) << "seen: " << allocation_rows();
    command.release();
    recording.join();
    EXPECT_TRUE(result.finished) << result.error;
    EXPECT_EQ(result.allocations, allocations);
  }

  testing::TempDir dir_;
  std::unique_ptr<storage::TraceWriter> writer_;
  std::unique_ptr<Recording> recording_;
};

TEST_F(RecordingTest, CommitsEveryIntervalWhileTheCommandRuns) {
  RecordingPolicy policy;
  policy.commit_interval = 50ms;
  policy.records_per_commit = 1'000'000;
  expect_committed_while_the_command_runs(policy, 10);
}

TEST_F(RecordingTest, CommitsEveryRecordCountWhileTheCommandRuns) {
  RecordingPolicy policy;
  policy.commit_interval = std::chrono::hours(1);
  policy.records_per_commit = 8;
  // 1 start and 20 allocations: more than 8 records, whatever turns they arrive in.
  expect_committed_while_the_command_runs(policy, 20);
}

TEST_F(RecordingTest, AProcessLeftBehindIsClosedAfterTheLingerWithItsEventsKept) {
  RecordingPolicy policy;
  policy.linger = 300ms;
  ASSERT_NO_FATAL_FAILURE(start(policy));
  // It never says goodbye: its connection stays open after the command has ended.
  TracedChild left_behind(socket(), 5, 0, /*wait_for_release=*/true);
  TracedChild command(socket(), 0, 0, /*wait_for_release=*/false);
  const int command_status = command.reap();

  const auto started = Clock::now();
  const RecordingResult result =
      recording_->run(static_cast<uint32_t>(command.pid()), [&] { return command_status; });
  const auto took = Clock::now() - started;

  EXPECT_GE(took, policy.linger);
  EXPECT_LT(took, policy.linger + kPatience);
  EXPECT_TRUE(result.linger_ran_out);
  EXPECT_EQ(result.still_running, 1u);
  EXPECT_TRUE(result.finished) << result.error;
  EXPECT_EQ(result.allocations, 5);
  EXPECT_EQ(allocation_rows(), "5");
  EXPECT_EQ(query_one(path(), "SELECT complete FROM process WHERE pid = " +
                                  std::to_string(left_behind.pid())),
            "0");
}

TEST_F(RecordingTest, EndsOnceTheCommandAndItsProcessesAreGoneWithTheCommandsStatus) {
  RecordingPolicy policy;
  policy.linger = 60s;  // far more than the test waits: ending after it is the failure
  ASSERT_NO_FATAL_FAILURE(start(policy));
  TracedChild command(socket(), 3, 7, /*wait_for_release=*/false);
  // Reaped before the recording runs: the collector cannot read its status from /proc any
  // more, so only the run's own wait status can say how it ended.
  const int command_status = command.reap();
  ASSERT_TRUE(WIFEXITED(command_status));
  ASSERT_EQ(WEXITSTATUS(command_status), 7);

  const auto started = Clock::now();
  const RecordingResult result =
      recording_->run(static_cast<uint32_t>(command.pid()), [&] { return command_status; });

  EXPECT_LT(Clock::now() - started, kPatience);
  EXPECT_FALSE(result.linger_ran_out);
  EXPECT_EQ(result.still_running, 0u);
  EXPECT_EQ(result.wait_status, command_status);
  EXPECT_TRUE(result.finished) << result.error;
  EXPECT_EQ(result.allocations, 3);
  EXPECT_EQ(result.processes, 1);
  const std::string process = " FROM process WHERE pid = " + std::to_string(command.pid());
  EXPECT_EQ(query_one(path(), "SELECT exit_status" + process), "7");
  EXPECT_EQ(query_one(path(), "SELECT complete" + process), "1");
  EXPECT_EQ(query_one(path(), "SELECT value FROM meta WHERE key = 'complete'"), "1");
}

}  // namespace
}  // namespace vramtrace::collector
