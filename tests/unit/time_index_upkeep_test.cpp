// The time index that a writer keeps up as rows arrive (TraceWriter's kAsRowsArrive) is the
// one the build makes from the finished trace: the same live spans, time ranges, allocator
// tables, rollups and answers. And when the upkeep cannot hold (a free undone), the build
// makes it all from the trace instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "analysis/time/device_peaks.h"
#include "sql_query.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

using storage::TraceWriter;
using Upkeep = TraceWriter::TimeIndexUpkeep;

struct MixedTraceOptions {
  Upkeep upkeep = Upkeep::kNone;
  bool undo_a_free = false;
  bool a_time_falls = false;  // one allocation stamped before the event ahead of it
};

// Two processes interleaved, each with device segments and blocks in them, failed allocations,
// lifetimes from one event to never freed, five callsites and none, and commits along the way,
// so that some rows are written before their free and some after.
void write_mixed_trace(const std::filesystem::path& path, const MixedTraceOptions& options) {
  std::string error;
  auto writer = TraceWriter::create(path, &error, options.upkeep,
                                    options.upkeep == Upkeep::kAsRowsArrive
                                        ? storage::TraceWriter::RollupUpkeep::kAsRowsArrive
                                        : storage::TraceWriter::RollupUpkeep::kAtBuild);
  ASSERT_NE(writer, nullptr) << error;
  for (std::int64_t upid : {1, 2}) {
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = static_cast<std::uint32_t>(100 + upid);
    process.start_ns = 1000;
    writer->add_process(process);
    writer->add_thread(upid, upid, process.pid);
  }
  std::mt19937_64 random(11);
  struct Live {
    std::int64_t id, upid;
    std::uint64_t free_after;
  };
  std::vector<Live> live;
  std::uint64_t seq[3] = {0, 0, 0};
  std::int64_t next_id = 1;
  std::int64_t segment[3] = {0, 0, 0};
  bool undone = false;
  for (int i = 0; i < 30000; ++i) {
    const std::int64_t upid = 1 + static_cast<std::int64_t>(random() % 2);
    storage::AllocationRow row;
    row.id = next_id++;
    row.upid = upid;
    row.alloc_utid = upid;
    const std::uint64_t shape = random() % 10;
    row.kind = shape < 1                         ? storage::allocation_kind::kDevice
               : shape < 8 && segment[upid] != 0 ? storage::allocation_kind::kBlock
                                                 : storage::allocation_kind::kDevice;
    row.device = static_cast<int>(random() % 2);
    row.size = 512 * (1 + random() % 4096);
    row.address = 0x10000 * static_cast<std::uint64_t>(row.id);
    seq[upid] += 1 + random() % 3000;
    row.alloc_seq = seq[upid];
    row.alloc_ns = 1000 + static_cast<std::int64_t>(seq[upid]);
    if (row.id % 6 != 0) row.alloc_callsite_id = 1 + row.id % 5;
    if (options.a_time_falls && i == 15000) row.alloc_ns -= 5000;
    if (row.kind == storage::allocation_kind::kBlock) row.segment_id = segment[upid];
    if (random() % 200 == 0) row.result = 2;  // out of memory: never freed, no span
    writer->add_allocation(row);
    if (row.kind == storage::allocation_kind::kDevice && row.result == 0) segment[upid] = row.id;
    const std::uint64_t roll = random() % 10;
    if (row.result == 0 && roll >= 2)
      live.push_back({row.id, upid, roll < 7 ? random() % 4 : random() % 20000});
    for (auto it = live.begin(); it != live.end();) {
      if (it->free_after-- > 0) {
        ++it;
        continue;
      }
      storage::FreeRow free;
      seq[it->upid] += 1 + random() % 3000;
      free.free_seq = seq[it->upid];
      free.free_ns = 1000 + static_cast<std::int64_t>(seq[it->upid]);
      free.free_utid = it->upid;
      writer->set_free(it->id, free);
      if (options.undo_a_free && !undone && i > 20000) {
        writer->clear_free(it->id);
        undone = true;
        ++it;
        continue;
      }
      it = live.erase(it);
    }
    if (i % 5000 == 4999) writer->flush();
  }
  ASSERT_TRUE(writer->finish(&error, TraceWriter::AllocationIndexes::kLeaveToTimeIndex)) << error;
}

// Every row of the time index's tables, as text, in key order.
std::string index_contents(const std::filesystem::path& path) {
  const std::vector<std::pair<std::string, std::string>> tables{
      {"live_span", "upid, level, bin, alloc_seq, end_seq, allocation_id"},
      {"allocator_segment", "id"},
      {"allocator_process", "upid"},
      {"live_at_end",
       "upid, kind, device, ifnull(alloc_callsite_id, '-'), ifnull(segment_id, '-'), "
       "ifnull(allocator_segment_id, '-'), count, bytes"},
      {"process_time_range", "upid, first_alloc_ns, last_alloc_ns, last_free_ns"},
      {"live_bytes_bucket", "upid, device, kind, bucket, min_bytes, max_bytes, last_bytes"},
      {"live_bytes_peak", "upid, device, peak_group, bytes, seq, ns"},
      {"live_at_peak", "upid, device, peak_group, ifnull(alloc_callsite_id, '-'), count, bytes"},
      {"time_problem", "upid, problem, events, first_seq"},
      {"time_index_info", "key, value"},
  };
  std::string contents;
  for (const auto& [table, columns] : tables) {
    std::string concatenated;
    for (const char c : columns)
      concatenated += c == ',' ? std::string(" || ',' || ") : std::string(1, c);
    contents += table + ": " +
                testing::query_one(path, "SELECT count(*) || ' rows, ' || ifnull(group_concat(" +
                                             concatenated + ", ';'), '') FROM (SELECT * FROM " +
                                             table + " ORDER BY " + columns + ")") +
                "\n";
  }
  return contents;
}

std::unique_ptr<storage::TimeIndex> open_index(
    const std::filesystem::path& path,
    const storage::BuildRollups& build_rollups = storage::build_live_bytes_rollups) {
  std::string error;
  auto index = storage::TimeIndex::open(path, build_rollups, &error);
  EXPECT_NE(index, nullptr) << error;
  if (index) {
    EXPECT_EQ(index->note(), "");
  }
  return index;
}

// analysis's rollups, counting each time the build asks for them.
storage::BuildRollups counting_rollups(int& builds) {
  return [&builds](const storage::RollupSource& source, const storage::RollupSink& sink) {
    ++builds;
    storage::build_live_bytes_rollups(source, sink);
  };
}

// The ids live just after 200 events of each process spread over it, and the count of them.
std::string live_sets(const storage::TimeIndex& index) {
  std::string sets;
  std::size_t live = 0;
  for (std::int64_t upid : {1, 2}) {
    const std::uint64_t last = index.last_seq(upid);
    for (std::uint64_t seq = 1; seq <= last; seq += last / 200 + 1) {
      sets += std::to_string(seq) + ":";
      for (const storage::AllocationRecord& record : index.live_at(upid, seq)) {
        sets += std::to_string(record.allocation.id) + ",";
        ++live;
      }
      sets += ";";
    }
  }
  return std::to_string(live) + " " + sets;
}

TEST(TimeIndexUpkeep, KeptUpAsRowsArriveItIsTheIndexTheBuildMakes) {
  testing::TempDir dir;
  const auto upkept = dir / "upkept.db";
  const auto built = dir / "built.db";
  write_mixed_trace(upkept, {Upkeep::kAsRowsArrive});
  write_mixed_trace(built, {Upkeep::kNone});
  // Before any report: the writer's tables are in the file, through its last allocation.
  EXPECT_EQ(testing::query_one(upkept,
                               "SELECT value FROM time_index_upkeep WHERE key = "
                               "'allocation_id'"),
            testing::query_one(upkept, "SELECT max(id) FROM allocation"));
  // Every successful allocation but those whose life lies in one 4096-event bin (level 0,
  // read through the alloc_seq index instead).
  EXPECT_EQ(testing::query_one(upkept, "SELECT count(*) FROM live_span"),
            testing::query_one(upkept,
                               "SELECT count(*) FROM allocation WHERE result = 0 AND NOT "
                               "(free_seq IS NOT NULL AND (alloc_seq >> 12) = "
                               "((free_seq - 1) >> 12))"));
  EXPECT_NE(testing::query_one(upkept, "SELECT count(*) FROM live_span"), "0");
  EXPECT_NE(testing::query_one(upkept, "SELECT count(*) FROM allocator_segment"), "0");
  EXPECT_EQ(testing::query_one(upkept, "SELECT count(*) FROM allocator_process"), "2");
  // What was left live, added up: every never-freed successful allocation counted once, and
  // the live allocator segments on rows of their own.
  EXPECT_EQ(testing::query_one(upkept, "SELECT sum(count) || ' ' || sum(bytes) FROM live_at_end"),
            testing::query_one(upkept,
                               "SELECT count(*) || ' ' || sum(size) FROM allocation WHERE result "
                               "= 0 AND free_seq IS NULL"));
  EXPECT_NE(testing::query_one(upkept,
                               "SELECT count(*) FROM live_at_end WHERE allocator_segment_id IS "
                               "NOT NULL"),
            "0");
  EXPECT_EQ(testing::query_one(upkept,
                               "SELECT count(*) FROM sqlite_master WHERE name = "
                               "'allocation_by_free_seq'"),
            "1");
  EXPECT_EQ(testing::query_one(built,
                               "SELECT count(*) FROM sqlite_master WHERE name = "
                               "'live_span'"),
            "0");
  // The writer's rollups are read, not made again: the build's are asked for once, by the
  // trace that has none.
  int rollup_builds = 0;
  const storage::BuildRollups counted = counting_rollups(rollup_builds);
  const auto upkept_index = open_index(upkept, counted);
  EXPECT_EQ(rollup_builds, 0);
  const auto built_index = open_index(built, counted);
  EXPECT_EQ(rollup_builds, 1);
  ASSERT_TRUE(upkept_index && built_index);
  const std::string live = live_sets(*upkept_index);
  EXPECT_EQ(live, live_sets(*built_index));
  EXPECT_GT(std::stoul(live), 10000u);
  const std::string from_upkeep = index_contents(upkept);
  EXPECT_EQ(from_upkeep, index_contents(built));
  // The build read the writer's tables rather than remaking them: its record of them stays,
  // with the span the rollups were cut for.
  EXPECT_EQ(testing::query_one(upkept, "SELECT count(*) FROM time_index_upkeep"), "4");
  EXPECT_EQ(testing::query_one(upkept,
                               "SELECT value FROM time_index_upkeep WHERE key = "
                               "'rollups_end_ns'"),
            testing::query_one(upkept, "SELECT value FROM time_index_info WHERE key = 'end_ns'"));
  EXPECT_EQ(testing::query_one(built, "SELECT count(*) FROM time_index_upkeep"), "0");
  EXPECT_NE(from_upkeep.find("live_span: "), std::string::npos);
}

// Each peak's live set added up by callsite: from live_at_peak, and from the live allocations
// the index reads at the peak's event. One line per peak and callsite.
std::pair<std::string, std::string> live_at_peaks_both_ways(const storage::TimeIndex& index) {
  std::string kept;
  for (const storage::LiveAtPeak& row : index.live_at_peaks())
    kept += std::to_string(row.upid) + " " + std::to_string(row.device) + " " + row.group + " " +
            (row.callsite_id ? std::to_string(*row.callsite_id) : "-") + ": " +
            std::to_string(row.count) + " " + std::to_string(row.bytes) + "\n";
  std::string scanned;
  for (const storage::LiveBytesPeak& peak : index.peaks()) {
    std::map<std::optional<std::int64_t>, std::pair<std::uint64_t, std::uint64_t>> by_callsite;
    for (const storage::AllocationRecord& record : index.live_at(peak.upid, peak.seq)) {
      const storage::AllocationRow& a = record.allocation;
      const bool in_group = peak.group == storage::kPeakGroupBlocks
                                ? a.kind == storage::allocation_kind::kBlock
                                : analysis::occupies_device_memory(a.kind);
      if (a.device != peak.device || !in_group) continue;
      auto& [count, bytes] = by_callsite[a.alloc_callsite_id];
      count += 1;
      bytes += a.size;
    }
    for (const auto& [callsite, sums] : by_callsite)
      scanned += std::to_string(peak.upid) + " " + std::to_string(peak.device) + " " + peak.group +
                 " " + (callsite ? std::to_string(*callsite) : "-") + ": " +
                 std::to_string(sums.first) + " " + std::to_string(sums.second) + "\n";
  }
  return {kept, scanned};
}

// What was live at each peak is what the index reads live there, whether the writer kept it up
// or the build made it; and the trace's peaks are not its end, so the frees and allocations
// after each peak count.
TEST(TimeIndexUpkeep, WhatWasLiveAtEachPeakIsItsLiveSetAddedUp) {
  testing::TempDir dir;
  for (const Upkeep upkeep : {Upkeep::kAsRowsArrive, Upkeep::kNone}) {
    const auto path = dir / (upkeep == Upkeep::kNone ? "built.db" : "upkept.db");
    write_mixed_trace(path, {upkeep});
    const auto index = open_index(path);
    ASSERT_NE(index, nullptr);
    const auto [kept, scanned] = live_at_peaks_both_ways(*index);
    EXPECT_EQ(kept, scanned);
    EXPECT_GT(std::count(kept.begin(), kept.end(), '\n'),
              40);  // 2 processes x 2 devices x 2 groups x 6
    for (const storage::LiveBytesPeak& peak : index->peaks())
      EXPECT_LT(peak.seq, index->last_seq(peak.upid)) << peak.upid << " " << peak.group;
  }
}

TEST(TimeIndexUpkeep, AFreeUndoneLeavesTheIndexToTheBuild) {
  testing::TempDir dir;
  const auto upkept = dir / "upkept.db";
  const auto built = dir / "built.db";
  write_mixed_trace(upkept, {Upkeep::kAsRowsArrive, /*undo_a_free=*/true});
  write_mixed_trace(built, {Upkeep::kNone, /*undo_a_free=*/true});
  EXPECT_EQ(testing::query_one(upkept, "SELECT count(*) FROM time_index_upkeep"), "0");
  EXPECT_EQ(testing::query_one(upkept, "SELECT count(*) FROM live_span"), "0");
  open_index(upkept);
  open_index(built);
  EXPECT_EQ(index_contents(upkept), index_contents(built));
  EXPECT_NE(testing::query_one(upkept, "SELECT count(*) FROM live_span"), "0");
}

// A time that falls behind the one before it is the build's to place and count
// (time_problem): the writer keeps the rest up, and leaves the rollups to the build.
TEST(TimeIndexUpkeep, ATimeThatFallsLeavesTheRollupsToTheBuild) {
  testing::TempDir dir;
  const auto upkept = dir / "upkept.db";
  const auto built = dir / "built.db";
  write_mixed_trace(upkept, {Upkeep::kAsRowsArrive, false, /*a_time_falls=*/true});
  write_mixed_trace(built, {Upkeep::kNone, false, /*a_time_falls=*/true});
  EXPECT_EQ(testing::query_one(upkept, "SELECT count(*) FROM time_index_upkeep"), "2");
  int rollup_builds = 0;
  const storage::BuildRollups counted = counting_rollups(rollup_builds);
  open_index(upkept, counted);
  EXPECT_EQ(rollup_builds, 1);
  open_index(built);
  EXPECT_EQ(index_contents(upkept), index_contents(built));
  EXPECT_EQ(testing::query_one(upkept,
                               "SELECT sum(events) FROM time_problem WHERE problem = "
                               "'out_of_order'"),
            "1");
}

}  // namespace
}  // namespace vramtrace
