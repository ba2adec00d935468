// The exit statuses of the `vramtrace` command, and the help text that documents them.
#pragma once

#include <string_view>

namespace vramtrace::cli {

inline constexpr int kExitOk = 0;
// A usage error (a filter that matches no process included), or a trace that cannot be read
// or written. Leaks are not failures here: `summary` and `leaks` report them and exit 0.
inline constexpr int kExitUsageOrTraceError = 2;

// The footer of the report commands' --help.
inline constexpr std::string_view kReportExitStatusHelp =
    "Exit status: 0 when the report was written (also when it finds leaks or out-of-memory "
    "errors); 2 for a usage error, "
    "a filter that matches no process, or a trace that cannot be read (one line on stderr says "
    "why).";

}  // namespace vramtrace::cli
