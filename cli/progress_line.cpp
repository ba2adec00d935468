#include "cli/progress_line.h"

#include <fmt/core.h>
#include <unistd.h>

#include <chrono>

namespace vramtrace::cli {

ProgressLine::ProgressLine(std::string what) : what_(std::move(what)) {
  if (isatty(STDERR_FILENO) == 1) thread_ = std::thread([this] { run(); });
}

ProgressLine::~ProgressLine() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  done_signal_.notify_one();
  thread_.join();
}

void ProgressLine::run() {
  using namespace std::chrono_literals;
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock lock(mutex_);
  if (done_signal_.wait_for(lock, 1s, [this] { return done_; })) return;
  do {
    const auto seconds =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start);
    // \r and erase-to-end-of-line: the line is rewritten in place.
    fmt::print(stderr, "\r{} ... {} s\x1b[K", what_, seconds.count());
    std::fflush(stderr);
  } while (!done_signal_.wait_for(lock, 500ms, [this] { return done_; }));
  fmt::print(stderr, "\r\x1b[K");
  std::fflush(stderr);
}

}  // namespace vramtrace::cli
