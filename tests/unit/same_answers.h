// Two traces of the same events, stored two ways (rows and packed chunks, chunks and runs of
// repeated bins), held to the same answer from every query of TraceReader and TimeIndex: the
// allocations by each filter, the totals, the events in order, the last numbers, the times of
// numbers and the numbers at times, the events of windows, the live sets and the rollups.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "sql_query.h"
#include "storage/schema_enums.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::testing {

inline constexpr std::string_view kEveryColumn =
    "id, upid, kind, api, device, stream, address, size, requested_size, flags, pool, result, "
    "alloc_seq, alloc_ns, alloc_utid, alloc_callsite_id, free_seq, free_ns, free_utid, "
    "free_callsite_id, free_api, vmm_handle, vmm_offset, segment_id, allocator_allocated, "
    "allocator_reserved, free_allocator_allocated, free_allocator_reserved, correlation_id";

// The columns as one text, NULL as empty: `a || ',' || ...` (concat_ws() is newer than the
// SQLite some distributions ship).
inline std::string columns_sql(std::string_view columns) {
  std::string sql;
  std::size_t at = 0;
  while (at < columns.size()) {
    std::size_t end = columns.find(',', at);
    if (end == std::string_view::npos) end = columns.size();
    std::string_view name = columns.substr(at, end - at);
    while (name.starts_with(' ')) name.remove_prefix(1);
    sql +=
        (sql.empty() ? "" : " || ',' || ") + std::string("ifnull(") + std::string(name) + ", '')";
    at = end + 1;
  }
  return sql;
}

// Every row of `view` (the view `allocation`, or `allocation_view`) in plain SQL, every column,
// by id, as one text.
inline std::string every_row_of(const std::filesystem::path& path, std::string_view view) {
  return query_one(path, "SELECT group_concat(x, ';') FROM (SELECT " + columns_sql(kEveryColumn) +
                             " AS x FROM " + std::string(view) + " ORDER BY id)");
}

inline std::string text_of(const storage::AllocationRecord& r) {
  std::ostringstream out;
  const storage::AllocationRow& a = r.allocation;
  out << a.id << ' ' << a.upid << ' ' << a.kind << ' ' << a.api << ' ' << a.device << ' '
      << a.stream << ' ' << a.address << ' ' << a.size << ' ' << a.requested_size << ' ' << a.flags
      << ' ' << a.pool.value_or(0) << ' ' << a.result << ' ' << a.alloc_seq << ' ' << a.alloc_ns
      << ' ' << a.alloc_utid << ' ' << a.alloc_callsite_id.value_or(-1) << ' '
      << a.segment_id.value_or(-1) << ' ' << a.allocator_allocated.value_or(0) << ' '
      << a.allocator_reserved.value_or(0);
  if (r.free) {
    out << " freed " << r.free->free_seq << ' ' << r.free->free_ns << ' ' << r.free->free_utid
        << ' ' << r.free->free_callsite_id.value_or(-1) << ' ' << r.free->free_api << ' '
        << r.free->allocator_allocated.value_or(0) << ' ' << r.free->allocator_reserved.value_or(0);
  }
  return out.str();
}

inline std::vector<std::string> texts(const std::vector<storage::AllocationRecord>& records) {
  std::vector<std::string> out;
  for (const storage::AllocationRecord& r : records) out.push_back(text_of(r));
  return out;
}

inline std::string text_of(const storage::AllocationEvent& e) {
  std::ostringstream out;
  out << static_cast<int>(e.type) << ' ' << e.allocation_id << ' ' << e.upid << ' ' << e.seq << ' '
      << e.ns << ' ' << e.device << ' ' << e.kind << ' ' << e.size;
  return out.str();
}

// What to ask of both traces.
struct Questions {
  std::int64_t upid = 1;                       // the process whose live sets are asked by number
  std::int64_t other_upid = 2;                 // another, for the filters by process
  std::vector<std::uint64_t> live_just_after;  // numbers of `upid`
  std::uint64_t live_just_after_any = 0;       // a number asked of every process at once
  std::vector<std::int64_t> ids;               // for the filters by id
  std::size_t at_least = 0;                    // allocations the trace has at least
};

inline void expect_same_allocations(const storage::TraceReader& expected,
                                    const storage::TraceReader& actual, const Questions& ask) {
  using storage::AllocationFilter;
  std::vector<AllocationFilter> filters(1);
  filters.push_back({.upid = ask.other_upid});
  filters.push_back({.kind = storage::allocation_kind::kBlock});
  filters.push_back({.outcome = AllocationFilter::Outcome::kFailed});
  filters.push_back({.outcome = AllocationFilter::Outcome::kSucceeded});
  filters.push_back({.lifetime = AllocationFilter::Lifetime::kLiveAtEnd});
  filters.push_back({.upid = ask.other_upid, .lifetime = AllocationFilter::Lifetime::kLiveAtEnd});
  filters.push_back({.upid = ask.upid, .lifetime = AllocationFilter::Lifetime::kLiveAtEnd});
  filters.push_back({.lifetime = AllocationFilter::Lifetime::kFreed});
  for (const std::uint64_t seq : ask.live_just_after)
    filters.push_back({.upid = ask.upid, .live_just_after = seq});
  filters.push_back({.live_just_after = ask.live_just_after_any});
  filters.push_back({.ids = ask.ids});
  filters.push_back({.kind = storage::allocation_kind::kDevice, .ids = ask.ids});
  for (std::size_t i = 0; i < filters.size(); ++i) {
    const auto want = texts(expected.allocations(filters[i]));
    EXPECT_EQ(texts(actual.allocations(filters[i])), want) << "filter " << i;
    if (i == 0) {
      EXPECT_GE(want.size(), ask.at_least);
    }
  }
  // In table order: the same allocations, in some order.
  AllocationFilter table_order;
  table_order.in_table_order = true;
  auto want = texts(expected.allocations(table_order));
  auto got = texts(actual.allocations(table_order));
  std::sort(want.begin(), want.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, want);

  EXPECT_EQ(actual.upids_with_gpu_events(), expected.upids_with_gpu_events());
  const auto totals_text = [](const std::vector<storage::AllocationTotalsRow>& totals) {
    std::ostringstream out;
    for (const auto& t : totals)
      out << t.upid << ' ' << t.device << ' ' << t.kind << ' ' << t.result << ' ' << t.count << ' '
          << t.bytes << ' ' << t.freed_count << ' ' << t.freed_bytes << ' ' << t.live_count << ' '
          << t.live_bytes << ' ' << t.first_alloc_ns << ' ' << t.last_alloc_ns << ' '
          << t.last_free_ns.value_or(-1) << '\n';
    return out.str();
  };
  EXPECT_EQ(totals_text(actual.allocation_totals()), totals_text(expected.allocation_totals()));

  // The caching allocator's totals at numbers of both processes, from rows and packed blocks.
  for (const std::int64_t upid : {ask.upid, ask.other_upid}) {
    for (const std::uint64_t seq : ask.live_just_after) {
      for (const std::uint64_t at : {seq, seq + 4097}) {
        const auto expected_totals = expected.allocator_totals_at(upid, at);
        const auto actual_totals = actual.allocator_totals_at(upid, at);
        EXPECT_EQ(actual_totals.allocated, expected_totals.allocated) << upid << " " << at;
        EXPECT_EQ(actual_totals.reserved, expected_totals.reserved) << upid << " " << at;
      }
    }
  }

  for (const std::optional<std::int64_t> upid :
       {std::optional<std::int64_t>{}, std::optional<std::int64_t>{ask.other_upid},
        std::optional<std::int64_t>{ask.upid}}) {
    std::vector<std::string> want_events, got_events;
    expected.for_each_allocation_event([&](const auto& e) { want_events.push_back(text_of(e)); },
                                       upid);
    actual.for_each_allocation_event([&](const auto& e) { got_events.push_back(text_of(e)); },
                                     upid);
    EXPECT_EQ(got_events, want_events);
  }
}

// Every query of the time index, for each of `upids`, at numbers and times drawn at random;
// `ns_of` gives a time near a number of a process. The time of every number is asked, but for
// those skipped by steps of up to `time_of_step`.
inline void expect_same_time_index_answers(
    const storage::TimeIndex& expected, const storage::TimeIndex& actual,
    const std::vector<std::int64_t>& upids,
    const std::function<std::int64_t(std::int64_t upid, std::uint64_t seq)>& ns_of,
    std::uint64_t time_of_step = 7) {
  using storage::AllocationRecord;
  EXPECT_EQ(actual.start_ns(), expected.start_ns());
  EXPECT_EQ(actual.end_ns(), expected.end_ns());
  EXPECT_EQ(actual.last_allocation_id(), expected.last_allocation_id());
  std::mt19937_64 random(9);
  for (const std::int64_t upid : upids) {
    const std::uint64_t last = expected.last_seq(upid);
    ASSERT_EQ(actual.last_seq(upid), last);
    for (std::uint64_t seq = 0; seq <= last + 1; seq += 1 + random() % time_of_step)
      ASSERT_EQ(actual.time_of(upid, seq), expected.time_of(upid, seq)) << upid << " " << seq;
    for (int i = 0; i < 300; ++i) {
      const std::int64_t ns =
          ns_of(upid, random() % (last + 2)) - static_cast<std::int64_t>(random() % 3);
      ASSERT_EQ(actual.last_seq_at(upid, ns), expected.last_seq_at(upid, ns)) << upid << " " << ns;
    }
    for (int i = 0; i < 200; ++i) {
      const std::uint64_t after = i == 0 ? 0 : random() % (last + 1);
      const std::uint64_t through = i == 1 ? last : after + random() % (i % 2 == 0 ? 50 : 6'000);
      std::vector<std::string> want, got;
      expected.for_each_event_between(upid, after, through, [&](const auto& e) {
        want.push_back(text_of(e));
        return true;
      });
      actual.for_each_event_between(upid, after, through, [&](const auto& e) {
        got.push_back(text_of(e));
        return true;
      });
      ASSERT_EQ(got, want) << upid << " (" << after << ", " << through << "]";
    }
    for (int i = 0; i < 200; ++i) {
      const std::uint64_t seq = random() % (last + 2);
      ASSERT_EQ(texts(actual.live_at(upid, seq)), texts(expected.live_at(upid, seq)))
          << upid << " " << seq;
    }
    // Several moments at once, the narrow columns: as sets of (id, size, kind, callsite).
    for (const auto columns : {storage::AllocationColumns::kLiveByStack,
                               storage::AllocationColumns::kLiveByStackAndSegment}) {
      std::vector<std::uint64_t> seqs;
      for (int i = 0; i < 40; ++i) seqs.push_back(random() % (last + 2));
      const auto collect = [&](const storage::TimeIndex& index) {
        std::vector<std::string> found;
        index.for_each_live_at_any(
            upid, seqs,
            [&](const AllocationRecord& r) {
              std::ostringstream out;
              out << r.allocation.id << ' ' << r.allocation.size << ' ' << r.allocation.kind << ' '
                  << r.allocation.device << ' ' << r.allocation.alloc_seq << ' '
                  << r.allocation.segment_id.value_or(-1) << ' ' << (r.free ? r.free->free_seq : 0);
              found.push_back(out.str());
            },
            columns);
        std::sort(found.begin(), found.end());
        return found;
      };
      EXPECT_EQ(collect(actual), collect(expected));
    }
  }
}

// The rollups, as text: the slices, then the peaks.
inline std::string rollups_text(const storage::TimeIndex& index) {
  std::ostringstream out;
  for (const auto& b : index.buckets())
    out << b.upid << ' ' << b.device << ' ' << b.kind << ' ' << b.bucket << ' ' << b.min_bytes
        << ' ' << b.max_bytes << ' ' << b.last_bytes << '\n';
  for (const auto& p : index.peaks())
    out << p.upid << ' ' << p.device << ' ' << p.group << ' ' << p.bytes << ' ' << p.seq << ' '
        << p.ns << '\n';
  return out.str();
}

}  // namespace vramtrace::testing
