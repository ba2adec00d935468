// What the fault-test programs say on stdout after each call has returned, so that a test
// knows what the trace must hold however the program ends: "alloc ADDR SIZE", "free ADDR".
// Each line is one write(2): atomic on a pipe, so forked children and signal handlers may
// announce too without interleaving.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdio>

inline void announce_line(const char* text, int length) {
  if (length <= 0) return;
  ssize_t ignored = write(STDOUT_FILENO, text, static_cast<size_t>(length));
  (void)ignored;
}

inline void announce_alloc(const void* address, size_t size) {
  char line[96];
  announce_line(line, std::snprintf(line, sizeof line, "alloc %p %zu\n", address, size));
}

inline void announce_free(const void* address) {
  char line[64];
  announce_line(line, std::snprintf(line, sizeof line, "free %p\n", address));
}
