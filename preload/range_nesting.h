// Per-thread nesting of push/pop ranges, which NVTX's push and pop return (the level of the
// range started or ended) and which is kept per domain. Kept whether or not the shim records,
// so the program always gets the same answers.
#pragma once

#include "nvtx_registry.h"

namespace vramtrace::preload {

// Each scope nests on its own: the C API, NVTX's default domain, and each NVTX domain.
inline constexpr unsigned kApiScope = 0;
inline constexpr unsigned kNvtxDefaultScope = 1;
inline constexpr unsigned kNestingScopes = 2 + kMaxNvtxDomains;

inline unsigned nesting_scope(const NvtxDomain* domain) {
  return domain == nullptr ? kNvtxDefaultScope : 2 + domain->index;
}

// A thread can have ranges open in this many NVTX domains at once (the default domain and
// the C API not counted): the nesting is kept in thread-local storage, which must stay small
// (see range_nesting.cpp).
inline constexpr unsigned kMaxDomainsOpenPerThread = 14;

// Opens a range on this thread: returns its 0-based level (the ranges open before it), or
// -1 when it cannot be tracked (a 15th domain with open ranges, or 65535 levels in one
// domain); then nothing is recorded for it, nor for the pop that NVTX pairs with it.
int enter_range(unsigned scope);

// Closes this thread's innermost range: returns its level, or -1 when none is open (NVTX:
// negative on error).
int leave_range(unsigned scope);

}  // namespace vramtrace::preload
