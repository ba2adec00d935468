// Files the commands write (export's timelines and snapshot, gate's reports, merge's trace):
// never over one of the command's inputs, and never half written.
//
// - An output that is one of the inputs, or one of their SQLite side files (the same file
//   through a symbolic or a hard link included: compared by device and inode), is refused
//   before anything is written.
// - A regular file is written to a temporary file beside it and renamed into place once whole;
//   on any failure (a full disk, a file-size limit: main() ignores SIGXFSZ so that the write
//   fails with EFBIG rather than killing vramtrace, an exception, SIGINT, SIGTERM or SIGHUP) the
//   temporary file is removed and what was there before stays. A link is followed: the file it
//   names is replaced, and the link stays.
// - A FIFO, a terminal or another device (/dev/stdout) is written in place, as a stream; a FIFO
//   that no one reads is refused at once rather than waited on.
// - A directory is refused.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace vramtrace::cli {

// Why `output` must not be written by a command that reads `inputs`; empty when it may. Checks
// that it is not an input (nor an input's -wal, -shm or -journal), not a directory, and, unless
// `replace`, not an existing file.
std::string output_refusal(const std::string& output, const std::vector<std::string>& inputs,
                           bool replace);

// Why two outputs of one command are the same file (by name or, where both exist, by inode);
// empty when they differ.
std::string same_output_twice(const std::string& a, const std::string& b);

// Writes `output` with `write`, as the header says. Throws ReportRefusal (trace_command.h) with
// one line saying why when the file cannot be written whole; nothing is left of the attempt.
// Call output_refusal() first.
void write_output_file(const std::string& output, const std::function<void(std::ostream&)>& write);

}  // namespace vramtrace::cli
