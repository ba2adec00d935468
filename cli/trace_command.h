// The frame every report command runs in: open the trace, run the report, and turn every way
// that can fail into one line on stderr and exit status 2, never an exception trace.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "storage/trace_reader.h"

namespace vramtrace::cli {

// Opens `path`, calls report(trace), flushes stdout. Returns the command's exit status.
// Errors are printed as "vramtrace <command>: <what went wrong>".
int run_on_trace(std::string_view command, const std::string& path,
                 const std::function<void(const storage::TraceReader&)>& report);

}  // namespace vramtrace::cli
