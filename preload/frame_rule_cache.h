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

// Drops every rule if objects were unloaded since the rules were last dropped this way.
// `unloads`: the loader's unload count (loader_unload_count()). The dlclose hook calls it, and
// so does the module scan, which also sees unloads the hook did not (the loader's own); an
// unload seen by both drops the rules once.
void forget_frame_rules_after_unloads(uint64_t unloads);

// Moves each time the rules are forgotten: what was derived from the old ones is stale.
uint64_t frame_rules_generation();

// How many rules were read from call frame information rather than found in the cache, so far:
// a stack whose walk read none points only into objects the walks had met before. The module
// scan (recorder.cpp) looks at the loader only when this moved.
uint64_t frame_rules_read();

}  // namespace vramtrace::preload
