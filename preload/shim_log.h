// Messages from inside the target process: to stderr with write(2), no stdio, no allocation,
// prefixed "vramtrace: " so the user can tell them from the program's own output.
#pragma once

namespace vramtrace::preload {

// Writes "vramtrace: <a><b><c>\n" in one write(2) call; null parts are skipped.
void shim_log(const char* a, const char* b = nullptr, const char* c = nullptr);

}  // namespace vramtrace::preload
