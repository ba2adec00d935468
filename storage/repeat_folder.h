// The writer's side of repeated bins (storage/chunk_repeat.h): for each bin of one process's
// packed allocations, whether it repeats a chunk stored before, and which run it then belongs
// to. No SQLite: the packer (storage/short_life_packer.h) stores what it decides and reads stored
// bins back for it.
//
// A bin repeats a stored one when their allocations are the same in order, site, address, size,
// requested size, free site, the distance to their free and a block's details (its segment, the
// allocator's totals), numbered and with ids the same distances apart from their first: only
// their first number, first id and times differ. The stored bins it compares with are remembered
// by a few words and a hash of their shape; their shapes are held in memory up to a budget of
// bytes (those matched least recently given up first) and read back from the trace when a bin's
// hash matches one not held, so that the collector's memory stays bounded however long it runs
// and a loop whose bins go through many shapes in turn still folds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "storage/allocation_chunk.h"
#include "storage/chunk_repeat.h"

namespace vramtrace::storage {

class RepeatFolder {
 public:
  // About 75 bins of 4,096 numbers of allocation pairs.
  static constexpr std::size_t kDefaultSourceBytes = std::size_t{16} << 20;

  // Reads a stored bin back (the allocations of the process's chunk that starts at the number,
  // in order); false when it cannot. Null: shapes not held are not compared.
  using SourceLoader = std::function<bool(std::int64_t upid, std::uint64_t first_alloc_seq,
                                          std::vector<PackedAllocation>* out)>;

  explicit RepeatFolder(SourceLoader loader = nullptr,
                        std::size_t source_bytes = kDefaultSourceBytes);
  ~RepeatFolder();
  RepeatFolder(const RepeatFolder&) = delete;
  RepeatFolder& operator=(const RepeatFolder&) = delete;

  struct Outcome {
    // The bin is an instance of an open run: store nothing for it. Else store it in full, as a
    // chunk that later bins may repeat.
    bool repeat = false;
    // Runs that this bin ended (the open run of its source, whose steps it does not keep): write
    // them.
    std::vector<ChunkRepeatRun> ended;
  };
  // One process's bin, finished: its packed allocations in alloc_seq order (not empty), all in
  // one bin of level 0.
  Outcome add_bin(std::int64_t upid, const std::vector<PackedAllocation>& bin);

  // The open runs as they stand: the packer writes each at every commit (so that a reader sees
  // every bin) and again as it grows, and an ended one a last time. A run is known by its
  // process and first number, which no version of it changes.
  std::vector<ChunkRepeatRun> open_runs() const;
  // Ends every open run and gives them back, to be written (at the end of the recording).
  std::vector<ChunkRepeatRun> end_runs();

  // A run ends once it spans this long, so that times within it, spread evenly over its
  // instances, stay near the truth.
  static constexpr std::int64_t kRunSpanLimitNs = 1'000'000'000;

  // The memory the stored bins' shapes hold (at most the budget).
  std::size_t held_shape_bytes() const;

  // Allocations and bins that were instances of runs so far.
  std::int64_t folded_allocations() const { return folded_allocations_; }
  std::int64_t folded_bins() const { return folded_bins_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  std::int64_t folded_allocations_ = 0, folded_bins_ = 0;
};

}  // namespace vramtrace::storage
