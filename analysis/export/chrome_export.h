// The timeline as Chrome trace event JSON (the format of chrome://tracing, which
// ui.perfetto.dev opens too): {"displayTimeUnit": "ns", "traceEvents": [...]} with
// - "M" process_name / thread_name metadata (lanes of ranges that do not nest are threads named
//   "ranges (lane N)", tid 1000000000 + N),
// - "C" counter events, one per counter point: name "device 0 device live bytes",
//   args {"bytes": N},
// - "X" complete events for ranges (ts and dur),
// - "i" instant events for marks, allocations and frees ("s": "t", on their thread) and OOMs
//   ("s": "p", on the process).
// Events in the order they are found, not in time order (the format's viewers sort them).
// Times ("ts", "dur") in microseconds, as the format wants, with the nanoseconds as decimals.
#pragma once

#include <ostream>

#include "analysis/export/export_timeline.h"

namespace vramtrace::analysis {

inline constexpr std::int64_t kChromeLaneTidBase = 1'000'000'000;

// Writes the JSON document to `out`, each event as it is found (memory stays bounded whatever
// the trace's size); the caller checks the stream. Throws what export_timeline() throws.
ExportCounts write_chrome_trace(const storage::TraceReader& trace, const ExportOptions& options,
                                std::ostream& out);

}  // namespace vramtrace::analysis
