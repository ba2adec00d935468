#include "shim_log.h"

#include <unistd.h>

#include <cstring>

namespace vramtrace::preload {

void shim_log(const char* a, const char* b, const char* c) {
  char line[512];
  size_t n = 0;
  auto append = [&](const char* s) {
    if (s == nullptr) return;
    size_t len = std::strlen(s);
    if (len > sizeof line - 1 - n) len = sizeof line - 1 - n;
    std::memcpy(line + n, s, len);
    n += len;
  };
  append("vramtrace: ");
  append(a);
  append(b);
  append(c);
  line[n++] = '\n';
  ssize_t ignored = write(STDERR_FILENO, line, n);
  (void)ignored;
}

}  // namespace vramtrace::preload
