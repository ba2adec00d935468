// Storage's registry of stats against what it describes: docs/schema.md's table of stats lists
// its very rows, every source's, and the shim's sources send no notice it lacks.
#include "storage/trace_stats.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "markdown_table.h"
#include "shim_notice_calls.h"
#include "storage/time_index_rows.h"

namespace vramtrace::storage {
namespace {

std::string_view source_name(StatSource source) {
  switch (source) {
    case StatSource::kShim:
      return "shim";
    case StatSource::kCollector:
      return "collector";
    case StatSource::kWriter:
      return "writer";
    case StatSource::kIndex:
      return "index";
  }
  return "?";
}

// The collector prefixes the name a notice is sent by.
constexpr std::string_view kShimPrefix = "shim_";

TEST(TraceStatsTest, EveryRowHasANameAndADescription) {
  for (const TraceStat& stat : kTraceStats) {
    EXPECT_FALSE(stat.name.empty());
    EXPECT_FALSE(stat.description.empty()) << stat.name;
    EXPECT_EQ(stat.name.starts_with(kShimPrefix), stat.source == StatSource::kShim)
        << stat.name << ": the shim's notices, and they alone, are named shim_";
    EXPECT_EQ(find_trace_stat(stat.name), &stat) << stat.name;
  }
  EXPECT_EQ(find_trace_stat("no_such_stat"), nullptr);
  EXPECT_EQ(trace_stat(TraceStatId::kStorageEndOfUnknownMarker).name,
            "storage_end_of_unknown_marker");
  EXPECT_EQ(trace_stat(TraceStatId::kShimCallsUnrecorded).severity, Severity::kDataLoss);
  EXPECT_EQ(std::string_view(kTimeOutOfOrder), "out_of_order");
}

// The index's rows are the values time_problem's `problem` takes, as its section lists them.
TEST(TraceStatsTest, TheIndexsRowsAreTimeProblemsProblems) {
  const auto rows = testing::table_with_header(testing::section_of_schema_doc("### `time_problem`"),
                                               "| column | type | meaning |");
  std::string problem_cell;
  for (const auto& row : rows)
    if (testing::unquote(row[0]) == "problem") problem_cell = row[2];
  ASSERT_FALSE(problem_cell.empty()) << "docs/schema.md: time_problem has no column problem";
  std::set<std::string> documented;
  for (std::size_t at = problem_cell.find('`'); at != std::string::npos;) {
    const std::size_t end = problem_cell.find('`', at + 1);
    documented.insert(problem_cell.substr(at + 1, end - at - 1));
    at = problem_cell.find('`', end + 1);
  }
  std::set<std::string> registry;
  for (const TraceStat& stat : kTraceStats)
    if (stat.source == StatSource::kIndex) registry.insert(std::string(stat.name));
  EXPECT_EQ(documented, registry);
}

TEST(TraceStatsTest, SchemaDocListsEveryStatAsTheRegistryHasIt) {
  const auto rows = testing::table_with_header(
      testing::read_schema_doc(), "| name | source | severity | written | what it counts |");
  ASSERT_FALSE(rows.empty()) << "docs/schema.md has no table of stats";
  std::map<std::string, std::vector<std::string>> documented;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 5u) << "docs/schema.md: a stat's row has 5 cells: " << row.front();
    documented[testing::unquote(row[0])] = row;
  }
  for (const TraceStat& stat : kTraceStats) {
    const auto found = documented.find(std::string(stat.name));
    if (found == documented.end()) {
      ADD_FAILURE() << "docs/schema.md lacks the stat " << stat.name;
      continue;
    }
    const std::vector<std::string>& row = found->second;
    EXPECT_EQ(row[1], source_name(stat.source))
        << "docs/schema.md gives " << stat.name << " another source";
    EXPECT_EQ(row[2], severity_name(stat.severity))
        << "docs/schema.md gives " << stat.name << " another severity";
    EXPECT_EQ(row[3], stat.written == StatWritten::kAlways ? "always" : "when counted")
        << "docs/schema.md: when " << stat.name << " is written";
    EXPECT_EQ(row[4], stat.description)
        << "docs/schema.md describes " << stat.name << " otherwise than trace_stats.h";
    documented.erase(found);
  }
  for (const auto& [name, row] : documented)
    ADD_FAILURE() << "docs/schema.md documents the stat " << name << ", which trace_stats.h lacks";
}

TEST(TraceStatsTest, TheShimSendsOnlyNoticesOfTheRegistry) {
  const testing::ShimNotices notices = testing::shim_notices();
  ASSERT_FALSE(notices.calls.empty()) << "no notice found in preload/ and cupti/";
  for (const std::string& where : notices.unreadable)
    ADD_FAILURE() << where << " sends a notice whose name or severity the test cannot read: "
                  << "name it by a string literal, or add the function that passes it on to "
                  << "kNoticeSenders (tests/unit/shim_notice_calls.h)";
  for (const testing::NoticeCall& call : notices.calls) {
    const std::string name = std::string(kShimPrefix) + call.name;
    const TraceStat* stat = find_trace_stat(name);
    if (stat == nullptr || stat->source != StatSource::kShim) {
      ADD_FAILURE() << call.where << " sends the notice " << call.name
                    << ", but storage/trace_stats.h has no shim stat " << name;
      continue;
    }
    EXPECT_EQ(call.severity, severity_name(stat->severity))
        << call.where << " sends " << call.name << " with another severity than trace_stats.h";
    if (call.text) {
      EXPECT_EQ(*call.text, stat->description)
          << call.where << " describes " << call.name << " otherwise than trace_stats.h";
    }
  }
}

TEST(TraceStatsTest, TheShimSendsEveryNoticeOfTheRegistry) {
  std::set<std::string> sent;
  for (const testing::NoticeCall& call : testing::shim_notices().calls)
    sent.insert(std::string(kShimPrefix) + call.name);
  for (const TraceStat& stat : kTraceStats) {
    if (stat.source != StatSource::kShim) continue;
    EXPECT_TRUE(sent.contains(std::string(stat.name)))
        << "storage/trace_stats.h lists " << stat.name << ", which no source of the shim sends";
  }
}

}  // namespace
}  // namespace vramtrace::storage
