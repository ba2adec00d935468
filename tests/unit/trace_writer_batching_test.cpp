// TraceWriter holds allocation rows back until their free or the next commit (trace_writer.h).
// Whatever the order of frees, commits and failed frees, a reader must see exactly what it
// would see if every row had been written at once and updated in place.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "sql_query.h"
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

}  // namespace
}  // namespace vramtrace::storage
