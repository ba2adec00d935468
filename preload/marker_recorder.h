// Markers (NVTX ranges and marks, the C API's) on the ring: the same record path as the
// allocation events, minus the stack, which a marker does not carry.
#pragma once

#include "wire_encoder.h"

namespace vramtrace::preload {

// Puts one Marker on the ring, with the calling thread's id. Nothing is recorded when the
// shim does not record, or when this thread is already inside the shim (a signal handler
// that interrupted a hook: taking the ring's lock again could deadlock).
void record_marker(MarkerEvent e);

// A Notice (severity DATA_LOSS) for the trace's stats: something the shim could not record
// as it was. Same conditions as record_marker.
void record_data_loss(const char* name, const char* text);

}  // namespace vramtrace::preload
