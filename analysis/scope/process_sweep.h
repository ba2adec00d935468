// One pass over a process's allocations and frees in sequence order, for the trace advice
// (trace_advice.h): the pinned host memory peak, and what each range (NVTX or API) saw of live
// allocator blocks: how many bytes were live when it began and the most while it ran.
//
// "When it began" is just after its start event (events up to and including start_seq);
// "while it ran" is the events with start_seq < seq < end_seq (a range never ended runs to the
// end). Ranges that begin between the same two events share a group: from then on they see the
// same events, so a group keeps the most live bytes seen from its beginning to the next group's,
// and a range's most is the largest of its group's and every later group's. Each event touches
// one group, however many ranges are open; memory is the ranges and the devices, not the events.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <utility>
#include <vector>

#include "storage/trace_rows.h"

namespace vramtrace::analysis {

struct SeqPeak {
  std::uint64_t bytes = 0, seq = 0;  // the most, and the event that first reached it
};

struct RangeLevels {
  std::uint64_t base = 0, most = 0;  // live block bytes of every device
  // Each device's live block bytes when it began; outermost ranges (depth 0) only.
  std::map<int, std::uint64_t> base_by_device;
  std::uint64_t growth() const { return most - base; }
};

class ProcessSweep {
 public:
  // `ranges`: the process's ranges, in any order; levels() answers in the same order.
  explicit ProcessSweep(const std::vector<storage::MarkerRecord>& ranges);

  // The next event, in sequence order (a free before an allocation of the same number).
  void on_event(std::uint64_t seq, bool alloc, int kind, int device, std::uint64_t size);
  // Ends the ranges still open. Call once, after the last event.
  void finish();

  const std::vector<RangeLevels>& levels() const { return levels_; }
  SeqPeak pinned() const { return pinned_peak_; }
  std::uint64_t pinned_allocations() const { return pinned_allocations_; }

 private:
  void begin_ranges_before(std::uint64_t seq);
  void end_ranges_by(std::uint64_t seq);

  const std::vector<storage::MarkerRecord>& ranges_;
  std::vector<RangeLevels> levels_;
  std::vector<std::size_t> order_;  // ranges by start
  std::size_t next_ = 0;            // the next range of order_ to begin
  std::vector<std::size_t> range_group_;
  std::vector<std::uint64_t> group_most_;
  // Open ranges by end, soonest first.
  std::priority_queue<std::pair<std::uint64_t, std::size_t>,
                      std::vector<std::pair<std::uint64_t, std::size_t>>, std::greater<>>
      open_;
  std::map<int, std::uint64_t> block_bytes_;
  std::uint64_t all_blocks_ = 0, pinned_ = 0;
  SeqPeak pinned_peak_;
  std::uint64_t pinned_allocations_ = 0;
};

}  // namespace vramtrace::analysis
