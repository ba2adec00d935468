// Short lives packed many to a row of allocation_chunk (storage/allocation_chunk.h) as a
// trace is written (TraceFileWriter's AllocationPacking::kPackShortLives): an allocation freed
// at most kShortLifeEvents numbers after it was made (so in its bin of the time index's level
// 0 or the next), with no details and no block inside it, is stored as a few bytes of a chunk
// rather than as a row of its own. With repeats folded (kPackAndFoldRepeats), a bin whose packed
// allocations repeat a chunk stored before is stored as an instance of a run instead
// (storage/repeat_folder.h).
//
// A process's bin is held open in memory until its next bin begins, so that it is stored as
// one chunk, which a later bin can repeat whole: at each commit an open bin is written as it
// stands (a reader sees every allocation committed), and rewritten when it is finished.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "storage/pending_allocation_table.h"
#include "storage/write_failure.h"

namespace vramtrace::storage {

class ShortLifePacker {
 public:
  enum class Repeats { kKeep, kFold };
  // Prepares its statements in `failure.db`; null, with *error set, when SQLite refuses them.
  static std::unique_ptr<ShortLifePacker> create(WriteFailure& failure, Repeats repeats,
                                                 std::string* error);
  ~ShortLifePacker();
  ShortLifePacker(const ShortLifePacker&) = delete;
  ShortLifePacker& operator=(const ShortLifePacker&) = delete;

  // Takes the packable rows out of a batch of pending rows (ascending ids) into their
  // processes' open bins; a bin that a later one follows is finished and stored.
  void pack(std::vector<PendingAllocation>& batch);
  // Before a commit: writes each open bin as it stands (one that did not grow since the last
  // commit is finished instead), and each open run as it stands.
  void commit();
  // Before the last commit: finishes every open bin.
  void finish();

  // Allocations and bins stored as instances of runs so far.
  std::int64_t folded_allocations() const;
  std::int64_t folded_bins() const;

 private:
  struct State;
  explicit ShortLifePacker(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vramtrace::storage
