// The notices the shim sends, read from its sources (preload/ and cupti/): the shim may not
// include storage's registry of stats (storage/trace_stats.h), so a test holds what the sources
// send to it. Needs VRAMTRACE_SOURCE_DIR defined to the source tree.
//
// A notice is sent through one of kNoticeSenders. A call names its notice by a string literal,
// or, inside a sender's own body, passes on that sender's parameter; any other call is
// reported as unreadable, so that a new way of sending a notice cannot slip past the test.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace vramtrace::testing {

// A function that sends a notice, and which of its arguments say what.
struct NoticeSender {
  std::string_view function;
  std::size_t name_arg, text_arg;
  std::optional<std::size_t> severity_arg;  // none: always `severity`
  std::string_view severity;
};

inline constexpr NoticeSender kNoticeSenders[] = {
    {"encode_notice", 1, 2, 0, ""},                         // preload/wire_encoder.h
    {"record_data_loss", 0, 1, std::nullopt, "data_loss"},  // preload/marker_recorder.h
    {"say_full_once", 1, 2, std::nullopt, "data_loss"},     // preload/nvtx_registry.cpp
};

struct NoticeCall {
  std::string where;                // file:line
  std::string name;                 // as the shim sends it, without the collector's "shim_"
  std::string severity;             // "info", "data_loss" or "error"
  std::optional<std::string> text;  // none: made at run time
};

struct ShimNotices {
  std::vector<NoticeCall> calls;
  std::vector<std::string> unreadable;  // file:line of calls whose name or severity is not read
};

namespace notice_scan {

inline bool is_identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

// Whether a string or character literal opens at `at`: a quote that is no digit separator
// (1'000'000).
inline bool opens_literal(const std::string& text, std::size_t at) {
  if (text[at] == '"') return true;
  if (text[at] != '\'') return false;
  std::size_t token = at;
  while (token > 0 && (is_identifier_char(text[token - 1]) || text[token - 1] == '\'')) --token;
  return token == at || std::isdigit(static_cast<unsigned char>(text[token])) == 0;
}

// Where the literal (string or character) starting at `at` ends, just past its closing quote.
inline std::size_t literal_end(const std::string& text, std::size_t at) {
  const char quote = text[at];
  for (std::size_t i = at + 1; i < text.size(); ++i) {
    if (text[i] == '\\') {
      ++i;
    } else if (text[i] == quote) {
      return i + 1;
    }
  }
  return text.size();
}

// `text` with its comments blanked out (newlines kept, so that offsets give the same lines).
inline std::string without_comments(std::string text) {
  for (std::size_t i = 0; i < text.size();) {
    if (opens_literal(text, i)) {
      i = literal_end(text, i);
    } else if (text.compare(i, 2, "//") == 0) {
      for (; i < text.size() && text[i] != '\n'; ++i) text[i] = ' ';
    } else if (text.compare(i, 2, "/*") == 0) {
      const std::size_t end = std::min(text.find("*/", i + 2), text.size() - 2) + 2;
      for (; i < end; ++i)
        if (text[i] != '\n') text[i] = ' ';
    } else {
      ++i;
    }
  }
  return text;
}

// Where the bracket opened at `open` closes (the index of its closing bracket).
inline std::size_t matching_close(const std::string& text, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < text.size();) {
    const char c = text[i];
    if (opens_literal(text, i)) {
      i = literal_end(text, i);
      continue;
    }
    if (c == '(' || c == '{' || c == '[') ++depth;
    if ((c == ')' || c == '}' || c == ']') && --depth == 0) return i;
    ++i;
  }
  return text.size();
}

inline std::string trimmed(std::string_view text) {
  const std::size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string_view::npos) return "";
  return std::string(text.substr(first, text.find_last_not_of(" \t\n") - first + 1));
}

// The arguments between the brackets at `open` and `close`, split at their top-level commas.
inline std::vector<std::string> arguments(const std::string& text, std::size_t open,
                                          std::size_t close) {
  std::vector<std::string> args;
  std::size_t start = open + 1;
  for (std::size_t i = open + 1; i < close;) {
    const char c = text[i];
    if (opens_literal(text, i)) {
      i = literal_end(text, i);
    } else if (c == '(' || c == '{' || c == '[') {
      i = matching_close(text, i) + 1;
    } else {
      if (c == ',') {
        args.push_back(trimmed(std::string_view(text).substr(start, i - start)));
        start = i + 1;
      }
      ++i;
    }
  }
  args.push_back(trimmed(std::string_view(text).substr(start, close - start)));
  return args;
}

// The string an argument of adjacent string literals makes; none for any other argument.
inline std::optional<std::string> string_literal(const std::string& arg) {
  std::string value;
  std::size_t i = 0;
  while (i < arg.size()) {
    if (arg[i] != '"') return std::nullopt;
    const std::size_t end = literal_end(arg, i);
    for (std::size_t j = i + 1; j + 1 < end; ++j) {
      if (arg[j] == '\\') ++j;  // \" and \\ are all the shim's literals escape
      value += arg[j];
    }
    i = arg.find_first_not_of(" \t\n", end);
    if (i == std::string::npos) break;
  }
  return value;
}

inline std::optional<std::string> severity_of(const std::string& arg) {
  for (const char* severity : {"DATA_LOSS", "ERROR", "INFO"}) {
    if (arg.ends_with(std::string("SEVERITY_") + severity)) {
      std::string name = severity;
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      return name;
    }
  }
  return std::nullopt;
}

// A parameter list rather than a call's arguments: its first holds a type and a name.
inline bool declares(const std::vector<std::string>& args) {
  const std::string& first = args.front();
  return !first.empty() && first.front() != '"' && first.find_first_of(" *&") != std::string::npos;
}

inline std::string parameter_name(const std::string& parameter) {
  std::size_t begin = parameter.size();
  while (begin > 0 && is_identifier_char(parameter[begin - 1])) --begin;
  return parameter.substr(begin);
}

// A sender defined in the file: its body and its parameters' names.
struct SenderBody {
  const NoticeSender* sender;
  std::size_t open, close;
  std::vector<std::string> parameters;
};

struct Call {
  const NoticeSender* sender;
  std::size_t at;
  std::vector<std::string> args;
};

inline void scan_file(const std::filesystem::path& path, const std::string& shown,
                      ShimNotices& out) {
  std::ifstream in(path);
  std::stringstream read;
  read << in.rdbuf();
  const std::string text = without_comments(read.str());
  const auto where = [&](std::size_t at) {
    return shown + ":" +
           std::to_string(1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n'));
  };

  std::vector<SenderBody> bodies;
  std::vector<Call> calls;
  for (const NoticeSender& sender : kNoticeSenders) {
    const std::string opening = std::string(sender.function) + "(";
    for (std::size_t at = text.find(opening); at != std::string::npos;
         at = text.find(opening, at + 1)) {
      if (at > 0 && is_identifier_char(text[at - 1])) continue;
      const std::size_t open = at + sender.function.size();
      const std::size_t close = matching_close(text, open);
      std::vector<std::string> args = arguments(text, open, close);
      if (!declares(args)) {
        calls.push_back({&sender, at, std::move(args)});
        continue;
      }
      const std::size_t body = text.find_first_not_of(" \t\n", close + 1);
      if (body == std::string::npos || text[body] != '{') continue;  // a declaration
      SenderBody defined{&sender, body, matching_close(text, body), {}};
      for (const std::string& parameter : args)
        defined.parameters.push_back(parameter_name(parameter));
      bodies.push_back(std::move(defined));
    }
  }

  for (const Call& call : calls) {
    const NoticeSender& sender = *call.sender;
    if (call.args.size() <= std::max(sender.name_arg, sender.text_arg)) {
      out.unreadable.push_back(where(call.at));
      continue;
    }
    std::optional<std::string> severity = std::string(sender.severity);
    if (sender.severity_arg) severity = severity_of(call.args[*sender.severity_arg]);
    if (const std::optional<std::string> name = string_literal(call.args[sender.name_arg])) {
      if (!severity) {
        out.unreadable.push_back(where(call.at));
        continue;
      }
      out.calls.push_back(
          {where(call.at), *name, *severity, string_literal(call.args[sender.text_arg])});
      continue;
    }
    // Passing on a sender's parameter, in that sender's body, with the sender's severity.
    bool passes_on = false;
    for (const SenderBody& body : bodies) {
      if (call.at < body.open || call.at > body.close) continue;
      for (const std::string& parameter : body.parameters)
        passes_on |= parameter == call.args[sender.name_arg];
      if (!body.sender->severity.empty()) passes_on &= severity == body.sender->severity;
    }
    if (!passes_on) out.unreadable.push_back(where(call.at));
  }
}

}  // namespace notice_scan

// Every notice the sources of preload/ and cupti/ send.
inline ShimNotices shim_notices() {
  ShimNotices notices;
  const std::filesystem::path root(VRAMTRACE_SOURCE_DIR);
  for (const char* folder : {"preload", "cupti"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root / folder)) {
      const std::string extension = entry.path().extension().string();
      if (!entry.is_regular_file() ||
          (extension != ".h" && extension != ".cpp" && extension != ".c"))
        continue;
      notice_scan::scan_file(entry.path(), entry.path().lexically_relative(root).string(), notices);
    }
  }
  return notices;
}

}  // namespace vramtrace::testing
