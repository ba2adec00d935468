#include "cli/gate_reports.h"

#include <fmt/core.h>

#include <cmath>

#include "cli/stack_json.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;
using text::format_stack;

namespace {

using Json = nlohmann::ordered_json;

// Leaks shown under a broken limit, and frames shown of each: enough to act on from a job's
// log; the JSON file has them all.
constexpr std::size_t kLeaksShown = 5;
constexpr std::size_t kFramesShown = 12;

std::string quantity(double value, const std::string& unit) {
  if (std::isinf(value)) return "no baseline value to compare with";
  if (unit == "bytes") {
    if (value < 0) return "-" + format_bytes(static_cast<std::uint64_t>(-value));
    return format_bytes_exact(static_cast<std::uint64_t>(value));
  }
  if (unit == "percent") return fmt::format("{:+.1f}%", value);
  if (unit == "bytes per iteration")
    return format_bytes(static_cast<std::uint64_t>(std::llround(value))) + " per iteration";
  return count_of(static_cast<std::uint64_t>(value), "allocation", "allocations");
}

std::string limit_text(const analysis::GateCheck& check) {
  if (check.unit == "bytes") return format_bytes(static_cast<std::uint64_t>(check.limit));
  if (check.unit == "percent") return fmt::format("{:.1f}%", check.limit);
  if (check.unit == "bytes per iteration")
    return format_bytes(static_cast<std::uint64_t>(check.limit)) + " per iteration";
  return fmt::format("{}", static_cast<std::uint64_t>(check.limit));
}

// "leaked_bytes (all processes): 20.5 MiB (21495808 bytes), limit 0 B"
std::string check_line(const analysis::GateCheck& check) {
  return fmt::format("{} ({}): {}, limit {}", check.name, check.subject,
                     quantity(check.actual, check.unit), limit_text(check));
}

// `growth`, when not empty, holds each leak's bytes per iteration (a growth check's evidence).
std::string leaks_text(const std::vector<analysis::LeakGroup>& leaks, std::string_view indent,
                       text::StackView stacks, const std::vector<double>& growth = {}) {
  std::string text;
  for (std::size_t i = 0; i < leaks.size() && i < kLeaksShown; ++i) {
    const analysis::LeakGroup& leak = leaks[i];
    std::string what = fmt::format(
        "{} in {}", format_bytes_exact(leak.bytes),
        count_of(leak.count, leak.kind_name + " allocation", leak.kind_name + " allocations"));
    if (i < growth.size()) {
      what = fmt::format("+{} per iteration ({} live at the last iteration)",
                         format_bytes(static_cast<std::uint64_t>(std::llround(growth[i]))), what);
    }
    text += fmt::format("{}{}{}\n", indent, what,
                        leak.stack.empty() ? " (no stack recorded)" : " from:");
    text += format_stack(leak.stack, stacks, std::string(indent) + "    ", kFramesShown);
  }
  if (leaks.size() > kLeaksShown)
    text += fmt::format("{}... {} more leaks (see --json)\n", indent, leaks.size() - kLeaksShown);
  return text;
}

std::string xml_escape(std::string_view text) {
  std::string out;
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        // XML 1.0 forbids most control characters, even escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r')
          out += '?';
        else
          out += c;
    }
  }
  return out;
}

std::size_t failures(const analysis::GateResult& result) {
  std::size_t failed = 0;
  for (const analysis::GateCheck& check : result.checks) failed += check.passed ? 0 : 1;
  return failed;
}

std::string suppression_text(const analysis::SuppressionUse& use) {
  std::string text = fmt::format("{} (line {}", use.rule.text(), use.rule.line);
  if (!use.rule.reason.empty()) text += ": " + use.rule.reason;
  return text + fmt::format("): hid {}",
                            use.leaks == 0
                                ? std::string("nothing")
                                : fmt::format("{}, {} in {}", count_of(use.leaks, "leak", "leaks"),
                                              format_bytes(use.bytes),
                                              count_of(use.count, "allocation", "allocations")));
}

Json leaks_json(const std::vector<analysis::LeakGroup>& leaks,
                const std::vector<double>& growth = {}) {
  Json out = Json::array();
  for (std::size_t i = 0; i < leaks.size(); ++i) {
    const analysis::LeakGroup& leak = leaks[i];
    Json entry = {{"kind", leak.kind_name},
                  {"level", leak.level},
                  {"bytes", leak.bytes},
                  {"count", leak.count}};
    if (i < growth.size()) entry["bytes_per_iteration"] = growth[i];
    entry["stack"] = stack_json(leak.stack);
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace

std::string gate_text(const std::string& trace_path, const analysis::GateResult& result,
                      text::StackView stacks) {
  std::string text;
  for (const std::string& warning : result.warnings) text += fmt::format("warning: {}\n", warning);
  const std::size_t failed = failures(result);
  if (result.checks.empty()) {
    text += fmt::format("vramtrace gate: no limit given for {}: nothing to check\n", trace_path);
  } else if (failed == 0) {
    text +=
        fmt::format("vramtrace gate: passed {} on {} ({} level)\n",
                    count_of(result.checks.size(), "check", "checks"), trace_path, result.level);
  } else {
    text +=
        fmt::format("vramtrace gate: FAILED {} of {} on {} ({} level)\n", failed,
                    count_of(result.checks.size(), "check", "checks"), trace_path, result.level);
  }
  for (const analysis::GateCheck& check : result.checks) {
    text += fmt::format("  {} {}\n", check.passed ? "PASS" : "FAIL", check_line(check));
    if (!check.passed) text += leaks_text(check.leaks, "       ", stacks, check.growth);
  }
  if (!result.suppressions.empty()) {
    text += "suppressions:\n";
    for (const analysis::SuppressionUse& use : result.suppressions)
      text += fmt::format("  {}\n", suppression_text(use));
  }
  if (!result.tests.empty()) {
    text += "leaks by test:\n";
    for (const analysis::TestLeaks& test : result.tests) {
      if (test.count == 0) {
        text += fmt::format("  {}: none\n", test.test);
        continue;
      }
      text += fmt::format("  {}: {} in {}\n", test.test, format_bytes_exact(test.bytes),
                          count_of(test.count, "allocation", "allocations"));
      text += leaks_text(test.leaks, "    ", stacks);
    }
  }
  return text;
}

Json gate_json(const std::string& trace_path, const analysis::GateResult& result) {
  Json checks = Json::array();
  for (const analysis::GateCheck& check : result.checks) {
    checks.push_back({{"name", check.name},
                      {"subject", check.subject},
                      {"unit", check.unit},
                      {"actual", std::isinf(check.actual) ? Json(nullptr) : Json(check.actual)},
                      {"limit", check.limit},
                      {"passed", check.passed},
                      {"leaks", leaks_json(check.leaks, check.growth)}});
  }
  Json suppressions = Json::array();
  for (const analysis::SuppressionUse& use : result.suppressions) {
    suppressions.push_back({{"rule", use.rule.text()},
                            {"line", use.rule.line},
                            {"reason", use.rule.reason},
                            {"leaks", use.leaks},
                            {"count", use.count},
                            {"bytes", use.bytes}});
  }
  Json tests = Json::array();
  for (const analysis::TestLeaks& test : result.tests) {
    tests.push_back({{"test", test.test},
                     {"upid", test.upid},
                     {"bytes", test.bytes},
                     {"count", test.count},
                     {"leaks", leaks_json(test.leaks)}});
  }
  return {{"trace", trace_path},          {"passed", result.passed()},
          {"level", result.level},        {"checks", std::move(checks)},
          {"suppressions", suppressions}, {"tests", std::move(tests)},
          {"warnings", result.warnings}};
}

std::string gate_junit(const std::string& trace_path, const analysis::GateResult& result,
                       text::StackView stacks) {
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites name=\"vramtrace gate\" tests=\"{}\" failures=\"{}\">\n",
                     result.checks.size(), failures(result));
  xml += fmt::format("  <testsuite name=\"vramtrace gate: {}\" tests=\"{}\" failures=\"{}\">\n",
                     xml_escape(trace_path), result.checks.size(), failures(result));
  for (const analysis::GateCheck& check : result.checks) {
    xml += fmt::format("    <testcase classname=\"vramtrace.gate\" name=\"{} ({})\">\n",
                       xml_escape(check.name), xml_escape(check.subject));
    if (!check.passed) {
      xml += fmt::format(
          "      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(check_line(check)),
          xml_escape(check.name),
          xml_escape(check_line(check) + "\n" + leaks_text(check.leaks, "", stacks, check.growth)));
    }
    xml += "    </testcase>\n";
  }
  std::string out;
  for (const analysis::TestLeaks& test : result.tests) {
    out += test.count == 0
               ? fmt::format("{}: no leak\n", test.test)
               : fmt::format("{}: {} leaked\n{}", test.test, format_bytes_exact(test.bytes),
                             leaks_text(test.leaks, "  ", stacks));
  }
  if (!out.empty()) xml += fmt::format("    <system-out>{}</system-out>\n", xml_escape(out));
  xml += "  </testsuite>\n</testsuites>\n";
  return xml;
}

std::string gate_markdown(const std::string& trace_path, const analysis::GateResult& result,
                          text::StackView stacks) {
  std::string md =
      fmt::format("## vramtrace gate: {}\n\n", result.passed() ? "passed" : "**failed**");
  md += fmt::format("Trace `{}`, {} level.\n\n", trace_path, result.level);
  for (const std::string& warning : result.warnings)
    md += fmt::format("> warning: {}\n\n", warning);
  md += "| check | measured on | value | limit | result |\n|---|---|---|---|---|\n";
  for (const analysis::GateCheck& check : result.checks) {
    md += fmt::format("| {} | {} | {} | {} | {} |\n", check.name, check.subject,
                      quantity(check.actual, check.unit), limit_text(check),
                      check.passed ? "pass" : "**FAIL**");
  }
  for (const analysis::GateCheck& check : result.checks) {
    if (check.passed || check.leaks.empty()) continue;
    md += fmt::format("\n### {} ({})\n\n```\n{}```\n", check.name, check.subject,
                      leaks_text(check.leaks, "", stacks, check.growth));
  }
  if (!result.tests.empty()) {
    md += "\n### Leaks by test\n\n| test | leaked |\n|---|---|\n";
    for (const analysis::TestLeaks& test : result.tests)
      md += fmt::format("| `{}` | {} |\n", test.test,
                        test.count == 0 ? std::string("none")
                                        : format_bytes(test.bytes) + " in " +
                                              count_of(test.count, "allocation", "allocations"));
  }
  if (!result.suppressions.empty()) {
    md += "\n### Suppressions\n\n";
    for (const analysis::SuppressionUse& use : result.suppressions)
      md += fmt::format("- `{}`\n", suppression_text(use));
  }
  return md;
}

}  // namespace vramtrace::cli
