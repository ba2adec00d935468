// Every stat a trace's `stats` table can hold, whichever part of vramtrace counts it: one row
// each, with its name, severity, when it is written and what it counts. docs/schema.md's table
// of stats is held to these rows by trace_stats_test, which also reads the shim's sources for
// the notices they send.
//
// One list per source, so that each part can make its own enumeration of the stats it counts:
// - the collector's ingest (collector/ingest_stats.h counts them by an enum of these rows);
// - the trace writer, for updates that named a row never added (storage/trace_file_writer.cpp);
// - the shim's notices (preload/, cupti/): the shim cannot include storage, so it sends each by
//   its name without the `shim_` prefix, with its own severity and text; the test holds those to
//   these rows. A newer shim may send names this build lacks: they are written all the same.
// - the time index's build: events whose times cannot be right, counted not in `stats` but in
//   the index's own table time_problem, a row per process and problem, made again whenever the
//   index is rebuilt (storage/time_index_rows.h names them from here).
#pragma once

#include <array>
#include <cstddef>
#include <string_view>

#include "storage/trace_rows.h"

namespace vramtrace::storage {

enum class StatSource { kShim, kCollector, kWriter, kIndex };

// kAlways: a reader expects the stat in every trace, 0 included; kIfCounted: written only once
// it happened.
enum class StatWritten { kIfCounted, kAlways };

struct TraceStat {
  std::string_view name;
  StatSource source;
  Severity severity;
  StatWritten written;
  std::string_view description;
};

// Each list: X(enumerator, name in the stats table, severity, written, what it counts).

// The collector's ingest: odd input, and what was lost.
#define VRAMTRACE_COLLECTOR_STATS(X)                                                              \
  X(kRecordUndecodable, "record_undecodable", kDataLoss, kIfCounted,                              \
    "ring records that did not decode as a vramtrace.wire.Envelope")                              \
  X(kRecordUnknownMessage, "record_unknown_message", kInfo, kIfCounted,                           \
    "records of a message type this collector does not know (a newer shim)")                      \
  X(kConnectionsRefused, "connections_refused", kError, kIfCounted,                               \
    "connections to the collector refused: another user, or a bad handshake")                     \
  X(kRingCorrupt, "ring_corrupt", kDataLoss, kIfCounted,                                          \
    "rings that held a record that cannot be valid; the records after it are lost")               \
  X(kRecordingStopped, "recording_stopped", kDataLoss, kIfCounted,                                \
    "processes that stopped recording while they ran on (the collector stalled or went away): "   \
    "their events after that are missing")                                                        \
  X(kExecUntraced, "exec_untraced", kDataLoss, kIfCounted,                                        \
    "processes that exec'd a program the shim was not loaded into (LD_PRELOAD removed from its "  \
    "environment, or a set-user-ID program): what that program did is not in the trace")          \
  X(kProcessStartMissing, "process_start_missing", kDataLoss, kIfCounted,                         \
    "rings whose first record was not the process's start")                                       \
  X(kProcessStartRepeated, "process_start_repeated", kError, kIfCounted,                          \
    "rings that announced their process twice")                                                   \
  X(kProcessPidMismatch, "process_pid_mismatch", kError, kIfCounted,                              \
    "rings whose process named another pid than the one that handed the ring over")               \
  X(kProcessArgvCut, "process_argv_cut", kInfo, kIfCounted,                                       \
    "processes whose arguments passed the shim's 16 KiB: process.argv holds the whole "           \
    "arguments before the first that did not fit")                                                \
  X(kProcessWithoutUnwinder, "process_without_unwinder", kDataLoss, kIfCounted,                   \
    "processes whose shim found no stack unwinder: their events have no stacks")                  \
  X(kModuleInvalid, "module_invalid", kInfo, kIfCounted,                                          \
    "module records with an empty range or path")                                                 \
  X(kFrameOutsideModules, "frame_outside_modules", kInfo, kIfCounted,                             \
    "distinct stack addresses outside every module the process reported (JIT code?)")             \
  X(kPythonCodeInvalid, "python_code_invalid", kInfo, kIfCounted,                                 \
    "Python code records without an id")                                                          \
  X(kPythonCodeUnknown, "python_code_unknown", kDataLoss, kIfCounted,                             \
    "Python frames whose code object was never announced (module 0, no name)")                    \
  X(kPythonStackMismatched, "python_stack_mismatched", kInfo, kIfCounted,                         \
    "events whose Python code and line lists differ in length (the shorter is used)")             \
  X(kPythonStackWithoutGil, "python_stack_without_gil", kInfo, kIfCounted,                        \
    "events on Python threads that had released the GIL: native stack only (the shim "            \
    "never takes the GIL inside a hook)")                                                         \
  X(kPythonStackUnavailable, "python_stack_unavailable", kInfo, kIfCounted,                       \
    "events whose Python frames could not be read (interpreter finalizing, or the "               \
    "shim's table of code objects full): native stack only")                                      \
  X(kPythonStackReadWithoutGil, "python_stack_read_without_gil", kInfo, kIfCounted,               \
    "events on Python threads without the GIL whose Python frames the shim read "                 \
    "directly, by the interpreter's layout (python_layout.h)")                                    \
  X(kPythonStackTruncated, "python_stack_truncated", kInfo, kIfCounted,                           \
    "events whose Python stack was cut at the wire's depth limit (128 frames)")                   \
  X(kStackTooDeep, "stack_too_deep", kError, kIfCounted,                                          \
    "events whose stack was deeper than the wire allows")                                         \
  X(kStackTruncated, "stack_truncated", kInfo, kIfCounted,                                        \
    "events whose stack was cut at the wire's depth limit (256 frames)")                          \
  X(kStackNameUnknown, "stack_name_unknown", kDataLoss, kIfCounted,                               \
    "events whose stack was sent as a name the process never defined: no stack")                  \
  X(kStacksByName, "stacks_by_name", kInfo, kAlways,                                              \
    "events whose stack came as the name of one sent before on its thread "                       \
    "(stack names: each thread sends a stack's frames once)")                                     \
  X(kBlockWithoutSegment, "block_without_segment", kInfo, kIfCounted,                             \
    "allocator blocks with no live recorded segment (cudaMalloc or VMM mapping) "                 \
    "holding them")                                                                               \
  X(kAllocOverLiveAddress, "alloc_over_live_address", kDataLoss, kIfCounted,                      \
    "allocations at an address still live in the trace (its free was not recorded)")              \
  X(kFreeFailedUnmatched, "free_failed_unmatched", kInfo, kIfCounted,                             \
    "failed frees whose free record was not found")                                               \
  X(kNestedFreeUnmatched, "nested_free_unmatched", kInfo, kIfCounted,                             \
    "frees made inside another hook (a signal handler's, or the library's own work) at an "       \
    "address not live: the library's bookkeeping, not reported as bad frees")                     \
  X(kMarkerPopWithoutPush, "marker_pop_without_push", kInfo, kIfCounted,                          \
    "range pops on a thread with no range pushed")                                                \
  X(kMarkerEndWithoutStart, "marker_end_without_start", kInfo, kIfCounted,                        \
    "range ends whose start was not recorded")                                                    \
  X(kMarkerUnknownType, "marker_unknown_type", kInfo, kIfCounted,                                 \
    "markers of a type this collector does not know (a newer shim)")                              \
  X(kCuptiActivityMatchedByAddress, "cupti_activity_matched_by_address", kInfo, kIfCounted,       \
    "CUPTI memory records whose correlation id named no callback, matched to the latest "         \
    "callback event at their address instead")                                                    \
  X(kCuptiActivityAllocationWithoutCallback, "cupti_activity_allocation_without_callback", kInfo, \
    kIfCounted,                                                                                   \
    "CUPTI allocation records whose API call no callback recorded: memory that only "             \
    "CUPTI's activity saw (memory_activity rows with allocation_id NULL)")                        \
  X(kCuptiActivityReleaseWithoutCallback, "cupti_activity_release_without_callback", kInfo,       \
    kIfCounted,                                                                                   \
    "CUPTI release records whose API call no callback recorded as a free of a live "              \
    "allocation (memory_activity rows with allocation_id NULL)")                                  \
  X(kLiveCheckpointsDropped, "live_checkpoints_dropped", kInfo, kIfCounted,                       \
    "live checkpoints dropped unanswered, the oldest of too many open at once")                   \
  X(kLiveQueryUnknownCheckpoint, "live_query_unknown_checkpoint", kInfo, kIfCounted,              \
    "live queries on a checkpoint never made, already answered or dropped")                       \
  X(kLiveQueryUnanswered, "live_query_unanswered", kInfo, kIfCounted,                             \
    "live queries read with no way to answer them")                                               \
  X(kSymbolizerModulesMissing, "symbolizer_modules_missing", kInfo, kAlways,                      \
    "modules whose file was not found or not readable: their frames have no names")               \
  X(kSymbolizerBuildIdMismatch, "symbolizer_build_id_mismatch", kInfo, kAlways,                   \
    "modules whose file on disk is another build than the one the process ran")                   \
  X(kSymbolizerUnresolved, "symbolizer_unresolved", kInfo, kAlways,                               \
    "distinct addresses that got no function name")

// The trace writer's: the collector updated a row that was never added. Collector bugs, but a
// trace with them is still worth keeping, so they are counted, not fatal.
#define VRAMTRACE_WRITER_STATS(X)                                                              \
  X(kStorageFreeOfUnknownAllocation, "storage_free_of_unknown_allocation", kError, kIfCounted, \
    "the collector updated a row that was never added (a collector bug)")                      \
  X(kStorageEndOfUnknownProcess, "storage_end_of_unknown_process", kError, kIfCounted,         \
    "the collector updated a row that was never added (a collector bug)")                      \
  X(kStorageNameOfUnknownThread, "storage_name_of_unknown_thread", kError, kIfCounted,         \
    "the collector updated a row that was never added (a collector bug)")                      \
  X(kStorageEndOfUnknownMarker, "storage_end_of_unknown_marker", kError, kIfCounted,           \
    "the collector updated a row that was never added (a collector bug)")                      \
  X(kStorageFoldedAllocations, "storage_folded_allocations", kInfo, kIfCounted,                \
    "short-lived allocations stored as instances of runs of repeated bins "                    \
    "(allocation_chunk_repeat): exact but for their times, interpolated within each bin")      \
  X(kStorageFoldedBins, "storage_folded_bins", kInfo, kIfCounted,                              \
    "bins of 4,096 numbers whose packed allocations repeat a chunk stored before, stored as "  \
    "instances of runs")

// The shim's notices, as the collector names them: `shim_` and the name the shim sends.
#define VRAMTRACE_SHIM_STATS(X)                                                                 \
  X(kShimPythonLayoutRejected, "shim_python_layout_rejected", kInfo, kIfCounted,                \
    "the Python frames of threads without the GIL could not be read in this "                   \
    "interpreter (an unknown build?); those events keep their native stacks")                   \
  X(kShimNativeStackByLibunwind, "shim_native_stack_by_libunwind", kInfo, kIfCounted,           \
    "native stacks that the shim's walk by frame rules declined (a signal frame, code without " \
    "call frame information such as JIT code, a stack not the thread's own), walked by "        \
    "libunwind instead: the same frames, at several times the cost")                            \
  X(kShimCallsUnrecorded, "shim_calls_unrecorded", kDataLoss, kIfCounted,                       \
    "allocation calls that a signal handler made while the shim was inside a hook on the same " \
    "thread, and frees of such handlers that found the shim's queue of deferred frees full: "   \
    "not recorded")                                                                             \
  X(kShimRingFullWaits, "shim_ring_full_waits", kInfo, kIfCounted,                              \
    "writes that found the process's ring full and waited for the collector: the program ran "  \
    "at the collector's pace (a larger --ring-size absorbs a longer burst)")                    \
  X(kShimRingFullWaitMs, "shim_ring_full_wait_ms", kInfo, kIfCounted,                           \
    "milliseconds the process's writes waited on a full ring, in all threads together")         \
  X(kShimNvtxDomainsFull, "shim_nvtx_domains_full", kDataLoss, kIfCounted,                      \
    "the program created more NVTX domains than the shim's table holds; the later ones are "    \
    "recorded as the domain \"overflow\"")                                                      \
  X(kShimNvtxStringsFull, "shim_nvtx_strings_full", kDataLoss, kIfCounted,                      \
    "the program registered more NVTX strings than the shim's table holds; the later ones are " \
    "recorded as \"overflow\"")                                                                 \
  X(kShimCuptiUnavailable, "shim_cupti_unavailable", kError, kIfCounted,                        \
    "the CUPTI backend recorded nothing: why (CUPTI refused, or another tool holds it)")        \
  X(kShimCuptiActivityDropped, "shim_cupti_activity_dropped", kDataLoss, kIfCounted,            \
    "CUPTI dropped activity records: its buffers were full")

// The time index's, in time_problem's column `problem` (docs/schema.md, "time_problem").
#define VRAMTRACE_INDEX_STATS(X)                                                               \
  X(kTimeBeforeProcessStart, "before_process_start", kDataLoss, kIfCounted,                    \
    "events timed before their process started: reports over time take them as at its start")  \
  X(kTimeAfterProcessEnd, "after_process_end", kDataLoss, kIfCounted,                          \
    "events timed after their process ended: reports over time take them as at its end")       \
  X(kTimeOutOfOrder, "out_of_order", kDataLoss, kIfCounted,                                    \
    "events timed earlier than the process's event before them: a moment given as a time can " \
    "fall on either side of them")

// Every stat, whatever its source; each enumerator names its row of kTraceStats.
// clang-format off
enum class TraceStatId {
#define VRAMTRACE_TRACE_STAT_ID(id, name, severity, written, description) id,
  VRAMTRACE_COLLECTOR_STATS(VRAMTRACE_TRACE_STAT_ID)
  VRAMTRACE_WRITER_STATS(VRAMTRACE_TRACE_STAT_ID)
  VRAMTRACE_SHIM_STATS(VRAMTRACE_TRACE_STAT_ID)
  VRAMTRACE_INDEX_STATS(VRAMTRACE_TRACE_STAT_ID)
#undef VRAMTRACE_TRACE_STAT_ID
  kCount
};

#define VRAMTRACE_TRACE_STAT_ROW(source, id, name, severity, written, description) \
  {name, StatSource::source, Severity::severity, StatWritten::written, description},
#define VRAMTRACE_COLLECTOR_STAT_ROW(...) VRAMTRACE_TRACE_STAT_ROW(kCollector, __VA_ARGS__)
#define VRAMTRACE_WRITER_STAT_ROW(...) VRAMTRACE_TRACE_STAT_ROW(kWriter, __VA_ARGS__)
#define VRAMTRACE_SHIM_STAT_ROW(...) VRAMTRACE_TRACE_STAT_ROW(kShim, __VA_ARGS__)
#define VRAMTRACE_INDEX_STAT_ROW(...) VRAMTRACE_TRACE_STAT_ROW(kIndex, __VA_ARGS__)
inline constexpr std::array<TraceStat, static_cast<std::size_t>(TraceStatId::kCount)> kTraceStats{{
  VRAMTRACE_COLLECTOR_STATS(VRAMTRACE_COLLECTOR_STAT_ROW)
  VRAMTRACE_WRITER_STATS(VRAMTRACE_WRITER_STAT_ROW)
  VRAMTRACE_SHIM_STATS(VRAMTRACE_SHIM_STAT_ROW)
  VRAMTRACE_INDEX_STATS(VRAMTRACE_INDEX_STAT_ROW)
}};
#undef VRAMTRACE_INDEX_STAT_ROW
#undef VRAMTRACE_SHIM_STAT_ROW
#undef VRAMTRACE_WRITER_STAT_ROW
#undef VRAMTRACE_COLLECTOR_STAT_ROW
#undef VRAMTRACE_TRACE_STAT_ROW
// clang-format on

constexpr const TraceStat& trace_stat(TraceStatId id) {
  return kTraceStats[static_cast<std::size_t>(id)];
}

// The row of `name`; null for a name no row has (a newer shim's notice, say).
constexpr const TraceStat* find_trace_stat(std::string_view name) {
  for (const TraceStat& stat : kTraceStats)
    if (stat.name == name) return &stat;
  return nullptr;
}

constexpr bool trace_stat_names_unique() {
  for (std::size_t i = 0; i < kTraceStats.size(); ++i)
    if (find_trace_stat(kTraceStats[i].name) != &kTraceStats[i]) return false;
  return true;
}
static_assert(trace_stat_names_unique(), "two stats of storage/trace_stats.h have one name");

// Only the collector writes a stat that did not happen: the writer and the shim say only what
// they counted.
constexpr bool only_the_collector_writes_zeros() {
  for (const TraceStat& stat : kTraceStats)
    if (stat.written == StatWritten::kAlways && stat.source != StatSource::kCollector) return false;
  return true;
}
static_assert(only_the_collector_writes_zeros(), "a stat the collector does not count is kAlways");

}  // namespace vramtrace::storage
