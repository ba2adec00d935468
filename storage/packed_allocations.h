// The readers' side of allocation_chunk (storage/allocation_chunk.h) and of the runs of
// allocation_chunk_repeat (storage/chunk_repeat.h): the packed allocations a query by number, by
// id or by process needs, decoded in C++, with the columns of their sites. A run's instances
// read as the chunks they stand for: the chunks of a bin are those stored starting in it and the
// instances whose first number is in it.
// TraceReader and TimeIndex read a packed allocation where they read a row of
// allocation_compact by (upid, alloc_seq), and never through the view `allocation`, whose
// json_each() would decode every chunk of the trace for any query. Internal to storage/.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "storage/allocation_chunk.h"
#include "storage/chunk_repeat.h"
#include "storage/sqlite_statement.h"
#include "storage/trace_rows.h"

struct sqlite3;

namespace vramtrace::storage {

class PackedAllocations {
 public:
  // On `db`, the trace's tables in `schema` ("main", or the name it was attached under); `file`
  // names the trace in messages. A trace written before allocation_chunk existed has no packed
  // allocations, and one written before allocation_chunk_repeat no runs. Failures throw
  // TraceError, damage among them: a run whose source chunk is missing or whose numbers no
  // writer makes.
  PackedAllocations(sqlite3* db, std::string schema, std::string file);

  // Whether the trace has allocation_chunk (it may still be empty). Runs need it for their
  // sources: a trace without it has none.
  bool present() const { return present_; }

  // The columns an allocation takes from its sites (allocation_site, free_site), as the view's
  // LEFT JOINs read them: a site that is not there reads as NULLs (0 here).
  struct Site {
    int kind = 0, api = 0, device = 0, result = 0;
    std::uint64_t stream = 0;
    std::uint32_t flags = 0;
    std::optional<std::uint64_t> pool;
    std::int64_t utid = 0;
    std::optional<std::int64_t> callsite_id;
  };
  struct FreeSite {
    std::int64_t utid = 0;
    std::optional<std::int64_t> callsite_id;
    int api = 0;
  };
  const Site& site(std::int64_t id);
  const FreeSite& free_site(std::int64_t id);

  // Its record, as TraceReader reads a row's.
  AllocationRecord record(std::int64_t upid, const PackedAllocation& packed);
  // Its allocation and its free, as the event scans give them.
  AllocationEvent alloc_event(std::int64_t upid, const PackedAllocation& packed);
  AllocationEvent free_event(std::int64_t upid, const PackedAllocation& packed);

  // The packed allocations of one process (or of every process) numbered from `from` through
  // `through`, in (upid, alloc_seq, id) order, decoded a bin of level 0 at a time: the bin's
  // chunks and its runs' instances together.
  class Cursor {
   public:
    Cursor(PackedAllocations& owner, std::optional<std::int64_t> upid, std::uint64_t from,
           std::uint64_t through);
    ~Cursor();
    Cursor(const Cursor&) = delete;
    Cursor& operator=(const Cursor&) = delete;
    // The next one, valid until the next call, with its process in *upid; null at the end.
    const PackedAllocation* next(std::int64_t* upid);

   private:
    using BinKey = std::pair<std::int64_t, std::int64_t>;  // (upid, bin)
    // A run with instances in range: the next one to read, and the last.
    struct RunInstances {
      ChunkRepeatRun run;
      std::int64_t next_k = 0, last_k = 0;
    };

    // Reads the chunks and instances of the next bin that holds any in range; false when none
    // is left.
    bool load_bin();
    // Reads the next chunk into ahead_, if any is left.
    void read_chunk_ahead();
    BinKey instance_key(std::size_t run) const;

    PackedAllocations& owner_;
    sqlite::Statement chunks_;
    std::uint64_t from_ = 0, through_ = 0;
    std::vector<PackedAllocation> bin_;
    std::size_t at_ = 0;
    std::int64_t bin_upid_ = 0;
    // The next chunk, read already.
    std::vector<PackedAllocation> ahead_;
    BinKey ahead_key_;
    bool has_ahead_ = false, done_ = false;
    std::vector<RunInstances> runs_;
    // The runs_ with instances left to read, as a heap: the one whose next instance comes
    // first on top, so that instances come in order even from runs that overlap.
    std::vector<std::size_t> run_heap_;
  };

  // Visits what a Cursor gives until `visit` returns false. Returns false when it stopped.
  bool for_each(std::optional<std::int64_t> upid, std::uint64_t from, std::uint64_t through,
                const std::function<bool(std::int64_t upid, const PackedAllocation&)>& visit);
  // The same, into a vector.
  std::vector<PackedAllocation> between(std::int64_t upid, std::uint64_t from,
                                        std::uint64_t through);
  // Visits those whose id is in [first_id, last_id], in no particular order. A run's instances
  // are found by arithmetic on its ids: only those with ids in range are decoded.
  void for_each_with_id_between(
      std::int64_t first_id, std::int64_t last_id,
      const std::function<void(std::int64_t upid, const PackedAllocation&)>& visit);

  // The first number of the process's last chunk or instance that starts at or before `seq`;
  // unset when none does.
  std::optional<std::uint64_t> last_chunk_start(std::int64_t upid, std::uint64_t seq);
  // The process's highest alloc_seq and highest free_seq among them; 0 when it has none.
  std::uint64_t last_alloc_seq(std::int64_t upid);
  std::uint64_t last_free_seq(std::int64_t upid);
  // The highest id among them; 0 when there are none.
  std::int64_t last_id();
  // The processes that have some, ascending.
  std::vector<std::int64_t> upids();

 private:
  sqlite::Statement prepare(const std::string& sql);
  // `slot`, prepared from `sql` the first time and reset every later one: the time index asks
  // for the last chunk at or before a number many times in one binary search.
  sqlite::Statement& reuse(sqlite::Statement& slot, const std::string& sql);
  [[noreturn]] void fail(int rc);
  // The first column of the statement's first row; unset for none or NULL.
  std::optional<std::int64_t> first_value(sqlite::Statement& statement);
  // The allocations of the current row of a statement selecting (upid, first_id,
  // first_alloc_seq, first_alloc_ns, allocations), appended to `out`.
  void unpack_row(const sqlite::Statement& row, std::vector<PackedAllocation>* out);
  [[noreturn]] void damaged_chunk(std::int64_t upid, std::uint64_t first_alloc_seq) const;
  [[noreturn]] void damaged_run(const ChunkRepeatRun& run, const std::string& what) const;
  // Every row of a statement, then resets it.
  void each_row(sqlite::Statement& statement,
                const std::function<void(const sqlite::Statement&)>& visit);
  // The processes with rows in `table`, ascending.
  std::vector<std::int64_t> upids_of(std::string_view table);

  // The run of a row selecting kRunColumns (packed_allocations.cpp), refused as damage when
  // its numbers are none that the writer makes; its source's columns are not filled.
  ChunkRepeatRun read_run(const sqlite::Statement& row) const;
  // The runs of one process (or of every process) that may have instances whose first number
  // is in [bin of from, through], in (upid, first_alloc_seq) order. A process's runs may
  // interleave (a loop's shapes of bin take turns, each with its run), but none spans more than
  // kRepeatRunSpanNumbers, so these are among the runs that start that far before the range.
  std::vector<ChunkRepeatRun> runs_between(std::optional<std::int64_t> upid, std::uint64_t from,
                                           std::uint64_t through);
  // A run's source chunk, decoded; its first id and time.
  struct Source {
    std::int64_t first_id = 0, first_alloc_ns = 0;
    std::vector<PackedAllocation> allocations;
  };
  std::shared_ptr<const Source> source_of(const ChunkRepeatRun& run);
  // Appends instance k of `run` to `out`.
  void append_instance(const ChunkRepeatRun& run, std::int64_t k,
                       std::vector<PackedAllocation>* out);

  sqlite3* db_;
  std::string schema_, file_;
  bool present_ = false, runs_present_ = false;
  sqlite::Statement site_query_, free_site_query_, by_id_query_, last_chunk_start_query_,
      last_free_seq_query_, last_id_query_, runs_by_id_query_, last_run_query_, runs_between_query_,
      source_query_;
  // Sources decoded lately, by (upid, first_alloc_seq): a query reads each source it meets
  // once, however many instances of it fall in its range. Few are kept, since a query meets
  // few sources in turn; a query that holds one keeps it when the map is cleared.
  std::map<std::pair<std::int64_t, std::uint64_t>, std::shared_ptr<const Source>> sources_;
  // Prepared cursors' statements not in use: a cursor takes one and gives it back when it ends,
  // so that any number may be open at once.
  std::vector<sqlite::Statement> idle_cursor_statements_;
  std::unordered_map<std::int64_t, Site> sites_;
  std::unordered_map<std::int64_t, FreeSite> free_sites_;
};

}  // namespace vramtrace::storage
