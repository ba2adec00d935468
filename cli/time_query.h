// What the time-indexed commands (timeline, peak, frag, leaks --at) share: the trace's time
// index, opened once per report, and the `--at MOMENT` option.
#pragma once

#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <string_view>

#include "analysis/time/moment.h"
#include "analysis/time/report_time_index.h"
#include "cli/trace_command.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::cli {

// The help of --at, and of --between's two moments.
inline constexpr const char* kMomentHelp =
    "end, peak, oom, a marker's name (its last occurrence: the end of a range; NAME#K: the K-th), "
    "a CLOCK_MONOTONIC time in ns, +D after the first allocation (1.5s, 250ms, 40us), or seq:N "
    "(one process's event N)";

// A marker's name given as an option's value (--growth, --iteration-marker): refused when empty,
// which would name every marker or none.
inline CLI::Validator marker_name() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        return name.empty() ? "needs a marker's name, not an empty string" : std::string();
      },
      "MARKER");
}

// Calls query(index). A note on how the index was made (built aside for a trace that cannot
// keep it) goes to stderr; a moment the trace does not have becomes the command's one-line error
// (exit status 2).
template <typename Query>
auto query_time_index(std::string_view command, const storage::TimeIndex& index, Query&& query) {
  if (!index.note().empty()) fmt::print(stderr, "vramtrace {}: note: {}\n", command, index.note());
  try {
    return query(index);
  } catch (const analysis::BadMoment& bad) {
    throw ReportRefusal(bad.what());
  }
}

// query_time_index with the trace's time index, for the reports that need it.
template <typename Query>
auto with_time_index(std::string_view command, const storage::TraceReader& trace, Query&& query) {
  return query_time_index(command, *analysis::open_time_index(trace), query);
}

// A report that cannot honour --kind or --level refuses them rather than ignore them.
inline void refuse_kind_and_level(std::string_view command, const ReportScope& scope,
                                  bool takes_level) {
  if (scope.allocations.kind) throw ReportRefusal(fmt::format("{} takes no --kind", command));
  if (scope.level && !takes_level) throw ReportRefusal(fmt::format("{} takes no --level", command));
}

// Parses a moment given on the command line; a malformed one is the command's one-line error.
analysis::MomentSpec moment_from_option(const std::string& text);

}  // namespace vramtrace::cli
