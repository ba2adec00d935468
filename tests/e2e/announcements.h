// Reads what a fault-test program announced (programs/announce.h) and checks a trace against
// it: each announced allocation must be the process's next allocation in the trace, at the
// same address with the same size, and each announced free must have ended it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "trace_query.h"

namespace vramtrace::test {

struct AnnouncedEvent {
  bool is_free = false;
  std::string address;  // decimal, as SQLite prints the integer column
  int64_t size = 0;     // allocations only
};

// "0x7f00" as printed by %p -> "32512".
inline std::string hex_to_decimal(const std::string& hex) {
  return std::to_string(std::stoull(hex, nullptr, 16));
}

// The "alloc ADDR SIZE" and "free ADDR" lines of `out`, in order; other lines are skipped.
// `prefix` selects lines that start with it (e.g. "child 123 "), which is stripped first.
inline std::vector<AnnouncedEvent> parse_announcements(const std::string& out,
                                                       const std::string& prefix = "") {
  std::vector<AnnouncedEvent> events;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::istringstream words(line.substr(prefix.size()));
    std::string verb, address;
    words >> verb >> address;
    if (verb == "alloc") {
      AnnouncedEvent e{false, hex_to_decimal(address), 0};
      words >> e.size;
      events.push_back(e);
    } else if (verb == "free") {
      events.push_back({true, hex_to_decimal(address), 0});
    }
  }
  return events;
}

// How a trace may differ from what the program announced.
enum class Holds {
  kExactly,  // the same allocations and frees, nothing more
  kAtLeast,  // all of them; more may follow (calls that returned but were not announced
             // before the program died)
  kPrefix,   // the first of them, and nothing else (the rest was lost, knowingly)
};

// Checks the successful allocations of process `upid` against `announced`.
inline void expect_trace_holds(const TraceQuery& q, int64_t upid,
                               const std::vector<AnnouncedEvent>& announced, Holds holds) {
  const auto rows = q.rows(
      "SELECT address, size, free_seq IS NOT NULL FROM allocation WHERE result = 0 AND upid = " +
      std::to_string(upid) + " ORDER BY alloc_seq");
  size_t next = 0, frees = 0;
  std::map<std::string, size_t> row_of;  // address -> its latest announced row
  for (const AnnouncedEvent& e : announced) {
    if (e.is_free) {
      // In a prefix, the first event missing ends what was kept.
      if (holds == Holds::kPrefix &&
          (row_of.count(e.address) == 0 || rows[row_of[e.address]][2] != "1"))
        break;
      ASSERT_EQ(row_of.count(e.address), 1u) << "free of an unannounced " << e.address;
      EXPECT_EQ(rows[row_of[e.address]][2], "1") << "announced free of " << e.address;
      ++frees;
      continue;
    }
    if (next == rows.size() && holds == Holds::kPrefix) break;
    ASSERT_LT(next, rows.size()) << "announced allocation #" << next << " is not in the trace";
    EXPECT_EQ(rows[next][0], e.address) << "allocation #" << next;
    EXPECT_EQ(rows[next][1], std::to_string(e.size)) << "allocation #" << next;
    row_of[e.address] = next++;
  }
  if (holds == Holds::kAtLeast) return;
  EXPECT_EQ(rows.size(), next) << "allocations in the trace that were never announced";
  if (holds == Holds::kExactly) {
    int64_t freed_rows = 0;
    for (const auto& r : rows) freed_rows += r[2] == "1";
    EXPECT_EQ(freed_rows, static_cast<int64_t>(frees));
  }
}

}  // namespace vramtrace::test
