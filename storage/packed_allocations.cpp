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
// numbered `seq` starts there or after (storage/allocation_chunk.h: a chunk's allocations are
// made in one bin).
std::int64_t bin_start(std::uint64_t seq) {
  return static_cast<std::int64_t>(
      level_0_bin_first(static_cast<std::uint64_t>(upper_bound_of(seq))));
}

bool by_number(const PackedAllocation& x, const PackedAllocation& y) {
  return std::pair(x.alloc_seq, x.id) < std::pair(y.alloc_seq, y.id);
}

constexpr std::string_view kChunkColumns =
    "upid, first_id, first_alloc_seq, first_alloc_ns, allocations";
// What read_run() reads, in this order.
constexpr std::string_view kRunColumns =
    "upid, first_alloc_seq, last_seq, first_id, last_id, first_alloc_ns, seq_step, id_step, "
    "instance_ns, repeats, count, source_first_alloc_seq, source_span_ns";

// Ids and numbers of a run's instances are worked out wider than 64 bits: a run that another
// tool changed must give numbers that are wrong, never an overflow.
__extension__ using Wide = __int128;

// floor(a / b) and ceil(a / b), for b > 0.
Wide floor_div(Wide a, Wide b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
Wide ceil_div(Wide a, Wide b) {
  return -floor_div(-a, b);
}

// The instances of `run` whose first number lies in [from, through], as [*first_k, *last_k];
// false when there are none. By arithmetic on the numbers: a query costs the instances it
// reads, not the run's length.
bool instances_between(const ChunkRepeatRun& run, std::uint64_t from, std::uint64_t through,
                       std::int64_t* first_k, std::int64_t* last_k) {
  if (from > through || run.first_alloc_seq > through) return false;
  if (run.repeats == 1) {
    *first_k = *last_k = 0;
    return run.first_alloc_seq >= from;
  }
  const Wide first = run.first_alloc_seq, step = run.seq_step;
  const Wide low = std::max<Wide>(0, ceil_div(Wide{from} - first, step));
  const Wide high = std::min<Wide>(run.repeats - 1, floor_div(Wide{through} - first, step));
  if (low > high) return false;
  *first_k = static_cast<std::int64_t>(low);
  *last_k = static_cast<std::int64_t>(high);
  return true;
}

}  // namespace

PackedAllocations::PackedAllocations(sqlite3* db, std::string schema, std::string file)
    : db_(db), schema_(std::move(schema)), file_(std::move(file)) {
  const auto has_table = [&](std::string_view name) {
    Statement table =
        prepare("SELECT count(*) FROM " + schema_ +
                ".sqlite_master WHERE type = 'table' AND name = '" + std::string(name) + "'");
    return table.step() == SQLITE_ROW && table.int64(0) != 0;
  };
  present_ = has_table("allocation_chunk");
  runs_present_ = present_ && has_table("allocation_chunk_repeat");
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
    damaged_chunk(row.int64(0), row.uint64(2));
}

void PackedAllocations::damaged_chunk(std::int64_t upid, std::uint64_t first_alloc_seq) const {
  throw TraceError(file_ + ": the trace is damaged: allocation_chunk.allocations is not a " +
                   "list of packed allocations (in the row of process " + std::to_string(upid) +
                   " from number " + std::to_string(first_alloc_seq) +
                   "); it was changed after vramtrace wrote it, or written by another tool");
}

void PackedAllocations::damaged_run(const ChunkRepeatRun& run, const std::string& what) const {
  throw TraceError(file_ + ": the trace is damaged: a run of allocation_chunk_repeat " + what +
                   " (in the row of process " + std::to_string(run.upid) + " from number " +
                   std::to_string(run.first_alloc_seq) +
                   "); it was changed after vramtrace wrote it, or written by another tool");
}

void PackedAllocations::each_row(Statement& statement,
                                 const std::function<void(const Statement&)>& visit) {
  const int rc = statement.each_row_while([&](const Statement& row) {
    visit(row);
    return true;
  });
  if (rc != SQLITE_DONE) fail(rc);
  statement.reset();
}

std::vector<std::int64_t> PackedAllocations::upids_of(std::string_view table) {
  // By skip scan of the (upid, first_alloc_seq) index: a search per process.
  const std::string name = schema_ + "." + std::string(table);
  Statement statement =
      prepare("WITH RECURSIVE step(upid) AS (SELECT min(upid) FROM " + name +
              " UNION ALL SELECT (SELECT min(upid) FROM " + name +
              " WHERE upid > step.upid) FROM step WHERE step.upid IS NOT NULL) SELECT upid FROM "
              "step WHERE upid IS NOT NULL");
  std::vector<std::int64_t> found;
  each_row(statement, [&](const Statement& row) { found.push_back(row.int64(0)); });
  return found;
}

ChunkRepeatRun PackedAllocations::read_run(const Statement& row) const {
  ChunkRepeatRun run;
  run.upid = row.int64(0);
  run.first_alloc_seq = row.uint64(1);
  run.last_seq = row.uint64(2);
  run.first_id = row.int64(3);
  run.last_id = row.int64(4);
  run.first_alloc_ns = row.int64(5);
  run.seq_step = row.uint64(6);
  run.id_step = row.int64(7);
  run.instance_ns = row.int64(8);
  run.repeats = row.int64(9);
  run.count = row.int64(10);
  run.source_first_alloc_seq = row.uint64(11);
  run.source_span_ns = row.int64(12);
  // What the writer makes (storage/repeat_folder.h): at least one instance, each of at least
  // one allocation; instances after the first at numbers and ids that rise, the last one's
  // first number and id within 64 bits; times that repeat_time() can scale.
  if (run.repeats < 1 || run.count < 1) damaged_run(run, "has no instance or no allocation");
  if (run.repeats > 1) {
    const Wide last = Wide{run.repeats - 1};
    if (run.seq_step == 0 || run.id_step < 1 ||
        Wide{run.first_alloc_seq} + last * run.seq_step > INT64_MAX ||
        Wide{run.first_id} + last * run.id_step > INT64_MAX)
      damaged_run(run, "steps its instances by numbers or ids that do not rise within 64 bits");
  }
  if (run.last_seq < run.first_alloc_seq ||
      run.last_seq - run.first_alloc_seq > kRepeatRunSpanNumbers)
    damaged_run(run, "spans more numbers than a run may");
  if (run.instance_ns < 0 || run.instance_ns >= kRepeatTimeLimitNs || run.source_span_ns < 0 ||
      run.source_span_ns >= kRepeatTimeLimitNs)
    damaged_run(run, "has times that cannot be repeated");
  return run;
}

std::vector<ChunkRepeatRun> PackedAllocations::runs_between(std::optional<std::int64_t> upid,
                                                            std::uint64_t from,
                                                            std::uint64_t through) {
  std::vector<ChunkRepeatRun> runs;
  if (!runs_present_ || from > through) return runs;
  const std::string table = schema_ + ".allocation_chunk_repeat";
  Statement& query =
      reuse(runs_between_query_, "SELECT " + std::string(kRunColumns) + " FROM " + table +
                                     " WHERE upid = ?1 AND first_alloc_seq BETWEEN ?2 - " +
                                     std::to_string(kRepeatRunSpanNumbers) +
                                     " AND ?3 AND last_seq >= ?2 ORDER BY first_alloc_seq");
  const std::vector<std::int64_t> upids =
      upid ? std::vector<std::int64_t>{*upid} : upids_of("allocation_chunk_repeat");
  for (const std::int64_t process : upids) {
    query.bind_int64(1, process);
    query.bind_int64(2, bin_start(from));
    query.bind_int64(3, upper_bound_of(through));
    each_row(query, [&](const Statement& row) { runs.push_back(read_run(row)); });
  }
  return runs;
}

std::shared_ptr<const PackedAllocations::Source> PackedAllocations::source_of(
    const ChunkRepeatRun& run) {
  const std::pair key(run.upid, run.source_first_alloc_seq);
  if (const auto found = sources_.find(key); found != sources_.end()) return found->second;
  Statement& query =
      reuse(source_query_, "SELECT " + std::string(kChunkColumns) + " FROM " + schema_ +
                               ".allocation_chunk WHERE upid = ?1 AND first_alloc_seq = ?2");
  query.bind_int64(1, run.upid);
  query.bind_uint64(2, run.source_first_alloc_seq);
  auto source = std::make_shared<Source>();
  bool found = false, unpacked = false;
  each_row(query, [&](const Statement& row) {
    found = true;
    source->first_id = row.int64(1);
    source->first_alloc_ns = row.int64(3);
    unpacked = unpack_allocations(row.text_view(4), source->first_id, run.source_first_alloc_seq,
                                  source->first_alloc_ns, &source->allocations);
  });
  if (!found) damaged_run(run, "repeats no chunk of allocation_chunk");
  if (!unpacked) damaged_chunk(run.upid, run.source_first_alloc_seq);
  // In number order, as the writer wrote them (a merge may write a chunk's text in another).
  std::sort(source->allocations.begin(), source->allocations.end(), by_number);
  // Each query meets few sources in turn: dropping all at once keeps the map small.
  constexpr std::size_t kSourcesKept = 16;
  if (sources_.size() >= kSourcesKept) sources_.clear();
  sources_.emplace(key, source);
  return source;
}

void PackedAllocations::append_instance(const ChunkRepeatRun& run, std::int64_t k,
                                        std::vector<PackedAllocation>* out) {
  const std::shared_ptr<const Source> source = source_of(run);
  // An instance is the source's first `count` allocations (a bin cut short repeats the start
  // of one).
  if (static_cast<std::int64_t>(source->allocations.size()) < run.count)
    damaged_run(run, "counts more allocations than its source chunk holds");
  ChunkRepeatRun from_source = run;
  from_source.source_first_id = source->first_id;
  from_source.source_first_alloc_ns = source->first_alloc_ns;
  const std::size_t first = out->size();
  append_repeat_instance(from_source, k, source->allocations, out);
  // Every allocation of an instance is made in the bin of its first, as a chunk's are: the
  // scans rely on it.
  const std::uint64_t bin = level_0_bin_first(run.instance_first_alloc_seq(k));
  for (std::size_t i = first; i < out->size(); ++i)
    if (level_0_bin_first((*out)[i].alloc_seq) != bin)
      damaged_run(run, "has an instance whose allocations leave its bin");
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
  a.segment_id = packed.segment_id;
  a.allocator_allocated = packed.allocator_allocated;
  a.allocator_reserved = packed.allocator_reserved;
  const FreeSite& f = free_site(packed.free_site_id);
  FreeRow& free = record.free.emplace();
  free.free_seq = packed.free_seq();
  free.free_ns = packed.free_ns();
  free.free_utid = f.utid;
  free.free_callsite_id = f.callsite_id;
  free.free_api = f.api;
  free.allocator_allocated = packed.free_allocator_allocated;
  free.allocator_reserved = packed.free_allocator_reserved;
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
  // An instance's allocations are made in the bin of its first number, as a chunk's are.
  const auto first_number = static_cast<std::uint64_t>(bin_start(from));
  const auto last_number = static_cast<std::uint64_t>(upper_bound_of(through));
  for (const ChunkRepeatRun& run : owner.runs_between(upid, from, through)) {
    RunInstances instances{run};
    if (instances_between(run, first_number, last_number, &instances.next_k, &instances.last_k)) {
      run_heap_.push_back(runs_.size());
      runs_.push_back(instances);
    }
  }
  std::make_heap(run_heap_.begin(), run_heap_.end(),
                 [&](std::size_t x, std::size_t y) { return instance_key(y) < instance_key(x); });
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

PackedAllocations::Cursor::BinKey PackedAllocations::Cursor::instance_key(std::size_t run) const {
  const RunInstances& r = runs_[run];
  return {r.run.upid,
          live_span_bin(0, static_cast<std::int64_t>(r.run.instance_first_alloc_seq(r.next_k)))};
}

void PackedAllocations::Cursor::read_chunk_ahead() {
  has_ahead_ = false;
  if (done_) return;
  const int rc = chunks_.step();
  if (rc == SQLITE_DONE) {
    done_ = true;
    return;
  }
  if (rc != SQLITE_ROW) owner_.fail(rc);
  ahead_.clear();
  owner_.unpack_row(chunks_, &ahead_);
  ahead_key_ = {chunks_.int64(0), live_span_bin(0, chunks_.int64(2))};
  has_ahead_ = true;
}

bool PackedAllocations::Cursor::load_bin() {
  const auto later = [&](std::size_t x, std::size_t y) {
    return instance_key(y) < instance_key(x);
  };
  for (;;) {
    bin_.clear();
    at_ = 0;
    if (!has_ahead_) read_chunk_ahead();
    std::optional<BinKey> key;
    if (has_ahead_) key = ahead_key_;
    if (!run_heap_.empty()) {
      const BinKey instance = instance_key(run_heap_.front());
      if (!key || instance < *key) key = instance;
    }
    if (!key) return false;
    while (has_ahead_ && ahead_key_ == *key) {
      if (bin_.empty())
        bin_.swap(ahead_);
      else
        bin_.insert(bin_.end(), ahead_.begin(), ahead_.end());
      read_chunk_ahead();
    }
    while (!run_heap_.empty() && instance_key(run_heap_.front()) == *key) {
      std::pop_heap(run_heap_.begin(), run_heap_.end(), later);
      RunInstances& instances = runs_[run_heap_.back()];
      owner_.append_instance(instances.run, instances.next_k, &bin_);
      if (instances.next_k++ < instances.last_k)
        std::push_heap(run_heap_.begin(), run_heap_.end(), later);
      else
        run_heap_.pop_back();
    }
    bin_upid_ = key->first;
    std::erase_if(bin_, [&](const PackedAllocation& packed) {
      return packed.alloc_seq < from_ || packed.alloc_seq > through_;
    });
    std::sort(bin_.begin(), bin_.end(), by_number);
    if (!bin_.empty()) return true;
  }
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
  if (!runs_present_) return;
  // The runs with an instance whose ids may be in range, then those instances: instance k's
  // ids lie from its first id to as far above it as the last instance's reach above its own.
  Statement& query =
      reuse(runs_by_id_query_, "SELECT " + std::string(kRunColumns) + " FROM " + schema_ +
                                   ".allocation_chunk_repeat WHERE first_id <= ?2 "
                                   "AND last_id >= ?1 ORDER BY upid, first_alloc_seq");
  query.bind_int64(1, first_id);
  query.bind_int64(2, last_id);
  std::vector<ChunkRepeatRun> runs;
  each_row(query, [&](const Statement& row) { runs.push_back(read_run(row)); });
  for (const ChunkRepeatRun& run : runs) {
    Wide first_k = 0, last_k = 0;
    if (run.repeats > 1) {
      const Wide step = run.id_step;
      const Wide width = std::max<Wide>(
          0, Wide{run.last_id} - (Wide{run.first_id} + Wide{run.repeats - 1} * step));
      first_k = std::max<Wide>(0, ceil_div(Wide{first_id} - width - run.first_id, step));
      last_k = std::min<Wide>(run.repeats - 1, floor_div(Wide{last_id} - run.first_id, step));
    }
    for (Wide k = first_k; k <= last_k; ++k) {
      unpacked.clear();
      append_instance(run, static_cast<std::int64_t>(k), &unpacked);
      for (const PackedAllocation& packed : unpacked)
        if (packed.id >= first_id && packed.id <= last_id) visit(run.upid, packed);
    }
  }
}

std::optional<std::uint64_t> PackedAllocations::last_chunk_start(std::int64_t upid,
                                                                 std::uint64_t seq) {
  if (!present_) return std::nullopt;
  Statement& last = reuse(last_chunk_start_query_,
                          "SELECT max(first_alloc_seq) FROM " + schema_ +
                              ".allocation_chunk WHERE upid = ?1 AND first_alloc_seq <= ?2");
  last.bind_int64(1, upid);
  last.bind_int64(2, upper_bound_of(seq));
  std::optional<std::uint64_t> start;
  if (const std::optional<std::int64_t> chunk = first_value(last))
    start = static_cast<std::uint64_t>(*chunk);
  if (!runs_present_) return start;
  // The last instance that starts by then is in a run that starts at most a run's span before
  // the last run that does (runs of a loop's shapes of bin interleave; one that starts earlier
  // ends before that last run begins).
  const std::string table = schema_ + ".allocation_chunk_repeat";
  Statement& run_query =
      reuse(last_run_query_, "SELECT " + std::string(kRunColumns) + " FROM " + table +
                                 " WHERE upid = ?1 AND first_alloc_seq BETWEEN (SELECT "
                                 "max(first_alloc_seq) FROM " +
                                 table + " WHERE upid = ?1 AND first_alloc_seq <= ?2) - " +
                                 std::to_string(kRepeatRunSpanNumbers) + " AND ?2");
  run_query.bind_int64(1, upid);
  run_query.bind_int64(2, upper_bound_of(seq));
  std::vector<ChunkRepeatRun> runs;
  each_row(run_query, [&](const Statement& row) { runs.push_back(read_run(row)); });
  for (const ChunkRepeatRun& run : runs) {
    std::int64_t first_k = 0, last_k = 0;
    if (instances_between(run, 0, static_cast<std::uint64_t>(upper_bound_of(seq)), &first_k,
                          &last_k))
      start = std::max(start.value_or(0), run.instance_first_alloc_seq(last_k));
  }
  return start;
}

std::uint64_t PackedAllocations::last_alloc_seq(std::int64_t upid) {
  // The last bin's highest: a bin's allocations are made in it, after those of the process's
  // bins before it.
  const std::optional<std::uint64_t> start = last_chunk_start(upid, UINT64_MAX);
  if (!start) return 0;
  std::uint64_t highest = 0;
  for_each(upid, level_0_bin_first(*start), UINT64_MAX,
           [&](std::int64_t, const PackedAllocation& packed) {
             highest = std::max(highest, packed.alloc_seq);
             return true;
           });
  return highest;
}

std::uint64_t PackedAllocations::last_free_seq(std::int64_t upid) {
  // The highest of the last bin's and of the bin before it, whose frees may reach into it
  // (first_packed_alloc_live_at()), from the chunks' and the runs' columns: an instance's
  // highest free_seq is as far above its first number as the last instance's is above its own.
  const std::optional<std::uint64_t> start = last_chunk_start(upid, UINT64_MAX);
  if (!start) return 0;
  const std::uint64_t last_bin_first = level_0_bin_first(*start);
  const std::uint64_t bin_first = level_0_bin_first(last_bin_first > 0 ? last_bin_first - 1 : 0);
  Statement& last = reuse(last_free_seq_query_,
                          "SELECT max(last_seq) FROM " + schema_ +
                              ".allocation_chunk WHERE upid = ?1 AND first_alloc_seq >= ?2");
  last.bind_int64(1, upid);
  last.bind_uint64(2, bin_first);
  std::uint64_t highest = static_cast<std::uint64_t>(first_value(last).value_or(0));
  for (const ChunkRepeatRun& run : runs_between(upid, bin_first, UINT64_MAX)) {
    std::int64_t first_k = 0, last_k = 0;
    if (!instances_between(run, bin_first, static_cast<std::uint64_t>(INT64_MAX), &first_k,
                           &last_k))
      continue;
    highest = std::max(highest, run.instance_first_alloc_seq(last_k) +
                                    (run.last_seq - run.instance_first_alloc_seq(run.repeats - 1)));
  }
  return highest;
}

std::int64_t PackedAllocations::last_id() {
  if (!present_) return 0;
  Statement& last =
      reuse(last_id_query_, "SELECT max(last_id) FROM (SELECT max(last_id) AS last_id FROM " +
                                schema_ + ".allocation_chunk" +
                                (runs_present_ ? " UNION ALL SELECT max(last_id) FROM " + schema_ +
                                                     ".allocation_chunk_repeat"
                                               : std::string()) +
                                ")");
  return first_value(last).value_or(0);
}

std::vector<std::int64_t> PackedAllocations::upids() {
  std::vector<std::int64_t> found;
  if (!present_) return found;
  found = upids_of("allocation_chunk");
  if (runs_present_) {
    const std::vector<std::int64_t> repeated = upids_of("allocation_chunk_repeat");
    found.insert(found.end(), repeated.begin(), repeated.end());
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
  }
  return found;
}

}  // namespace vramtrace::storage
