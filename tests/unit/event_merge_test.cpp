// The ways of putting a process's allocations and frees in sequence order (storage/event_merge.h)
// give the events in the order the header defines, as a sort of every event gives them: one scan
// with the frees held back, and a window's events with the short lives' frees found through
// their allocations. On random tables of three processes with lifetimes of every length, short
// and long (storage/schema.h, kShortLifeEvents), ties between a free and another allocation of
// the same number and two frees of one number (damaged traces), read whole, cut at a sequence
// number, in windows, and stopped early.
#include "storage/event_merge.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "storage/schema.h"

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
        // Freed 1 to 10,000 numbers later, either side of kShortLifeEvents: between the
        // allocations' numbers, on one of them or on another free's (neither happens in a trace
        // the collector writes, where each event has a number of its own: the merge's ties).
        const std::uint64_t free_seq = seq + 1 + random() % (lifetime * 2000);
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

// The events the header defines, by a sort of every event: those of the successful
// allocations numbered after_seq < seq <= through_seq, in (upid, seq) order, a free before an
// allocation of the same number, events of one kind and number by id.
std::vector<Event> sorted_events(const Table& table, std::uint64_t after_seq,
                                 std::uint64_t through_seq) {
  sqlite::Statement rows = prepare(table,
                                   "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, "
                                   "free_seq, free_ns FROM allocation WHERE result = 0");
  std::vector<Event> events;
  const auto add = [&](AllocationEvent::Type type, std::uint64_t seq, std::int64_t ns) {
    if (seq <= after_seq || seq > through_seq) return;
    events.push_back(as_tuple(AllocationEvent{type, rows.int64(6), rows.int64(0), seq, ns,
                                              rows.int32(3), rows.int32(4), rows.uint64(5)}));
  };
  while (rows.step() == SQLITE_ROW) {
    add(AllocationEvent::Type::kAlloc, rows.uint64(1), rows.int64(2));
    if (!rows.is_null(7)) add(AllocationEvent::Type::kFree, rows.uint64(7), rows.int64(8));
  }
  const auto key = [](const Event& e) {
    return std::tuple(std::get<2>(e), std::get<3>(e),
                      std::get<0>(e) != int(AllocationEvent::Type::kFree), std::get<1>(e));
  };
  std::sort(events.begin(), events.end(),
            [&](const Event& a, const Event& b) { return key(a) < key(b); });
  return events;
}

// Collects the events visited, stopping after `stop_after` (-1: never).
std::function<bool(const AllocationEvent&)> collect(std::vector<Event>* into, int stop_after) {
  return [into, stop_after](const AllocationEvent& e) {
    into->push_back(as_tuple(e));
    return stop_after < 0 || int(into->size()) < stop_after;
  };
}

// Every event through `last_seq`, by one scan, stopping after `stop_after` events.
std::vector<Event> one_scan(const Table& table, std::uint64_t last_seq, int stop_after, int* rc) {
  sqlite::Statement allocs =
      prepare(table,
              "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns "
              "FROM allocation WHERE result = 0 AND alloc_seq <= " +
                  std::to_string(last_seq) + " ORDER BY upid, alloc_seq");
  std::vector<Event> events;
  AllocationScan scan(allocs);
  *rc = merge_allocation_events_in_one_scan(scan, last_seq, collect(&events, stop_after));
  return events;
}

// Process `upid`'s events after_seq < seq <= through_seq, as TimeIndex reads a window.
std::vector<Event> window(const Table& table, std::int64_t upid, std::uint64_t after_seq,
                          std::uint64_t through_seq, int stop_after, int* rc) {
  const std::string short_life = std::to_string(kShortLifeEvents);
  const std::string in_process = "upid = " + std::to_string(upid) + " AND result = 0 AND ";
  sqlite::Statement allocs =
      prepare(table,
              "SELECT upid, alloc_seq, alloc_ns, device, kind, size, id, free_seq, free_ns FROM "
              "allocation WHERE " +
                  in_process + "alloc_seq > " + std::to_string(after_seq) + " - " + short_life +
                  " AND alloc_seq <= " + std::to_string(through_seq) + " ORDER BY alloc_seq");
  sqlite::Statement long_frees = prepare(
      table, "SELECT upid, free_seq, free_ns, device, kind, size, id FROM allocation WHERE " +
                 in_process + "free_seq > " + std::to_string(after_seq) + " AND free_seq <= " +
                 std::to_string(through_seq) + " AND (free_seq - alloc_seq > " + short_life +
                 " OR free_seq - alloc_seq < 1) ORDER BY free_seq, id");
  std::vector<Event> events;
  AllocationScan scan(allocs);
  *rc = merge_allocation_events_in_window(scan, long_frees, after_seq, through_seq,
                                          collect(&events, stop_after));
  return events;
}

std::vector<Event> of_process(const std::vector<Event>& events, std::int64_t upid) {
  std::vector<Event> kept;
  for (const Event& e : events)
    if (std::get<2>(e) == upid) kept.push_back(e);
  return kept;
}

TEST(EventMerge, OneScanGivesEveryEventInOrder) {
  for (unsigned seed = 1; seed <= 40; ++seed) {
    SCOPED_TRACE(seed);
    const Table table = random_table(seed);
    int rc = 0;
    const std::vector<Event> expected = sorted_events(table, 0, INT64_MAX);
    ASSERT_GT(expected.size(), 600u);
    EXPECT_EQ(one_scan(table, INT64_MAX, -1, &rc), expected);
    EXPECT_EQ(rc, SQLITE_DONE);
  }
}

TEST(EventMerge, OneScanCutAtANumberGivesTheEventsUpToIt) {
  const Table table = random_table(99);
  for (std::uint64_t last : {1ull, 5ull, 100ull, 333ull, 700ull}) {
    SCOPED_TRACE(last);
    int rc = 0;
    EXPECT_EQ(one_scan(table, last, -1, &rc), sorted_events(table, 0, last));
    EXPECT_EQ(rc, SQLITE_DONE);
  }
}

// Windows that start and end anywhere, wider and narrower than a short life, on tables where
// some lives are short and some long: each window's events are the sort's.
TEST(EventMerge, AWindowGivesItsEventsShortAndLongLivesAlike) {
  std::size_t short_frees = 0, long_frees = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    SCOPED_TRACE(seed);
    const Table table = random_table(seed);
    const std::vector<Event> all = sorted_events(table, 0, INT64_MAX);
    std::mt19937_64 random(seed);
    for (std::int64_t upid : {1, 2, 3}) {
      const std::vector<Event> process = of_process(all, upid);
      const std::uint64_t last = std::get<3>(process.back());
      for (int i = 0; i < 25; ++i) {
        const std::uint64_t after = i == 0 ? 0 : random() % (last + 1);
        const std::uint64_t through =
            i == 1 ? UINT64_MAX / 2 : after + random() % (i % 2 == 0 ? 50 : 3 * kShortLifeEvents);
        SCOPED_TRACE(std::to_string(upid) + ": (" + std::to_string(after) + ", " +
                     std::to_string(through) + "]");
        int rc = 0;
        const std::vector<Event> got = window(table, upid, after, through, -1, &rc);
        EXPECT_EQ(rc, SQLITE_DONE);
        ASSERT_EQ(got, of_process(sorted_events(table, after, through), upid));
      }
    }
    sqlite::Statement lives =
        prepare(table, "SELECT sum(free_seq - alloc_seq <= " + std::to_string(kShortLifeEvents) +
                           "), sum(free_seq - alloc_seq > " + std::to_string(kShortLifeEvents) +
                           ") FROM allocation WHERE result = 0 AND free_seq IS NOT NULL");
    ASSERT_EQ(lives.step(), SQLITE_ROW);
    short_frees += lives.uint64(0);
    long_frees += lives.uint64(1);
  }
  // Both kinds of life were there to find.
  EXPECT_GT(short_frees, 1000u);
  EXPECT_GT(long_frees, 1000u);
}

TEST(EventMerge, StoppingEarlyGivesTheSamePrefix) {
  const Table table = random_table(5);
  const std::vector<Event> all = sorted_events(table, 0, INT64_MAX);
  const std::vector<Event> process = of_process(all, 2);
  for (int stop : {1, 2, 17, 300}) {
    SCOPED_TRACE(stop);
    int rc = 0;
    const std::vector<Event> scanned = one_scan(table, INT64_MAX, stop, &rc);
    EXPECT_EQ(rc, SQLITE_OK);
    EXPECT_EQ(scanned, std::vector<Event>(all.begin(), all.begin() + stop));
    const std::vector<Event> windowed = window(table, 2, 0, INT64_MAX, stop, &rc);
    EXPECT_EQ(rc, SQLITE_OK);
    EXPECT_EQ(windowed, std::vector<Event>(process.begin(), process.begin() + stop));
  }
}

}  // namespace
}  // namespace vramtrace::storage
