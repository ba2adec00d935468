#include "cli/trace_output_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vramtrace::cli {
namespace {

constexpr const char* kSideSuffixes[] = {"-wal", "-shm", "-journal"};

bool same_file(int fd, const std::string& path) {
  struct stat held {
  }, named{};
  return ::fstat(fd, &held) == 0 && ::stat(path.c_str(), &named) == 0 &&
         held.st_dev == named.st_dev && held.st_ino == named.st_ino;
}

std::string held_by_another(const std::string& path) {
  return path + " is being recorded by another 'vramtrace run' (it holds the file's lock); " +
         "choose another name, or wait for it to end";
}

}  // namespace

TraceOutputLock::~TraceOutputLock() {
  if (fd_ >= 0) ::close(fd_);  // gives the lock back
}

bool TraceOutputLock::hold(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *why = "cannot open " + path + " to hold it: " + std::strerror(errno);
    return false;
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    *why = held_by_another(path);
    ::close(fd);
    return false;
  }
  // Between this run's creating the file and taking its lock, another run could have removed it
  // and made its own: then the lock is on a file no longer there.
  if (!same_file(fd, path)) {
    *why = path + " was replaced by another program while this run started; choose another name";
    ::close(fd);
    return false;
  }
  path_ = path;
  fd_ = fd;
  return true;
}

bool TraceOutputLock::still_there() const {
  return fd_ >= 0 && same_file(fd_, path_);
}

bool TraceOutputLock::remove_unless_held(const std::string& path, std::string* why) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd >= 0) {
    if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
      *why = held_by_another(path);
      ::close(fd);
      return false;
    }
    // Removed while locked, so that no other run takes it up in between.
    ::unlink(path.c_str());
    ::close(fd);
  }
  for (const char* suffix : kSideSuffixes) ::unlink((path + suffix).c_str());
  return true;
}

}  // namespace vramtrace::cli
