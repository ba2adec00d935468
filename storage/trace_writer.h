// TraceWriter: creates a trace file and fills it. Used by the collector, from one thread.
//
// The rows, the batching, the indexes kept up and finish() are TraceFileWriter's
// (storage/trace_file_writer.h, whose contract holds here too). This adds where its work runs:
// - Threading::kCallersThread: each call is written before it returns.
// - Threading::kOwnThread: each call is queued, and a thread of the writer's own writes it, in
//   order, so that the collector decodes the next records while SQLite writes the last ones
//   (SQLite was most of the collector's time in an allocation storm: docs/performance.md).
//   A call then returns before its rows are written: flush() commits soon after, not at once;
//   ok() and error() tell a failure once that thread has met it; at most a few batches of calls
//   wait, and past that a call blocks until the thread catches up (the ring then passes the
//   wait on to the program, as it does a slow collector's). finish() and the destructor first
//   wait until every call is written. The thread runs at its creator's priority: what it has
//   not written holds the program back, through the ring, or holds up the end of the run, so
//   on a busy machine it must not wait behind every other process (docs/architecture.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/trace_file_writer.h"
#include "storage/trace_rows.h"

namespace vramtrace::storage {

class TraceWriter {
 public:
  using TimeIndexUpkeep = TraceFileWriter::TimeIndexUpkeep;
  using AllocationIndexes = TraceFileWriter::AllocationIndexes;
  using AllocationPacking = TraceFileWriter::AllocationPacking;
  using RollupUpkeep = TraceFileWriter::RollupUpkeep;
  enum class Threading { kCallersThread, kOwnThread };

  // Creates a new trace. Fails (nullptr, *error set to a one-line reason) if the file exists
  // or cannot be created.
  static std::unique_ptr<TraceWriter> create(const std::filesystem::path& path, std::string* error,
                                             TimeIndexUpkeep upkeep = TimeIndexUpkeep::kNone,
                                             RollupUpkeep rollups = RollupUpkeep::kAtBuild,
                                             Threading threading = Threading::kCallersThread,
                                             AllocationPacking packing = AllocationPacking::kRows);
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // As TraceFileWriter's namesakes.
  void set_meta(std::string_view key, std::string_view value);
  void set_command(const std::vector<std::string>& argv);
  void add_process(const ProcessRow& row);
  void end_process(const ProcessEndRow& row);
  void add_thread(std::int64_t utid, std::int64_t upid, std::uint32_t tid);
  void set_thread_name(std::int64_t utid, std::string_view name);
  void add_module(std::int64_t id, std::string_view path, std::string_view build_id_hex);
  void add_mapping(std::int64_t id, std::int64_t upid, std::int64_t module_id, std::uint64_t start,
                   std::uint64_t end, std::uint64_t load_bias);
  void add_frame(const FrameRow& row);
  void add_callsite(std::int64_t id, std::optional<std::int64_t> parent_id, std::int64_t frame_id,
                    int depth);
  void add_allocation(const AllocationRow& row);
  void set_free(std::int64_t allocation_id, const FreeRow& row);
  void clear_free(std::int64_t allocation_id);
  void add_bad_free(const BadFreeRow& row);
  void add_failure_device_memory(std::int64_t allocation_id, std::uint64_t device_free,
                                 std::uint64_t device_total);
  void fail_bad_free(std::int64_t bad_free_id, std::int32_t result,
                     std::optional<std::int64_t> callsite_id);
  void add_marker(const MarkerRow& row);
  void end_marker(std::int64_t marker_id, const MarkerEndRow& row);
  void add_memory_activity(const MemoryActivityRow& row);
  void set_stat(std::string_view name, Severity severity, std::int64_t value,
                std::string_view description);

  // Commits the open transaction (kOwnThread: once the calls before it are written).
  void flush();
  // Waits until every call so far is written, then as TraceFileWriter::finish().
  bool finish(std::string* error, AllocationIndexes allocation_indexes = AllocationIndexes::kBuild);

  bool ok() const;
  // The first failure's one-line message, naming the file; empty while ok().
  const std::string& error() const;

 private:
  struct Impl;
  explicit TraceWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vramtrace::storage
