// Short lives packed many to a row: the allocations of allocation_chunk (docs/schema.md,
// "Packed allocations"), and the text that stores them.
//
// Why: SQLite's own cost for a row and its index entries is about heaptrack's whole cost per
// event in an allocation storm (docs/performance.md, "The storm"). An allocation that lived a
// few events (made in a bin of the time index's level 0, freed in it or the next) is found by
// every reader through one path (the allocations just before a sequence number), so a chunk of them
// keyed by its first number serves that path as well as their rows did, for one row per chunk.
//
// The text is JSON that SQLite's built-in json_each() reads, so that the view `allocation` shows
// each packed allocation to plain `sqlite3`: an array with one array per allocation of
// kPackedFields integers, in that order, relative to the chunk's first id, alloc_seq and alloc_ns
// where the name says so. Internal to storage/.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vramtrace::storage {

// One packed allocation: allocation_compact's columns, and a block's details. It succeeded and
// was freed; of allocation_detail's columns it has at most a block's segment and the allocator's
// totals after it was made and after its free (the others are NULL).
struct PackedAllocation {
  std::int64_t id = 0;
  std::int64_t site_id = 0;
  std::uint64_t address = 0, size = 0;
  std::int64_t size_minus_requested = 0;
  std::uint64_t alloc_seq = 0;
  std::int64_t alloc_ns = 0;
  std::int64_t free_site_id = 0;
  std::int64_t free_seq_delta = 0, free_ns_delta = 0;
  std::optional<std::int64_t> segment_id;
  std::optional<std::uint64_t> allocator_allocated, allocator_reserved, free_allocator_allocated,
      free_allocator_reserved;

  bool has_block_detail() const {
    return segment_id || allocator_allocated || allocator_reserved || free_allocator_allocated ||
           free_allocator_reserved;
  }
  std::uint64_t free_seq() const { return alloc_seq + static_cast<std::uint64_t>(free_seq_delta); }
  std::int64_t free_ns() const {
    return static_cast<std::int64_t>(static_cast<std::uint64_t>(alloc_ns) +
                                     static_cast<std::uint64_t>(free_ns_delta));
  }
  bool operator==(const PackedAllocation&) const = default;
};

// A packed allocation is made in the bin of level 0 its chunk starts in and freed at most
// kShortLifeEvents numbers later, in that bin or the next: those live at `seq` were made at or
// after this number.
std::uint64_t first_packed_alloc_live_at(std::uint64_t seq);

// The fields of each allocation's array, by position (the view `allocation` reads them so): the
// first kPackedFields for every allocation, then, for one with a block's details, five more,
// each null where unset.
inline constexpr int kPackedFields = 10;
inline constexpr int kPackedBlockFields = 15;
inline constexpr std::string_view kPackedFieldNames =
    "id - first_id, site_id, address, size, size_minus_requested, alloc_seq - first_alloc_seq, "
    "alloc_ns - first_alloc_ns, free_site_id, free_seq_delta, free_ns_delta[, segment_id, "
    "allocator_allocated, allocator_reserved, free_allocator_allocated, free_allocator_reserved]";

// A chunk's row: one process's allocations, ordered by alloc_seq, with the columns a reader
// finds it by.
struct AllocationChunk {
  std::int64_t upid = 0;
  std::uint64_t first_alloc_seq = 0;  // the first allocation's
  std::uint64_t last_seq = 0;         // the highest free_seq in it
  std::int64_t first_id = 0;          // the first allocation's
  std::int64_t last_id = 0;           // the highest id in it
  std::int64_t first_alloc_ns = 0;    // the first allocation's
  std::int64_t count = 0;
  std::string allocations;  // the JSON text
};

// The chunk of `allocations` (not empty, one process's, ordered by alloc_seq).
AllocationChunk pack_allocations(std::int64_t upid,
                                 const std::vector<PackedAllocation>& allocations);

// Appends the allocations of a chunk's row to `out`, in its order. Returns false, leaving `out`
// with what was read before the fault, when the text is not what pack_allocations() writes.
bool unpack_allocations(std::string_view text, std::int64_t first_id, std::uint64_t first_alloc_seq,
                        std::int64_t first_alloc_ns, std::vector<PackedAllocation>* out);

}  // namespace vramtrace::storage
