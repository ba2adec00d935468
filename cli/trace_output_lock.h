// The trace `vramtrace run` records into, held for the whole recording: an advisory lock
// (flock) on the file, which another `run --force` with the same output respects instead of
// removing the file under the recording, and the file's identity, so that `run` never reports a
// trace that is no longer where it said.
#pragma once

#include <string>

namespace vramtrace::cli {

class TraceOutputLock {
 public:
  TraceOutputLock() = default;
  ~TraceOutputLock();
  TraceOutputLock(const TraceOutputLock&) = delete;
  TraceOutputLock& operator=(const TraceOutputLock&) = delete;

  // Takes the lock of the trace at `path`, which this run has just created. False, with *why
  // set, when the file there is already locked, or is not the one this run created (another
  // run replaced it in between).
  bool hold(const std::string& path, std::string* why);

  // Whether `path` still names the file this run holds: false once it was removed or replaced.
  bool still_there() const;

  // Removes the trace at `path` (and SQLite's side files) for --force, unless another run holds
  // it: false, with *why set, then. True when there was nothing to remove.
  static bool remove_unless_held(const std::string& path, std::string* why);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace vramtrace::cli
