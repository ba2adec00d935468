// cli/progress_line.h: on a terminal, work over a second gets a line on stderr that is erased
// when the work ends; quick work, or a stderr that is not a terminal, gets nothing.
#include "cli/progress_line.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "temp_dir.h"

namespace vramtrace {
namespace {

using namespace std::chrono_literals;

// Points stderr at `fd` for the life of the object.
class StderrTo {
 public:
  explicit StderrTo(int fd) : saved_(dup(STDERR_FILENO)) { dup2(fd, STDERR_FILENO); }
  ~StderrTo() {
    dup2(saved_, STDERR_FILENO);
    close(saved_);
  }

 private:
  int saved_;
};

std::string drain(int fd) {
  std::string text;
  char buffer[4096];
  pollfd p{fd, POLLIN, 0};
  while (poll(&p, 1, 100) > 0) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n <= 0) break;
    text.append(buffer, static_cast<std::size_t>(n));
  }
  return text;
}

class ProgressLineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(openpty(&terminal_, &stderr_side_, nullptr, nullptr, nullptr), 0);
    // Raw output, so that the terminal hands back exactly the bytes written.
    termios settings{};
    tcgetattr(stderr_side_, &settings);
    cfmakeraw(&settings);
    tcsetattr(stderr_side_, TCSANOW, &settings);
  }
  void TearDown() override {
    close(terminal_);
    close(stderr_side_);
  }
  int terminal_ = -1, stderr_side_ = -1;
};

TEST_F(ProgressLineTest, WorkOverASecondShowsALineAndErasesIt) {
  {
    const StderrTo redirect(stderr_side_);
    const cli::ProgressLine progress("vramtrace leaks: reading run.db");
    std::this_thread::sleep_for(1300ms);
  }
  const std::string seen = drain(terminal_);
  EXPECT_EQ(seen.rfind("\rvramtrace leaks: reading run.db ... 1 s\x1b[K", 0), 0u) << seen;
  EXPECT_TRUE(seen.ends_with("\r\x1b[K")) << seen;
}

TEST_F(ProgressLineTest, QuickWorkShowsNothing) {
  {
    const StderrTo redirect(stderr_side_);
    const cli::ProgressLine progress("vramtrace leaks: reading run.db");
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(drain(terminal_), "");
}

TEST(ProgressLineNotATerminalTest, AFileGetsNothing) {
  testing::TempDir dir;
  const auto path = dir / "stderr.txt";
  const int file = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(file, 0);
  {
    const StderrTo redirect(file);
    const cli::ProgressLine progress("vramtrace leaks: reading run.db");
    std::this_thread::sleep_for(1200ms);
  }
  EXPECT_EQ(lseek(file, 0, SEEK_END), 0);
  close(file);
}

}  // namespace
}  // namespace vramtrace
