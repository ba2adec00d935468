// A progress line on stderr for a report that takes longer than a second, so that a person at
// a terminal sees it working: "vramtrace leaks: reading run.db ... 3 s". Only when stderr is a
// terminal (a CI log or a pipe gets nothing); the line is erased when the work is done, so the
// report on stdout is never mixed with it.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace vramtrace::cli {

class ProgressLine {
 public:
  // Starts the clock; the line appears after a second, if the work is still going on.
  explicit ProgressLine(std::string what);
  // Erases the line, if it was shown.
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

 private:
  void run();
  std::string what_;
  std::mutex mutex_;
  std::condition_variable done_signal_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace vramtrace::cli
