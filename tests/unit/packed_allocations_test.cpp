// Short lives packed many to a row (storage/allocation_chunk.h) read back exactly as rows: the
// same events written twice, once one row per allocation and once packed, give the same answer
// to every query of TraceReader and TimeIndex, to the view `allocation` in plain SQL, and after
// a merge. The trace has two processes interleaved, lives of every length (short ones within a
// bin of 4,096 numbers, short ones across a bin's edge, long ones, none), failed calls, blocks
// with and without the allocator's totals, segments with blocks in them, a program that ended
// before its process, and batches flushed mid-way; the packed trace must hold most of its
// allocations in chunks, and the rest as rows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "proto/shim_markers.h"
#include "same_answers.h"
#include "sql_query.h"
#include "storage/allocation_chunk.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_merge.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

using storage::AllocationFilter;
using storage::AllocationRecord;
using testing::texts;
using Packing = storage::TraceWriter::AllocationPacking;

constexpr std::uint64_t kEventsPerProcess = 14'000;

std::int64_t ns_of(std::int64_t upid, std::uint64_t seq) {
  return 1'000'000 * upid + static_cast<std::int64_t>(seq) * 7;
}

// The events of both processes, interleaved, ids in the collector's ascending order.
void write_trace(const std::filesystem::path& path, Packing packing) {
  std::string error;
  auto writer = storage::TraceWriter::create(
      path, &error, storage::TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
      storage::TraceWriter::RollupUpkeep::kAtBuild, storage::TraceWriter::Threading::kCallersThread,
      packing);
  ASSERT_NE(writer, nullptr) << error;
  for (const std::int64_t upid : {1, 2}) {
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = static_cast<std::uint32_t>(40 + upid);
    process.start_ns = ns_of(upid, 0);
    writer->add_process(process);
    writer->add_thread(upid, upid, process.pid);
  }
  std::mt19937_64 random(5);
  struct Pending {
    std::int64_t id;
    std::uint64_t free_at;
  };
  std::map<std::int64_t, std::vector<Pending>> pending;
  std::map<std::int64_t, std::uint64_t> seq{{1, 0}, {2, 0}};
  std::map<std::int64_t, std::optional<std::int64_t>> open_segment;  // a live segment, by upid
  std::int64_t next_id = 1;
  std::uint64_t totals = 0;
  for (std::uint64_t step = 0; step < 2 * kEventsPerProcess; ++step) {
    const std::int64_t upid = random() % 3 == 0 ? 2 : 1;
    const std::uint64_t now = ++seq[upid];
    if (upid == 2 && now == kEventsPerProcess / 2) {
      // Python began to finalize: what was live here and freed later is live at the end.
      storage::MarkerRow marker;
      marker.id = 1;
      marker.upid = 2;
      marker.utid = 2;
      marker.type = std::string(storage::kMarkerMark);
      marker.source = std::string(storage::kMarkerFromShim);
      marker.name = std::string(wire_markers::kPythonFinalizing);
      marker.start_seq = now;
      marker.start_ns = ns_of(upid, now);
      writer->add_marker(marker);
      continue;
    }
    std::vector<Pending>& waiting = pending[upid];
    const auto due = std::find_if(waiting.begin(), waiting.end(),
                                  [&](const Pending& p) { return p.free_at <= now; });
    if (due != waiting.end()) {
      storage::FreeRow free;
      free.free_seq = now;
      free.free_ns = ns_of(upid, now);
      free.free_utid = upid;
      free.free_api = 2 + static_cast<int>(random() % 2);
      writer->set_free(due->id, free);
      if (open_segment[upid] == due->id) open_segment[upid].reset();
      waiting.erase(due);
      continue;
    }
    storage::AllocationRow row;
    row.id = next_id++;
    row.upid = upid;
    row.alloc_utid = upid;
    row.api = 1;
    row.alloc_callsite_id = std::nullopt;
    const std::uint64_t shape = random() % 10;
    const bool block = shape < 3;
    row.kind = block ? storage::allocation_kind::kBlock : storage::allocation_kind::kDevice;
    row.device = static_cast<int>(random() % 2);
    row.size = 512 * (1 + random() % 64);
    row.requested_size = row.size - random() % 3;
    row.address = 0x7f0000000000 + 0x100000 * static_cast<std::uint64_t>(row.id);
    row.alloc_seq = now;
    row.alloc_ns = ns_of(upid, now);
    if (block && shape == 0) {
      row.allocator_allocated = ++totals;
      row.allocator_reserved = totals * 2;
    }
    if (block && open_segment[upid]) row.segment_id = open_segment[upid];
    const std::uint64_t roll = random() % 20;
    if (roll == 0) {
      row.result = 2;  // failed: never freed
      row.address = 0;
    }
    writer->add_allocation(row);
    if (row.result != 0 || roll == 1) continue;  // never freed
    const std::uint64_t life = roll < 14   ? 1 + random() % 40
                               : roll < 17 ? 500 + random() % 1'000
                                           : 1 + random() % 9'000;
    if (!block && !open_segment[upid] && life < 40) open_segment[upid] = row.id;
    waiting.push_back({row.id, now + life});
    if (step % 3'001 == 0) writer->flush();
  }
  ASSERT_TRUE(writer->finish(&error)) << error;
}

class PackedAllocationsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir;
    write_trace(rows_path(), Packing::kRows);
    write_trace(packed_path(), Packing::kPackShortLives);
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::filesystem::path rows_path() { return *dir_ / "rows.db"; }
  static std::filesystem::path packed_path() { return *dir_ / "packed.db"; }

  static std::unique_ptr<storage::TraceReader> open(const std::filesystem::path& path) {
    storage::OpenFailure failure;
    auto trace = storage::TraceReader::open(path, &failure);
    EXPECT_NE(trace, nullptr) << failure.message;
    return trace;
  }

  static testing::TempDir* dir_;
};
testing::TempDir* PackedAllocationsTest::dir_ = nullptr;

TEST_F(PackedAllocationsTest, MostAllocationsArePackedAndTheRestAreRows) {
  const auto chunks =
      std::stoll(testing::query_one(packed_path(), "SELECT sum(count) FROM allocation_chunk"));
  const auto rows =
      std::stoll(testing::query_one(packed_path(), "SELECT count(*) FROM allocation_compact"));
  const auto all =
      std::stoll(testing::query_one(rows_path(), "SELECT count(*) FROM allocation_compact"));
  EXPECT_GT(chunks, all / 3);
  EXPECT_EQ(chunks + rows, all);
  EXPECT_EQ(testing::query_one(rows_path(), "SELECT count(*) FROM allocation_chunk"), "0");
  // A trace with chunks says so (schema 4: they hold blocks' details); one without stays
  // readable by a reader of schema 2.
  EXPECT_EQ(testing::query_one(packed_path(), "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersion));
  EXPECT_EQ(testing::query_one(rows_path(), "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersionWithoutChunks));
  // No chunk holds an allocation with details but a block's, a failed one, a long life, or a
  // segment a block names; a short life that crosses its bin's edge (freed in the next), and a
  // block with its segment and the allocator's totals, are packed too.
  EXPECT_EQ(
      testing::query_one(packed_path(),
                         "SELECT count(*) FROM allocation a WHERE id IN (SELECT c.first_id + "
                         "json_extract(p.value, '$[0]') FROM allocation_chunk c, "
                         "json_each(c.allocations) p) AND (result != 0 OR free_seq IS NULL "
                         "OR free_seq - alloc_seq > 1024 OR vmm_handle IS NOT NULL "
                         "OR id IN (SELECT segment_id FROM allocation WHERE segment_id IS NOT "
                         "NULL))"),
      "0");
  EXPECT_NE(
      testing::query_one(packed_path(),
                         "SELECT count(*) FROM allocation_chunk c, json_each(c.allocations) p "
                         "WHERE json_extract(p.value, '$[10]') IS NOT NULL AND "
                         "json_extract(p.value, '$[11]') IS NOT NULL"),
      "0");
  EXPECT_NE(
      testing::query_one(packed_path(),
                         "SELECT count(*) FROM allocation_chunk c, json_each(c.allocations) p "
                         "WHERE (c.first_alloc_seq + json_extract(p.value, '$[5]')) >> 12 != "
                         "(c.first_alloc_seq + json_extract(p.value, '$[5]') + "
                         "json_extract(p.value, '$[8]')) >> 12"),
      "0");
  EXPECT_NE(
      testing::query_one(packed_path(),
                         "SELECT count(*) FROM allocation_detail WHERE segment_id IS NOT NULL"),
      "0");
}

// The view shows every allocation, packed or not, with every column, to plain SQL.
TEST_F(PackedAllocationsTest, TheViewShowsPackedAllocationsAsRows) {
  const std::string rows = testing::every_row_of(rows_path(), "allocation_view");
  EXPECT_GT(rows.size(), 100'000u);
  EXPECT_EQ(testing::every_row_of(packed_path(), "allocation_view"), rows);
}

// The questions asked of both traces.
testing::Questions questions() {
  testing::Questions ask;
  ask.live_just_after = {1, 100, 4095, 4096, 5000, 9001};
  ask.live_just_after_any = 6000;
  for (std::int64_t id = 1; id < 30'000; id += 37) ask.ids.push_back(id);
  ask.at_least = 10'000;
  return ask;
}

TEST_F(PackedAllocationsTest, TheReaderGivesTheSameAllocations) {
  const auto rows = open(rows_path());
  const auto packed = open(packed_path());
  testing::expect_same_allocations(*rows, *packed, questions());
}

TEST_F(PackedAllocationsTest, TheTimeIndexGivesTheSameAnswers) {
  std::string error;
  const auto rows =
      storage::TimeIndex::open(rows_path(), storage::build_live_bytes_rollups, &error);
  ASSERT_NE(rows, nullptr) << error;
  const auto packed =
      storage::TimeIndex::open(packed_path(), storage::build_live_bytes_rollups, &error);
  ASSERT_NE(packed, nullptr) << error;
  testing::expect_same_time_index_answers(*rows, *packed, {1, 2}, ns_of);
  // The rollups (kept by the writer in both) agree too.
  EXPECT_EQ(testing::rollups_text(*packed), testing::rollups_text(*rows));
}

// The index built by the reports where the writer's was not kept (as for a merged trace)
// reads the packed allocations too.
TEST_F(PackedAllocationsTest, AMergeOfPackedTracesReadsAsTheMergeOfRows) {
  const auto merged = [&](const std::filesystem::path& input, const std::string& name) {
    const std::filesystem::path copy = *dir_ / (name + "-2.db");
    std::filesystem::copy_file(input, copy, std::filesystem::copy_options::overwrite_existing);
    const std::filesystem::path output = *dir_ / (name + "-merged.db");
    std::filesystem::remove(output);
    const storage::MergeResult result = storage::merge_traces({input, copy}, output);
    EXPECT_TRUE(result.ok) << result.error;
    return output;
  };
  const auto rows_merged = merged(rows_path(), "rows");
  const auto packed_merged = merged(packed_path(), "packed");
  EXPECT_EQ(testing::every_row_of(packed_merged, "allocation"),
            testing::every_row_of(rows_merged, "allocation"));
  EXPECT_EQ(testing::query_one(packed_merged, "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersion));
  const auto rows = open(rows_merged);
  const auto packed = open(packed_merged);
  EXPECT_EQ(texts(packed->allocations({})), texts(rows->allocations({})));
  std::string error;
  const auto rows_index =
      storage::TimeIndex::open(rows_merged, storage::build_live_bytes_rollups, &error);
  ASSERT_NE(rows_index, nullptr) << error;
  const auto packed_index =
      storage::TimeIndex::open(packed_merged, storage::build_live_bytes_rollups, &error);
  ASSERT_NE(packed_index, nullptr) << error;
  for (const std::int64_t upid : {1, 2, 3, 4}) {
    for (std::uint64_t seq = 0; seq < kEventsPerProcess; seq += 97)
      ASSERT_EQ(texts(packed_index->live_at(upid, seq)), texts(rows_index->live_at(upid, seq)))
          << upid << " " << seq;
  }
  EXPECT_EQ(packed_index->peaks().size(), rows_index->peaks().size());
}

// A trace that is not finished is indexed aside, by the build that reads the whole trace (the
// writer's upkeep is in the file, out of the index's reach): it reads the chunks too.
TEST_F(PackedAllocationsTest, AnIndexBuiltAsideReadsThePackedAllocations) {
  const auto unfinished = [&](const std::filesystem::path& input, const std::string& name) {
    const std::filesystem::path copy = *dir_ / (name + "-unfinished.db");
    std::filesystem::remove(copy);
    std::filesystem::copy_file(input, copy);
    EXPECT_EQ(testing::execute_sql(copy, "UPDATE meta SET value = '0' WHERE key = 'complete'"), "");
    return copy;
  };
  std::string error;
  const auto rows = storage::TimeIndex::open(unfinished(rows_path(), "rows"),
                                             storage::build_live_bytes_rollups, &error);
  ASSERT_NE(rows, nullptr) << error;
  const auto packed = storage::TimeIndex::open(unfinished(packed_path(), "packed"),
                                               storage::build_live_bytes_rollups, &error);
  ASSERT_NE(packed, nullptr) << error;
  EXPECT_NE(packed->note().find("built aside"), std::string::npos) << packed->note();
  EXPECT_EQ(packed->start_ns(), rows->start_ns());
  EXPECT_EQ(packed->end_ns(), rows->end_ns());
  EXPECT_EQ(packed->allocator_segments(), rows->allocator_segments());
  EXPECT_EQ(packed->processes_with_allocator_events(), rows->processes_with_allocator_events());
  EXPECT_EQ(testing::rollups_text(*packed), testing::rollups_text(*rows));
  for (const std::int64_t upid : {1, 2})
    for (std::uint64_t seq = 0; seq < kEventsPerProcess; seq += 61)
      ASSERT_EQ(texts(packed->live_at(upid, seq)), texts(rows->live_at(upid, seq)))
          << upid << " " << seq;
}

// A chunk whose text was changed is refused with one message naming the file, the table and the
// row, by the reader's scans and the time index's queries alike: never read as other numbers.
TEST_F(PackedAllocationsTest, ADamagedChunkIsRefusedWithOneMessage) {
  // Indexed first, so that opening the index reads no chunk: the queries meet the damage.
  std::string error;
  ASSERT_NE(storage::TimeIndex::open(packed_path(), storage::build_live_bytes_rollups, &error),
            nullptr)
      << error;
  const std::filesystem::path damaged = *dir_ / "damaged.db";
  std::filesystem::copy_file(packed_path(), damaged,
                             std::filesystem::copy_options::overwrite_existing);
  ASSERT_EQ(testing::execute_sql(damaged,
                                 "UPDATE allocation_chunk SET allocations = '[[1,2,3]]' WHERE id = "
                                 "(SELECT min(id) FROM allocation_chunk WHERE upid = 1)"),
            "");
  const auto expect_refused = [&](const std::function<void()>& read) {
    try {
      read();
      ADD_FAILURE() << "read a damaged chunk";
    } catch (const storage::TraceError& refused) {
      const std::string message = refused.what();
      EXPECT_NE(message.find(damaged.string() + ": the trace is damaged: "
                                                "allocation_chunk.allocations is not a list of "
                                                "packed allocations (in the row of process 1"),
                std::string::npos)
          << message;
    }
  };
  const auto trace = open(damaged);
  ASSERT_NE(trace, nullptr);
  expect_refused([&] { trace->allocations({}); });
  expect_refused([&] { trace->allocation_totals(); });
  const auto index = storage::TimeIndex::open(damaged, storage::build_live_bytes_rollups, &error);
  ASSERT_NE(index, nullptr) << error;
  expect_refused([&] {
    for (std::uint64_t seq = 0; seq < 4096; ++seq) index->time_of(1, seq);
  });
  expect_refused([&] { index->live_at(1, 2000); });
}

TEST(AllocationChunkTest, PacksAndUnpacksEveryValue) {
  std::vector<storage::PackedAllocation> allocations{
      {100, 3, 0x7f0000001000, 512, 0, 5000, -20, 2, 1, 9},
      {101, 4, UINT64_MAX, 1, -1, 5001, INT64_MIN, 0, 1024, INT64_MAX},
      {99, 1, 0, 0, 3, 5003, 40, 7, 1, 0},
      // Each side of the short forms for one and two digits.
      {109, 10, 99, 100, 9, 5009, 10, 99, 100, -10},
      // An address again, as allocators hand them out, and one that follows another.
      {110, 10, 99, 100, 9, 5010, 11, 99, 100, -10},
      {111, 10, 0x7f0000001000, 100, 9, 5011, 12, 99, 100, -10},
      {112, 10, 0x7f0000001000, 100, 9, 5012, 13, 99, 100, -10},
  };
  const storage::AllocationChunk chunk = storage::pack_allocations(9, allocations);
  EXPECT_EQ(chunk.upid, 9);
  EXPECT_EQ(chunk.first_alloc_seq, 5000u);
  EXPECT_EQ(chunk.first_id, 100);
  EXPECT_EQ(chunk.last_id, 112);
  EXPECT_EQ(chunk.last_seq, 6025u);
  EXPECT_EQ(chunk.count, 7);
  std::vector<storage::PackedAllocation> back;
  ASSERT_TRUE(storage::unpack_allocations(chunk.allocations, chunk.first_id, chunk.first_alloc_seq,
                                          chunk.first_alloc_ns, &back));
  EXPECT_EQ(back, allocations);
}

TEST(AllocationChunkTest, RefusesTextItDidNotWrite) {
  const std::vector<storage::PackedAllocation> one{{1, 1, 2, 3, 0, 4, 5, 1, 1, 1}};
  const std::string good = storage::pack_allocations(1, one).allocations;
  std::vector<storage::PackedAllocation> out;
  ASSERT_TRUE(storage::unpack_allocations(good, 1, 4, 5, &out));
  for (const std::string& bad :
       {std::string(""), std::string("["), std::string("[[1,2]]"), good + " ", good.substr(1),
        std::string("[[0,1,2,3,0,0,0,1,1,1,9]]"), std::string("[[0,1,2,3,0,0,0,1,1,x]]"),
        std::string("[[0,1,2,3,0,0,0,1,1,1],]"), std::string("[[0, 1,2,3,0,0,0,1,1,1]]"),
        // Numbers out of range or not JSON's.
        std::string("[[0,1,2,3,0,0,0,1,1,9223372036854775808]]"),
        std::string("[[0,1,2,3,0,0,0,1,1,-9223372036854775809]]"),
        std::string("[[0,1,2,3,0,0,0,1,1,18446744073709551616]]"),
        std::string("[[0,1,2,3,0,0,0,1,1,-]]"), std::string("[[0,1,2,3,0,0,0,1,1,+1]]"),
        std::string("[[0,1,2,3,0,0,0,1,1,--1]]")}) {
    out.clear();
    EXPECT_FALSE(storage::unpack_allocations(bad, 1, 4, 5, &out)) << bad;
  }
  out.clear();
  EXPECT_TRUE(storage::unpack_allocations("[]", 1, 4, 5, &out));
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace vramtrace
