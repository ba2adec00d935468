#include "viewer/model/trace_session.h"

#include "analysis/time/report_time_index.h"

namespace vramtrace::viewer {

TraceSession open_trace_session(const std::filesystem::path& path, storage::OpenFailure* failure,
                                const std::function<void()>& before_index) {
  TraceSession session;
  session.reader = storage::TraceReader::open(path, failure);
  if (!session.reader) return {};
  if (before_index) before_index();
  try {
    session.index = analysis::open_time_index(*session.reader);
  } catch (const storage::TraceError& error) {
    failure->reason = storage::OpenFailure::Reason::kCorrupt;
    failure->message = error.what();
    return {};
  }
  return session;
}

OpenFailureText describe_open_failure(const storage::OpenFailure& failure) {
  using Reason = storage::OpenFailure::Reason;
  // storage's messages say what to do next, but for a file that cannot be read.
  const std::string& message = failure.message;
  switch (failure.reason) {
    case Reason::kMissing:
      return {"No such file", message, ""};
    case Reason::kUnreadable:
      return {"The file cannot be read", message,
              "Check that it is a file, and that you may read it."};
    case Reason::kNotATrace:
      return {"Not a vramtrace trace", message, ""};
    case Reason::kNewerSchema:
      return {"A trace from a newer vramtrace", message, ""};
    case Reason::kOlderSchema:
      return {"A trace from an older vramtrace", message, ""};
    case Reason::kCorrupt:
      break;
  }
  return {"A truncated or damaged trace", message, ""};
}

}  // namespace vramtrace::viewer
