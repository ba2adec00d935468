#include "storage/packed_allocations.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "storage/live_span.h"
#include "storage/trace_error.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// Numbers are stored as int64 bit patterns; a bound above INT64_MAX means "no bound".
std::int64_t upper_bound_of(std::uint64_t seq) {
  return seq > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<std::int64_t>(seq);
}

// The first number of the bin of level 0 that holds `seq`: every chunk holding an allocation
// numbered `seq` starts there or after (storage/allocation_chunk.h: a chunk lies in one bin).
std::int64_t bin_start(std::uint64_t seq) {
  return static_cast<std::int64_t>(
      level_0_bin_first(static_cast<std::uint64_t>(upper_bound_of(seq))));
}

bool by_number(const PackedAllocation& x, const PackedAllocation& y) {
  return std::pair(x.alloc_seq, x.id) < std::pair(y.alloc_seq, y.id);
}

constexpr std::string_view kChunkColumns =
    "upid, first_id, first_alloc_seq, first_alloc_ns, allocations";

}  // namespace

PackedAllocations::PackedAllocations(sqlite3* db, std::string schema, std::string file)
    : db_(db), schema_(std::move(schema)), file_(std::move(file)) {
  Statement table = prepare("SELECT count(*) FROM " + schema_ +
                            ".sqlite_master WHERE type = 'table' AND name = 'allocation_chunk'");
  present_ = table.step() == SQLITE_ROW && table.int64(0) != 0;
}

Statement PackedAllocations::prepare(const std::string& sql) {
  Statement statement;
  if (const int rc = Statement::prepare(db_, sql, &statement); rc != SQLITE_OK) fail(rc);
  return statement;
}

Statement& PackedAllocations::reuse(Statement& slot, const std::string& sql) {
  if (slot)
    slot.reset();
  else
    slot = prepare(sql);
  return slot;
}

void PackedAllocations::fail(int rc) {
  const std::string reason = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  if (sqlite::is_corruption(rc))
    throw TraceError(file_ + ": the trace is truncated or corrupt (" + reason +
                     "); record it again");
  throw TraceError(file_ + ": cannot read the trace's packed allocations (" + reason + ")");
}

std::optional<std::int64_t> PackedAllocations::first_value(Statement& statement) {
  std::optional<std::int64_t> value;
  const int rc = statement.each_row_while([&](const Statement& row) {
    value = row.optional_int64(0);
    return false;
  });
  if (rc != SQLITE_DONE) fail(rc);
  statement.reset();  // no read left open on the connection between calls
  return value;
}

void PackedAllocations::unpack_row(const Statement& row, std::vector<PackedAllocation>* out) {
  if (!unpack_allocations(row.text_view(4), row.int64(1), row.uint64(2), row.int64(3), out))
    throw TraceError(file_ + ": the trace is damaged: allocation_chunk.allocations is not a " +
                     "list of packed allocations (in the row of process " +
                     std::to_string(row.int64(0)) + " from number " +
                     std::to_string(row.uint64(2)) +
                     "); it was changed after vramtrace wrote it, or written by another tool");
}

const PackedAllocations::Site& PackedAllocations::site(std::int64_t id) {
  const auto [it, added] = sites_.try_emplace(id);
  if (!added) return it->second;
  reuse(site_query_,
        "SELECT kind, api, device, stream, flags, pool, result, utid, callsite_id FROM " + schema_ +
            ".allocation_site WHERE id = ?1");
  site_query_.bind_int64(1, id);
  if (site_query_.step() == SQLITE_ROW) {
    Site& site = it->second;
    site.kind = site_query_.int32(0);
    site.api = site_query_.int32(1);
    site.device = site_query_.int32(2);
    site.stream = site_query_.uint64(3);
    site.flags = static_cast<std::uint32_t>(site_query_.int64(4));
    site.pool = site_query_.optional_uint64(5);
    site.result = site_query_.int32(6);
    site.utid = site_query_.int64(7);
    site.callsite_id = site_query_.optional_int64(8);
  }
  site_query_.reset();
  return it->second;
}

const PackedAllocations::FreeSite& PackedAllocations::free_site(std::int64_t id) {
  const auto [it, added] = free_sites_.try_emplace(id);
  if (!added) return it->second;
  reuse(free_site_query_,
        "SELECT utid, callsite_id, api FROM " + schema_ + ".free_site WHERE id = ?1");
  free_site_query_.bind_int64(1, id);
  if (free_site_query_.step() == SQLITE_ROW) {
    it->second = {free_site_query_.int64(0), free_site_query_.optional_int64(1),
                  free_site_query_.int32(2)};
  }
  free_site_query_.reset();
  return it->second;
}

AllocationRecord PackedAllocations::record(std::int64_t upid, const PackedAllocation& packed) {
  AllocationRecord record;
  AllocationRow& a = record.allocation;
  const Site& s = site(packed.site_id);
  a.id = packed.id;
  a.upid = upid;
  a.kind = s.kind;
  a.api = s.api;
  a.device = s.device;
  a.stream = s.stream;
  a.address = packed.address;
  a.size = packed.size;
  a.requested_size = packed.size - static_cast<std::uint64_t>(packed.size_minus_requested);
  a.flags = s.flags;
  a.pool = s.pool;
  a.result = s.result;
  a.alloc_seq = packed.alloc_seq;
  a.alloc_ns = packed.alloc_ns;
  a.alloc_utid = s.utid;
  a.alloc_callsite_id = s.callsite_id;
  const FreeSite& f = free_site(packed.free_site_id);
  FreeRow& free = record.free.emplace();
  free.free_seq = packed.free_seq();
  free.free_ns = packed.free_ns();
  free.free_utid = f.utid;
  free.free_callsite_id = f.callsite_id;
  free.free_api = f.api;
  return record;
}

AllocationEvent PackedAllocations::alloc_event(std::int64_t upid, const PackedAllocation& packed) {
  const Site& s = site(packed.site_id);
  return AllocationEvent{AllocationEvent::Type::kAlloc,
                         packed.id,
                         upid,
                         packed.alloc_seq,
                         packed.alloc_ns,
                         s.device,
                         s.kind,
                         packed.size,
                         s.callsite_id};
}

AllocationEvent PackedAllocations::free_event(std::int64_t upid, const PackedAllocation& packed) {
  AllocationEvent free = alloc_event(upid, packed);
  free.type = AllocationEvent::Type::kFree;
  free.seq = packed.free_seq();
  free.ns = packed.free_ns();
  return free;
}

PackedAllocations::Cursor::Cursor(PackedAllocations& owner, std::optional<std::int64_t> upid,
                                  std::uint64_t from, std::uint64_t through)
    : owner_(owner), from_(from), through_(through) {
  done_ = !owner.present_ || from > through;
  if (done_) return;
  if (owner.idle_cursor_statements_.empty()) {
    chunks_ = owner.prepare("SELECT " + std::string(kChunkColumns) + " FROM " + owner.schema_ +
                            ".allocation_chunk WHERE upid BETWEEN ?1 AND ?2 AND first_alloc_seq "
                            "BETWEEN ?3 AND ?4 ORDER BY upid, first_alloc_seq");
  } else {
    chunks_ = std::move(owner.idle_cursor_statements_.back());
    owner.idle_cursor_statements_.pop_back();
  }
  chunks_.bind_int64(1, upid.value_or(INT64_MIN));
  chunks_.bind_int64(2, upid.value_or(INT64_MAX));
  chunks_.bind_int64(3, bin_start(from));
  chunks_.bind_int64(4, upper_bound_of(through));
}

PackedAllocations::Cursor::~Cursor() {
  if (!chunks_) return;
  chunks_.reset();
  owner_.idle_cursor_statements_.push_back(std::move(chunks_));
}

bool PackedAllocations::Cursor::load_bin() {
  while (!done_ || has_ahead_) {
    bin_.clear();
    at_ = 0;
    std::optional<std::pair<std::int64_t, std::int64_t>> key;
    if (has_ahead_) {
      bin_.swap(ahead_);
      key = ahead_key_;
      has_ahead_ = false;
    }
    while (!done_) {
      const int rc = chunks_.step();
      if (rc == SQLITE_DONE) {
        done_ = true;
        break;
      }
      if (rc != SQLITE_ROW) owner_.fail(rc);
      const std::pair row_key(chunks_.int64(0), live_span_bin(0, chunks_.int64(2)));
      if (key && row_key != *key) {
        ahead_.clear();
        owner_.unpack_row(chunks_, &ahead_);
        ahead_key_ = row_key;
        has_ahead_ = true;
        break;
      }
      key = row_key;
      owner_.unpack_row(chunks_, &bin_);
    }
    if (!key) return false;
    bin_upid_ = key->first;
    std::erase_if(bin_, [&](const PackedAllocation& packed) {
      return packed.alloc_seq < from_ || packed.alloc_seq > through_;
    });
    std::sort(bin_.begin(), bin_.end(), by_number);
    if (!bin_.empty()) return true;
  }
  return false;
}

const PackedAllocation* PackedAllocations::Cursor::next(std::int64_t* upid) {
  if (at_ >= bin_.size() && !load_bin()) return nullptr;
  *upid = bin_upid_;
  return &bin_[at_++];
}

bool PackedAllocations::for_each(
    std::optional<std::int64_t> upid, std::uint64_t from, std::uint64_t through,
    const std::function<bool(std::int64_t upid, const PackedAllocation&)>& visit) {
  Cursor cursor(*this, upid, from, through);
  std::int64_t packed_upid = 0;
  while (const PackedAllocation* packed = cursor.next(&packed_upid))
    if (!visit(packed_upid, *packed)) return false;
  return true;
}

std::vector<PackedAllocation> PackedAllocations::between(std::int64_t upid, std::uint64_t from,
                                                         std::uint64_t through) {
  std::vector<PackedAllocation> found;
  for_each(upid, from, through, [&](std::int64_t, const PackedAllocation& packed) {
    found.push_back(packed);
    return true;
  });
  return found;
}

void PackedAllocations::for_each_with_id_between(
    std::int64_t first_id, std::int64_t last_id,
    const std::function<void(std::int64_t upid, const PackedAllocation&)>& visit) {
  if (!present_) return;
  Statement& chunks =
      reuse(by_id_query_, "SELECT " + std::string(kChunkColumns) + " FROM " + schema_ +
                              ".allocation_chunk WHERE first_id <= ?2 AND last_id >= ?1 ORDER BY "
                              "upid, first_alloc_seq");
  chunks.bind_int64(1, first_id);
  chunks.bind_int64(2, last_id);
  std::vector<PackedAllocation> unpacked;
  const int rc = chunks.each_row_while([&](const Statement& row) {
    unpacked.clear();
    unpack_row(row, &unpacked);
    for (const PackedAllocation& packed : unpacked)
      if (packed.id >= first_id && packed.id <= last_id) visit(row.int64(0), packed);
    return true;
  });
  if (rc != SQLITE_DONE) fail(rc);
  chunks.reset();
}

std::optional<std::uint64_t> PackedAllocations::last_chunk_start(std::int64_t upid,
                                                                 std::uint64_t seq) {
  if (!present_) return std::nullopt;
  Statement& last = reuse(last_chunk_start_query_,
                          "SELECT max(first_alloc_seq) FROM " + schema_ +
                              ".allocation_chunk WHERE upid = ?1 AND first_alloc_seq <= ?2");
  last.bind_int64(1, upid);
  last.bind_int64(2, upper_bound_of(seq));
  const std::optional<std::int64_t> start = first_value(last);
  if (!start) return std::nullopt;
  return static_cast<std::uint64_t>(*start);
}

std::uint64_t PackedAllocations::last_alloc_seq(std::int64_t upid) {
  if (!present_) return 0;
  // The last chunk's last allocation: a chunk's allocations lie in its bin, after those of the
  // process's chunks that start before it.
  Statement& last =
      reuse(last_alloc_seq_query_,
            "SELECT " + std::string(kChunkColumns) + " FROM " + schema_ +
                ".allocation_chunk WHERE upid = ?1 AND first_alloc_seq >= (SELECT "
                "max(first_alloc_seq) FROM " +
                schema_ + ".allocation_chunk WHERE upid = ?1) >> " +
                std::to_string(kLiveSpanFirstShift) + " << " + std::to_string(kLiveSpanFirstShift));
  last.bind_int64(1, upid);
  std::vector<PackedAllocation> unpacked;
  const int rc = last.each_row_while([&](const Statement& row) {
    unpack_row(row, &unpacked);
    return true;
  });
  if (rc != SQLITE_DONE) fail(rc);
  last.reset();
  std::uint64_t highest = 0;
  for (const PackedAllocation& packed : unpacked) highest = std::max(highest, packed.alloc_seq);
  return highest;
}

std::uint64_t PackedAllocations::last_free_seq(std::int64_t upid) {
  if (!present_) return 0;
  Statement& last =
      reuse(last_free_seq_query_,
            "SELECT max(last_seq) FROM " + schema_ +
                ".allocation_chunk WHERE upid = ?1 AND first_alloc_seq >= (SELECT "
                "max(first_alloc_seq) FROM " +
                schema_ + ".allocation_chunk WHERE upid = ?1) >> " +
                std::to_string(kLiveSpanFirstShift) + " << " + std::to_string(kLiveSpanFirstShift));
  last.bind_int64(1, upid);
  return static_cast<std::uint64_t>(first_value(last).value_or(0));
}

std::int64_t PackedAllocations::last_id() {
  if (!present_) return 0;
  Statement& last =
      reuse(last_id_query_, "SELECT max(last_id) FROM " + schema_ + ".allocation_chunk");
  return first_value(last).value_or(0);
}

std::vector<std::int64_t> PackedAllocations::upids() {
  std::vector<std::int64_t> found;
  if (!present_) return found;
  // By skip scan of the (upid, first_alloc_seq) index: a search per process.
  Statement statement =
      prepare("WITH RECURSIVE step(upid) AS (SELECT min(upid) FROM " + schema_ +
              ".allocation_chunk UNION ALL SELECT (SELECT min(upid) FROM " + schema_ +
              ".allocation_chunk WHERE upid > step.upid) FROM step WHERE "
              "step.upid IS NOT NULL) SELECT upid FROM step WHERE upid IS NOT "
              "NULL");
  const int rc = statement.each_row_while([&](const Statement& row) {
    found.push_back(row.int64(0));
    return true;
  });
  if (rc != SQLITE_DONE) fail(rc);
  return found;
}

}  // namespace vramtrace::storage
