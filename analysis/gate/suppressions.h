// Suppressions: leaks that a CI gate must not count, in the spirit of LeakSanitizer's and
// valgrind's suppression files. One rule a line, a pattern on a frame of the leak's stack:
//
//   # cuBLAS keeps its workspace for the life of the process.
//   function:cublasCreate*
//   file:*/site-packages/torch/distributed/*
//   module:libnccl.so*
//
// Patterns are shell globs (fnmatch: *, ?, [...]). `function` matches the frame's function
// name (demangled; a Python frame's qualified name), `file` its source file, `module` its
// module's path or that path's last component. A leak is suppressed when any frame of its stack
// matches any rule; the first rule that matches is the one that hid it. Comment lines right
// above a rule are its reason, shown with it in reports; blank lines end a comment.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

struct SuppressionRule {
  enum class Field { kFunction, kFile, kModule };
  Field field = Field::kFunction;
  std::string pattern;
  std::string reason;        // the comment above it, '#'s and blanks stripped; may be empty
  int line = 0;              // in its file, from 1
  std::string text() const;  // "function:cublasCreate*"
};

struct SuppressionParseError {
  int line = 0;
  std::string message;
};

// Parses a suppressions file's text. Empty rules on error (then *error says where and why).
std::vector<SuppressionRule> parse_suppressions(std::string_view text,
                                                SuppressionParseError* error);

// The index of the first rule matching a frame of `stack`, if any.
std::optional<std::size_t> matching_rule(const std::vector<SuppressionRule>& rules,
                                         const std::vector<storage::StackFrame>& stack);

}  // namespace vramtrace::analysis
