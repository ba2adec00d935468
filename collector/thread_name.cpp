#include "collector/thread_name.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace vramtrace::collector {

std::optional<std::string> read_thread_name(std::uint32_t pid, std::uint32_t tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%u/task/%u/comm", pid, tid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  // The kernel keeps at most 15 bytes and a newline.
  char buffer[32];
  const ssize_t length = ::read(fd, buffer, sizeof buffer);
  ::close(fd);
  if (length <= 0) return std::nullopt;
  std::string name(buffer, static_cast<std::size_t>(length));
  if (!name.empty() && name.back() == '\n') name.pop_back();
  if (name.empty()) return std::nullopt;
  return name;
}

}  // namespace vramtrace::collector
