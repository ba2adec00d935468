// TraceReader: reads a trace for analysis/, the CLI and the viewer.
//
// Contract:
// - Opens read-only, also while a collector is still writing (WAL mode): every query sees
//   what the collector had committed when the query started.
// - open() tells apart the ways a file can fail to be a readable trace, each with a one-line
//   message naming the file and what to do. A write that was interrupted (a rollback journal left
//   next to the trace: the time index's build killed) is rolled back first, as SQLite does on
//   a read-write open; where this user cannot write the trace, open() says so and how to
//   recover instead. An incomplete trace (the collector did not finish)
//   is not a failure: complete() is false and the reports say so.
// - A query that fails later (the file is damaged past its first pages, or vanished) throws
//   TraceError, whose what() is again one line naming the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "storage/allocation_filter.h"
#include "storage/trace_error.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

struct OpenFailure {
  enum class Reason {
    kMissing,      // no such file
    kUnreadable,   // a directory, a FIFO or other non-regular file, no permission, an I/O
                   // error, or a write interrupted in a file this user cannot write
    kNotATrace,    // not SQLite, or SQLite without vramtrace's application_id and tables
    kNewerSchema,  // written by a newer vramtrace (user_version above kSchemaVersion)
    kOlderSchema,  // a schema before kSchemaVersion, which no release wrote
    kCorrupt,      // truncated or otherwise damaged
  };
  Reason reason = Reason::kNotATrace;
  std::string message;  // one line, naming the file and what to do
};

// Serves one thread at a time (its connection runs without SQLite's mutexes): a thread that
// reads in parallel opens a reader of its own, as the viewer's second stage thread does.
class TraceReader {
 public:
  static std::unique_ptr<TraceReader> open(const std::filesystem::path& path, OpenFailure* failure);
  ~TraceReader();
  TraceReader(const TraceReader&) = delete;
  TraceReader& operator=(const TraceReader&) = delete;

  const std::filesystem::path& path() const;
  int schema_version() const;
  // meta complete = '1': the collector finished cleanly. Read once, at open().
  bool complete() const;
  // The meta table as it was at open().
  const std::map<std::string, std::string, std::less<>>& meta() const;
  std::optional<std::string> meta_value(std::string_view key) const;
  // meta 'command' (the recorded command's argv); empty when the collector did not set it.
  std::vector<std::string> recorded_command() const;
  // Fields that do not hold what the schema says (a process.argv that is not a JSON array of
  // strings, ...) but that the reader can read around, one sentence each, found at open():
  // the reports show them as warnings. A NULL where the schema forbids one, or a value out of
  // its field's range, is not read around: the query throws TraceError naming table.column.
  const std::vector<std::string>& damaged_fields() const;

  // Names from the trace's own allocation_kind and api tables; "kind_<id>" or "api_<id>" for
  // an id the trace does not name.
  std::string kind_name(int kind) const;
  std::string api_name(int api) const;

  std::vector<ProcessRecord> processes() const;  // by upid
  std::vector<ThreadRecord> threads() const;     // by utid
  // What recorded each process (process.backend: kBackendPreload or kBackendCupti), by upid. A
  // trace from before the column says kBackendPreload for every process.
  std::map<std::int64_t, std::string> process_backends() const;

  // In (upid, alloc_seq) order unless filter.in_table_order. The callback must not call back
  // into the reader.
  void for_each_allocation(const AllocationFilter& filter,
                           const std::function<void(const AllocationRecord&)>& visit) const;
  std::vector<AllocationRecord> allocations(const AllocationFilter& filter) const;

  // The allocations added up per (upid, device, kind, result), in that order.
  std::vector<AllocationTotalsRow> allocation_totals() const;

  // A caching allocator's own totals (allocated, reserved) as its latest report at or before
  // event `seq` of process `upid` gave them: the block event (an allocation, failed ones
  // included, or a free) that carried them. Both unset: no report by then.
  struct AllocatorTotalsAt {
    std::optional<std::uint64_t> allocated, reserved;
  };
  AllocatorTotalsAt allocator_totals_at(std::int64_t upid, std::uint64_t seq) const;

  // Every successful allocation and every free of one, in (upid, seq) order: the order in
  // which each process saw its memory come and go.
  // With `upid`, that process's alone. SQLite sorts them (in its temporary files, not in memory,
  // beyond a few MiB).
  void for_each_allocation_event(const std::function<void(const AllocationEvent&)>& visit,
                                 std::optional<std::int64_t> upid = std::nullopt) const;

  std::vector<BadFreeRow> bad_frees() const;  // in (upid, seq) order
  // The device's free and total bytes after each failure for lack of memory that recorded them,
  // by the failed allocation's id (few: one per failure). Empty for a trace written before
  // vramtrace recorded them.
  std::map<std::int64_t, DeviceMemoryRow> failure_device_memory() const;
  // The processes that recorded anything of the GPU: an allocation (a failed one too), a bad
  // free, or a marker of the program's own (not the shim's). By upid. Cheap: one index
  // search per process found, not a scan of the allocations.
  std::vector<std::int64_t> upids_with_gpu_events() const;
  // Failed allocations that returned `result` (cudaErrorMemoryAllocation: 2), per upid and
  // kind. Found through the allocation sites that failed so, not by a scan of the allocations.
  std::map<std::pair<std::int64_t, int>, std::uint64_t> failures_by_process_and_kind(
      int result) const;
  // Marks and ranges, in (upid, start_seq) order.
  std::vector<MarkerRecord> markers() const;

  // Where a process's own code ended, when it ended before the process did: the "python
  // finalizing" marker (proto/shim_markers.h), after which the interpreter's teardown frees
  // what the program still held. Unset: the end of the trace.
  std::optional<std::uint64_t> program_end_seq(std::int64_t upid) const;
  // Held when the program ended: allocated before its program end and not freed before it;
  // without one, never freed. This is what every report means by "live at the end", and what
  // AllocationFilter::Lifetime::kLiveAtEnd selects.
  bool live_at_program_end(const AllocationRecord& record) const;
  std::vector<StatRecord> stats() const;  // by name

  // The stack whose leaf is callsite_id, innermost frame first; empty for no callsite. A chain
  // that breaks off (a parent id without a row) ends where it breaks, as far as it is known. A
  // chain that comes back to a callsite already in it ends before the repeat, and one deeper
  // than kMaxStackDepth after that many frames; either then ends with a frame marking the cut
  // (StackFrame::cut).
  std::vector<StackFrame> stack(std::optional<std::int64_t> callsite_id) const;
  // The wire's 256 native and 128 Python frames, with room for the inlined calls that
  // symbolizing adds: a chain deeper than this is damage, not a stack.
  static constexpr std::size_t kMaxStackDepth = 4096;

 private:
  struct Impl;
  explicit TraceReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vramtrace::storage
