#include "storage/short_life_packer.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <utility>

#include "storage/allocation_chunk.h"
#include "storage/live_span.h"
#include "storage/packed_allocations.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"

namespace vramtrace::storage {

using sqlite::Statement;

struct ShortLifePacker::State {
  explicit State(WriteFailure& writer_failure) : failure(writer_failure) {}

  WriteFailure& failure;
  Statement add_chunk;
  bool chunks_written = false;
  // (upid, allocation): the packable rows' columns alone, a fraction of a pending row's bytes.
  std::vector<std::pair<std::int64_t, PackedAllocation>> packed_scratch;

  // Whether a pending row goes into a chunk (AllocationPacking::kPackShortLives): a short life
  // allocated and freed within one bin of level 0, with no details, and no block of this batch
  // inside it (a block is made after its segment and freed before it, so one that names a row of
  // this batch is in this batch too).
  bool packable(const PendingAllocation& pending,
                const std::unordered_set<std::int64_t>& segments) const {
    if (pending.row.result != 0 || !pending.free || has_detail(pending)) return false;
    const std::uint64_t life = pending.free->free_seq - pending.row.alloc_seq;
    if (life < 1 || life > static_cast<std::uint64_t>(kShortLifeEvents)) return false;
    // Its free too in the bin (a life of level 0 may end at the next bin's first number): a
    // reader finds every number of a chunk in the bin it starts in.
    if (live_span_bin(0, static_cast<std::int64_t>(pending.row.alloc_seq)) !=
        live_span_bin(0, static_cast<std::int64_t>(pending.free->free_seq)))
      return false;
    return segments.empty() || !segments.contains(pending.row.id);
  }

  // Takes the packable rows out of the batch and writes them as chunks: one per
  // process and bin of level 0 (a reader then finds a number's chunks among those that start
  // in its bin), ordered by alloc_seq.
  void pack(std::vector<PendingAllocation>& pending_allocations) {
    std::unordered_set<std::int64_t> segments;
    for (const PendingAllocation& pending : pending_allocations)
      if (pending.row.segment_id) segments.insert(*pending.row.segment_id);
    // (upid, allocation): the packable rows' columns alone, a fraction of a pending row's bytes.
    std::vector<std::pair<std::int64_t, PackedAllocation>>& packed = packed_scratch;
    packed.clear();
    std::erase_if(pending_allocations, [&](const PendingAllocation& pending) {
      if (!packable(pending, segments)) return false;
      const AllocationRow& row = pending.row;
      packed.emplace_back(
          row.upid,
          PackedAllocation{
              row.id, pending.site_id, row.address, row.size,
              static_cast<std::int64_t>(row.size - row.requested_size), row.alloc_seq, row.alloc_ns,
              pending.free_site_id,
              static_cast<std::int64_t>(pending.free->free_seq - row.alloc_seq),
              static_cast<std::int64_t>(static_cast<std::uint64_t>(pending.free->free_ns) -
                                        static_cast<std::uint64_t>(row.alloc_ns))});
      return true;
    });
    if (packed.empty()) return;
    // In id order, which is each process's alloc_seq order as the collector numbers them.
    const auto by_number = [](const auto& x, const auto& y) {
      return std::pair(x.first, x.second.alloc_seq) < std::pair(y.first, y.second.alloc_seq);
    };
    if (!std::is_sorted(packed.begin(), packed.end(), by_number))
      std::sort(packed.begin(), packed.end(), by_number);
    if (!chunks_written) {
      std::string message;
      if (sqlite::execute(failure.db, "PRAGMA user_version = " + std::to_string(kSchemaVersion),
                          &message) != SQLITE_OK)
        return failure.fail("marking the trace as holding packed allocations", message);
      chunks_written = true;
    }
    std::vector<PackedAllocation> chunk;
    for (std::size_t i = 0; i < packed.size(); ++i) {
      const auto& [upid, allocation] = packed[i];
      chunk.push_back(allocation);
      const bool last_of_chunk =
          i + 1 == packed.size() || packed[i + 1].first != upid ||
          live_span_bin(0, static_cast<std::int64_t>(packed[i + 1].second.alloc_seq)) !=
              live_span_bin(0, static_cast<std::int64_t>(allocation.alloc_seq));
      if (!last_of_chunk) continue;
      const AllocationChunk packed_chunk = pack_allocations(upid, chunk);
      add_chunk.bind_int64(1, packed_chunk.upid);
      add_chunk.bind_uint64(2, packed_chunk.first_alloc_seq);
      add_chunk.bind_uint64(3, packed_chunk.last_seq);
      add_chunk.bind_int64(4, packed_chunk.first_id);
      add_chunk.bind_int64(5, packed_chunk.last_id);
      add_chunk.bind_int64(6, packed_chunk.first_alloc_ns);
      add_chunk.bind_int64(7, packed_chunk.count);
      add_chunk.bind_text(8, packed_chunk.allocations);
      failure.run(add_chunk, "adding packed allocations");
      chunk.clear();
    }
  }
};

ShortLifePacker::ShortLifePacker(std::unique_ptr<State> state) : state_(std::move(state)) {}
ShortLifePacker::~ShortLifePacker() = default;

std::unique_ptr<ShortLifePacker> ShortLifePacker::create(WriteFailure& failure,
                                                         std::string* error) {
  auto state = std::make_unique<State>(failure);
  if (Statement::prepare(failure.db,
                         "INSERT INTO allocation_chunk(upid, first_alloc_seq, last_seq, "
                         "first_id, last_id, first_alloc_ns, count, allocations) "
                         "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                         &state->add_chunk) != SQLITE_OK) {
    if (error != nullptr) *error = sqlite3_errmsg(failure.db);
    return nullptr;
  }
  return std::unique_ptr<ShortLifePacker>(new ShortLifePacker(std::move(state)));
}

void ShortLifePacker::pack(std::vector<PendingAllocation>& batch) {
  state_->pack(batch);
}

}  // namespace vramtrace::storage
