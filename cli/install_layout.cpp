#include "install_layout.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace vramtrace::cli {

std::optional<std::string> find_vramtrace_library(const char* name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  // VRAMTRACE_LIBDIR_FROM_BINDIR is the install layout's bin -> lib path; the build tree
  // mirrors the default layout (bin/, lib/vramtrace/).
  for (const char* relative : {VRAMTRACE_LIBDIR_FROM_BINDIR, "../lib/vramtrace"}) {
    fs::path candidate = (exe.parent_path() / relative / name).lexically_normal();
    if (access(candidate.c_str(), R_OK) == 0) return candidate.string();
  }
  return std::nullopt;
}

}  // namespace vramtrace::cli
