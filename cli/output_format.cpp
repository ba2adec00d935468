#include "cli/output_format.h"

#include <map>
#include <string>

namespace vramtrace::cli {

void add_format_option(CLI::App* command, OutputFormat* format) {
  static const std::map<std::string, OutputFormat> kFormats{
      {"text", OutputFormat::kText}, {"json", OutputFormat::kJson}, {"csv", OutputFormat::kCsv}};
  command
      ->add_option_function<std::string>(
          "--format", [format](const std::string& name) { *format = kFormats.at(name); },
          "text: for people (default); json: for programs, see docs/cli.md; csv: one table")
      ->check(CLI::IsMember({"text", "json", "csv"}).description(""))
      ->type_name("text|json|csv");
}

}  // namespace vramtrace::cli
