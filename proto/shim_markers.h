// The markers the shim records of its own accord (wire Marker, SOURCE_SHIM; the trace's
// marker.source 'shim'), named here once for the shim that writes them and the readers that
// look for them.
#pragma once

namespace vramtrace::wire_markers {

// Put on the ring just before the first event after the process's Python interpreter began to
// finalize: what its teardown frees was still held when the program's own code ended, and the
// reports count what was live then as live at the end (docs/architecture.md).
inline constexpr char kPythonFinalizing[] = "python finalizing";

}  // namespace vramtrace::wire_markers
