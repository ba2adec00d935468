// The queries that find events by sequence number (TimeIndex's time_of, last_seq, last_seq_at
// and for_each_event_between, TraceReader's allocator_totals_at) agree with a brute-force sweep
// of the allocation table, where the index of frees holds the long lives alone
// (storage/schema.h, kShortLifeEvents) and a short life's free is found through its allocation.
// On a dense trace whose lives are short, about a short life's length (either side of it) and
// long, with blocks that carry the allocator's totals; written with the indexes kept up as rows
// arrive and built at the end; and read again with an index of every free, as traces were
// written before, which must read the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "sql_query.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

constexpr std::int64_t kUpid = 1;

std::int64_t ns_of(std::uint64_t seq) {
  return 5'000'000 + static_cast<std::int64_t>(seq) * 10;
}

// 16,000 events numbered 1, 2, 3...: allocations, and frees of earlier ones after a short life
// (1 to 60 events), one about kShortLifeEvents long (700 to 1,400), or a long one (up to
// 12,000); some never freed, a few failed; a third of them blocks with the allocator's totals.
void write_dense_trace(const std::filesystem::path& path,
                       storage::TraceWriter::TimeIndexUpkeep upkeep) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error, upkeep);
  ASSERT_NE(writer, nullptr) << error;
  storage::ProcessRow process;
  process.upid = kUpid;
  process.pid = 41;
  process.start_ns = ns_of(0);
  writer->add_process(process);
  writer->add_thread(1, kUpid, 41);
  std::mt19937_64 random(11);
  struct Pending {
    std::int64_t id;
    std::uint64_t free_at;
    bool block;
  };
  std::vector<Pending> pending;
  std::int64_t next_id = 1;
  std::uint64_t totals = 0;
  for (std::uint64_t seq = 1; seq <= 16'000; ++seq) {
    const auto due = std::find_if(pending.begin(), pending.end(),
                                  [&](const Pending& p) { return p.free_at <= seq; });
    if (due != pending.end()) {
      storage::FreeRow free;
      free.free_seq = seq;
      free.free_ns = ns_of(seq);
      free.free_utid = 1;
      if (due->block && random() % 2 == 0) {
        free.allocator_allocated = ++totals;
        free.allocator_reserved = totals * 2;
      }
      writer->set_free(due->id, free);
      pending.erase(due);
      continue;
    }
    storage::AllocationRow row;
    row.id = next_id++;
    row.upid = kUpid;
    row.alloc_utid = 1;
    const bool block = random() % 3 == 0;
    row.kind = block ? storage::allocation_kind::kBlock : storage::allocation_kind::kDevice;
    row.size = 512 * (1 + random() % 64);
    row.requested_size = row.size;
    row.address = 0x7f0000000000 + 0x100000 * static_cast<std::uint64_t>(row.id);
    row.alloc_seq = seq;
    row.alloc_ns = ns_of(seq);
    if (block && random() % 2 == 0) {
      row.allocator_allocated = ++totals;
      row.allocator_reserved = totals * 2;
    }
    const std::uint64_t roll = random() % 20;
    if (roll == 0) {
      row.result = 2;  // failed: never freed
      row.address = 0;
    }
    writer->add_allocation(row);
    if (row.result != 0 || roll == 1) continue;  // never freed
    const std::uint64_t life = roll < 12   ? 1 + random() % 60
                               : roll < 17 ? 700 + random() % 700
                                           : 1 + random() % 12'000;
    pending.push_back({row.id, seq + life, block});
    if (seq % 5'000 == 0) writer->flush();
  }
  ASSERT_TRUE(writer->finish(&error)) << error;
}

// An event of the trace, as the brute-force sweep sees it.
struct Event {
  std::uint64_t seq;
  std::int64_t ns;
  bool free;
  const storage::AllocationRecord* record;
};

class ShortLifeQueries : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    path_ = dir_ / "dense.db";
    write_dense_trace(path_, GetParam() ? storage::TraceWriter::TimeIndexUpkeep::kAsRowsArrive
                                        : storage::TraceWriter::TimeIndexUpkeep::kNone);
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path_, &failure);
    ASSERT_NE(trace, nullptr) << failure.message;
    records_ = trace->allocations({});
    for (const storage::AllocationRecord& r : records_) {
      events_.push_back({r.allocation.alloc_seq, r.allocation.alloc_ns, false, &r});
      if (r.free) events_.push_back({r.free->free_seq, r.free->free_ns, true, &r});
    }
    std::sort(events_.begin(), events_.end(),
              [](const Event& a, const Event& b) { return a.seq < b.seq; });
  }

  // Every query on `path`, against the sweep.
  void check(const std::filesystem::path& path) {
    std::string error;
    const auto index = storage::TimeIndex::open(path, storage::build_live_bytes_rollups, &error);
    ASSERT_NE(index, nullptr) << error;
    ASSERT_TRUE(index->finds_events_by_seq());
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path, &failure);
    ASSERT_NE(trace, nullptr) << failure.message;

    const std::uint64_t last = events_.back().seq;
    EXPECT_EQ(index->last_seq(kUpid), last);
    std::vector<std::optional<std::int64_t>> time_at(last + 2);
    for (const Event& e : events_) time_at[e.seq] = e.ns;
    std::mt19937_64 random(3);
    for (int i = 0; i < 1500; ++i) {
      const std::uint64_t seq = i < 2 ? i * (last + 1) : random() % (last + 2);
      ASSERT_EQ(index->time_of(kUpid, seq), time_at[seq]) << "seq " << seq;
    }

    for (int i = 0; i < 400; ++i) {
      const std::int64_t ns =
          ns_of(random() % (last + 2)) - static_cast<std::int64_t>(random() % 2);
      std::uint64_t expected = 0;
      for (const Event& e : events_)
        if (e.ns <= ns) expected = std::max(expected, e.seq);
      ASSERT_EQ(index->last_seq_at(kUpid, ns), expected) << "at " << ns;
    }

    for (int i = 0; i < 120; ++i) {
      const std::uint64_t after = i == 0 ? 0 : random() % (last + 1);
      const std::uint64_t through =
          i == 1 ? last : after + random() % (i % 2 == 0 ? 40 : 3 * storage::kShortLifeEvents);
      std::vector<std::pair<std::uint64_t, bool>> expected, got;
      for (const Event& e : events_)
        if (e.seq > after && e.seq <= through && !e.record->failed())
          expected.emplace_back(e.seq, e.free);
      index->for_each_event_between(kUpid, after, through, [&](const storage::AllocationEvent& e) {
        got.emplace_back(e.seq, e.type == storage::AllocationEvent::Type::kFree);
        return true;
      });
      ASSERT_EQ(got, expected) << "(" << after << ", " << through << "]";
    }

    for (int i = 0; i < 400; ++i) {
      const std::uint64_t seq = i < 50 ? static_cast<std::uint64_t>(i) : random() % (last + 2);
      storage::TraceReader::AllocatorTotalsAt expected;
      for (const Event& e : events_) {
        if (e.seq > seq) break;
        const storage::AllocationRecord& r = *e.record;
        if (r.allocation.kind != storage::allocation_kind::kBlock) continue;
        const auto& allocated =
            e.free ? r.free->allocator_allocated : r.allocation.allocator_allocated;
        const auto& reserved =
            e.free ? r.free->allocator_reserved : r.allocation.allocator_reserved;
        if (allocated || reserved) expected = {allocated, reserved};
      }
      const storage::TraceReader::AllocatorTotalsAt got = trace->allocator_totals_at(kUpid, seq);
      ASSERT_EQ(got.allocated, expected.allocated) << "at " << seq;
      ASSERT_EQ(got.reserved, expected.reserved) << "at " << seq;
    }
  }

  testing::TempDir dir_;
  std::filesystem::path path_;
  std::vector<storage::AllocationRecord> records_;
  std::vector<Event> events_;
};

TEST_P(ShortLifeQueries, AgreeWithTheSweep) {
  // The trace has lives of every kind, and its index of frees holds the long ones alone.
  std::size_t short_lives = 0, long_lives = 0;
  for (const storage::AllocationRecord& r : records_) {
    if (!r.free) continue;
    const std::uint64_t life = r.free->free_seq - r.allocation.alloc_seq;
    (life <= static_cast<std::uint64_t>(storage::kShortLifeEvents) ? short_lives : long_lives)++;
  }
  EXPECT_GT(short_lives, 3000u);
  EXPECT_GT(long_lives, 1000u);
  check(path_);
  EXPECT_EQ(testing::query_one(path_,
                               "SELECT count(*) FROM allocation_compact INDEXED BY "
                               "allocation_by_free_seq WHERE upid = 1 AND " +
                                   storage::long_life_sql("")),
            std::to_string(long_lives));
}

TEST_P(ShortLifeQueries, ATraceWithAnIndexOfEveryFreeReadsTheSame) {
  const auto old = dir_ / "every_free.db";
  std::filesystem::copy_file(path_, old);
  ASSERT_EQ(testing::execute_sql(old,
                                 "DROP INDEX allocation_by_free_seq; CREATE INDEX "
                                 "allocation_by_free_seq ON allocation_compact(upid, alloc_seq + "
                                 "free_seq_delta)"),
            "");
  EXPECT_EQ(testing::query_one(old,
                               "SELECT count(*) FROM allocation_compact INDEXED BY "
                               "allocation_by_free_seq WHERE upid = 1 AND "
                               "alloc_seq + free_seq_delta IS NOT NULL"),
            testing::query_one(old, "SELECT count(*) FROM allocation WHERE free_seq IS NOT NULL"));
  check(old);
}

INSTANTIATE_TEST_SUITE_P(KeptUpOrBuiltAtTheEnd, ShortLifeQueries, ::testing::Bool());

}  // namespace
}  // namespace vramtrace
