// The CUPTI backend's activity records: CUPTI fills buffers we hand it with MEMORY2 and
// MEMORY_POOL records and gives them back, full or flushed, on a thread of its own. Each record
// goes on the ring as a MemoryActivity (activity_translation.h); records CUPTI had to drop are
// said once in a Notice.
#pragma once

#include <cupti.h>

#include "cupti_library.h"

namespace vramtrace::cupti {

// Registers the buffer callbacks and enables MEMORY2 and MEMORY_POOL records. Returns the first
// failure; on failure the API callbacks still work.
CUptiResult enable_memory_activity(const CuptiLibrary& cupti);

// Hands back the records CUPTI still holds (at process exit).
void flush_memory_activity();

}  // namespace vramtrace::cupti
