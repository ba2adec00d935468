#include "cli/output_format.h"

#include <string>

namespace vramtrace::cli {

void add_format_option(CLI::App* command, OutputFormat* format) {
  command
      ->add_option_function<std::string>(
          "--format",
          [format](const std::string& name) {
            *format = name == "json" ? OutputFormat::kJson : OutputFormat::kText;
          },
          "text: for people (default); json: for programs, see docs/cli.md")
      ->check(CLI::IsMember({"text", "json"}).description(""))
      ->type_name("text|json");
}

}  // namespace vramtrace::cli
