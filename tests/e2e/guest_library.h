// Checks shared by the tests of vramtrace's libraries that run inside someone else's process
// (the shim, the CUPTI library): they link libc alone, so that they cannot change which
// libstdc++, protobuf or unwinder the host process uses.
#pragma once

#include <gtest/gtest.h>

#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "process_runner.h"

namespace vramtrace::test {

// The non-empty lines of `text`.
inline std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

// ldd names the C library, the loader and the vDSO, nothing else.
inline void expect_links_only_libc(const char* library) {
  ProcessResult ldd = run_process({.argv = {"ldd", library}});
  ASSERT_EQ(ldd.exit_code(), 0) << ldd.err;
  const std::regex allowed(
      R"(^\s*(linux-vdso\.so\.1|libc\.so\.6 => \S+|/lib64/ld-linux-x86-64\.so\.2)\s)");
  std::vector<std::string> deps = lines(ldd.out);
  ASSERT_GE(deps.size(), 2u) << ldd.out;
  for (const auto& line : deps) EXPECT_TRUE(std::regex_search(line, allowed)) << line;
}

}  // namespace vramtrace::test
