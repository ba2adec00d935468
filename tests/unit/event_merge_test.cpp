// The two ways of putting a process's allocations and frees in sequence order
// (storage/event_merge.h) give the same events in the same order: two scans merged, and one scan
// with the frees held back. On random tables of three processes with lifetimes of every length,
// ties between a free and another allocation of the same number and two frees of one number
// (damaged traces), read whole, cut at a sequence number, and stopped early.
#include "storage/event_merge.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <tuple>
#include <vector>

namespace vramtrace::storage {
namespace {

struct Table {
  sqlite::Database db;
};

// An in-memory allocation table, as the trace's, with its (upid, seq) indexes.
Table random_table(unsigned seed) {
  sqlite3* raw = nullptr;
  EXPECT_EQ(sqlite3_open(":memory:", &raw), SQLITE_OK);
  Table table{sqlite::Database(raw)};
  EXPECT_EQ(
      sqlite::execute(raw,
                      "CREATE TABLE allocation (id INTEGER PRIMARY KEY, upid INTEGER, "
                      "kind INTEGER, device INTEGER, size INTEGER, result INTEGER, "
                      "alloc_seq INTEGER, alloc_ns INTEGER, free_seq INTEGER, free_ns INTEGER);"
                      "CREATE INDEX by_alloc ON allocation(upid, alloc_seq);"
                      "CREATE INDEX by_free ON allocation(upid, free_seq);",
                      nullptr),
      SQLITE_OK);
  std::mt19937_64 random(seed);
  sqlite::Statement insert;
  EXPECT_EQ(sqlite::Statement::prepare(raw,
                                       "INSERT INTO allocation VALUES (?1, ?2, ?3, ?4, ?5, "
                                       "?6, ?7, ?8, ?9, ?10)",
                                       &insert),
            SQLITE_OK);
  std::int64_t id = 0;
  for (std::int64_t upid : {3, 1, 2}) {
    std::uint64_t seq = 0;
    const int count = 200 + int(random() % 300);
    for (int i = 0; i < count; ++i) {
      seq += 1 + random() % 3;  // some numbers are frees' only
      insert.bind_int64(1, ++id);
      insert.bind_int64(2, upid);
      insert.bind_int64(3, int(random() % 4));
      insert.bind_int64(4, int(random() % 2));
      insert.bind_int64(5, std::int64_t(1 + random() % 1000));
      insert.bind_int64(6, random() % 20 == 0 ? 2 : 0);  // a few failed allocations
      insert.bind_int64(7, std::int64_t(seq));
      insert.bind_int64(8, std::int64_t(seq * 10));
      const int lifetime = int(random() % 6);
      if (lifetime == 0) {
        insert.bind_null(9);  // never freed
        insert.bind_null(10);
      } else {
        // Freed 1 to thousands of numbers later: between the allocations' numbers, on one of
        // them or on another free's (neither happens in a trace the collector writes, where
        // each event has a number of its own: the merge's ties).
        const std::uint64_t free_seq = seq + 1 + random() % (lifetime * 400);
        insert.bind_int64(9, std::int64_t(free_seq));
        insert.bind_int64(10, std::int64_t(free_seq * 10 + 1));
      }
      EXPECT_EQ(insert.step(), SQLITE_DONE);
      insert.reset();
    }
  }
  return table;
}

using Event = std::tuple<int, std::int64_t, std::int64_t, std::uint64_t, std::int64_t, int, int,
                         std::uint64_t>;

Event as_tuple(const AllocationEvent& e) {
  return {int(e.type), e.allocation_id, e.upid, e.seq, e.ns, e.device, e.kind, e.size};
}

sqlite::Statement prepare(const Table& table, const std::string& sql) {
  sqlite::Statement statement;
  EXPECT_EQ(sqlite::Statement::prepare(table.db.get(), sql, &statement), SQLITE_OK) << sql;
  return statement;
}

// Every event through `last_seq`, stopping after `stop_after` events (-1: never), both ways.
std::pair<std::vector<Event>, std::vector<Event>> both_ways(const Table& table,
                                                            std::uint64_t last_seq, int stop_after,
                                                            int* rc_two, int* rc_one) {
  const std::string bound = " AND alloc_seq <= " + std::to_string(last_seq);
  sqlite::Statement allocs =
      prepare(table,
              "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id FROM allocation "
              "WHERE result = 0" +
                  bound + " ORDER BY upid, alloc_seq");
  sqlite::Statement frees =
      prepare(table,
              "SELECT upid, free_seq, free_ns, device, kind, size, id FROM allocation "
              "WHERE result = 0 AND free_seq IS NOT NULL AND free_seq <= " +
                  std::to_string(last_seq) + " ORDER BY upid, free_seq");
  sqlite::Statement one_scan =
      prepare(table,
              "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns "
              "FROM allocation WHERE result = 0" +
                  bound + " ORDER BY upid, alloc_seq");
  std::vector<Event> two, one;
  const auto collect = [&](std::vector<Event>* into) {
    return [into, stop_after](const AllocationEvent& e) {
      into->push_back(as_tuple(e));
      return stop_after < 0 || int(into->size()) < stop_after;
    };
  };
  *rc_two = merge_allocation_events(allocs, frees, collect(&two));
  *rc_one = merge_allocation_events_in_one_scan(one_scan, last_seq, collect(&one));
  return {two, one};
}

TEST(EventMerge, OneScanGivesTheTwoScansEvents) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    const Table table = random_table(seed);
    int rc_two = 0, rc_one = 0;
    const auto [two, one] = both_ways(table, INT64_MAX, -1, &rc_two, &rc_one);
    EXPECT_EQ(rc_two, SQLITE_DONE);
    EXPECT_EQ(rc_one, SQLITE_DONE);
    ASSERT_GT(two.size(), 600u);
    ASSERT_EQ(one, two);
  }
}

TEST(EventMerge, OneScanCutAtANumberGivesTheEventsUpToIt) {
  const Table table = random_table(99);
  for (std::uint64_t last : {1ull, 5ull, 100ull, 333ull, 700ull}) {
    SCOPED_TRACE(last);
    int rc_two = 0, rc_one = 0;
    const auto [two, one] = both_ways(table, last, -1, &rc_two, &rc_one);
    EXPECT_EQ(one, two);
    for (const Event& e : one) EXPECT_LE(std::get<3>(e), last);
  }
}

TEST(EventMerge, StoppingEarlyGivesTheSamePrefix) {
  const Table table = random_table(5);
  for (int stop : {1, 2, 17, 300}) {
    SCOPED_TRACE(stop);
    int rc_two = 0, rc_one = 0;
    const auto [two, one] = both_ways(table, INT64_MAX, stop, &rc_two, &rc_one);
    EXPECT_EQ(rc_two, SQLITE_OK);
    EXPECT_EQ(rc_one, SQLITE_OK);
    EXPECT_EQ(one.size(), size_t(stop));
    EXPECT_EQ(one, two);
  }
}

}  // namespace
}  // namespace vramtrace::storage
