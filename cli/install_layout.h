// Where vramtrace finds its own files: relative to the running executable, so that a build
// tree and any `cmake --install` prefix work without configuration.
#pragma once

#include <optional>
#include <string>

namespace vramtrace::cli {

inline constexpr const char* kPreloadLibraryName = "libvramtrace_preload.so";

// The shim to put in LD_PRELOAD, or nothing if it is not where it should be.
std::optional<std::string> find_preload_library();

}  // namespace vramtrace::cli
