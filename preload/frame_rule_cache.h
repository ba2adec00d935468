// Frame rules by instruction address, shared by every thread of the process.
//
// Reading a rule from the call frame information takes microseconds; a training loop meets the
// same few hundred call sites millions of times. The cache is a fixed table (no allocation),
// four ways per set, read without locks: a writer holds a flag while it fills a slot, and a
// reader that sees the slot change under it takes the slow path. A thread that finds the flag
// taken (another writer, or itself from a signal handler) does not wait: it uses the rule
// without caching it.
#pragma once

#include <cstdint>

#include "frame_rules.h"

namespace vramtrace::preload {

// The rule for `pc` (see find_frame_rule), from the cache or else read and remembered.
FrameRule cached_frame_rule(uintptr_t pc);

// Drops every rule: after an object is unloaded, another may be loaded at its addresses.
void forget_frame_rules();

// Moves each time the rules are forgotten: what was derived from the old ones is stale.
uint64_t frame_rules_generation();

}  // namespace vramtrace::preload
