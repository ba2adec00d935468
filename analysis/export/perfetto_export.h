// The timeline as a Perfetto trace: a stream of TracePackets (the encoding of Perfetto's Trace
// message, so ui.perfetto.dev and trace_processor open it), written against the subset of
// Perfetto's schema in protos/ (upstream field numbers).
//
// One TrackDescriptor per process (ProcessDescriptor: pid, name, command line), per thread
// (ThreadDescriptor), per lane of ranges that do not nest (a child of its process), and per
// counter (a child of its process, CounterDescriptor unit UNIT_SIZE_BYTES); then TrackEvents in
// time order: TYPE_COUNTER with counter_value, TYPE_SLICE_BEGIN/END for ranges, TYPE_INSTANT
// for marks, allocations, frees and OOMs, with debug annotations for their arguments. All on one
// packet sequence (trusted_packet_sequence_id 1), timestamps in the trace's nanoseconds.
#pragma once

#include <ostream>

#include "analysis/export/export_timeline.h"

namespace vramtrace::analysis {

// The pid each exported process is shown with: its own, unless two exported processes share
// it (traces merged from several hosts), then 1000000 + upid, so that tracks never merge.
std::uint32_t export_pid(const ExportTimeline& timeline, const ExportProcess& process);

// Writes the trace to `out`; the caller checks the stream.
void write_perfetto_trace(const ExportTimeline& timeline, std::ostream& out);

}  // namespace vramtrace::analysis
