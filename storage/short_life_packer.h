// Short lives packed many to a row of allocation_chunk (storage/allocation_chunk.h) as a
// trace is written (TraceFileWriter's AllocationPacking::kPackShortLives): an allocation
// allocated and freed within one bin of the time index's level 0, with no details and no
// block inside it, is stored as a few bytes of a chunk rather than as a row of its own.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "storage/pending_allocation_table.h"
#include "storage/write_failure.h"

namespace vramtrace::storage {

class ShortLifePacker {
 public:
  // Prepares its statement in `failure.db`; null, with *error set, when SQLite refuses it.
  static std::unique_ptr<ShortLifePacker> create(WriteFailure& failure, std::string* error);
  ~ShortLifePacker();
  ShortLifePacker(const ShortLifePacker&) = delete;
  ShortLifePacker& operator=(const ShortLifePacker&) = delete;

  // Takes the packable rows out of a batch of pending rows (ascending ids) and writes them as
  // chunks: one per process and bin of level 0, ordered by alloc_seq, so that a reader finds
  // a number's chunks among those that start in its bin.
  void pack(std::vector<PendingAllocation>& batch);

 private:
  struct State;
  explicit ShortLifePacker(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace vramtrace::storage
