// A trace open for viewing: its reader and its time index, opened together, since every view
// but the summary reads the index (the first open of a finished trace builds it into the file;
// a trace still being written gets it built aside on each open: storage/time_index.h).
//
// Not thread-safe: one thread at a time (TraceController runs every query on one worker).
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::viewer {

struct TraceSession {
  std::unique_ptr<storage::TraceReader> reader;
  std::unique_ptr<storage::TimeIndex> index;
};

// On failure returns an empty session with *failure set: storage's own classification (not a
// trace, a newer schema, truncated ...) and its one-line message naming the file. An index that
// cannot be built is reported as a damaged trace. `before_index` is called once the reader is
// open, before the index (which the first open of a finished trace builds: the long stage).
TraceSession open_trace_session(const std::filesystem::path& path, storage::OpenFailure* failure,
                                const std::function<void()>& before_index = {});

// What a dialog says about a failure: a title per reason, storage's message (which names the
// file and, but for an unreadable file, what to do), and advice where the message has none.
struct OpenFailureText {
  std::string title, message, advice;
};
OpenFailureText describe_open_failure(const storage::OpenFailure& failure);

}  // namespace vramtrace::viewer
