// Schema 2 stores allocations compact (allocation_compact, allocation_site, free_site,
// allocation_detail) under the view `allocation`. These tests hold it to what schema 1's table
// was: the writer, SQL written against the view, and traces of schema 1 all read the same.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "allocator_trace.h"
#include "schema_1_trace.h"
#include "sql_query.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_merge.h"
#include "storage/trace_reader.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::storage {
namespace {

using testing::execute_sql;
using testing::query_one;
using testing::TempDir;

// Every column of every row of the view, in id order, as SQL literals.
std::string all_rows(const std::filesystem::path& path, const std::string& where = "1") {
  return query_one(
      path,
      "SELECT group_concat(quote(id) || ',' || quote(upid) || ',' || quote(kind) || ',' || "
      "quote(api) || ',' || quote(device) || ',' || quote(stream) || ',' || quote(address) || ',' "
      "|| quote(size) || ',' || quote(requested_size) || ',' || quote(flags) || ',' || quote(pool) "
      "|| ',' || quote(result) || ',' || quote(alloc_seq) || ',' || quote(alloc_ns) || ',' || "
      "quote(alloc_utid) || ',' || quote(alloc_callsite_id) || ',' || quote(free_seq) || ',' || "
      "quote(free_ns) || ',' || quote(free_utid) || ',' || quote(free_callsite_id) || ',' || "
      "quote(free_api) || ',' || quote(vmm_handle) || ',' || quote(vmm_offset) || ',' || "
      "quote(segment_id) || ',' || quote(allocator_allocated) || ',' || quote(allocator_reserved) "
      "|| ',' || quote(free_allocator_allocated) || ',' || quote(free_allocator_reserved) || ',' "
      "|| quote(correlation_id), ';') FROM (SELECT * FROM allocation WHERE " +
          where + " ORDER BY id)");
}

std::string optional_text(const auto& value) {
  return value ? std::to_string(*value) : "-";
}

// Every field the reader gives back, one line per allocation.
std::string read_back(const std::filesystem::path& path) {
  OpenFailure failure;
  const auto reader = TraceReader::open(path, &failure);
  if (reader == nullptr) return "cannot open: " + failure.message;
  std::ostringstream out;
  for (const AllocationRecord& record : reader->allocations({})) {
    const AllocationRow& a = record.allocation;
    out << a.id << ' ' << a.upid << ' ' << a.kind << ' ' << a.api << ' ' << a.device << ' '
        << a.stream << ' ' << a.address << ' ' << a.size << ' ' << a.requested_size << ' '
        << a.flags << ' ' << optional_text(a.pool) << ' ' << a.result << ' ' << a.alloc_seq << ' '
        << a.alloc_ns << ' ' << a.alloc_utid << ' ' << optional_text(a.alloc_callsite_id) << ' '
        << optional_text(a.vmm_handle) << ' ' << optional_text(a.vmm_offset) << ' '
        << optional_text(a.segment_id) << ' ' << optional_text(a.allocator_allocated) << ' '
        << optional_text(a.allocator_reserved);
    if (record.free) {
      const FreeRow& f = *record.free;
      out << " freed " << f.free_seq << ' ' << f.free_ns << ' ' << f.free_utid << ' '
          << optional_text(f.free_callsite_id) << ' ' << f.free_api << ' '
          << optional_text(f.allocator_allocated) << ' ' << optional_text(f.allocator_reserved);
    }
    out << '\n';
  }
  std::uint64_t events = 0;
  reader->for_each_allocation_event([&](const AllocationEvent&) { ++events; });
  out << events << " events";
  return out.str();
}

class AllocationStorageTest : public ::testing::Test {
 protected:
  // The synthetic trace (failed allocations, a free that failed, stacks and none, two
  // processes) and the allocator trace (blocks with their segments and the allocator's totals,
  // an OOM).
  void SetUp() override {
    ASSERT_EQ(testing::write_synthetic_trace(synthetic_), "");
    ASSERT_EQ(testing::write_allocator_trace(allocator_), "");
  }

  TempDir dir_;
  std::filesystem::path synthetic_ = dir_ / "synthetic.db", allocator_ = dir_ / "allocator.db";
};

TEST_F(AllocationStorageTest, ATraceOfSchema1ReadsAsTheTraceItWasMadeFrom) {
  for (const auto& trace : {synthetic_, allocator_}) {
    const auto old = dir_ / ("schema_1_" + trace.filename().string());
    std::filesystem::copy_file(trace, old);
    ASSERT_EQ(testing::rewrite_as_schema_1(old), "");
    ASSERT_EQ(query_one(old, "SELECT type FROM sqlite_master WHERE name = 'allocation'"), "table");
    OpenFailure failure;
    const auto reader = TraceReader::open(old, &failure);
    ASSERT_NE(reader, nullptr) << failure.message;
    EXPECT_EQ(reader->schema_version(), 1);
    EXPECT_EQ(read_back(old), read_back(trace));
    EXPECT_NE(read_back(trace).find("events"), std::string::npos);

    // The time index builds schema 1's own indexes on the table, and answers as on schema 2.
    std::string error;
    const auto occupies = [](int kind) { return kind != allocation_kind::kBlock; };
    const auto old_index = TimeIndex::open(old, occupies, &error);
    ASSERT_NE(old_index, nullptr) << error;
    const auto new_index = TimeIndex::open(trace, occupies, &error);
    ASSERT_NE(new_index, nullptr) << error;
    EXPECT_TRUE(old_index->finds_events_by_seq());
    EXPECT_EQ(query_one(old,
                        "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND "
                        "tbl_name = 'allocation'"),
              std::to_string(allocation_index_names(AllocationStorage::kTable).size()));
    for (const ProcessRecord& process : reader->processes()) {
      const std::uint64_t last = new_index->last_seq(process.start.upid);
      EXPECT_GT(last, 0u);
      EXPECT_EQ(old_index->last_seq(process.start.upid), last);
      for (std::uint64_t seq = 0; seq <= last; ++seq) {
        EXPECT_EQ(old_index->live_at(process.start.upid, seq).size(),
                  new_index->live_at(process.start.upid, seq).size())
            << trace << " upid " << process.start.upid << " seq " << seq;
        EXPECT_EQ(old_index->time_of(process.start.upid, seq),
                  new_index->time_of(process.start.upid, seq));
      }
    }
  }
}

// What SQL writes into the view (INSTEAD OF triggers) is stored as the writer stores it: the
// same rows come back, and sites are shared, not written once per row.
TEST_F(AllocationStorageTest, RowsInsertedIntoTheViewComeBackAsTheWriterWroteThem) {
  for (const auto& trace : {synthetic_, allocator_}) {
    const auto copy = dir_ / ("copy_" + trace.filename().string());
    std::filesystem::copy_file(trace, copy);
    ASSERT_EQ(execute_sql(copy, "DELETE FROM allocation;"), "");
    ASSERT_EQ(query_one(copy, "SELECT count(*) FROM allocation_compact"), "0");
    ASSERT_EQ(query_one(copy, "SELECT count(*) FROM allocation_detail"), "0");
    ASSERT_EQ(execute_sql(copy, "DELETE FROM allocation_site; DELETE FROM free_site;"), "");
    ASSERT_EQ(execute_sql(copy, "ATTACH '" + trace.string() +
                                    "' AS original; INSERT INTO allocation SELECT * FROM "
                                    "original.allocation ORDER BY id;"),
              "");
    EXPECT_EQ(all_rows(copy), all_rows(trace));
    EXPECT_EQ(read_back(copy), read_back(trace));
    // One site row for each site the rows use (the writer may keep one a failed free left).
    EXPECT_EQ(query_one(copy, "SELECT count(*) FROM allocation_site"),
              query_one(trace, "SELECT count(DISTINCT site_id) FROM allocation_compact"));
    EXPECT_EQ(query_one(copy, "SELECT count(*) FROM free_site"),
              query_one(trace, "SELECT count(DISTINCT free_site_id) FROM allocation_compact"));
    EXPECT_EQ(query_one(copy, "SELECT count(*) FROM allocation_detail"),
              query_one(trace, "SELECT count(*) FROM allocation_detail"));
  }
}

TEST_F(AllocationStorageTest, UpdatesAndDeletesThroughTheViewChangeOnlyTheirRows) {
  const std::string others = all_rows(synthetic_, "id NOT IN (2, 3)");
  const std::string second = all_rows(synthetic_, "id = 2");
  ASSERT_EQ(execute_sql(synthetic_,
                        "UPDATE allocation SET correlation_id = 1000 + id, stream = 7 WHERE id = "
                        "2; DELETE FROM allocation WHERE id = 3;"),
            "");
  EXPECT_EQ(query_one(synthetic_,
                      "SELECT correlation_id || ' ' || stream FROM allocation "
                      "WHERE id = 2"),
            "1002 7");
  EXPECT_EQ(query_one(synthetic_, "SELECT count(*) FROM allocation WHERE id = 3"), "0");
  EXPECT_EQ(query_one(synthetic_, "SELECT count(*) FROM allocation_compact WHERE id = 3"), "0");
  EXPECT_EQ(all_rows(synthetic_, "id NOT IN (2, 3)"), others);
  // Undone, the row is as before, with no detail row left behind.
  ASSERT_EQ(execute_sql(synthetic_,
                        "UPDATE allocation SET correlation_id = NULL, stream = 0 WHERE id = 2;"),
            "");
  EXPECT_EQ(all_rows(synthetic_, "id = 2"), second);
  EXPECT_EQ(query_one(synthetic_, "SELECT count(*) FROM allocation_detail WHERE id = 2"), "0");
}

// Rows that set none of allocation_detail's columns have no row there: plain allocations stay
// compact. Blocks (segment, allocator totals) and mappings (handle, offset) have one.
TEST_F(AllocationStorageTest, OnlyAllocationsWithDetailsHaveADetailRow) {
  EXPECT_EQ(query_one(synthetic_, "SELECT count(*) FROM allocation_detail"), "0");
  EXPECT_EQ(query_one(allocator_,
                      "SELECT count(*) FROM allocation_detail d JOIN allocation a ON a.id = d.id "
                      "WHERE a.kind = " +
                          std::to_string(allocation_kind::kBlock)),
            query_one(allocator_, "SELECT count(*) FROM allocation WHERE kind = " +
                                      std::to_string(allocation_kind::kBlock)));
  EXPECT_EQ(query_one(allocator_,
                      "SELECT count(*) FROM allocation_detail d JOIN allocation a ON a.id = d.id "
                      "WHERE a.kind <> " +
                          std::to_string(allocation_kind::kBlock) +
                          " AND a.vmm_handle IS NULL AND a.correlation_id IS NULL"),
            "0");
}

// What SQLite's planner does with `query`: EXPLAIN QUERY PLAN's lines, joined by " | ".
std::string plan_of(const std::filesystem::path& path, const std::string& query) {
  sqlite3* db = nullptr;
  std::string plan;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* statement = nullptr;
    if (sqlite3_prepare_v2(db, ("EXPLAIN QUERY PLAN " + query).c_str(), -1, &statement, nullptr) ==
        SQLITE_OK) {
      while (sqlite3_step(statement) == SQLITE_ROW) {
        if (!plan.empty()) plan += " | ";
        plan += reinterpret_cast<const char*>(sqlite3_column_text(statement, 3));
      }
    }
    sqlite3_finalize(statement);
  }
  sqlite3_close(db);
  return plan;
}

// The reader's binary searches over sequence numbers (TimeIndex) and lookups by segment or
// stack must search the indexes under the view, not scan: on a trace of 10 million allocations
// a scan per step is seconds. free_seq in particular is an expression the index must match.
TEST_F(AllocationStorageTest, QueriesOfTheViewSearchTheIndexesUnderIt) {
  // Each query, and the search its plan must make.
  const std::map<std::string, std::string> search_of_query{
      {"SELECT free_seq, free_ns FROM allocation WHERE upid = 1 AND free_seq <= 5 "
       "ORDER BY free_seq DESC LIMIT 1",
       "INDEX allocation_by_free_seq (upid=? AND <expr><?)"},
      {"SELECT alloc_seq, alloc_ns FROM allocation WHERE upid = 1 AND alloc_seq <= 5 "
       "ORDER BY alloc_seq DESC LIMIT 1",
       "INDEX allocation_by_alloc_seq (upid=? AND alloc_seq<?)"},
      {"SELECT id FROM allocation WHERE segment_id = 1",
       "INDEX allocation_by_segment (segment_id=?)"},
      {"SELECT count(*) FROM allocation WHERE alloc_callsite_id = 3",
       "INDEX allocation_by_site (site_id=?)"},
  };
  for (const auto& [query, search] : search_of_query) {
    const std::string plan = plan_of(synthetic_, query);
    EXPECT_NE(plan.find(search), std::string::npos) << query << "\n  plan: " << plan;
    EXPECT_EQ(plan.find("SCAN a"), std::string::npos) << query << "\n  plan: " << plan;
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << query << "\n  plan: " << plan;
  }
}

// A merge copies a schema-2 input's tables as they are and sends a schema-1 input through the
// view: both give the same rows, ids and segment ids shifted past the first input's.
TEST_F(AllocationStorageTest, MergedAllocationsKeepEveryColumnFromEitherSchema) {
  const auto old = dir_ / "schema_1_allocator.db";
  std::filesystem::copy_file(allocator_, old);
  ASSERT_EQ(testing::rewrite_as_schema_1(old), "");
  const std::string shift = query_one(synthetic_, "SELECT max(id) FROM allocation");
  // The columns a merge keeps as they are, and the ids it shifts, shifted back.
  const auto columns = [&](const std::filesystem::path& path, const std::string& back) {
    return query_one(
        path,
        "SELECT group_concat(quote(id - " + back +
            ") || ',' || quote(kind) || ',' || "
            "quote(api) || ',' || quote(device) || ',' || quote(stream) || ',' || quote(address) "
            "|| "
            "',' || quote(size) || ',' || quote(requested_size) || ',' || quote(flags) || ',' || "
            "quote(pool) || ',' || quote(result) || ',' || quote(alloc_seq) || ',' || "
            "quote(alloc_ns) || ',' || quote(free_seq) || ',' || quote(free_ns) || ',' || "
            "quote(free_api) || ',' || quote(vmm_handle) || ',' || quote(vmm_offset) || ',' || "
            "quote(segment_id - " +
            back +
            ") || ',' || quote(allocator_allocated) || ',' || "
            "quote(allocator_reserved) || ',' || quote(free_allocator_allocated) || ',' || "
            "quote(free_allocator_reserved) || ',' || quote(correlation_id) || ',' || "
            "quote(alloc_callsite_id IS NULL), ';') FROM (SELECT * FROM allocation WHERE id > " +
            back + " ORDER BY id)");
  };
  const std::string expected = columns(allocator_, "0");
  ASSERT_NE(query_one(allocator_, "SELECT count(*) FROM allocation WHERE segment_id IS NOT NULL"),
            "0");
  for (const auto& second : {allocator_, old}) {
    const auto merged = dir_ / ("merged_" + second.filename().string());
    const MergeResult result = merge_traces({synthetic_, second}, merged, {});
    ASSERT_TRUE(result.ok) << result.error;
    EXPECT_EQ(columns(merged, shift), expected) << second;
    EXPECT_EQ(all_rows(merged, "id <= " + shift), all_rows(synthetic_)) << second;
  }
}

}  // namespace
}  // namespace vramtrace::storage
