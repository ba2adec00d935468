// IngestStats: the ingest's counters of what went wrong or was unusual, written to the trace's
// stats table at the end.
//
// Every stat the collector knows is one row of VRAMTRACE_INGEST_STATS: its enum name, its name
// in the stats table, its severity, whether it is written even at 0, and what it counts.
// Counting one is an array increment, cheap enough for the hot path. The shim's Notices carry
// names only known at run time; they are kept apart, by name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "storage/trace_rows.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

// X(enum name, stats table name, severity, written, description). Written: kAlways for stats
// a reader expects in every trace, kIfCounted for those written only once they happened.
#define VRAMTRACE_INGEST_STATS(X)                                                                 \
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

enum class Stat {
#define VRAMTRACE_STAT_ENUM(id, name, severity, written, description) id,
  VRAMTRACE_INGEST_STATS(VRAMTRACE_STAT_ENUM)
#undef VRAMTRACE_STAT_ENUM
      kCount
};

enum class StatWritten { kIfCounted, kAlways };

// One row of the table, as the trace's stats table shows it.
struct StatInfo {
  Stat stat;
  std::string_view name;
  storage::Severity severity;
  StatWritten written;
  std::string_view description;
};

inline constexpr std::array<StatInfo, static_cast<std::size_t>(Stat::kCount)> kStatInfo = {{
#define VRAMTRACE_STAT_ROW(id, name, severity, written, description) \
  {Stat::id, name, storage::Severity::severity, StatWritten::written, description},
    VRAMTRACE_INGEST_STATS(VRAMTRACE_STAT_ROW)
#undef VRAMTRACE_STAT_ROW
}};

constexpr bool stat_rows_in_enum_order() {
  for (std::size_t i = 0; i < kStatInfo.size(); ++i)
    if (static_cast<std::size_t>(kStatInfo[i].stat) != i) return false;
  return true;
}
static_assert(stat_rows_in_enum_order(), "kStatInfo[i] must describe Stat value i");

class IngestStats {
 public:
  void add(Stat stat, int64_t by = 1) { values_[static_cast<std::size_t>(stat)] += by; }
  void set(Stat stat, int64_t value) { values_[static_cast<std::size_t>(stat)] = value; }
  int64_t value(Stat stat) const { return values_[static_cast<std::size_t>(stat)]; }

  // A stat the shim named in a Notice. The first description given for a name is kept.
  void add_notice(const std::string& name, storage::Severity severity,
                  const std::string& description, int64_t by);

  // Every stat that happened, and those always written, to the trace's stats table.
  void write(storage::TraceWriter& writer) const;

 private:
  std::array<int64_t, static_cast<std::size_t>(Stat::kCount)> values_{};
  struct Notice {
    storage::Severity severity;
    std::string description;
    int64_t value = 0;
  };
  std::map<std::string, Notice, std::less<>> notices_;
};

}  // namespace vramtrace::collector
