// TimeIndex: the live set at any event agrees with a brute-force sweep of the allocation table
// (on a generated trace whose lifetimes cross every level of the bin ladder), the index is kept
// in a finished trace and built aside for one that is not, and the rollups (peaks, buckets)
// match the allocator trace's table (allocator_trace.h); the index stores the rollups its caller
// builds, and reports that can scan read only a kept index.
#include "storage/time_index.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "allocator_trace.h"
#include "analysis/reports/leak_report.h"
#include "analysis/time/device_peaks.h"
#include "analysis/time/report_time_index.h"
#include "analysis/time/trace_peaks.h"
#include "analysis/time/whole_moment.h"
#include "random_trace.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

using testing::kAllocatorTraceStartNs;
constexpr std::uint64_t M = 1024 * 1024;

std::unique_ptr<storage::TimeIndex> open_index(const std::filesystem::path& path) {
  std::string error;
  auto index = storage::TimeIndex::open(path, storage::build_live_bytes_rollups, &error);
  EXPECT_NE(index, nullptr) << error;
  return index;
}

bool file_has_table(const std::filesystem::path& path, const std::string& table) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* statement = nullptr;
  sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE name = ?1", -1, &statement,
                     nullptr);
  sqlite3_bind_text(statement, 1, table.c_str(), -1, SQLITE_TRANSIENT);
  const bool found = sqlite3_step(statement) == SQLITE_ROW && sqlite3_column_int(statement, 0) == 1;
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return found;
}

TEST(TimeIndex, LiveSetMatchesABruteForceSweep) {
  testing::TempDir dir;
  const auto path = dir / "random.db";
  std::uint64_t last_seq = 0;
  ASSERT_EQ(testing::write_random_trace(path, &last_seq), "");
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_NE(trace, nullptr) << failure.message;
  const auto all = trace->allocations({});
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  std::mt19937_64 random(7);
  std::size_t checked_nonempty = 0;
  for (int i = 0; i < 300; ++i) {
    const std::uint64_t s = i == 0 ? last_seq : random() % (last_seq + 2);
    std::vector<std::int64_t> expected;
    for (const auto& r : all) {
      if (!r.failed() && r.allocation.alloc_seq <= s && (!r.free || r.free->free_seq > s))
        expected.push_back(r.allocation.id);
    }
    std::vector<std::int64_t> got;
    for (const auto& r : index->live_at(1, s)) got.push_back(r.allocation.id);
    std::sort(got.begin(), got.end());
    ASSERT_EQ(got, expected) << "at seq " << s;
    checked_nonempty += expected.empty() ? 0 : 1;
  }
  EXPECT_GT(checked_nonempty, 250u);
}

// What the reports that add a live set up compare: every field that a column set reads.
using LiveFields = std::tuple<std::int64_t, std::int64_t, int, int, std::uint64_t, std::uint64_t,
                              std::optional<std::uint64_t>, std::optional<std::int64_t>,
                              std::optional<std::int64_t>>;
LiveFields live_fields(const storage::AllocationRecord& record, bool segment) {
  const storage::AllocationRow& a = record.allocation;
  std::optional<std::uint64_t> free_seq;
  if (record.free) free_seq = record.free->free_seq;
  return {a.id,
          a.upid,
          a.kind,
          a.device,
          a.size,
          a.alloc_seq,
          free_seq,
          a.alloc_callsite_id,
          segment ? a.segment_id : std::nullopt};
}

// The visits of for_each_live_at, with every column set, are the rows live_at returns, each
// once: the reports that stream the live set count what the live set holds. On the random
// trace (lifetimes on every level of the ladder) and on the allocator trace (blocks in
// segments, callsites), at every event of the latter and at 300 of the former.
TEST(TimeIndex, ForEachLiveAtVisitsTheRowsLiveAtReturns) {
  testing::TempDir dir;
  std::uint64_t random_last = 0;
  ASSERT_EQ(testing::write_random_trace(dir / "random.db", &random_last), "");
  ASSERT_EQ(testing::write_allocator_trace(dir / "allocator.db"), "");
  std::mt19937_64 random(11);
  std::vector<std::uint64_t> random_seqs{0, random_last, random_last + 1};
  for (int i = 0; i < 300; ++i) random_seqs.push_back(random() % (random_last + 2));
  std::vector<std::uint64_t> allocator_seqs;
  for (std::uint64_t s = 0; s <= 15; ++s) allocator_seqs.push_back(s);
  std::size_t rows = 0;
  for (const auto& [name, seqs] : {std::pair(std::string("random.db"), random_seqs),
                                   std::pair(std::string("allocator.db"), allocator_seqs)}) {
    const auto index = open_index(dir / name);
    ASSERT_NE(index, nullptr);
    for (const std::int64_t upid : {1, 2}) {
      for (const std::uint64_t s : seqs) {
        for (const auto columns :
             {storage::AllocationColumns::kAll, storage::AllocationColumns::kLiveByStack,
              storage::AllocationColumns::kLiveByStackAndSegment}) {
          const bool segment = columns != storage::AllocationColumns::kLiveByStack;
          std::vector<LiveFields> expected, got;
          for (const auto& record : index->live_at(upid, s))
            expected.push_back(live_fields(record, segment));
          index->for_each_live_at(
              upid, s,
              [&](const storage::AllocationRecord& record) {
                got.push_back(live_fields(record, segment));
              },
              columns);
          std::sort(expected.begin(), expected.end());
          std::sort(got.begin(), got.end());
          ASSERT_EQ(got, expected) << name << " upid " << upid << " at seq " << s;
          rows += got.size();
        }
      }
    }
  }
  EXPECT_GT(rows, 100000u);
}

// for_each_live_at_any visits each allocation live at one of several moments once: the union
// of their live sets, whichever bins the moments share.
TEST(TimeIndex, ForEachLiveAtAnyVisitsTheUnionOfTheLiveSetsOnce) {
  testing::TempDir dir;
  const auto path = dir / "random.db";
  std::uint64_t last_seq = 0;
  ASSERT_EQ(testing::write_random_trace(path, &last_seq), "");
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  std::mt19937_64 random(12);
  for (int i = 0; i < 100; ++i) {
    std::vector<std::uint64_t> seqs;
    const std::size_t count = 1 + random() % 4;
    const std::uint64_t near = random() % (last_seq + 2);
    for (std::size_t k = 0; k < count; ++k) {
      // Some close together (one bin), some anywhere.
      seqs.push_back(k % 2 == 0 ? random() % (last_seq + 2) : near + random() % 5000);
    }
    std::set<std::int64_t> expected;
    for (const std::uint64_t s : seqs)
      for (const auto& record : index->live_at(1, s)) expected.insert(record.allocation.id);
    for (const auto columns :
         {storage::AllocationColumns::kAll, storage::AllocationColumns::kLiveByStack}) {
      std::vector<std::int64_t> got;
      index->for_each_live_at_any(
          1, seqs,
          [&](const storage::AllocationRecord& record) { got.push_back(record.allocation.id); },
          columns);
      std::sort(got.begin(), got.end());
      ASSERT_EQ(got, std::vector<std::int64_t>(expected.begin(), expected.end())) << "moment " << i;
    }
  }
}

// The leaks at the end and the device peaks, from the index (what `leaks` and `gate` read
// where the trace keeps one) and from a scan of the trace: the same report, for each level,
// process and test range (allocated_in) that `gate` asks for.
TEST(TimeIndex, LeaksAndPeaksAtTheEndAgreeWithTheScan) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_NE(trace, nullptr) << failure.message;
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  const auto groups = [](const analysis::LeakReport& report) {
    std::vector<
        std::tuple<std::optional<std::int64_t>, int, std::uint64_t, std::uint64_t, std::size_t>>
        out;
    for (const auto& g : report.groups)
      out.emplace_back(g.callsite_id, g.kind, g.bytes, g.count, g.stack.size());
    return out;
  };
  std::size_t leaks_seen = 0;
  for (const auto level :
       {std::optional<analysis::LeakLevel>(), std::optional(analysis::LeakLevel::kBlock),
        std::optional(analysis::LeakLevel::kSegment)}) {
    for (const std::optional<std::int64_t> upid :
         {std::optional<std::int64_t>(), std::optional<std::int64_t>(1)}) {
      for (const bool in_range : {false, true}) {
        analysis::LeakReportOptions options;
        options.level = level;
        options.upid = upid;
        if (in_range) options.allocated_in = analysis::LeakReportOptions::SeqRange{2, 6};
        const analysis::LeakReport scanned =
            analysis::build_leak_report_at_end(*trace, nullptr, options);
        const analysis::LeakReport indexed =
            analysis::build_leak_report_at_end(*trace, index.get(), options);
        EXPECT_EQ(groups(indexed), groups(scanned));
        EXPECT_EQ(indexed.total_bytes, scanned.total_bytes);
        EXPECT_EQ(indexed.total_count, scanned.total_count);
        EXPECT_EQ(indexed.cached.bytes, scanned.cached.bytes);
        EXPECT_EQ(indexed.cached.count, scanned.cached.count);
        EXPECT_EQ(indexed.level, scanned.level);
        EXPECT_EQ(indexed.allocator_events, scanned.allocator_events);
        EXPECT_EQ(indexed.warnings, scanned.warnings);
        leaks_seen += scanned.groups.size();
      }
    }
  }
  EXPECT_GT(leaks_seen, 10u);
  // Blocks B2 and B3 live at the end; S1 cache (2 MiB - 1.25 MiB in them).
  const analysis::LeakReport end = analysis::build_leak_report_at_end(*trace, index.get());
  EXPECT_EQ(end.cached.count, 1u);
  EXPECT_EQ(end.cached.bytes, 2 * M - M - M / 4);
  const auto peaks = [](const std::vector<analysis::DevicePeak>& list) {
    std::vector<std::tuple<std::int64_t, std::uint32_t, int, std::uint64_t>> out;
    for (const auto& p : list) out.emplace_back(p.upid, p.pid, p.device, p.bytes);
    return out;
  };
  EXPECT_EQ(peaks(analysis::find_device_peaks(*trace, index.get(), std::nullopt)),
            peaks(analysis::find_device_peaks(*trace, nullptr, std::nullopt)));
  EXPECT_EQ(peaks(analysis::find_device_peaks(*trace, index.get(), std::set<std::int64_t>{2})),
            peaks(analysis::find_device_peaks(*trace, std::set<std::int64_t>{2})));
}

TEST(TimeIndex, KeptInAFinishedTraceAndReused) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  {
    const auto index = open_index(path);
    ASSERT_NE(index, nullptr);
    EXPECT_EQ(index->note(), "");
  }
  EXPECT_TRUE(file_has_table(path, "live_span"));
  EXPECT_TRUE(file_has_table(path, "live_bytes_bucket"));
  const auto modified = std::filesystem::last_write_time(path);
  const auto again = open_index(path);
  ASSERT_NE(again, nullptr);
  EXPECT_EQ(again->note(), "");
  EXPECT_EQ(std::filesystem::last_write_time(path), modified);  // reused, not rebuilt
  EXPECT_EQ(again->live_at(1, 13).size(), 5u);                  // S1, B2, B3, R1, R2
}

TEST(TimeIndex, AnUnfinishedTraceIsIndexedAsideWithANote) {
  testing::TempDir dir;
  const auto path = dir / "unfinished.db";
  ASSERT_EQ(testing::write_allocator_trace(path, /*finish=*/false), "");
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  EXPECT_NE(index->note().find("built aside"), std::string::npos) << index->note();
  EXPECT_FALSE(file_has_table(path, "live_span"));
  // Without the trace's sequence indexes, time lookups still answer (by scanning).
  EXPECT_EQ(index->last_seq_at(1, kAllocatorTraceStartNs + 6'000'000), 6u);
  EXPECT_EQ(index->live_at(1, 7).size(), 4u);  // S1, B2, B3, S2
}

// The index stores whatever rows the caller's rollups make, from every event in (upid, seq)
// order, and builds them once: a kept index is reused without calling them again.
TEST(TimeIndex, StoresTheRollupsTheCallerBuilds) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  int builds = 0;
  std::vector<std::pair<std::int64_t, std::uint64_t>> events;
  const storage::BuildRollups count_events = [&](const storage::RollupSource& source,
                                                 const storage::RollupSink& sink) {
    ++builds;
    EXPECT_LT(source.start_ns, source.end_ns);
    source.for_each_event(
        [&](const storage::AllocationEvent& event) { events.emplace_back(event.upid, event.seq); });
    sink.add_bucket({1, 0, 8, 7, 1, 3, 2});
    sink.add_peak({2, 1, "most", 42, 5, 9});
  };
  std::string error;
  const auto index = storage::TimeIndex::open(path, count_events, &error);
  ASSERT_NE(index, nullptr) << error;
  EXPECT_EQ(builds, 1);
  EXPECT_TRUE(std::is_sorted(events.begin(), events.end()));
  std::uint64_t expected = 0;
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_NE(trace, nullptr) << failure.message;
  trace->for_each_allocation_event([&](const storage::AllocationEvent&) { ++expected; });
  EXPECT_EQ(events.size(), expected);
  const auto buckets = index->buckets();
  ASSERT_EQ(buckets.size(), 1u);
  EXPECT_EQ(std::tuple(buckets[0].upid, buckets[0].device, buckets[0].kind, buckets[0].bucket,
                       buckets[0].min_bytes, buckets[0].max_bytes, buckets[0].last_bytes),
            std::tuple(1, 0, 8, 7u, 1u, 3u, 2u));
  const auto peaks = index->peaks();
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(std::tuple(peaks[0].upid, peaks[0].device, peaks[0].group, peaks[0].bytes, peaks[0].seq,
                       peaks[0].ns),
            std::tuple(2, 1, std::string("most"), 42u, 5u, 9));
  ASSERT_NE(storage::TimeIndex::open(path, count_events, &error), nullptr) << error;
  EXPECT_EQ(builds, 1);
}

// Reports that can scan read the index only where the trace keeps it: never built aside.
TEST(TimeIndex, ReportsThatCanScanReadOnlyAKeptIndex) {
  testing::TempDir dir;
  const auto finished = dir / "finished.db", unfinished = dir / "unfinished.db";
  ASSERT_EQ(testing::write_allocator_trace(finished), "");
  ASSERT_EQ(testing::write_allocator_trace(unfinished, /*finish=*/false), "");
  storage::OpenFailure failure;
  const auto kept = storage::TraceReader::open(finished, &failure);
  ASSERT_NE(kept, nullptr) << failure.message;
  const auto index = analysis::open_time_index_if_kept(*kept);
  ASSERT_NE(index, nullptr);
  EXPECT_EQ(index->note(), "");
  const auto aside = storage::TraceReader::open(unfinished, &failure);
  ASSERT_NE(aside, nullptr) << failure.message;
  EXPECT_EQ(analysis::open_time_index_if_kept(*aside), nullptr);
  EXPECT_FALSE(file_has_table(unfinished, "live_span"));
  // A report that needs the index gets it all the same, built aside.
  EXPECT_NE(analysis::open_time_index(*aside)->note(), "");
}

TEST(TimeIndex, PeaksAreTheFirstEventToReachTheMost) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  const auto peaks = index->peaks();
  ASSERT_EQ(peaks.size(), 3u);
  EXPECT_EQ(peaks[0].upid, 1);
  EXPECT_EQ(peaks[0].group, storage::kPeakGroupBlocks);
  EXPECT_EQ(peaks[0].bytes, 4 * M + M / 4);
  EXPECT_EQ(peaks[0].seq, 8u);
  EXPECT_EQ(peaks[1].group, storage::kPeakGroupDeviceMemory);
  EXPECT_EQ(peaks[1].bytes, 6 * M);
  EXPECT_EQ(peaks[1].seq, 7u);
  EXPECT_EQ(peaks[1].ns, kAllocatorTraceStartNs + 7'000'000);
  EXPECT_EQ(peaks[2].upid, 2);
  EXPECT_EQ(peaks[2].device, 1);
  EXPECT_EQ(peaks[2].bytes, 8 * M);
}

// `summary` sweeps every event for its peaks; the index keeps them: the two must agree.
TEST(TimeIndex, PeaksAgreeWithSummarysSweep) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_NE(trace, nullptr) << failure.message;
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  std::vector<std::tuple<std::int64_t, int, std::string, std::uint64_t, std::uint64_t>> swept;
  for (const auto& peak : analysis::find_device_peaks(*trace))
    swept.emplace_back(peak.upid, peak.device, storage::kPeakGroupDeviceMemory, peak.bytes,
                       peak.at_seq);
  for (const auto& peak : analysis::find_block_peaks(*trace))
    swept.emplace_back(peak.upid, peak.device, storage::kPeakGroupBlocks, peak.bytes, peak.at_seq);
  std::vector<std::tuple<std::int64_t, int, std::string, std::uint64_t, std::uint64_t>> indexed;
  // The index keeps the event that reached a peak; the reports take a device-memory peak
  // reached by a segment once its block is in it (S2 at 7, B4 at 8), as the sweep does.
  for (const auto& peak : index->peaks())
    indexed.emplace_back(peak.upid, peak.device, peak.group, peak.bytes,
                         peak.group == storage::kPeakGroupDeviceMemory
                             ? analysis::with_new_segments_blocks(*index, peak.upid, peak.seq)
                             : peak.seq);
  std::sort(swept.begin(), swept.end());
  std::sort(indexed.begin(), indexed.end());
  EXPECT_EQ(indexed, swept);
  EXPECT_EQ(indexed.size(), 3u);
  EXPECT_EQ(std::get<4>(swept[1]), 8u);  // upid 1's device memory
}

// find_trace_peaks reads a finished trace's peaks from its index (building it into the file)
// and sweeps an unfinished one: the same peaks either way, whole or for one device.
TEST(TimeIndex, TracePeaksFromTheIndexEqualTheSweep) {
  testing::TempDir dir;
  const auto finished = dir / "finished.db";
  const auto unfinished = dir / "unfinished.db";
  ASSERT_EQ(testing::write_allocator_trace(finished), "");
  ASSERT_EQ(testing::write_allocator_trace(unfinished, /*finish=*/false), "");
  storage::OpenFailure failure;
  const auto indexed_trace = storage::TraceReader::open(finished, &failure);
  ASSERT_NE(indexed_trace, nullptr) << failure.message;
  const auto swept_trace = storage::TraceReader::open(unfinished, &failure);
  ASSERT_NE(swept_trace, nullptr) << failure.message;
  const auto as_tuples = [](const std::vector<analysis::DevicePeak>& peaks) {
    std::vector<
        std::tuple<std::int64_t, std::uint32_t, int, std::uint64_t, std::int64_t, std::uint64_t>>
        out;
    for (const auto& p : peaks)
      out.emplace_back(p.upid, p.pid, p.device, p.bytes, p.at_ns, p.at_seq);
    return out;
  };
  for (const std::optional<int> device : {std::optional<int>(), std::optional<int>(0)}) {
    analysis::AllocationScope scope;
    scope.device = device;
    const analysis::TracePeaks from_index = analysis::find_trace_peaks(*indexed_trace, {}, scope);
    const analysis::TracePeaks swept = analysis::find_trace_peaks(*swept_trace, {}, scope);
    EXPECT_EQ(as_tuples(from_index.device), as_tuples(swept.device));
    EXPECT_EQ(as_tuples(from_index.blocks), as_tuples(swept.blocks));
    EXPECT_EQ(as_tuples(from_index.device),
              as_tuples(analysis::find_device_peaks(*swept_trace, {}, scope)));
    EXPECT_EQ(from_index.device.size(), device ? 1u : 2u);
    EXPECT_EQ(from_index.blocks.size(), 1u);
  }
  EXPECT_TRUE(file_has_table(finished, "live_bytes_peak"));
  EXPECT_FALSE(file_has_table(unfinished, "live_bytes_peak"));
}

TEST(TimeIndex, TimesMapToTheLastEventAtOrBefore) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  const auto at = [](std::int64_t seq) { return kAllocatorTraceStartNs + seq * 1'000'000; };
  EXPECT_EQ(index->last_seq_at(1, at(6)), 6u);      // the free of B1
  EXPECT_EQ(index->last_seq_at(1, at(6) - 1), 5u);  // just before it
  EXPECT_EQ(index->last_seq_at(1, at(0)), 0u);      // before the first event
  EXPECT_EQ(index->last_seq_at(1, at(100)), 13u);   // R2, the last allocation event
  EXPECT_EQ(index->last_seq(1), 13u);
  EXPECT_EQ(index->time_of(1, 11), at(11));       // a free
  EXPECT_EQ(index->time_of(1, 4), std::nullopt);  // a marker, not an allocation event
  EXPECT_EQ(index->start_ns(), at(1));
  EXPECT_EQ(index->end_ns(), at(13));
}

TEST(TimeIndex, BucketsKeepMinMaxAndLast) {
  testing::TempDir dir;
  const auto path = dir / "allocator.db";
  ASSERT_EQ(testing::write_allocator_trace(path), "");
  const auto index = open_index(path);
  ASSERT_NE(index, nullptr);
  // upid 1, device 0, kind device: 5 events in 5 distinct buckets (events are 1 ms apart over
  // 12 ms, buckets of 1024 ns: the smallest power of two that cuts 12 ms into 16384 or fewer,
  // 11719 here): each bucket starts from the value before it.
  EXPECT_EQ(index->bucket_count(), 11719u);
  EXPECT_EQ(index->bucket_start_ns(0), index->start_ns());
  EXPECT_EQ(index->bucket_start_ns(1), ((index->start_ns() >> 10) + 1) << 10);
  EXPECT_EQ(index->bucket_start_ns(11719), index->end_ns() + 1);
  std::vector<storage::LiveBytesBucket> device;
  for (const auto& b : index->buckets())
    if (b.upid == 1 && b.kind == storage::allocation_kind::kDevice) device.push_back(b);
  ASSERT_EQ(device.size(), 5u);
  EXPECT_EQ(device[0].bucket, 0u);
  EXPECT_EQ(device[0].min_bytes, 0u);
  EXPECT_EQ(device[0].max_bytes, 2 * M);
  EXPECT_EQ(device[1].min_bytes, 2 * M);
  EXPECT_EQ(device[1].last_bytes, 6 * M);
  EXPECT_EQ(device[2].min_bytes, 2 * M);  // the free of S2 at seq 11
  EXPECT_EQ(device[2].max_bytes, 6 * M);
  EXPECT_EQ(device[4].last_bytes, 4 * M);
  EXPECT_EQ(device[4].bucket, index->bucket_count() - 1);
}

}  // namespace
}  // namespace vramtrace
