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
//
// The events are put in time order by an external sort (spilled_sort.h): memory stays bounded
// whatever the trace's size, and $TMPDIR needs room for about the output's size meanwhile.
#pragma once

#include <ostream>

#include "analysis/export/export_timeline.h"

namespace vramtrace::analysis {

// Writes the trace's timeline to `out`; the caller checks the stream. Throws what
// export_timeline() throws, and std::runtime_error when the sort's temporary files cannot be
// written.
ExportCounts write_perfetto_trace(const storage::TraceReader& trace, const ExportOptions& options,
                                  std::ostream& out);

}  // namespace vramtrace::analysis
