// The collector's reply to a LiveQuery record (proto/vramtrace.proto), sent on the process's
// unix socket: this fixed header, then `report_bytes` of UTF-8 text (the offending stacks).
//
// The socket otherwise carries nothing from the collector to the process, so a reply is the
// only thing the shim reads from it; a reply whose query_id is not the one awaited answers an
// earlier query that gave up waiting, and is read and dropped.
//
// Trust: the shim reads this from another process; it checks the magic and bounds the text by
// kMaxLiveReportBytes before reading it.
//
// This header uses libc types only: it is compiled into the preload shim.
#pragma once

#include <cstdint>

namespace vramtrace::wire {

inline constexpr char kLiveReplyMagic[8] = {'V', 'R', 'T', 'L', 'I', 'V', 'E', '1'};
inline constexpr uint32_t kMaxLiveReportBytes = 64 * 1024;

enum LiveReplyStatus : uint32_t {
  kLiveReplyAnswered = 0,
  kLiveReplyUnknownCheckpoint = 1,  // never made, already queried, or dropped (too many open)
};

struct LiveReplyHeader {
  char magic[8];
  uint64_t query_id;
  uint32_t status;        // LiveReplyStatus
  uint32_t report_bytes;  // the text after this header, at most kMaxLiveReportBytes
  // Allocations made after the checkpoint and live when the query was read, at the level
  // below; allocator segments (which hold blocks) are the allocator's cache, never counted.
  uint64_t live_bytes;
  uint64_t live_count;
  // The most bytes of allocations made after the checkpoint that were live at once, between
  // the checkpoint and the query: the caching allocator's blocks where the process has
  // reported any, else device memory (device, managed, async allocations, VMM mappings).
  uint64_t peak_bytes;
  uint32_t block_level;  // 1: the process reported allocator blocks (PyTorch)
  uint32_t reserved;
};
static_assert(sizeof(LiveReplyHeader) == 56, "the layout both sides read");

}  // namespace vramtrace::wire
