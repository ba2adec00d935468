// TraceFileWriter: creates a trace file and fills it with SQLite, on the thread that calls it.
// TraceWriter (storage/trace_writer.h) is what the rest of vramtrace uses: it calls this one
// directly, or hands the calls to a thread of its own.
//
// Contract:
// - Ids are the caller's (the collector interns them); the writer never invents one.
// - Writes are batched into one transaction that flush() commits; readers (WAL mode) see
//   everything up to the last flush, also while the collector still runs, but for allocations
//   still live that were made in their process's last kShortLifeEvents numbers: with packing,
//   flush() holds those back to the next flush (a short life cut in two by a commit would be a
//   row, and the bin it is in no repeat of the bins before it), never longer.
// - Allocation rows given in ascending id order (the collector's) are held in memory until
//   their free or the next commit, whichever comes first, so that most are written once,
//   complete, by an append: no UPDATE, and full B-tree pages. A commit writes the rest without
//   their free, as before; set_free() then updates them. Nothing of this shows in the file.
// - The first failure (disk full, a duplicate id, ...) is sticky: ok() turns false, error()
//   keeps the first message, and every later call is a no-op. Nothing throws.
// - finish() makes the file stand alone: indexes, meta complete = '1', WAL checkpointed and
//   journal_mode = DELETE (which SQLite cannot do while a reader has the file open: the trace
//   then stays in WAL mode, complete all the same). A writer destroyed without finish()
//   commits what it has and leaves complete = '0', so the reports flag the trace incomplete.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::storage {

class TraceFileWriter {
 public:
  // What the writer keeps up of the reports' indexes while it records, so that finishing
  // need not read the trace again. kAsRowsArrive: the allocation table's indexes from the
  // start, and the time index's live spans, each process's time range, the allocator's
  // segments and processes (storage/live_span.h), written as each allocation's row and free
  // are; finish() adds what is still live. The time index's build then reads them instead
  // of the trace (docs/schema.md, "Time index"). A free undone (clear_free) or rows out of
  // id order leave all of it to the build instead, as kNone does.
  enum class TimeIndexUpkeep { kNone, kAsRowsArrive };
  // With kAsRowsArrive, who makes the rollups (storage/live_bytes_rollups.h): the writer as
  // rows arrive, while each process's events come in sequence order with rising times within
  // its span (as the build would take them), or the build, which reads the trace for them.
  enum class RollupUpkeep { kAtBuild, kAsRowsArrive };
  // How the allocations are stored. kRows: one row of allocation_compact each. kPackShortLives:
  // those whose life is short (made in a bin of the time index's level 0, freed in it or the
  // next), with no details and no block inside them, many to a row of allocation_chunk
  // (storage/allocation_chunk.h), a chunk per process and bin; the others as rows. Only with
  // kAsRowsArrive, whose index of allocations by number is how readers find the chunks' level 0
  // (else kRows).
  // kPackAndFoldRepeats: packed, and a bin whose packed allocations repeat a chunk stored before
  // (a steady loop's) stored as an instance of a run (storage/chunk_repeat.h), exact but for
  // times within the bin.
  enum class AllocationPacking { kRows, kPackShortLives, kPackAndFoldRepeats };

  // Creates a new trace. Fails (nullptr, *error set to a one-line reason) if the file exists
  // or cannot be created.
  static std::unique_ptr<TraceFileWriter> create(
      const std::filesystem::path& path, std::string* error,
      TimeIndexUpkeep upkeep = TimeIndexUpkeep::kNone,
      RollupUpkeep rollups = RollupUpkeep::kAtBuild,
      AllocationPacking packing = AllocationPacking::kRows);
  ~TraceFileWriter();
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  // meta rows; a later value for the same key replaces the earlier one. The writer itself sets
  // vramtrace_version, created_realtime_ns and complete.
  void set_meta(std::string_view key, std::string_view value);
  // meta 'command': the recorded command's argv, as a JSON array.
  void set_command(const std::vector<std::string>& argv);

  void add_process(const ProcessRow& row);
  void end_process(const ProcessEndRow& row);
  void add_thread(std::int64_t utid, std::int64_t upid, std::uint32_t tid);
  void set_thread_name(std::int64_t utid, std::string_view name);
  // An empty build_id_hex is stored as NULL (the object has no build id).
  void add_module(std::int64_t id, std::string_view path, std::string_view build_id_hex);
  void add_mapping(std::int64_t id, std::int64_t upid, std::int64_t module_id, std::uint64_t start,
                   std::uint64_t end, std::uint64_t load_bias);
  void add_frame(const FrameRow& row);
  void add_callsite(std::int64_t id, std::optional<std::int64_t> parent_id, std::int64_t frame_id,
                    int depth);
  void add_allocation(const AllocationRow& row);
  // Marks an allocation freed. An unknown allocation id is counted in the stat
  // `storage_free_of_unknown_allocation` (written by finish()), not treated as a failure.
  void set_free(std::int64_t allocation_id, const FreeRow& row);
  // The free failed after all: the allocation is live again.
  void clear_free(std::int64_t allocation_id);
  void add_bad_free(const BadFreeRow& row);
  // A failure for lack of memory (the allocation row of `allocation_id`): the device's free and
  // total bytes after it.
  void add_failure_device_memory(std::int64_t allocation_id, std::uint64_t device_free,
                                 std::uint64_t device_total);
  // The real free of a bad_free row failed too: its result, and the failed call's stack where
  // the row has none.
  void fail_bad_free(std::int64_t bad_free_id, std::int32_t result,
                     std::optional<std::int64_t> callsite_id);
  // A mark, or the start of a range (which end_marker() ends later, if ever).
  void add_marker(const MarkerRow& row);
  // An unknown marker id is counted in the stat `storage_end_of_unknown_marker`, as set_free's.
  void end_marker(std::int64_t marker_id, const MarkerEndRow& row);
  // A CUPTI activity record (the CUPTI backend).
  void add_memory_activity(const MemoryActivityRow& row);
  // The latest value for a name replaces the earlier one: pass running totals.
  void set_stat(std::string_view name, Severity severity, std::int64_t value,
                std::string_view description);

  // Commits the open transaction.
  void flush();
  // Whether finish() builds the allocation table's indexes (allocation_indexes_sql()) or
  // leaves them to the first reader that indexes the trace by time.
  enum class AllocationIndexes { kBuild, kLeaveToTimeIndex };
  // Indexes, meta complete = '1', WAL checkpoint, journal_mode = DELETE, close. Returns false
  // with *error (if given) set when anything failed, including an earlier sticky failure.
  // Later calls are no-ops.
  bool finish(std::string* error, AllocationIndexes allocation_indexes = AllocationIndexes::kBuild);

  bool ok() const;
  // The first failure's one-line message, naming the file; empty while ok().
  const std::string& error() const;

 private:
  struct Impl;
  explicit TraceFileWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vramtrace::storage
