#include "storage/allocation_source.h"

#include <algorithm>
#include <climits>
#include <set>
#include <tuple>
#include <utility>

#include "storage/allocation_columns.h"
#include "storage/event_merge.h"
#include "storage/live_span.h"
#include "storage/packed_allocations.h"
#include "storage/schema.h"

namespace vramtrace::storage {
namespace {

using sqlite::Statement;

// "Live at the program's end" in SQL, as live_at_program_end_of says it.
std::string live_at_program_end_sql(const ProgramEnds& ends) {
  if (ends.empty()) return "free_seq IS NULL";
  std::string sql = "CASE upid";
  for (const auto& [upid, seq] : ends) {
    sql += " WHEN " + std::to_string(upid) + " THEN alloc_seq < " + std::to_string(seq) +
           " AND (free_seq IS NULL OR free_seq > " + std::to_string(seq) + ")";
  }
  return sql + " ELSE free_seq IS NULL END";
}

// What an AllocationFilter keeps, in both forms: the rows' query, and the test of a packed
// allocation. A condition of the filter changes both, here, side by side. A packed allocation
// succeeded and was freed (storage/allocation_chunk.h): the outcome and kFreed keep every one
// or none, and need no test of their own.
class AllocationSelection {
 public:
  AllocationSelection(const AllocationFilter& filter, const ProgramEnds& program_ends)
      : filter_(filter), program_ends_(program_ends) {}

  // The rows' query, selecting allocation_columns(filter.columns) and ordered as the filter
  // asks; with filter.ids, of the ids in `ids`, an SQL list ("1, 5, 9").
  std::string rows_query(const std::string& ids = {}) const {
    std::string sql = "SELECT " + std::string(allocation_columns(filter_.columns)) + " FROM " +
                      allocation_rows_subquery() +
                      " WHERE (?1 IS NULL OR upid = ?1) AND (?2 IS NULL OR kind = ?2)";
    switch (filter_.outcome) {
      case AllocationFilter::Outcome::kAny:
        break;
      case AllocationFilter::Outcome::kSucceeded:
        sql += " AND result = 0";
        break;
      case AllocationFilter::Outcome::kFailed:
        sql += " AND result != 0";
        break;
    }
    if (filter_.live_just_after)
      sql += " AND result = 0 AND alloc_seq <= ?3 AND (free_seq IS NULL OR free_seq > ?3)";
    switch (filter_.lifetime) {
      case AllocationFilter::Lifetime::kAny:
        break;
      case AllocationFilter::Lifetime::kLiveAtEnd:
        sql += " AND result = 0 AND (" + live_at_program_end_sql(program_ends_) + ")";
        break;
      case AllocationFilter::Lifetime::kFreed:
        sql += " AND result = 0 AND free_seq IS NOT NULL";
        break;
    }
    if (filter_.ids) return sql + " AND id IN (" + ids + ") ORDER BY id";
    return filter_.in_table_order ? sql : sql + " ORDER BY upid, alloc_seq, id";
  }
  // Its parameters: ?1 upid, ?2 kind, ?3 live_just_after.
  void bind(Statement& rows) const {
    rows.bind_optional_int64(1, filter_.upid);
    rows.bind_optional_int64(2, filter_.kind);
    if (filter_.live_just_after) rows.bind_uint64(3, *filter_.live_just_after);
  }

  // Whether any packed allocation can be kept: all of them succeeded.
  bool may_keep_packed() const { return filter_.outcome != AllocationFilter::Outcome::kFailed; }
  // Whether a packed allocation of `upid` is kept (filter.ids apart: they are looked up by id).
  bool keeps(PackedAllocations& packed, std::int64_t upid,
             const PackedAllocation& allocation) const {
    if (filter_.upid && upid != *filter_.upid) return false;
    if (filter_.kind && packed.site(allocation.site_id).kind != *filter_.kind) return false;
    if (filter_.live_just_after && (allocation.alloc_seq > *filter_.live_just_after ||
                                    allocation.free_seq() <= *filter_.live_just_after))
      return false;
    if (filter_.lifetime == AllocationFilter::Lifetime::kLiveAtEnd &&
        !live_at_program_end_of(program_ends_, upid, allocation.alloc_seq, allocation.free_seq()))
      return false;
    return true;
  }

 private:
  const AllocationFilter& filter_;
  const ProgramEnds& program_ends_;
};

}  // namespace

bool live_at_program_end_of(const ProgramEnds& ends, std::int64_t upid, std::uint64_t alloc_seq,
                            std::optional<std::uint64_t> free_seq) {
  const auto end = ends.find(upid);
  if (end == ends.end()) return !free_seq.has_value();
  return alloc_seq < end->second && (!free_seq || *free_seq > end->second);
}

const std::string& allocation_rows_subquery() {
  static const std::string sql = "(" + allocation_rows_sql("main") + ")";
  return sql;
}

void AllocationSource::for_each(const AllocationFilter& filter,
                                const std::function<void(const AllocationRecord&)>& visit) {
  // The packed allocations the filter keeps, visited in their place among the rows: by id, by
  // (upid, alloc_seq, id), or after them in table order. Those of a few bins are gathered
  // first; a pass over every allocation reads them as it goes.
  const AllocationSelection selection(filter, program_ends_);
  PackedAllocations& packed = trace_.packed();
  std::vector<std::pair<std::int64_t, PackedAllocation>> gathered;
  std::size_t next_gathered = 0;
  std::optional<PackedAllocations::Cursor> cursor;
  const auto gather = [&](std::optional<std::int64_t> upid, std::uint64_t seq) {
    // Live just after `seq`: made at or before it, a packed life ago at most.
    packed.for_each(upid, first_packed_alloc_live_at(seq), seq,
                    [&](std::int64_t owner, const PackedAllocation& allocation) {
                      if (selection.keeps(packed, owner, allocation))
                        gathered.emplace_back(owner, allocation);
                      return true;
                    });
  };
  // Every packed allocation succeeded; none is live at a program's end but one that ended
  // before its process did.
  if (packed.present() && selection.may_keep_packed()) {
    if (filter.ids) {
      if (!filter.ids->empty()) {
        const std::set<std::int64_t> wanted(filter.ids->begin(), filter.ids->end());
        packed.for_each_with_id_between(
            *wanted.begin(), *wanted.rbegin(),
            [&](std::int64_t upid, const PackedAllocation& allocation) {
              if (wanted.contains(allocation.id) && selection.keeps(packed, upid, allocation))
                gathered.emplace_back(upid, allocation);
            });
        std::sort(gathered.begin(), gathered.end(),
                  [](const auto& x, const auto& y) { return x.second.id < y.second.id; });
      }
    } else if (filter.live_just_after) {
      gather(filter.upid, *filter.live_just_after);
    } else if (filter.lifetime == AllocationFilter::Lifetime::kLiveAtEnd) {
      for (const auto& [upid, end] : program_ends_)
        if (end > 0 && (!filter.upid || upid == *filter.upid)) gather(upid, end - 1);
    } else {
      cursor.emplace(packed, filter.upid, 0, UINT64_MAX);
    }
  }
  // The next packed allocation kept, or null.
  std::optional<AllocationRecord> ahead;
  const auto next_packed = [&]() -> const AllocationRecord* {
    if (ahead) return &*ahead;
    if (next_gathered < gathered.size()) {
      const auto& [upid, allocation] = gathered[next_gathered++];
      ahead = packed.record(upid, allocation);
    } else if (cursor) {
      std::int64_t upid = 0;
      while (const PackedAllocation* allocation = cursor->next(&upid)) {
        if (!selection.keeps(packed, upid, *allocation)) continue;
        ahead = packed.record(upid, *allocation);
        break;
      }
    }
    return ahead ? &*ahead : nullptr;
  };
  const auto before = [&](const AllocationRecord& x, const AllocationRecord& y) {
    if (filter.ids) return x.allocation.id < y.allocation.id;
    return std::tuple(x.allocation.upid, x.allocation.alloc_seq, x.allocation.id) <
           std::tuple(y.allocation.upid, y.allocation.alloc_seq, y.allocation.id);
  };
  const auto visit_in_place = [&](const AllocationRecord& row) {
    if (!filter.in_table_order || filter.ids) {
      while (const AllocationRecord* packed_record = next_packed()) {
        if (!before(*packed_record, row)) break;
        visit(*packed_record);
        ahead.reset();
      }
    }
    visit(row);
  };
  if (filter.ids) {
    // A few hundred at a time: each statement's list stays short, whatever the count.
    constexpr std::size_t kIdsPerQuery = 500;
    std::vector<std::int64_t> ids = *filter.ids;
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    for (std::size_t first = 0; first < ids.size(); first += kIdsPerQuery) {
      std::string list;
      for (std::size_t i = first; i < ids.size() && i < first + kIdsPerQuery; ++i)
        list += (list.empty() ? "" : ", ") + std::to_string(ids[i]);
      Statement rows = trace_.prepare(selection.rows_query(list));
      selection.bind(rows);
      visit_rows(rows, filter.columns, visit_in_place);
    }
  } else {
    Statement rows = trace_.prepare(selection.rows_query());
    selection.bind(rows);
    visit_rows(rows, filter.columns, visit_in_place);
  }
  while (const AllocationRecord* packed_record = next_packed()) {
    visit(*packed_record);
    ahead.reset();
  }
}

void AllocationSource::visit_rows(Statement& rows, AllocationColumns columns,
                                  const std::function<void(const AllocationRecord&)>& visit) {
  if (columns == AllocationColumns::kLiveByStack ||
      columns == AllocationColumns::kLiveByStackAndSegment) {
    // id, upid, kind, device, size, alloc_seq, then columns that may be NULL.
    trace_.each_row(rows, [&](const Statement& row) {
      trace_.check_row(row, "allocation", {0, 1, 2, 3, 4, 5}, {2, 3});
      visit(read_allocation(row, columns));
    });
    return;
  }
  trace_.each_row(rows, [&](const Statement& row) {
    trace_.check_row(row, "allocation", {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14},
                     {2, 3, 4, 11, 20}, {9});
    visit(read_allocation(row));
  });
}

void AllocationSource::for_each_event(const std::function<void(const AllocationEvent&)>& visit,
                                      std::optional<std::int64_t> upid) {
  // One process: `upid = ?1` rather than `?1 IS NULL OR ...`, so that SQLite reads each scan in
  // order from the (upid, seq) indexes where the trace has them, instead of sorting.
  const std::string process = upid ? " AND upid = ?1" : "";
  Statement allocs = trace_.prepare(
      "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns FROM " +
      allocation_rows_subquery() + " WHERE result = 0" + process + " ORDER BY upid, alloc_seq");
  if (upid) allocs.bind_int64(1, *upid);
  PackedAllocations::Cursor packed(trace_.packed(), upid, 0, UINT64_MAX);
  AllocationScan scan(allocs, &trace_.packed(), &packed);
  const int rc = merge_allocation_events_in_one_scan(scan, static_cast<std::uint64_t>(INT64_MAX),
                                                     [&](const AllocationEvent& event) {
                                                       visit(event);
                                                       return true;
                                                     });
  if (rc != SQLITE_DONE) trace_.fail(rc);
}

std::vector<AllocationTotalsRow> AllocationSource::totals() {
  // Added up here rather than by GROUP BY, which would sort every row first: one scan of the
  // few columns needed, into a map of a handful of keys; then the packed allocations.
  std::map<std::tuple<std::int64_t, int, int, int>, AllocationTotalsRow> totals;
  const auto add = [&](const std::tuple<std::int64_t, int, int, int>& key, std::uint64_t size,
                       std::int64_t alloc_ns, std::optional<std::int64_t> free_ns,
                       std::uint64_t alloc_seq, std::optional<std::uint64_t> free_seq) {
    auto [it, added] = totals.try_emplace(key);
    AllocationTotalsRow& t = it->second;
    if (added) {
      std::tie(t.upid, t.device, t.kind, t.result) = key;
      t.first_alloc_ns = t.last_alloc_ns = alloc_ns;
    }
    t.count += 1;
    t.bytes += size;
    t.first_alloc_ns = std::min(t.first_alloc_ns, alloc_ns);
    t.last_alloc_ns = std::max(t.last_alloc_ns, alloc_ns);
    if (free_ns) {
      t.freed_count += 1;
      t.freed_bytes += size;
      t.last_free_ns = std::max(t.last_free_ns.value_or(*free_ns), *free_ns);
    }
    const bool live = live_at_program_end_of(program_ends_, t.upid, alloc_seq, free_seq);
    if (live && t.result == 0) {
      t.live_count += 1;
      t.live_bytes += size;
    }
  };
  Statement statement = trace_.prepare(
      "SELECT upid, device, kind, result, size, alloc_ns, free_ns, alloc_seq, free_seq FROM " +
      allocation_rows_subquery());
  trace_.each_row(statement, [&](const Statement& row) {
    trace_.check_row(row, "allocation", {0, 1, 2, 3, 4, 5, 7}, {1, 2, 3});
    std::optional<std::uint64_t> free_seq;
    if (const std::optional<std::int64_t> seq = row.optional_int64(8))
      free_seq = static_cast<std::uint64_t>(*seq);
    add(std::tuple(row.int64(0), row.int32(1), row.int32(2), row.int32(3)), row.uint64(4),
        row.int64(5), row.optional_int64(6), row.uint64(7), free_seq);
  });
  PackedAllocations& packed = trace_.packed();
  packed.for_each(
      std::nullopt, 0, UINT64_MAX, [&](std::int64_t upid, const PackedAllocation& allocation) {
        const PackedAllocations::Site& site = packed.site(allocation.site_id);
        add(std::tuple(upid, site.device, site.kind, site.result), allocation.size,
            allocation.alloc_ns, allocation.free_ns(), allocation.alloc_seq, allocation.free_seq());
        return true;
      });
  std::vector<AllocationTotalsRow> rows;
  rows.reserve(totals.size());
  for (auto& [key, row] : totals) rows.push_back(std::move(row));
  return rows;
}

}  // namespace vramtrace::storage
