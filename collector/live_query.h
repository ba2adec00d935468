// LiveQueries: what a test harness asks the collector about one process at a test's end
// (vramtrace_checkpoint and vramtrace_live_since in the shim's C API; the pytest plugin's
// limit_gpu_leaks/limit_gpu_memory marks and the GoogleTest listener use them).
//
// A checkpoint is a record in the process's ring; a query naming it comes later in the same
// ring. So when the collector reads the query it has read every event the process made before
// asking, and the answer is exact: the allocations made after the checkpoint and still live,
// grouped by stack, and the most bytes of such allocations that were live at once. Nothing is
// followed while no checkpoint is open: a recording without tests pays one branch per event.
//
// What counts is what the leak report counts at the end (analysis/reports/leak_report.h): every
// live allocation except a caching allocator's segments (a segment that ever held a block), which
// are its cache. The peak counts blocks where the process has reported any, device memory
// otherwise (storage/schema_enums.h, kind_occupies_device_memory).
//
// Known limit: a free whose call then failed (FreeFailed) puts the allocation back in the
// trace, but not among the followed ones; the query then undercounts it. Frees fail only on
// invalid arguments, which a test would see anyway.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proto/live_reply.h"
#include "storage/trace_rows.h"

namespace vramtrace::collector {

class LiveQueries {
 public:
  // Checkpoints open at once per process; opening one more drops the oldest (a harness that
  // made checkpoints and never asked), which is counted.
  static constexpr std::size_t kMaxOpen = 64;
  // Stacks and frames in a reply's text: the largest groups, enough to act on.
  static constexpr std::size_t kGroupsShown = 5;
  static constexpr std::size_t kFramesShown = 16;

  struct Reply {
    wire::LiveReplyHeader header{};
    std::string report;  // at most wire::kMaxLiveReportBytes
  };
  using StackOf = std::function<std::vector<storage::StackFrame>(std::optional<int64_t>)>;
  using KindName = std::function<std::string(int kind)>;

  void open_checkpoint(uint64_t seq);
  // Each successful allocation of the process, in ring order.
  void on_alloc(int64_t id, uint64_t seq, int kind, uint64_t size, std::optional<int64_t> callsite);
  // A block was placed in the live segment `segment_id`: that segment is the allocator's.
  void on_block_in_segment(int64_t segment_id);
  // The allocation `id` ended.
  void on_free(int64_t id);

  // Answers the query on the checkpoint at `checkpoint_seq` and closes that checkpoint.
  Reply answer(uint64_t query_id, uint64_t checkpoint_seq, const StackOf& stack_of,
               const KindName& kind_name);

  uint64_t dropped_checkpoints() const { return dropped_; }

 private:
  struct Followed {
    uint64_t seq;
    int kind;
    uint64_t size;
    std::optional<int64_t> callsite;
    bool allocator_segment = false;
  };
  struct Checkpoint {
    uint64_t seq;
    uint64_t block_bytes = 0, block_peak = 0;    // live blocks made since, and their most
    uint64_t device_bytes = 0, device_peak = 0;  // likewise for device memory
  };
  void forget_unfollowed();

  std::vector<Checkpoint> open_;  // oldest first
  // Allocations made after the oldest open checkpoint, still live, by id.
  std::unordered_map<int64_t, Followed> followed_;
  bool saw_blocks_ = false;
  uint64_t dropped_ = 0;
};

}  // namespace vramtrace::collector
