// Where vramtrace finds its own files: relative to the running executable, so that a build
// tree and any `cmake --install` prefix work without configuration.
#pragma once

#include <optional>
#include <string>

namespace vramtrace::cli {

inline constexpr const char* kPreloadLibraryName = "libvramtrace_preload.so";
// Built only where the CUDA toolkit has CUPTI (cupti/).
inline constexpr const char* kCuptiLibraryName = "libvramtrace_cupti.so";

// One of vramtrace's libraries (kPreloadLibraryName, kCuptiLibraryName), or nothing if it is
// not where it should be.
std::optional<std::string> find_vramtrace_library(const char* name);

// The shim to put in LD_PRELOAD, or nothing if it is not where it should be.
inline std::optional<std::string> find_preload_library() {
  return find_vramtrace_library(kPreloadLibraryName);
}

}  // namespace vramtrace::cli
