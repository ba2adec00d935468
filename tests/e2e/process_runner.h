// Runs a program for a test and collects what it said and how it ended.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace vramtrace::test {

struct ProcessResult {
  int wait_status = 0;
  std::string out;
  std::string err;
  bool timed_out = false;  // ProcessOptions::deadline passed, and the process was signalled

  bool exited() const;
  int exit_code() const;  // -1 unless exited()
  int signal() const;     // 0 unless killed by a signal
};

struct ProcessOptions {
  std::vector<std::string> argv;
  std::vector<std::string> extra_env;  // "NAME=value", added to (or replacing in) this environment
  std::vector<std::string> unset_env;  // names to remove
  // Called with each chunk of stdout as it arrives, and the child's pid; may kill it.
  std::function<void(const std::string& chunk, pid_t pid)> on_stdout;
  // When set, the process is sent `deadline_signal` if it has not ended by then, so that a hang
  // fails its test rather than stalls the suite (ProcessResult::timed_out says so).
  std::chrono::milliseconds deadline{0};
  int deadline_signal = SIGKILL;
};

// Runs to completion (argv[0] searched in PATH).
ProcessResult run_process(const ProcessOptions& options);

}  // namespace vramtrace::test
