#include "cli/gate_reports.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <string_view>

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

// The measured value, exact where the check kept it so.
std::string actual_text(const analysis::GateCheck& check) {
  if (check.exact_actual && check.unit == "bytes") return format_bytes_exact(*check.exact_actual);
  if (check.exact_actual && check.unit == "allocations")
    return count_of(*check.exact_actual, "allocation", "allocations");
  return quantity(check.actual, check.unit);
}

std::string limit_text(const analysis::GateCheck& check) {
  if (check.exact_limit && check.unit == "bytes") return format_bytes(*check.exact_limit);
  if (check.exact_limit) return fmt::format("{}", *check.exact_limit);
  if (check.unit == "bytes") return format_bytes(static_cast<std::uint64_t>(check.limit));
  if (check.unit == "percent") return fmt::format("{:.1f}%", check.limit);
  if (check.unit == "bytes per iteration")
    return format_bytes(static_cast<std::uint64_t>(check.limit)) + " per iteration";
  return fmt::format("{}", static_cast<std::uint64_t>(check.limit));
}

// "leaked_bytes (all processes): 20.5 MiB (21495808 bytes), limit 0 B"
std::string check_line(const analysis::GateCheck& check) {
  return fmt::format("{} ({}): {}, limit {}", check.name, check.subject, actual_text(check),
                     limit_text(check));
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

// Bytes and counts as integers, exact past 2^53 where a double is not; percentages and rates
// as numbers; no baseline value (infinity) as null.
Json json_quantity(double value, const std::string& unit) {
  if (!std::isfinite(value)) return nullptr;
  if ((unit == "bytes" || unit == "allocations") && value >= 0 && value < 0x1p64)
    return static_cast<std::uint64_t>(value);
  if (unit == "bytes" && value < 0 && value > -0x1p63) return static_cast<std::int64_t>(value);
  return value;
}

// Markdown from text a trace holds (names, paths, test ids): no control character, and none of
// the characters Markdown gives meaning can end a code span or block, split a table's cell,
// or start a heading, link or HTML tag. docs/ci.md puts this file into a CI job's summary.

// The longest run of backticks in `text`.
std::size_t longest_backtick_run(std::string_view text) {
  std::size_t longest = 0, run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  return longest;
}

// Text in a paragraph, a quote, a heading or a table's cell.
std::string markdown_text(std::string_view text) {
  std::string out;
  for (const char c : text::printable(text)) {
    if (std::string_view("\\`*[]<>|").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

// An inline code span, also in a table's cell: fenced by more backticks than it holds, its
// pipes escaped (GitHub splits a cell at an unescaped pipe even inside code).
std::string markdown_code(std::string_view text) {
  std::string body;
  for (const char c : text::printable(text))
    body += c == '|' ? std::string("\\|") : std::string(1, c);
  const std::string fence(longest_backtick_run(body) + 1, '`');
  const bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

// A fenced code block of lines, closed by a fence longer than any backtick run in it.
std::string markdown_block(std::string_view lines) {
  std::string body = text::printable_text(lines);
  if (!body.empty() && body.back() != '\n') body += '\n';
  const std::string fence(std::max<std::size_t>(3, longest_backtick_run(body) + 1), '`');
  return fence + "\n" + body + fence + "\n";
}

}  // namespace

std::string gate_text(const std::string& trace_path, const analysis::GateResult& result,
                      text::StackView stacks) {
  std::string text;
  for (const std::string& warning : result.warnings) text += fmt::format("warning: {}\n", warning);
  const std::size_t failed = failures(result);
  if (failed == 0 && !result.vouched()) {
    text += fmt::format(
        "vramtrace gate: NOT VOUCHED for {}: the recording has gaps, and a leak in them could not "
        "fail a check (--accept-data-loss judges what was recorded):\n",
        trace_path);
    for (const std::string& gap : result.gaps) text += fmt::format("  gap: {}\n", gap);
  }
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
                      {"actual", check.exact_actual ? Json(*check.exact_actual)
                                                    : json_quantity(check.actual, check.unit)},
                      {"limit", check.exact_limit ? Json(*check.exact_limit)
                                                  : json_quantity(check.limit, check.unit)},
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
  return {{"trace", trace_path},
          {"passed", result.passed() && result.vouched()},
          {"vouched", result.vouched()},
          {"gaps", result.gaps},
          {"gaps_accepted", result.gaps_accepted},
          {"level", result.level},
          {"checks", std::move(checks)},
          {"suppressions", suppressions},
          {"tests", std::move(tests)},
          {"warnings", result.warnings}};
}

std::string gate_junit(const std::string& trace_path, const analysis::GateResult& result,
                       text::StackView stacks) {
  // A recording with gaps is a failed case of its own, so that a CI's test view shows it.
  const std::size_t recording_case = result.vouched() ? 0 : 1;
  const std::size_t tests = result.checks.size() + recording_case;
  const std::size_t failed = failures(result) + recording_case;
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += fmt::format("<testsuites name=\"vramtrace gate\" tests=\"{}\" failures=\"{}\">\n", tests,
                     failed);
  xml += fmt::format("  <testsuite name=\"vramtrace gate: {}\" tests=\"{}\" failures=\"{}\">\n",
                     xml_escape(trace_path), tests, failed);
  if (recording_case != 0) {
    std::string gaps;
    for (const std::string& gap : result.gaps) gaps += gap + "\n";
    xml += fmt::format(
        "    <testcase classname=\"vramtrace.gate\" name=\"recording (no gaps)\">\n"
        "      <failure message=\"the recording has gaps\" type=\"gaps\">{}</failure>\n"
        "    </testcase>\n",
        xml_escape(gaps));
  }
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
  std::string md = fmt::format("## vramtrace gate: {}\n\n",
                               !result.passed()   ? "**failed**"
                               : result.vouched() ? "passed"
                                                  : "**not vouched**: the recording has gaps");
  md += fmt::format("Trace {}, {} level.\n\n", markdown_code(trace_path), result.level);
  if (!result.vouched()) {
    for (const std::string& gap : result.gaps)
      md += fmt::format("> gap: {}\n\n", markdown_text(gap));
  }
  for (const std::string& warning : result.warnings)
    md += fmt::format("> warning: {}\n\n", markdown_text(warning));
  md += "| check | measured on | value | limit | result |\n|---|---|---|---|---|\n";
  for (const analysis::GateCheck& check : result.checks) {
    md += fmt::format("| {} | {} | {} | {} | {} |\n", markdown_text(check.name),
                      markdown_text(check.subject), actual_text(check), limit_text(check),
                      check.passed ? "pass" : "**FAIL**");
  }
  for (const analysis::GateCheck& check : result.checks) {
    if (check.passed || check.leaks.empty()) continue;
    md +=
        fmt::format("\n### {} ({})\n\n{}", markdown_text(check.name), markdown_text(check.subject),
                    markdown_block(leaks_text(check.leaks, "", stacks, check.growth)));
  }
  if (!result.tests.empty()) {
    md += "\n### Leaks by test\n\n| test | leaked |\n|---|---|\n";
    for (const analysis::TestLeaks& test : result.tests)
      md += fmt::format("| {} | {} |\n", markdown_code(test.test),
                        test.count == 0 ? std::string("none")
                                        : format_bytes(test.bytes) + " in " +
                                              count_of(test.count, "allocation", "allocations"));
  }
  if (!result.suppressions.empty()) {
    md += "\n### Suppressions\n\n";
    for (const analysis::SuppressionUse& use : result.suppressions)
      md += fmt::format("- {}\n", markdown_code(suppression_text(use)));
  }
  return md;
}

}  // namespace vramtrace::cli
