// TraceWriter holds allocation rows back until their free or the next commit (trace_writer.h).
// Whatever the order of frees, commits and failed frees, a reader must see exactly what it
// would see if every row had been written at once and updated in place.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <random>
#include <tuple>
#include <vector>

#include "sql_query.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace::storage {
namespace {

using testing::TempDir;

ProcessRow a_process() {
  ProcessRow row;
  row.upid = 1;
  row.pid = 100;
  row.host = "host";
  row.exe = "/bin/app";
  row.unwinder = "libunwind";
  return row;
}

AllocationRow an_allocation(std::int64_t id) {
  AllocationRow row;
  row.id = id;
  row.upid = 1;
  row.kind = allocation_kind::kDevice;
  row.api = api::kCudaMalloc;
  row.address = 0x7f00'0000'0000 + static_cast<std::uint64_t>(id) * 0x1000;
  row.size = 4096;
  row.requested_size = 4000;
  row.alloc_seq = static_cast<std::uint64_t>(2 * id);
  row.alloc_ns = 20 * id;
  row.alloc_utid = 1;
  return row;
}

FreeRow its_free(std::int64_t id) {
  return {static_cast<std::uint64_t>(2 * id + 1), 20 * id + 10, 1, std::nullopt, api::kCudaFree};
}

std::unique_ptr<TraceWriter> new_writer(const std::filesystem::path& path) {
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  EXPECT_NE(writer, nullptr) << error;
  if (writer) writer->add_process(a_process());
  return writer;
}

// id -> free_seq (nullopt: live), as a reader sees the trace now.
using Frees = std::map<std::int64_t, std::optional<std::uint64_t>>;

Frees frees_seen(const std::filesystem::path& path) {
  OpenFailure failure;
  auto reader = TraceReader::open(path, &failure);
  EXPECT_NE(reader, nullptr) << failure.message;
  Frees seen;
  if (!reader) return seen;
  for (const AllocationRecord& record : reader->allocations({})) {
    seen[record.allocation.id] =
        record.free ? std::optional<std::uint64_t>(record.free->free_seq) : std::nullopt;
  }
  return seen;
}

TEST(TraceWriterBatchingTest, ACommitShowsLiveRowsAndALaterFreeCompletesThem) {
  TempDir dir;
  const auto path = dir / "live.db";
  auto writer = new_writer(path);
  ASSERT_NE(writer, nullptr);
  writer->add_allocation(an_allocation(1));
  writer->add_allocation(an_allocation(2));
  writer->set_free(1, its_free(1));
  writer->flush();
  EXPECT_EQ(frees_seen(path), (Frees{{1, 3}, {2, std::nullopt}}));

  // Row 2 is in the file now, without its free: the free must reach it there.
  writer->add_allocation(an_allocation(3));
  writer->set_free(2, its_free(2));
  writer->flush();
  EXPECT_EQ(frees_seen(path), (Frees{{1, 3}, {2, 5}, {3, std::nullopt}}));
  ASSERT_TRUE(writer->finish(nullptr)) << writer->error();
}

TEST(TraceWriterBatchingTest, AFailedFreeIsUndoneBeforeAndAfterTheRowIsWritten) {
  TempDir dir;
  const auto path = dir / "undo.db";
  auto writer = new_writer(path);
  ASSERT_NE(writer, nullptr);
  writer->add_allocation(an_allocation(1));
  writer->add_allocation(an_allocation(2));
  writer->set_free(1, its_free(1));
  writer->clear_free(1);  // held back still
  writer->flush();
  writer->set_free(2, its_free(2));
  writer->clear_free(2);  // in the file already
  ASSERT_TRUE(writer->finish(nullptr)) << writer->error();
  EXPECT_EQ(frees_seen(path), (Frees{{1, std::nullopt}, {2, std::nullopt}}));
}

TEST(TraceWriterBatchingTest, RowsBeyondTheHeldBackLimitAndOutOfOrderAreAllWritten) {
  TempDir dir;
  const auto path = dir / "many.db";
  auto writer = new_writer(path);
  ASSERT_NE(writer, nullptr);
  // More rows than the writer holds back (8192) between two commits, freed late: some are
  // written live and updated, the rest written complete.
  constexpr std::int64_t kRows = 20000;
  for (std::int64_t id = 1; id <= kRows; ++id) {
    writer->add_allocation(an_allocation(id));
    if (id > 100) writer->set_free(id - 100, its_free(id - 100));
  }
  // An id below the last one is not the collector's order; it is written all the same.
  writer->add_allocation(an_allocation(kRows + 2));
  writer->add_allocation(an_allocation(kRows + 1));
  writer->set_free(kRows + 1, its_free(kRows + 1));
  ASSERT_TRUE(writer->finish(nullptr)) << writer->error();

  const auto seen = frees_seen(path);
  ASSERT_EQ(seen.size(), static_cast<std::size_t>(kRows + 2));
  for (std::int64_t id = 1; id <= kRows + 2; ++id) {
    const bool freed = id <= kRows - 100 || id == kRows + 1;
    ASSERT_EQ(seen.at(id), freed ? std::optional<std::uint64_t>(2 * id + 1) : std::nullopt)
        << "allocation " << id;
  }
  EXPECT_EQ(testing::query_one(path, "SELECT count(*) FROM stats WHERE name LIKE 'storage_%'"),
            "0");
}

// The writer finds a held-back row by its number where the collector's numbers run on one by
// one; another writer's may skip numbers, and each free must still find its own row.
TEST(TraceWriterBatchingTest, FreesFindTheirRowsWhenTheNumbersSkip) {
  TempDir dir;
  const auto path = dir / "gaps.db";
  auto writer = new_writer(path);
  ASSERT_NE(writer, nullptr);
  const std::vector<std::int64_t> ids = {3, 4, 9, 10, 11, 40, 41, 100};
  for (const std::int64_t id : ids) writer->add_allocation(an_allocation(id));
  // Out of the order they came in, and one (11) left live.
  for (const std::int64_t id : {100, 4, 40, 3, 10, 41, 9}) writer->set_free(id, its_free(id));
  std::string error;
  ASSERT_TRUE(writer->finish(&error)) << error;
  Frees expected;
  for (const std::int64_t id : ids)
    expected[id] = id == 11 ? std::nullopt : std::optional(static_cast<std::uint64_t>(2 * id + 1));
  EXPECT_EQ(frees_seen(path), expected);
}

// Sites: the writer files each allocation under an allocation_site row (what its call had in
// common with others: thread, callsite, kind, API, device, stream, flags, pool, result) and each
// free under a free_site row, found again by the last site met or by the map of them all.
// However sites interleave, and however many share a thread and callsite while differing in the
// rest, every allocation must read back with exactly its own columns.

// What an allocation site is made of, and a free site, as a reader gives them back.
using Site = std::tuple<std::int64_t, std::optional<std::int64_t>, int, int, int, std::uint64_t,
                        std::uint32_t, std::optional<std::uint64_t>, int>;
using FreeSite = std::tuple<std::int64_t, std::optional<std::int64_t>, int>;

Site site_of(const AllocationRow& row) {
  return {row.alloc_utid, row.alloc_callsite_id,
          row.kind,       row.api,
          row.device,     row.stream,
          row.flags,      row.pool,
          row.result};
}
FreeSite free_site_of(const FreeRow& row) {
  return {row.free_utid, row.free_callsite_id, row.free_api};
}

struct Written {
  std::map<std::int64_t, Site> sites;
  std::map<std::int64_t, std::optional<FreeSite>> free_sites;
};

// 4,000 allocations from 300 sites drawn at random, many of them sharing a thread and callsite
// (so a slot of the recent sites) while differing in one other column, and frees from 120 free
// sites; a third of the lives short, the rest freed later or never.
Written write_trace(TraceWriter& writer) {
  std::mt19937_64 random(20261202);
  const auto pick = [&](int n) { return static_cast<int>(random() % static_cast<unsigned>(n)); };
  std::vector<AllocationRow> site_rows;
  for (int s = 0; s < 300; ++s) {
    AllocationRow row;
    row.upid = 1;
    row.alloc_utid = 1 + pick(3);
    if (pick(8) != 0) row.alloc_callsite_id = 1 + pick(20);
    row.kind = pick(2) == 0 ? allocation_kind::kDevice : allocation_kind::kManaged;
    row.api = pick(2) == 0 ? api::kCudaMalloc : api::kCuMemAlloc;
    row.device = pick(2);
    row.stream = pick(3) == 0 ? 7 : 0;
    row.flags = static_cast<std::uint32_t>(pick(2));
    if (pick(4) == 0) row.pool = 0x99;
    row.result = pick(10) == 0 ? 2 : 0;
    site_rows.push_back(row);
  }
  std::vector<FreeRow> free_rows;
  for (int s = 0; s < 120; ++s) {
    FreeRow row;
    row.free_utid = 1 + pick(3);
    if (pick(8) != 0) row.free_callsite_id = 1 + pick(20);
    row.free_api = pick(2) == 0 ? api::kCudaFree : api::kCuMemFree;
    free_rows.push_back(row);
  }

  Written written;
  std::uint64_t seq = 0;
  std::vector<std::int64_t> live;
  const auto free_one = [&](std::size_t at) {
    FreeRow row = free_rows[static_cast<std::size_t>(pick(static_cast<int>(free_rows.size())))];
    row.free_seq = ++seq;
    row.free_ns = static_cast<std::int64_t>(seq) * 10;
    writer.set_free(live[at], row);
    written.free_sites[live[at]] = free_site_of(row);
    live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
  };
  for (std::int64_t id = 1; id <= 4000; ++id) {
    AllocationRow row = site_rows[static_cast<std::size_t>(pick(300))];
    row.id = id;
    row.address = 0x7f00'0000'0000 + static_cast<std::uint64_t>(id) * 0x1000;
    row.size = row.requested_size = 4096;
    row.alloc_seq = ++seq;
    row.alloc_ns = static_cast<std::int64_t>(seq) * 10;
    writer.add_allocation(row);
    written.sites[id] = site_of(row);
    if (row.result != 0) continue;  // a failed allocation is never freed
    written.free_sites[id] = std::nullopt;
    live.push_back(id);
    if (pick(3) == 0) free_one(live.size() - 1);  // a short life
    if (!live.empty() && pick(2) == 0)
      free_one(static_cast<std::size_t>(pick(static_cast<int>(live.size()))));
  }
  return written;
}

void expect_read_back(const std::filesystem::path& path, const Written& written) {
  OpenFailure failure;
  auto reader = TraceReader::open(path, &failure);
  ASSERT_NE(reader, nullptr) << failure.message;
  std::size_t seen = 0;
  for (const AllocationRecord& record : reader->allocations({})) {
    const std::int64_t id = record.allocation.id;
    ASSERT_TRUE(written.sites.contains(id)) << id;
    EXPECT_EQ(site_of(record.allocation), written.sites.at(id)) << "allocation " << id;
    const auto free_site = written.free_sites.find(id);
    const std::optional<FreeSite> expected_free =
        free_site == written.free_sites.end() ? std::nullopt : free_site->second;
    EXPECT_EQ(record.free ? std::optional(free_site_of(*record.free)) : std::nullopt, expected_free)
        << "allocation " << id;
    ++seen;
  }
  EXPECT_EQ(seen, written.sites.size());
}

TEST(TraceWriterSitesTest, EveryAllocationReadsBackItsOwnSiteAndFreeSite) {
  TempDir dir;
  const auto path = dir / "sites.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->add_process(a_process());
  const Written written = write_trace(*writer);
  ASSERT_TRUE(writer->finish(&error)) << error;
  expect_read_back(path, written);
}

// As `vramtrace run` writes: on the writer's own thread, short lives packed, whose sites are
// read back from the chunks.
TEST(TraceWriterSitesTest, PackedShortLivesReadBackTheirOwnSitesToo) {
  TempDir dir;
  const auto path = dir / "packed.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error, TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
                                    storage::TraceWriter::RollupUpkeep::kAsRowsArrive,
                                    TraceWriter::Threading::kOwnThread,
                                    TraceWriter::AllocationPacking::kPackShortLives);
  ASSERT_NE(writer, nullptr) << error;
  writer->add_process(a_process());
  const Written written = write_trace(*writer);
  ASSERT_TRUE(writer->finish(&error)) << error;
  expect_read_back(path, written);
}

}  // namespace
}  // namespace vramtrace::storage
