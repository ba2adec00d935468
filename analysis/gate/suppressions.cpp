#include "analysis/gate/suppressions.h"

#include <fnmatch.h>

#include <array>

#include "storage/printable.h"

namespace vramtrace::analysis {
namespace {

struct FieldName {
  SuppressionRule::Field field;
  std::string_view prefix;
};
constexpr std::array<FieldName, 3> kFields{{
    {SuppressionRule::Field::kFunction, "function:"},
    {SuppressionRule::Field::kFile, "file:"},
    {SuppressionRule::Field::kModule, "module:"},
}};

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

bool glob(const std::string& pattern, const std::string& text) {
  return fnmatch(pattern.c_str(), text.c_str(), 0) == 0;
}

bool matches(const SuppressionRule& rule, const storage::StackFrame& frame) {
  switch (rule.field) {
    case SuppressionRule::Field::kFunction:
      return frame.function && glob(rule.pattern, *frame.function);
    case SuppressionRule::Field::kFile:
      return frame.file && glob(rule.pattern, *frame.file);
    case SuppressionRule::Field::kModule: {
      if (frame.module.empty()) return false;
      const std::size_t slash = frame.module.rfind('/');
      return glob(rule.pattern, frame.module) ||
             (slash != std::string::npos && glob(rule.pattern, frame.module.substr(slash + 1)));
    }
  }
  return false;
}

}  // namespace

std::string SuppressionRule::text() const {
  for (const FieldName& name : kFields)
    if (name.field == field) return std::string(name.prefix) + pattern;
  return pattern;
}

std::vector<SuppressionRule> parse_suppressions(std::string_view text,
                                                SuppressionParseError* error) {
  std::vector<SuppressionRule> rules;
  std::string reason;
  int line_number = 0;
  while (!text.empty()) {
    const std::size_t end = text.find('\n');
    const std::string_view line = trim(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_number;
    if (line.empty()) {
      reason.clear();
      continue;
    }
    if (line.front() == '#') {
      const std::string_view comment = trim(line.substr(1));
      if (!reason.empty()) reason += ' ';
      reason += comment;
      continue;
    }
    bool known = false;
    for (const FieldName& name : kFields) {
      if (!line.starts_with(name.prefix)) continue;
      const std::string_view pattern = trim(line.substr(name.prefix.size()));
      if (pattern.empty()) {
        *error = {line_number, "a rule without a pattern"};
        return {};
      }
      rules.push_back({name.field, std::string(pattern), reason, line_number});
      known = true;
    }
    if (!known) {
      // The line's start is enough to find it; a whole line could be any length, any bytes.
      constexpr std::size_t kShown = 60;
      const std::string shown = storage::printable(line.substr(0, kShown));
      *error = {line_number,
                "expected 'function:PATTERN', 'file:PATTERN' or 'module:PATTERN', or a '#' "
                "comment, got '" +
                    shown + (line.size() > kShown ? "...'" : "'")};
      return {};
    }
    reason.clear();
  }
  return rules;
}

std::optional<std::size_t> matching_rule(const std::vector<SuppressionRule>& rules,
                                         const std::vector<storage::StackFrame>& stack) {
  for (std::size_t i = 0; i < rules.size(); ++i)
    for (const storage::StackFrame& frame : stack)
      if (matches(rules[i], frame)) return i;
  return std::nullopt;
}

}  // namespace vramtrace::analysis
