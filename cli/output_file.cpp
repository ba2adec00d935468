#include "cli/output_file.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <ext/stdio_filebuf.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <optional>

#include "cli/trace_command.h"

namespace vramtrace::cli {
namespace {

namespace fs = std::filesystem;

// SQLite's files beside a trace: writing over one of them is writing over the trace.
constexpr const char* kTraceSideSuffixes[] = {"", "-wal", "-shm", "-journal"};

// The file `path` names, links followed; nullopt where there is none.
std::optional<struct stat> file_at(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return st;
}

bool same_file(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The temporary file being written, for the signal handler to remove: one at a time.
char g_temp_path[PATH_MAX];
volatile sig_atomic_t g_temp_pending = 0;

void remove_temp_and_die(int sig) {
  if (g_temp_pending != 0) ::unlink(g_temp_path);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

// While it lives, a signal that ends vramtrace first removes the temporary file.
class TempFileGuard {
 public:
  explicit TempFileGuard(const std::string& path) {
    std::memcpy(g_temp_path, path.c_str(), path.size() + 1);
    g_temp_pending = 1;
    struct sigaction cleanup {};
    cleanup.sa_handler = &remove_temp_and_die;
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i)
      ::sigaction(kCleanupSignals[i], &cleanup, &old_[i]);
  }
  ~TempFileGuard() {
    for (std::size_t i = 0; i < std::size(kCleanupSignals); ++i)
      ::sigaction(kCleanupSignals[i], &old_[i], nullptr);
    g_temp_pending = 0;
  }
  TempFileGuard(const TempFileGuard&) = delete;
  TempFileGuard& operator=(const TempFileGuard&) = delete;

 private:
  struct sigaction old_[std::size(kCleanupSignals)]{};
};

// Writes to an open descriptor; false when a write or the close failed (errno says why).
bool write_to(int fd, const std::function<void(std::ostream&)>& write) {
  __gnu_cxx::stdio_filebuf<char> buffer(fd, std::ios::out | std::ios::binary, 1 << 16);
  std::ostream out(&buffer);
  write(out);
  out.flush();
  const bool written = static_cast<bool>(out);
  const int write_errno = errno;
  const bool closed = buffer.close() != nullptr;
  if (!written) errno = write_errno;
  return written && closed;
}

std::string why_not_written(const std::string& output, int error) {
  if (error == 0) return fmt::format("cannot write {} (is the disk full?)", output);
  if (error == ENOSPC || error == EFBIG || error == EDQUOT)
    return fmt::format("cannot write {}: {} (nothing was written)", output, std::strerror(error));
  return fmt::format("cannot write {}: {}", output, std::strerror(error));
}

// A FIFO or a device: written in place, as a stream.
void write_stream(const std::string& output, const std::function<void(std::ostream&)>& write) {
  // Without a reader, a FIFO's open would wait for one for ever: O_NONBLOCK fails it at once.
  const int fd = ::open(output.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO)
      throw ReportRefusal(fmt::format("cannot write {}: it is a FIFO that no one reads", output));
    throw ReportRefusal(why_not_written(output, errno));
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (!write_to(fd, write)) throw ReportRefusal(why_not_written(output, errno));
}

}  // namespace

std::string output_refusal(const std::string& output, const std::vector<std::string>& inputs,
                           bool replace) {
  const std::optional<struct stat> existing = file_at(output);
  if (!existing) return {};
  for (const std::string& input : inputs) {
    for (const char* suffix : kTraceSideSuffixes) {
      const std::optional<struct stat> read = file_at(input + suffix);
      if (read && same_file(*read, *existing)) {
        const std::string what = *suffix == '\0'
                                     ? "the trace " + input
                                     : "the side file " + input + suffix + " of " + input;
        return fmt::format("{} is {} that this command reads; write to another file", output, what);
      }
    }
  }
  if (S_ISDIR(existing->st_mode)) return fmt::format("{} is a directory; name a file", output);
  if (S_ISREG(existing->st_mode) && !replace)
    return fmt::format("{} exists; give another name, or --force to replace it", output);
  return {};
}

std::string same_output_twice(const std::string& a, const std::string& b) {
  std::error_code a_error, b_error;
  const fs::path a_path = fs::weakly_canonical(a, a_error),
                 b_path = fs::weakly_canonical(b, b_error);
  const bool same_name = !a_error && !b_error && a_path == b_path;
  const std::optional<struct stat> first = file_at(a), second = file_at(b);
  if (same_name || a == b || (first && second && same_file(*first, *second)))
    return fmt::format("{} and {} are the same file; give each output its own", a, b);
  return {};
}

void write_output_file(const std::string& output, const std::function<void(std::ostream&)>& write) {
  const std::optional<struct stat> existing = file_at(output);
  if (existing && !S_ISREG(existing->st_mode)) {
    if (S_ISDIR(existing->st_mode))
      throw ReportRefusal(fmt::format("{} is a directory; name a file", output));
    write_stream(output, write);
    return;
  }
  // The file a link names is the one replaced; the link stays.
  std::error_code ec;
  const fs::path target = existing ? fs::canonical(output, ec) : fs::path(output);
  const fs::path final_path = ec ? fs::path(output) : target;
  const fs::path temp =
      final_path.parent_path() /
      fmt::format(".{}.vramtrace-{}.tmp", final_path.filename().string(), ::getpid());
  if (temp.string().size() >= PATH_MAX)
    throw ReportRefusal(fmt::format("cannot write {}: its name is too long", output));
  const mode_t mode = existing ? (existing->st_mode & 07777) : 0666;
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw ReportRefusal(why_not_written(output, errno));
  // The umask applied to a new file, not to one that replaces a file of the user's.
  if (existing) ::fchmod(fd, mode);
  const TempFileGuard guard(temp.string());
  bool written = false;
  int error = 0;
  try {
    written = write_to(fd, write);
    error = errno;
    if (written && ::rename(temp.c_str(), final_path.c_str()) != 0) {
      written = false;
      error = errno;
    }
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  if (!written) {
    ::unlink(temp.c_str());
    throw ReportRefusal(why_not_written(output, error));
  }
}

}  // namespace vramtrace::cli
