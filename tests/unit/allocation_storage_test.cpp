// Schema 2 stores allocations compact (allocation_compact, allocation_site, free_site,
// allocation_detail) under the view `allocation`. These tests hold the view to the columns and
// rows the writer wrote, and the queries of it to the indexes under it.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <string>

#include "allocator_trace.h"
#include "sql_query.h"
#include "storage/schema.h"
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
// a scan per step is seconds. free_seq in particular is an expression the index must match, and
// the index holds the long lives alone, which a query must say as the index does.
TEST_F(AllocationStorageTest, QueriesOfTheViewSearchTheIndexesUnderIt) {
  const std::string rows = "(" + storage::allocation_rows_sql("") + ")";
  // Each query, and the search its plan must make.
  const std::map<std::string, std::string> search_of_query{
      {"SELECT alloc_seq + free_seq_delta, alloc_ns + free_ns_delta FROM allocation_compact "
       "WHERE upid = 1 AND alloc_seq + free_seq_delta <= 5 AND " +
           storage::long_life_sql("") + " ORDER BY alloc_seq + free_seq_delta DESC LIMIT 1",
       "INDEX allocation_by_free_seq (upid=? AND <expr><?)"},
      {"SELECT alloc_seq + free_seq_delta FROM allocation_compact WHERE upid = 1 AND "
       "alloc_seq < 5 AND alloc_seq >= 5 - 1024 AND " +
           storage::short_life_sql("") + " ORDER BY alloc_seq DESC",
       "INDEX allocation_by_alloc_seq (upid=? AND alloc_seq>? AND alloc_seq<?)"},
      // The readers' rows under the view (the view without its packed allocations).
      {"SELECT alloc_seq, alloc_ns FROM " + rows +
           " WHERE upid = 1 AND alloc_seq <= 5 "
           "ORDER BY alloc_seq DESC LIMIT 1",
       "INDEX allocation_by_alloc_seq (upid=? AND alloc_seq<?)"},
      {"SELECT id FROM " + rows + " WHERE segment_id = 1",
       "INDEX allocation_by_segment (segment_id=?)"},
      // TraceReader::failures_by_process_and_kind: the failed sites, then their rows.
      {"SELECT a.upid, s.kind, count(*) FROM allocation_site AS s CROSS JOIN allocation_compact "
       "AS a ON a.site_id = s.id AND a.address = 0 WHERE s.result = 2",
       "INDEX allocation_failed (site_id=?)"},
  };
  for (const auto& [query, search] : search_of_query) {
    const std::string plan = plan_of(synthetic_, query);
    EXPECT_NE(plan.find(search), std::string::npos) << query << "\n  plan: " << plan;
    EXPECT_EQ(plan.find("SCAN a"), std::string::npos) << query << "\n  plan: " << plan;
    EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << query << "\n  plan: " << plan;
  }
}

// A merge copies an input's tables as they are: the same rows, ids and segment ids shifted past
// the first input's.
TEST_F(AllocationStorageTest, MergedAllocationsKeepEveryColumn) {
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
  const auto merged = dir_ / "merged.db";
  const MergeResult result = merge_traces({synthetic_, allocator_}, merged, {});
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(columns(merged, shift), expected);
  EXPECT_EQ(all_rows(merged, "id <= " + shift), all_rows(synthetic_));
}

}  // namespace
}  // namespace vramtrace::storage
