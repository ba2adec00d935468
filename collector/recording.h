// Recording: the collector from its socket to a finished trace. `vramtrace run` wires it to
// the command it starts; tests and benchmarks drive it with processes of their own.
//
// Contract
// - It owns the CollectorServer and the TraceIngest, over a TraceWriter that the caller made
//   (and named the command in); socket_path() is what the traced processes connect to.
// - run() drains the rings from the calling thread until the watched command has ended and
//   every connection is gone. It commits the trace every commit_interval, so that a reader
//   (the viewer) sees the recording as it goes, and every records_per_commit records, so that
//   no commit has much to write.
// - Processes the command left behind have `linger` after its end to hang up; the rest are
//   drained as they are, their events kept, and counted in the result as still running.
// - At the end: the command's wait status to its process row, the stats, and the writer's
//   finish(). run() is called once; printing is the caller's.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "collector/collector_server.h"
#include "collector/trace_ingest.h"
#include "storage/trace_writer.h"

namespace vramtrace::collector {

struct RecordingPolicy {
  // Short enough for a live viewer to follow the recording.
  std::chrono::milliseconds commit_interval{200};
  // The last commit, after the command ends, is on its wrapper's critical path: a commit of
  // 200 ms of a busy program's records took 20 ms.
  std::size_t records_per_commit = 65536;
  // After the command's end, how long the processes it left behind may keep their rings.
  std::chrono::milliseconds linger{2000};
  // `vramtrace run` leaves the allocation table's indexes to the time index that it builds
  // next (or that the first report builds), so that the command's wrapper returns sooner.
  storage::TraceWriter::AllocationIndexes allocation_indexes =
      storage::TraceWriter::AllocationIndexes::kLeaveToTimeIndex;
};

struct RecordingResult {
  int wait_status = 0;            // the command's, as waitpid gave it
  bool linger_ran_out = false;    // processes were still connected when the linger ended
  std::size_t still_running = 0;  // how many
  std::int64_t allocations = 0;   // recorded, over every process
  std::int64_t processes = 0;     // traced
  bool finished = false;          // the trace stands alone (TraceWriter::finish)
  std::string error;              // why not, when it does not
};

class Recording {
 public:
  // Listens in a private directory under `runtime_dir` (empty: as CollectorServer chooses).
  // Returns nullptr with *error set when it cannot.
  static std::unique_ptr<Recording> create(storage::TraceWriter& writer,
                                           const RecordingPolicy& policy,
                                           const std::string& runtime_dir, std::string* error);
  ~Recording();
  Recording(const Recording&) = delete;
  Recording& operator=(const Recording&) = delete;

  // The path to put in VRAMTRACE_SOCKET.
  const std::string& socket_path() const { return socket_path_; }

  // Asked once a turn until the command has ended: nullopt while it runs, then its wait
  // status (a waitpid with WNOHANG, for a child).
  using CommandEnd = std::function<std::optional<int>()>;
  // Records until the command `command_pid` has ended and its processes are gone, or the
  // linger ran out; then finishes the trace.
  RecordingResult run(std::uint32_t command_pid, const CommandEnd& command_end);

 private:
  Recording(storage::TraceWriter& writer, const RecordingPolicy& policy);
  // Runs the turns until the end; returns the command's wait status.
  int record(const CommandEnd& command_end, RecordingResult* result);

  storage::TraceWriter& writer_;
  RecordingPolicy policy_;
  TraceIngest ingest_;
  std::unique_ptr<CollectorServer> server_;
  std::string socket_path_;
};

}  // namespace vramtrace::collector
