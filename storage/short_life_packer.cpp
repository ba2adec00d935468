#include "storage/short_life_packer.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <unordered_set>
#include <utility>

#include "storage/allocation_chunk.h"
#include "storage/chunk_repeat.h"
#include "storage/live_span.h"
#include "storage/packed_allocations.h"
#include "storage/repeat_folder.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"

namespace vramtrace::storage {

using sqlite::Statement;

struct ShortLifePacker::State {
  explicit State(WriteFailure& writer_failure) : failure(writer_failure) {}

  // One process's bin of level 0, not finished yet.
  struct OpenBin {
    std::int64_t bin = 0;
    std::vector<PackedAllocation> allocations;
    std::optional<std::int64_t> row_id;  // its chunk's row, once a commit wrote it
    bool grew = false;                   // since the last commit
  };

  WriteFailure& failure;
  Statement add_chunk, replace_chunk, drop_chunk, add_run, replace_run, read_back;
  // The rows of runs written while still open, by (upid, first_alloc_seq).
  std::map<std::pair<std::int64_t, std::uint64_t>, std::int64_t> run_rows;
  int schema_version = kSchemaVersionWithoutChunks;
  std::unique_ptr<RepeatFolder> folder;       // null: repeats kept as chunks
  std::map<std::int64_t, OpenBin> open_bins;  // by upid
  // (upid, allocation): the packable rows' columns alone, a fraction of a pending row's bytes.
  std::vector<std::pair<std::int64_t, PackedAllocation>> packed_scratch;

  // Whether a pending row goes into a chunk (AllocationPacking::kPackShortLives): a short life
  // (freed in its bin of level 0 or in the next: first_packed_alloc_live_at()), with no details
  // but a block's (its segment, the allocator's totals), and no block of this batch inside it (a
  // block is made after its segment and freed before it, so one that names a row of this batch
  // is in this batch too).
  bool packable(const PendingAllocation& pending,
                const std::unordered_set<std::int64_t>& segments) const {
    const AllocationRow& row = pending.row;
    if (row.result != 0 || !pending.free || row.vmm_handle || row.vmm_offset || row.correlation_id)
      return false;
    const std::uint64_t life = pending.free->free_seq - pending.row.alloc_seq;
    if (life < 1 || life > static_cast<std::uint64_t>(kShortLifeEvents)) return false;
    return segments.empty() || !segments.contains(pending.row.id);
  }

  bool read_chunk(std::int64_t upid, std::uint64_t first_alloc_seq,
                  std::vector<PackedAllocation>* out) {
    read_back.bind_int64(1, upid);
    read_back.bind_uint64(2, first_alloc_seq);
    bool read = false;
    if (read_back.step() == SQLITE_ROW)
      read = unpack_allocations(read_back.text_view(2), read_back.int64(0), first_alloc_seq,
                                read_back.int64(1), out);
    read_back.reset();
    return read;
  }

  void mark_schema(int version) {
    if (schema_version >= version) return;
    std::string message;
    if (sqlite::execute(failure.db, "PRAGMA user_version = " + std::to_string(version), &message) !=
        SQLITE_OK)
      return failure.fail("marking the trace as holding packed allocations", message);
    schema_version = version;
  }

  // Writes the bin's allocations as its chunk: a new row, or its row written at a commit.
  void write_chunk(std::int64_t upid, OpenBin& open) {
    // Blocks' details are read by readers of schema 4 only.
    mark_schema(std::any_of(open.allocations.begin(), open.allocations.end(),
                            [](const PackedAllocation& a) { return a.has_block_detail(); })
                    ? kSchemaVersion
                    : kSchemaVersionWithChunks);
    const AllocationChunk chunk = pack_allocations(upid, open.allocations);
    Statement& statement = open.row_id ? replace_chunk : add_chunk;
    statement.bind_int64(1, chunk.upid);
    statement.bind_uint64(2, chunk.first_alloc_seq);
    statement.bind_uint64(3, chunk.last_seq);
    statement.bind_int64(4, chunk.first_id);
    statement.bind_int64(5, chunk.last_id);
    statement.bind_int64(6, chunk.first_alloc_ns);
    statement.bind_int64(7, chunk.count);
    statement.bind_text(8, chunk.allocations);
    if (open.row_id) statement.bind_int64(9, *open.row_id);
    failure.run(statement, "adding packed allocations");
    if (!open.row_id) open.row_id = sqlite3_last_insert_rowid(failure.db);
  }

  // Writes runs as they stand: a new row, or the row an earlier commit wrote of the same run.
  // An ended run's row is forgotten once written.
  void write_runs(const std::vector<ChunkRepeatRun>& runs, bool ended) {
    for (const ChunkRepeatRun& run : runs) {
      mark_schema(kSchemaVersion);
      const auto row = run_rows.find(std::pair(run.upid, run.first_alloc_seq));
      Statement& statement = row == run_rows.end() ? add_run : replace_run;
      if (row != run_rows.end()) statement.bind_int64(14, row->second);
      statement.bind_int64(1, run.upid);
      statement.bind_uint64(2, run.first_alloc_seq);
      statement.bind_uint64(3, run.last_seq);
      statement.bind_int64(4, run.first_id);
      statement.bind_int64(5, run.last_id);
      statement.bind_int64(6, run.first_alloc_ns);
      statement.bind_uint64(7, run.seq_step);
      statement.bind_int64(8, run.id_step);
      statement.bind_int64(9, run.instance_ns);
      statement.bind_int64(10, run.repeats);
      statement.bind_int64(11, run.count);
      statement.bind_uint64(12, run.source_first_alloc_seq);
      statement.bind_int64(13, run.source_span_ns);
      failure.run(statement, "adding a run of repeated allocations");
      if (ended) {
        if (row != run_rows.end()) run_rows.erase(row);
      } else if (row == run_rows.end()) {
        run_rows.emplace(std::pair(run.upid, run.first_alloc_seq),
                         sqlite3_last_insert_rowid(failure.db));
      }
    }
  }

  // The bin is finished: stored as a chunk, or, when it repeats one, as an instance of a run
  // (its chunk written at a commit, if any, dropped).
  void finish_bin(std::int64_t upid, OpenBin& open) {
    if (folder) {
      RepeatFolder::Outcome outcome = folder->add_bin(upid, open.allocations);
      write_runs(outcome.ended, true);
      if (outcome.repeat) {
        if (open.row_id) {
          drop_chunk.bind_int64(1, *open.row_id);
          failure.run(drop_chunk, "replacing packed allocations by a run");
        }
        return;
      }
    }
    write_chunk(upid, open);
  }

  void pack(std::vector<PendingAllocation>& pending_allocations) {
    std::unordered_set<std::int64_t> segments;
    for (const PendingAllocation& pending : pending_allocations)
      if (pending.row.segment_id) segments.insert(*pending.row.segment_id);
    std::vector<std::pair<std::int64_t, PackedAllocation>>& packed = packed_scratch;
    packed.clear();
    std::erase_if(pending_allocations, [&](const PendingAllocation& pending) {
      if (!packable(pending, segments)) return false;
      const AllocationRow& row = pending.row;
      PackedAllocation& a = packed.emplace_back(row.upid, PackedAllocation()).second;
      a.id = row.id;
      a.site_id = pending.site_id;
      a.address = row.address;
      a.size = row.size;
      a.size_minus_requested = static_cast<std::int64_t>(row.size - row.requested_size);
      a.alloc_seq = row.alloc_seq;
      a.alloc_ns = row.alloc_ns;
      a.free_site_id = pending.free_site_id;
      a.free_seq_delta = static_cast<std::int64_t>(pending.free->free_seq - row.alloc_seq);
      a.free_ns_delta =
          static_cast<std::int64_t>(static_cast<std::uint64_t>(pending.free->free_ns) -
                                    static_cast<std::uint64_t>(row.alloc_ns));
      a.segment_id = row.segment_id;
      a.allocator_allocated = row.allocator_allocated;
      a.allocator_reserved = row.allocator_reserved;
      a.free_allocator_allocated = pending.free->allocator_allocated;
      a.free_allocator_reserved = pending.free->allocator_reserved;
      return true;
    });
    if (packed.empty()) return;
    // In id order, which is each process's alloc_seq order as the collector numbers them.
    const auto by_number = [](const auto& x, const auto& y) {
      return std::pair(x.first, x.second.alloc_seq) < std::pair(y.first, y.second.alloc_seq);
    };
    if (!std::is_sorted(packed.begin(), packed.end(), by_number))
      std::sort(packed.begin(), packed.end(), by_number);
    for (const auto& [upid, allocation] : packed) {
      const std::int64_t bin = live_span_bin(0, static_cast<std::int64_t>(allocation.alloc_seq));
      auto [it, added] = open_bins.try_emplace(upid);
      OpenBin& open = it->second;
      if (!added && open.bin != bin) {
        finish_bin(upid, open);
        open = OpenBin();
      }
      open.bin = bin;
      open.allocations.push_back(allocation);
      open.grew = true;
    }
  }

  void commit() {
    for (auto it = open_bins.begin(); it != open_bins.end();) {
      OpenBin& open = it->second;
      if (open.grew) {
        write_chunk(it->first, open);
        open.grew = false;
        ++it;
      } else {
        // Idle since the last commit: finished, so that a process that stopped allocating
        // holds no memory here.
        finish_bin(it->first, open);
        it = open_bins.erase(it);
      }
    }
    if (folder) write_runs(folder->open_runs(), false);
  }

  void finish() {
    for (auto& [upid, open] : open_bins) finish_bin(upid, open);
    open_bins.clear();
    if (folder) write_runs(folder->end_runs(), true);
  }
};

ShortLifePacker::ShortLifePacker(std::unique_ptr<State> state) : state_(std::move(state)) {}
ShortLifePacker::~ShortLifePacker() = default;

std::unique_ptr<ShortLifePacker> ShortLifePacker::create(WriteFailure& failure, Repeats repeats,
                                                         std::string* error) {
  auto state = std::make_unique<State>(failure);
  if (repeats == Repeats::kFold) {
    // A stored bin read back from the trace (this transaction's writes included).
    State* raw = state.get();
    state->folder =
        std::make_unique<RepeatFolder>([raw](std::int64_t upid, std::uint64_t first_alloc_seq,
                                             std::vector<PackedAllocation>* out) {
          return raw->read_chunk(upid, first_alloc_seq, out);
        });
  }
  const std::string chunk_columns =
      "upid, first_alloc_seq, last_seq, first_id, last_id, first_alloc_ns, count, allocations";
  const std::string run_columns =
      "upid, first_alloc_seq, last_seq, first_id, last_id, first_alloc_ns, seq_step, id_step, "
      "instance_ns, repeats, count, source_first_alloc_seq, source_span_ns";
  const std::string run_values = "?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13";
  if (Statement::prepare(failure.db,
                         "INSERT INTO allocation_chunk(" + chunk_columns +
                             ") VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                         &state->add_chunk) != SQLITE_OK ||
      Statement::prepare(failure.db,
                         "UPDATE allocation_chunk SET (" + chunk_columns +
                             ") = (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) WHERE id = ?9",
                         &state->replace_chunk) != SQLITE_OK ||
      Statement::prepare(failure.db, "DELETE FROM allocation_chunk WHERE id = ?1",
                         &state->drop_chunk) != SQLITE_OK ||
      Statement::prepare(failure.db,
                         "SELECT first_id, first_alloc_ns, allocations FROM allocation_chunk "
                         "WHERE upid = ?1 AND first_alloc_seq = ?2",
                         &state->read_back) != SQLITE_OK ||
      Statement::prepare(
          failure.db,
          "INSERT INTO allocation_chunk_repeat(" + run_columns + ") VALUES(" + run_values + ")",
          &state->add_run) != SQLITE_OK ||
      Statement::prepare(failure.db,
                         "UPDATE allocation_chunk_repeat SET (" + run_columns + ") = (" +
                             run_values + ") WHERE id = ?14",
                         &state->replace_run) != SQLITE_OK) {
    if (error != nullptr) *error = sqlite3_errmsg(failure.db);
    return nullptr;
  }
  return std::unique_ptr<ShortLifePacker>(new ShortLifePacker(std::move(state)));
}

void ShortLifePacker::pack(std::vector<PendingAllocation>& batch) {
  state_->pack(batch);
}
void ShortLifePacker::commit() {
  state_->commit();
}
void ShortLifePacker::finish() {
  state_->finish();
}
std::int64_t ShortLifePacker::folded_allocations() const {
  return state_->folder ? state_->folder->folded_allocations() : 0;
}
std::int64_t ShortLifePacker::folded_bins() const {
  return state_->folder ? state_->folder->folded_bins() : 0;
}

}  // namespace vramtrace::storage
