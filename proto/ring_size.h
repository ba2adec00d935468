// Ring sizes as people write them, for `vramtrace run --ring-size` and VRAMTRACE_RING_BYTES:
// one parser, so that the command refuses exactly what the shim would not take.
//
// Accepted: a whole number of bytes, then an optional unit K, M or G (powers of 1024; any case,
// with or without "iB" or "B": 64K, 64KiB, 64kb). The result is rounded up to a power of two
// (the ring's indexing needs one) and must lie within [kMinCapacity, kMaxCapacity]. Anything
// else is refused with the reason, never taken as some other size.
//
// libc only: the preload shim includes it.
#pragma once

#include <cstdint>

#include "shm_ring.h"

namespace vramtrace::ring {

// Each process's ring unless told otherwise: it holds a burst of about 300,000 allocation and
// free pairs at stack depth 16 (docs/performance.md), and costs memory only as far as its
// writers have come (RingProducer faults it in 8 MiB at a time, ahead of them).
inline constexpr uint64_t kDefaultCapacity = 32ull << 20;

enum class RingSizeProblem { kNone, kEmpty, kNotASize, kTooSmall, kTooLarge };

struct RingSize {
  uint64_t bytes = 0;  // a power of two within the limits, when problem is kNone
  RingSizeProblem problem = RingSizeProblem::kNone;
};

namespace detail {
// Whether `text` spells `unit` (lower case), in any case.
inline bool spells(const char* text, const char* unit) {
  for (; *unit != '\0'; ++text, ++unit) {
    const char c = (*text >= 'A' && *text <= 'Z') ? static_cast<char>(*text - 'A' + 'a') : *text;
    if (c != *unit) return false;
  }
  return *text == '\0';
}
}  // namespace detail

inline RingSize parse_ring_size(const char* text) {
  if (text == nullptr || *text == '\0') return {0, RingSizeProblem::kEmpty};
  uint64_t value = 0;
  const char* p = text;
  for (; *p >= '0' && *p <= '9'; ++p) {
    const auto digit = static_cast<uint64_t>(*p - '0');
    if (value > (UINT64_MAX - digit) / 10) return {0, RingSizeProblem::kTooLarge};
    value = value * 10 + digit;
  }
  if (p == text) return {0, RingSizeProblem::kNotASize};
  struct Unit {
    const char* spelling;
    int shift;
  };
  static constexpr Unit kUnits[] = {{"", 0},     {"b", 0},   {"k", 10},   {"kb", 10}, {"kib", 10},
                                    {"m", 20},   {"mb", 20}, {"mib", 20}, {"g", 30},  {"gb", 30},
                                    {"gib", 30}, {"t", 40},  {"tb", 40},  {"tib", 40}};
  int shift = -1;
  for (const Unit& unit : kUnits)
    if (detail::spells(p, unit.spelling)) shift = unit.shift;
  if (shift < 0) return {0, RingSizeProblem::kNotASize};
  if (value > (kMaxCapacity >> shift)) return {0, RingSizeProblem::kTooLarge};
  value <<= shift;
  if (value < kMinCapacity) return {0, RingSizeProblem::kTooSmall};
  uint64_t pow2 = kMinCapacity;
  while (pow2 < value) pow2 <<= 1;
  return {pow2, RingSizeProblem::kNone};
}

// What is wrong, for a message that goes on: "VRAMTRACE_RING_BYTES=abc: <this>".
inline const char* ring_size_problem_text(RingSizeProblem problem) {
  switch (problem) {
    case RingSizeProblem::kNone:
      return "a ring size";
    case RingSizeProblem::kEmpty:
      return "empty; give bytes with an optional K, M or G suffix, from 64K to 1G";
    case RingSizeProblem::kNotASize:
      return "not a size; give bytes with an optional K, M or G suffix, from 64K to 1G";
    case RingSizeProblem::kTooSmall:
      return "smaller than the smallest ring, 64K";
    case RingSizeProblem::kTooLarge:
      return "larger than the largest ring, 1G";
  }
  return "not a size";
}

}  // namespace vramtrace::ring
