// --format text|json|csv, shared by the report commands.
#pragma once

#include <CLI/CLI.hpp>

namespace vramtrace::cli {

// text: for people; json: one document, the contracts of docs/cli.md; csv: one table with a
// header row, for spreadsheets and scripts (each command says which table).
enum class OutputFormat { kText, kJson, kCsv };

// Adds --format to `command`, writing the choice to *format (which keeps its value when the
// option is not given).
void add_format_option(CLI::App* command, OutputFormat* format);

}  // namespace vramtrace::cli
