#include "cli/trace_command.h"

#include <fmt/core.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cli/exit_status.h"

namespace vramtrace::cli {
namespace {

int report_error(std::string_view command, std::string_view message) {
  // The message becomes one line even if something underneath put a newline in it.
  std::string line(message);
  for (char& c : line) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  fmt::print(stderr, "vramtrace {}: {}\n", command, line);
  return kExitUsageOrTraceError;
}

}  // namespace

int run_on_trace(std::string_view command, const std::string& path,
                 const std::function<void(const storage::TraceReader&)>& report) {
  try {
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path, &failure);
    if (!trace) return report_error(command, failure.message);
    report(*trace);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
      return report_error(command, std::string("cannot write the report: ") + std::strerror(errno));
    }
    return kExitOk;
  } catch (const storage::TraceError& error) {
    return report_error(command, error.what());
  } catch (const std::exception& error) {
    return report_error(command, fmt::format("{}: {}", path, error.what()));
  }
}

}  // namespace vramtrace::cli
