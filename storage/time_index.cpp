#include "storage/time_index.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "storage/allocation_columns.h"
#include "storage/event_merge.h"
#include "storage/live_bytes_rollups.h"
#include "storage/live_span.h"
#include "storage/packed_allocations.h"
#include "storage/schema.h"
#include "storage/sqlite_statement.h"
#include "storage/time_index_build.h"
#include "storage/time_index_connection.h"
#include "storage/trace_error.h"
#include "storage/trace_file_uri.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

std::int64_t bin_of(int level, std::uint64_t seq) {
  return live_span_bin(level, static_cast<std::int64_t>(seq));
}

bool writable(const std::filesystem::path& path) {
  std::error_code ec;
  std::filesystem::path folder = std::filesystem::absolute(path, ec).parent_path();
  if (ec) return false;
  // SQLite writes a journal next to the file: the folder must be writable too.
  return ::access(path.c_str(), W_OK) == 0 && ::access(folder.c_str(), W_OK) == 0;
}

}  // namespace

// The index's queries, on the connection it was opened or built on, with what they read of
// time_index_info.
struct TimeIndex::Impl : TimeIndexConnection {
  std::string note;
  std::int64_t start_ns = 0, end_ns = 0;
  bool seq_indexes = false;  // the trace has allocation_by_alloc_seq and allocation_by_free_seq
  bool level_0_spans =
      true;  // live_span holds level 0 (else: read through allocation_by_alloc_seq)

  void load_range() {
    start_ns = info("start_ns");
    end_ns = info("end_ns");
    seq_indexes = trace_has_seq_indexes();
    // An index without the key has level 0 in live_span: every index before the key did.
    Statement key = prepare("SELECT value FROM $X.time_index_info WHERE key = 'level_0_spans'");
    level_0_spans = true;
    each_row(key, [&](const Statement& row) { level_0_spans = row.int64(0) != 0; });
  }

  using SeqAndNs = std::pair<std::uint64_t, std::int64_t>;

  // The process's last event (an allocation, failed ones included, or a free) at or before
  // `ns`, by binary search over sequence numbers: sequence and time rise together within a
  // process (where a damaged trace's do not, time_problem counts it, and the answer is one of
  // the events about that time).
  std::uint64_t last_at(std::int64_t upid, std::int64_t ns) const {
    if (!seq_indexes) {
      Statement scan = prepare(
          "SELECT max(coalesce((SELECT max(alloc_seq) FROM $T.allocation WHERE upid = ?1 AND "
          "alloc_ns <= ?2), 0), coalesce((SELECT max(free_seq) FROM $T.allocation WHERE upid = "
          "?1 AND free_ns <= ?2), 0))");
      scan.bind_int64(1, upid);
      scan.bind_int64(2, ns);
      std::uint64_t found = 0;
      each_row(scan, [&](const Statement& row) { found = row.uint64(0); });
      return found;
    }
    std::uint64_t lo = 0, hi = std::max(last_alloc_seq(upid), last_free_seq(upid)), found = 0;
    LatestEvent latest(*this);
    while (lo <= hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      const std::optional<SeqAndNs> row_found = latest.at_or_before(upid, mid);
      if (!row_found || row_found->second <= ns) {
        if (row_found) found = row_found->first;
        lo = mid + 1;
      } else {
        if (mid == 0) break;
        hi = mid - 1;
      }
    }
    return found;
  }

  std::uint64_t last_alloc_seq(std::int64_t upid) const {
    Statement highest = prepare("SELECT max(alloc_seq) FROM $T.allocation_compact WHERE upid = ?1");
    highest.bind_int64(1, upid);
    std::uint64_t last = 0;
    each_row(highest, [&](const Statement& row) { last = row.optional_uint64(0).value_or(0); });
    return std::max(last, packed().last_alloc_seq(upid));
  }

  // The process's highest free_seq; 0 when it freed nothing. A short life's free comes at most
  // kShortLifeEvents after its allocation, so the last of them is among the allocations that
  // many before the last allocation, or it comes before that allocation.
  std::uint64_t last_free_seq(std::int64_t upid) const {
    Statement highest = prepare(
        "SELECT max(coalesce((SELECT max(alloc_seq + free_seq_delta) FROM $T.allocation_compact "
        "WHERE upid = ?1 AND " +
        long_life_sql("") +
        "), 0), coalesce((SELECT max(alloc_seq + free_seq_delta) FROM $T.allocation_compact "
        "WHERE upid = ?1 AND alloc_seq >= ?2 - " +
        std::to_string(kShortLifeEvents) + " AND " + short_life_sql("") + "), 0))");
    highest.bind_int64(1, upid);
    highest.bind_uint64(2, last_alloc_seq(upid));
    std::uint64_t last = 0;
    each_row(highest, [&](const Statement& row) { last = row.optional_uint64(0).value_or(0); });
    return std::max(last, packed().last_free_seq(upid));
  }

  // The event numbered highest at or before a number, and its time: the allocation and the long
  // life's free from their indexes, then a short life's free from the allocations before the
  // number, read backwards until none left could be freed after the best found (a short life's
  // free comes at most kShortLifeEvents after its allocation).
  class LatestEvent {
   public:
    explicit LatestEvent(const Impl& impl)
        : impl_(impl),
          alloc_(impl.prepare("SELECT alloc_seq, alloc_ns FROM $T.allocation_compact WHERE upid = "
                              "?1 AND alloc_seq <= ?2 ORDER BY alloc_seq DESC LIMIT 1")),
          long_(impl.prepare("SELECT alloc_seq + free_seq_delta, alloc_ns + free_ns_delta FROM "
                             "$T.allocation_compact WHERE upid = ?1 AND alloc_seq + "
                             "free_seq_delta <= ?2 AND " +
                             long_life_sql("") +
                             " ORDER BY alloc_seq + free_seq_delta DESC LIMIT 1")),
          short_(impl.prepare("SELECT alloc_seq, alloc_seq + free_seq_delta, alloc_ns + "
                              "free_ns_delta FROM $T.allocation_compact WHERE upid = ?1 AND "
                              "alloc_seq < ?2 AND " +
                              short_life_sql("") + " ORDER BY alloc_seq DESC")) {}

    std::optional<SeqAndNs> at_or_before(std::int64_t upid, std::uint64_t seq) {
      std::optional<SeqAndNs> best;
      for (Statement* statement : {&alloc_, &long_}) {
        statement->bind_int64(1, upid);
        statement->bind_uint64(2, seq);
        impl_.each_row(*statement, [&](const Statement& row) {
          if (!best || row.uint64(0) > best->first) best = SeqAndNs(row.uint64(0), row.int64(1));
        });
      }
      packed_at_or_before(upid, seq, &best);
      // Without an allocation at or before `seq` there is no free of one either.
      if (!best || best->first == seq) return best;
      short_.bind_int64(1, upid);
      short_.bind_uint64(2, seq);
      impl_.each_row_while(short_, [&](const Statement& row) {
        const std::uint64_t alloc_seq = row.uint64(0), free_seq = row.uint64(1);
        if (alloc_seq + static_cast<std::uint64_t>(kShortLifeEvents) < best->first) return false;
        if (free_seq <= seq && free_seq > best->first) best = SeqAndNs(free_seq, row.int64(2));
        return best->first != seq;
      });
      return best;
    }

   private:
    // The packed allocations' and frees' best, from the last bin with a chunk's allocation at
    // or before `seq`, and the bin before it, whose frees may reach into it
    // (first_packed_alloc_live_at()): earlier bins' numbers are lower.
    void packed_at_or_before(std::int64_t upid, std::uint64_t seq,
                             std::optional<SeqAndNs>* best) const {
      PackedAllocations& packed = impl_.packed();
      std::uint64_t limit = seq;
      while (const std::optional<std::uint64_t> start = packed.last_chunk_start(upid, limit)) {
        const std::uint64_t bin_first = level_0_bin_first(*start);
        const std::uint64_t bin_last = level_0_bin_last(*start);
        if (*best && (*best)->first >= bin_last) return;
        const std::uint64_t previous_bin_first =
            level_0_bin_first(bin_first > 0 ? bin_first - 1 : 0);
        const std::vector<PackedAllocation> found = packed.between(upid, previous_bin_first, seq);
        for (const PackedAllocation& allocation : found) {
          if (!*best || allocation.alloc_seq > (*best)->first)
            *best = SeqAndNs(allocation.alloc_seq, allocation.alloc_ns);
          if (allocation.free_seq() <= seq && allocation.free_seq() > (*best)->first)
            *best = SeqAndNs(allocation.free_seq(), allocation.free_ns());
        }
        if (!found.empty() || bin_first == 0) return;
        limit = bin_first - 1;
      }
    }

    const Impl& impl_;
    Statement alloc_, long_, short_;
  };
};

TimeIndex::TimeIndex(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
TimeIndex::~TimeIndex() = default;

namespace {

// In the file: a finished trace (no collector writing) that this user may write. Returns the
// open connection, or null with *why set to the reason the index goes elsewhere.
sqlite::Database open_for_index(const std::filesystem::path& path, std::string* why) {
  if (trace_may_be_written(path)) {
    *why = "may still be written by a collector";
    return nullptr;
  }
  if (!writable(path)) {
    *why = "is not writable";
    return nullptr;
  }
  sqlite3* raw = nullptr;
  const int rc =
      sqlite3_open_v2(sqlite_file_uri(path, "").c_str(), &raw,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  sqlite::Database db(raw);
  if (rc == SQLITE_OK) sqlite::distrust_schema(raw);
  Statement complete;
  if (rc != SQLITE_OK || Statement::prepare(raw, "SELECT value FROM meta WHERE key = 'complete'",
                                            &complete) != SQLITE_OK) {
    *why = "cannot be opened for writing";
    return nullptr;
  }
  sqlite3_busy_timeout(raw, 5000);
  if (complete.step() != SQLITE_ROW || complete.text(0) != "1") {
    *why = "is not a finished trace";
    return nullptr;
  }
  // Never syncs, as the writer does not (storage/trace_writer.cpp): a sync here would flush the
  // whole trace the writer has just left in the page cache, 90 ms after a 1.2-million-pair run.
  std::string ignored;
  if (register_live_span_functions(raw) != SQLITE_OK ||
      sqlite::execute(raw, "PRAGMA synchronous = OFF", &ignored) != SQLITE_OK) {
    *why = "cannot be indexed on this connection";
    return nullptr;
  }
  return db;
}

}  // namespace

std::unique_ptr<TimeIndex> TimeIndex::open(const std::filesystem::path& path, std::string* error) {
  return open(path, build_live_bytes_rollups, error);
}

std::unique_ptr<TimeIndex> TimeIndex::open(const std::filesystem::path& path,
                                           const BuildRollups& build_rollups, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const auto started = std::chrono::steady_clock::now();
  std::string why;
  impl->db = open_for_index(path, &why);
  if (impl->db) {
    try {
      if (!time_index_complete_in_place(*impl)) {
        impl->execute("BEGIN IMMEDIATE");
        // Another report may have built it while this one waited for the lock.
        if (!time_index_complete_in_place(*impl))
          complete_time_index_in_place(*impl, build_rollups);
        impl->execute("COMMIT");
      }
    } catch (const TraceError& failure) {
      // Locked by another writer, or the disk is full: index aside instead.
      why = std::string("could not be indexed in place (") + failure.what() + ")";
      impl->db.reset();
    }
  }
  try {
    if (!impl->db) {
      // Read on the connection below, under the trace's schema name there.
      impl->packed_allocations.reset();
      // A private temporary database (deleted on close), with the trace attached read-only.
      sqlite3* raw = nullptr;
      const int rc = sqlite3_open_v2(
          "", &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
      impl->db.reset(raw);
      if (rc != SQLITE_OK) impl->fail(rc);
      sqlite::distrust_schema(raw);
      if (const int registered = register_live_span_functions(raw); registered != SQLITE_OK)
        impl->fail(registered);
      sqlite3_busy_timeout(raw, 5000);
      impl->trace_schema = "trace";
      Statement attach = impl->prepare("ATTACH DATABASE ?1 AS trace");
      attach.bind_text(1, read_only_trace_uri(path));
      impl->each_row(attach, [](const Statement&) {});
      impl->execute("BEGIN");
      build_time_index(*impl, build_rollups);
      impl->execute("COMMIT");
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      char took[32];
      std::snprintf(took, sizeof took, "%.2f", seconds);
      impl->note = path.string() + " " + why + ": its time index was built aside for this run (" +
                   took + " s) and not kept";
    }
    impl->load_range();
  } catch (const TraceError& failure) {
    if (error != nullptr) *error = failure.what();
    return nullptr;
  }
  return std::unique_ptr<TimeIndex>(new TimeIndex(std::move(impl)));
}

bool TimeIndex::kept_in_file(const std::filesystem::path& path) {
  std::string why;
  return open_for_index(path, &why) != nullptr;
}

const std::string& TimeIndex::note() const {
  return impl_->note;
}
std::int64_t TimeIndex::start_ns() const {
  return impl_->start_ns;
}
std::int64_t TimeIndex::end_ns() const {
  return impl_->end_ns;
}

std::vector<AllocationRecord> TimeIndex::live_at(std::int64_t upid, std::uint64_t seq) const {
  std::vector<AllocationRecord> live;
  for_each_live_at(upid, seq, [&](const AllocationRecord& record) { live.push_back(record); });
  std::sort(live.begin(), live.end(), [](const AllocationRecord& x, const AllocationRecord& y) {
    return std::pair(x.allocation.alloc_seq, x.allocation.id) <
           std::pair(y.allocation.alloc_seq, y.allocation.id);
  });
  return live;
}

void TimeIndex::for_each_live_at(std::int64_t upid, std::uint64_t seq,
                                 const std::function<void(const AllocationRecord&)>& visit,
                                 AllocationColumns columns) const {
  for_each_live_at_any(upid, {seq}, visit, columns);
}

void TimeIndex::for_each_live_at_end(
    std::int64_t upid,
    const std::function<void(const AllocationRow&, std::uint64_t count)>& visit) const {
  Statement statement = impl_->prepare(
      "SELECT kind, device, alloc_callsite_id, segment_id, allocator_segment_id, count, bytes "
      "FROM $X.live_at_end WHERE upid = ?1");
  statement.bind_int64(1, upid);
  AllocationRow row;
  row.upid = upid;
  impl_->each_row(statement, [&](const Statement& group) {
    row.kind = static_cast<int>(group.int64(0));
    row.device = static_cast<int>(group.int64(1));
    row.alloc_callsite_id = group.optional_int64(2);
    row.segment_id = group.optional_int64(3);
    row.id = group.optional_int64(4).value_or(0);
    // Summed by the index's build from sizes it read as sizes: negative, or not an integer, it
    // was written by another hand.
    if (!group.is_integer(6) || group.int64(6) < 0)
      throw TraceError(impl_->path.string() + ": the trace is damaged: its time index's " +
                       "live_at_end.bytes holds '" + group.text(6) + "', not a byte count");
    row.size = group.uint64(6);
    visit(row, group.uint64(5));
  });
}

void TimeIndex::for_each_live_at_any(std::int64_t upid, const std::vector<std::uint64_t>& seqs,
                                     const std::function<void(const AllocationRecord&)>& visit,
                                     AllocationColumns columns) const {
  // A live span sits in one bin of its level, the one that holds its whole life: those live at
  // any of `seqs` are in the bins that hold one of them, and each (level, bin) is read once,
  // for the range of `seqs` in it.
  // Level 0 comes from `level_0` where live_span does not file it (storage/live_span.h): the
  // allocations made in the bin, freed after the first moment in it, whose life lies in it.
  // Packed allocations are all of level 0, read beside level_0's rows.
  const auto read_levels = [&](Statement& spans, Statement* level_0, const auto& visit_row,
                               const auto& visit_packed) {
    for (int level = 0; level <= kLiveSpanLevels + 1; ++level) {
      const int stored = level <= kLiveSpanLevels ? level : kNeverFreedLevel;
      const bool from_allocations = stored == 0 && level_0 != nullptr;
      Statement& statement = from_allocations ? *level_0 : spans;
      std::map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> bins;  // -> (first, last)
      for (const std::uint64_t seq : seqs) {
        auto [it, added] = bins.try_emplace(bin_of(stored, seq), seq, seq);
        it->second = {std::min(it->second.first, seq), std::max(it->second.second, seq)};
      }
      for (const auto& [bin, range] : bins) {
        statement.bind_int64(1, upid);
        statement.bind_int64(2, stored);
        statement.bind_int64(3, bin);
        statement.bind_uint64(4, range.second);
        statement.bind_uint64(5, range.first);
        impl_->each_row(statement, [&](const Statement& row) {
          const auto live = [&](std::uint64_t alloc_seq, std::uint64_t end_seq) {
            if (from_allocations && live_span_level(static_cast<std::int64_t>(alloc_seq),
                                                    static_cast<std::int64_t>(end_seq)) != 0)
              return false;                     // read at its own level
            if (seqs.size() == 1) return true;  // the query said so
            return std::any_of(seqs.begin(), seqs.end(), [&](std::uint64_t seq) {
              return alloc_seq <= seq && seq < end_seq;
            });
          };
          visit_row(row, live);
        });
        if (!from_allocations) continue;
        // Packed lives made in the bin, and those of the bin before that end in this one (unless
        // that bin's read, up to its last moment, visited them).
        const std::uint64_t bin_first = static_cast<std::uint64_t>(bin) << kLiveSpanFirstShift;
        const auto previous = bins.find(bin - 1);
        const std::uint64_t previous_read_through =
            previous != bins.end() ? previous->second.second : 0;
        const bool previous_bin_read = previous != bins.end();
        for (const PackedAllocation& packed : impl_->packed().between(
                 upid, std::min(bin_first, first_packed_alloc_live_at(range.first)),
                 range.second)) {
          if (packed.free_seq() <= range.first) continue;
          if (packed.alloc_seq < bin_first && previous_bin_read &&
              packed.alloc_seq <= previous_read_through)
            continue;
          if (seqs.size() == 1 || std::any_of(seqs.begin(), seqs.end(), [&](std::uint64_t seq) {
                return packed.alloc_seq <= seq && seq < packed.free_seq();
              }))
            visit_packed(packed);
        }
      }
    }
  };
  constexpr std::string_view kInBin =
      " WHERE s.upid = ?1 AND s.level = ?2 AND s.bin = ?3 AND s.alloc_seq <= ?4 AND "
      "s.end_seq > ?5";
  // Level 0's candidates from the allocations, by the (upid, alloc_seq) index; a failed
  // allocation is never freed, so `free_seq > ?5` leaves it out. ?2 is the level, 0.
  const std::string in_level_0_bin = " WHERE ?2 = 0 AND x.upid = ?1 AND x.alloc_seq >= (?3 << " +
                                     std::to_string(kLiveSpanFirstShift) +
                                     ") AND x.alloc_seq <= ?4 AND " +
                                     "x.alloc_seq + x.free_seq_delta > ?5";

  if (columns == AllocationColumns::kAll || columns == AllocationColumns::kAllocatorTotals) {
    // Every column prefixed with the alias a (kAllocatorTotals' too: they are among them).
    std::string prefixed = "a.";
    for (const char c : kAllocationColumns) {
      prefixed += c;
      if (c == ' ') prefixed += "a.";
    }
    Statement statement = impl_->prepare(
        "SELECT s.alloc_seq, s.end_seq, " + prefixed +
        " FROM $X.live_span AS s JOIN $A AS a ON a.id = s.allocation_id" + std::string(kInBin));
    Statement level_0;
    if (!impl_->level_0_spans)
      level_0 = impl_->prepare("SELECT x.alloc_seq, x.alloc_seq + x.free_seq_delta, " + prefixed +
                               " FROM $T.allocation_compact AS x JOIN $A AS a ON a.id = x.id" +
                               in_level_0_bin);
    read_levels(
        statement, impl_->level_0_spans ? nullptr : &level_0,
        [&](const Statement& row, const auto& live) {
          if (!live(row.uint64(0), row.uint64(1))) return;
          visit(read_allocation(row, AllocationColumns::kAll, 2));
        },
        [&](const PackedAllocation& packed) { visit(impl_->packed().record(upid, packed)); });
    return;
  }

  // The narrow sets read the tables under the allocation view (docs/schema.md), which on a
  // live set of millions takes a third less than the view: the span's own alloc_seq, end_seq
  // and id, the compact row's size and site, the site's columns from the map of the sites met
  // (PackedAllocations::site, which the packed allocations read too), and the detail's segment
  // only when asked for.
  const bool segments = columns == AllocationColumns::kLiveByStackAndSegment;
  Statement statement = impl_->prepare(
      std::string("SELECT s.alloc_seq, s.end_seq, s.allocation_id, c.size, c.site_id") +
      (segments ? ", d.segment_id" : "") +
      " FROM $X.live_span AS s JOIN $T.allocation_compact AS c ON c.id = s.allocation_id" +
      (segments ? " LEFT JOIN $T.allocation_detail AS d ON d.id = s.allocation_id" : "") +
      std::string(kInBin));
  Statement level_0;
  if (!impl_->level_0_spans)
    level_0 = impl_->prepare(
        std::string("SELECT x.alloc_seq, x.alloc_seq + x.free_seq_delta, x.id, x.size, x.site_id") +
        (segments ? ", d.segment_id" : "") + " FROM $T.allocation_compact AS x" +
        (segments ? " LEFT JOIN $T.allocation_detail AS d ON d.id = x.id" : "") + in_level_0_bin);
  PackedAllocations& packed_allocations = impl_->packed();
  AllocationRecord record;
  AllocationRow& a = record.allocation;
  a.upid = upid;
  read_levels(
      statement, impl_->level_0_spans ? nullptr : &level_0,
      [&](const Statement& row, const auto& live) {
        const std::uint64_t end_seq = row.uint64(1);
        a.alloc_seq = row.uint64(0);
        if (!live(a.alloc_seq, end_seq)) return;
        a.id = row.int64(2);
        a.size = row.uint64(3);
        const PackedAllocations::Site& site = packed_allocations.site(row.int64(4));
        a.kind = site.kind;
        a.device = site.device;
        a.alloc_callsite_id = site.callsite_id;
        if (segments) a.segment_id = row.optional_int64(5);
        if (end_seq == static_cast<std::uint64_t>(kNeverFreedEnd))
          record.free.reset();
        else
          record.free.emplace().free_seq = end_seq;
        visit(record);
      },
      [&](const PackedAllocation& packed) {
        a.alloc_seq = packed.alloc_seq;
        a.id = packed.id;
        a.size = packed.size;
        const PackedAllocations::Site& site = packed_allocations.site(packed.site_id);
        a.kind = site.kind;
        a.device = site.device;
        a.alloc_callsite_id = site.callsite_id;
        if (segments) a.segment_id = packed.segment_id;
        record.free.emplace().free_seq = packed.free_seq();
        visit(record);
      });
}

std::uint64_t TimeIndex::last_seq_at(std::int64_t upid, std::int64_t ns) const {
  return impl_->last_at(upid, ns);
}

std::uint64_t TimeIndex::last_seq(std::int64_t upid) const {
  return std::max(impl_->last_alloc_seq(upid), impl_->last_free_seq(upid));
}

std::optional<std::int64_t> TimeIndex::time_of(std::int64_t upid, std::uint64_t seq) const {
  Statement statement = impl_->prepare(
      "SELECT alloc_ns FROM $T.allocation_compact WHERE upid = ?1 AND alloc_seq = ?2 UNION ALL "
      "SELECT alloc_ns + free_ns_delta FROM $T.allocation_compact WHERE upid = ?1 AND "
      "alloc_seq + free_seq_delta = ?2 AND " +
      long_life_sql("") +
      " UNION ALL SELECT alloc_ns + free_ns_delta FROM $T.allocation_compact WHERE upid = ?1 AND "
      "alloc_seq < ?2 AND alloc_seq >= ?2 - " +
      std::to_string(kShortLifeEvents) + " AND alloc_seq + free_seq_delta = ?2 AND " +
      short_life_sql("") + " LIMIT 1");
  statement.bind_int64(1, upid);
  statement.bind_uint64(2, seq);
  std::optional<std::int64_t> ns;
  impl_->each_row(statement, [&](const Statement& row) { ns = row.int64(0); });
  if (ns) return ns;
  // A packed allocation or free: allocated at or before it, a packed life ago at most.
  for (const PackedAllocation& packed :
       impl_->packed().between(upid, first_packed_alloc_live_at(seq), seq)) {
    if (packed.alloc_seq == seq) return packed.alloc_ns;
    if (packed.free_seq() == seq) return packed.free_ns();
  }
  return std::nullopt;
}

bool TimeIndex::for_each_event_between(
    std::int64_t upid, std::uint64_t after_seq, std::uint64_t through_seq,
    const std::function<bool(const AllocationEvent&)>& visit) const {
  if (after_seq == 0) {
    // From the start, every free in the window belongs to an allocation in it: one scan.
    Statement allocs = impl_->prepare(
        "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns "
        "FROM $A WHERE upid = ?1 AND alloc_seq <= ?2 AND result = 0 "
        "ORDER BY alloc_seq");
    allocs.bind_int64(1, upid);
    allocs.bind_uint64(2, through_seq);
    return impl_->merge_events_in_one_scan(allocs, upid, through_seq, visit);
  }
  // The window's allocations, and those up to kShortLifeEvents before it for their short lives'
  // frees; the long lives' frees through the index of frees.
  Statement allocs = impl_->prepare(
      "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns "
      "FROM $A WHERE upid = ?1 AND alloc_seq > ?2 - " +
      std::to_string(kShortLifeEvents) + " AND alloc_seq <= ?3 AND result = 0 ORDER BY alloc_seq");
  Statement long_frees = impl_->prepare(
      "SELECT a.upid, a.alloc_seq + a.free_seq_delta, a.alloc_ns + a.free_ns_delta, s.device, "
      "s.kind, a.size, a.id FROM $T.allocation_compact AS a CROSS JOIN $T.allocation_site AS s "
      "ON s.id = a.site_id WHERE a.upid = ?1 AND a.alloc_seq + a.free_seq_delta > ?2 AND "
      "a.alloc_seq + a.free_seq_delta <= ?3 AND " +
      long_life_sql("a.") + " AND s.result = 0 ORDER BY a.alloc_seq + a.free_seq_delta, a.id");
  for (Statement* statement : {&allocs, &long_frees}) {
    statement->bind_int64(1, upid);
    statement->bind_uint64(2, after_seq);
    statement->bind_uint64(3, through_seq);
  }
  // Packed allocations are short lives: the window's and their frees come with the rows'.
  const std::uint64_t earliest =
      after_seq >= static_cast<std::uint64_t>(kShortLifeEvents) - 1
          ? after_seq - (static_cast<std::uint64_t>(kShortLifeEvents) - 1)
          : 0;
  PackedAllocations::Cursor cursor(impl_->packed(), upid, earliest, through_seq);
  AllocationScan scan(allocs, &impl_->packed(), &cursor);
  return impl_->merged(
      merge_allocation_events_in_window(scan, long_frees, after_seq, through_seq, visit));
}

bool TimeIndex::finds_events_by_seq() const {
  return impl_->seq_indexes;
}

// A damaged trace's times may span all of int64: slice arithmetic is done wider.
__extension__ using WideNs = __int128;

int live_bytes_bucket_shift(std::int64_t start_ns, std::int64_t end_ns) {
  int shift = 0;
  while (shift < 63 &&
         WideNs{end_ns >> shift} - WideNs{start_ns >> shift} >= WideNs{kLiveBytesBuckets})
    ++shift;
  return shift;
}

std::uint32_t TimeIndex::bucket_count() const {
  const int shift = live_bytes_bucket_shift(impl_->start_ns, impl_->end_ns);
  return static_cast<std::uint32_t>(
      std::max<WideNs>(WideNs{impl_->end_ns >> shift} - WideNs{impl_->start_ns >> shift} + 1, 1));
}

std::int64_t TimeIndex::bucket_start_ns(std::uint64_t i) const {
  if (i >= bucket_count()) return impl_->end_ns == INT64_MAX ? INT64_MAX : impl_->end_ns + 1;
  const int shift = live_bytes_bucket_shift(impl_->start_ns, impl_->end_ns);
  const WideNs start = (WideNs{impl_->start_ns >> shift} + static_cast<WideNs>(i)) << shift;
  return static_cast<std::int64_t>(std::max<WideNs>(start, impl_->start_ns));
}

std::int64_t TimeIndex::last_allocation_id() const {
  return impl_->info("last_allocation_id");
}

std::vector<LiveBytesBucket> TimeIndex::buckets() const {
  // Only the slices the index's span has: a row out of range (a file that was written by hand)
  // would otherwise make every reader fill the buckets up to it, billions of them.
  Statement statement = impl_->prepare(
      "SELECT upid, device, kind, bucket, min_bytes, max_bytes, last_bytes FROM "
      "$X.live_bytes_bucket WHERE bucket >= 0 AND bucket < ?1 ORDER BY upid, device, kind, "
      "bucket");
  statement.bind_int64(1, bucket_count());
  std::vector<LiveBytesBucket> rows;
  impl_->each_row(statement, [&](const Statement& row) {
    rows.push_back({row.int64(0), row.int32(1), row.int32(2),
                    static_cast<std::uint32_t>(row.int64(3)), row.uint64(4), row.uint64(5),
                    row.uint64(6)});
  });
  return rows;
}

std::vector<LiveBytesPeak> TimeIndex::peaks() const {
  Statement statement = impl_->prepare(
      "SELECT upid, device, peak_group, bytes, seq, ns FROM $X.live_bytes_peak "
      "ORDER BY upid, device, peak_group");
  std::vector<LiveBytesPeak> rows;
  impl_->each_row(statement, [&](const Statement& row) {
    rows.push_back(
        {row.int64(0), row.int32(1), row.text(2), row.uint64(3), row.uint64(4), row.int64(5)});
  });
  return rows;
}

std::vector<LiveAtPeak> TimeIndex::live_at_peaks() const {
  Statement statement = impl_->prepare(
      "SELECT upid, device, peak_group, alloc_callsite_id, count, bytes FROM $X.live_at_peak "
      "ORDER BY upid, device, peak_group, alloc_callsite_id");
  std::vector<LiveAtPeak> rows;
  impl_->each_row(statement, [&](const Statement& row) {
    rows.push_back({row.int64(0), row.int32(1), row.text(2), row.optional_int64(3), row.uint64(4),
                    row.uint64(5)});
  });
  return rows;
}

std::unordered_set<std::int64_t> TimeIndex::allocator_segments() const {
  return impl_->allocator_segments();
}

std::vector<TimeProblem> TimeIndex::time_problems() const {
  Statement statement = impl_->prepare(
      "SELECT upid, problem, events, first_seq FROM $X.time_problem ORDER BY upid, problem");
  std::vector<TimeProblem> rows;
  impl_->each_row(statement, [&](const Statement& row) {
    rows.push_back({row.int64(0), row.text(1), row.uint64(2), row.uint64(3)});
  });
  return rows;
}

std::set<std::int64_t> TimeIndex::processes_with_allocator_events() const {
  Statement statement = impl_->prepare("SELECT upid FROM $X.allocator_process");
  std::set<std::int64_t> upids;
  impl_->each_row(statement, [&](const Statement& row) { upids.insert(row.int64(0)); });
  return upids;
}

}  // namespace vramtrace::storage
