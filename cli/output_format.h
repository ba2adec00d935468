// --format text|json, shared by the report commands.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

enum class OutputFormat { kText, kJson };

// Adds --format to `command`, writing the choice to *format (which keeps its value when the
// option is not given).
void add_format_option(CLI::App* command, OutputFormat* format);

}  // namespace vramtrace::cli
