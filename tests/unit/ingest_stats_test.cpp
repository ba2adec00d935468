// The ingest's table of stats: one row per Stat, names unique, the registry's collector rows
// (storage/trace_stats.h, which trace_stats_test holds to docs/schema.md) and no other, and only
// what happened (or what is always written) reaches the trace.
#include "collector/ingest_stats.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "tracker_trace.h"

namespace vramtrace::collector {
namespace {

const storage::StatRecord* find_stat(const std::vector<storage::StatRecord>& stats,
                                     const std::string& name) {
  for (const storage::StatRecord& s : stats)
    if (s.name == name) return &s;
  return nullptr;
}

TEST(IngestStatsTest, EveryStatHasItsOwnRowAndName) {
  std::set<std::string_view> names;
  for (size_t i = 0; i < kStatInfo.size(); ++i) {
    const StatInfo& info = kStatInfo[i];
    EXPECT_EQ(static_cast<size_t>(info.stat), i);
    EXPECT_FALSE(info.name.empty()) << i;
    EXPECT_FALSE(info.description.empty()) << info.name;
    EXPECT_TRUE(names.insert(info.name).second) << "two stats named " << info.name;
  }
  EXPECT_EQ(names.size(), static_cast<size_t>(Stat::kCount));
  EXPECT_EQ(kStatInfo[static_cast<size_t>(Stat::kStacksByName)].name, "stacks_by_name");
  EXPECT_EQ(kStatInfo[static_cast<size_t>(Stat::kRingCorrupt)].severity,
            storage::Severity::kDataLoss);
}

TEST(IngestStatsTest, CountsEveryCollectorStatOfTheRegistry) {
  std::set<std::string_view> counted;
  for (const StatInfo& info : kStatInfo) {
    const storage::TraceStat* row = storage::find_trace_stat(info.name);
    ASSERT_NE(row, nullptr) << info.name;
    EXPECT_EQ(row->source, storage::StatSource::kCollector) << info.name;
    counted.insert(info.name);
  }
  for (const storage::TraceStat& row : storage::kTraceStats)
    EXPECT_EQ(counted.contains(row.name), row.source == storage::StatSource::kCollector)
        << row.name;
}

TEST(IngestStatsTest, WritesWhatHappenedAndWhatIsAlwaysWritten) {
  testing::TrackerTrace trace;
  IngestStats stats;
  stats.add(Stat::kModuleInvalid);
  stats.add(Stat::kModuleInvalid, 2);
  stats.set(Stat::kSymbolizerUnresolved, 7);
  EXPECT_EQ(stats.value(Stat::kModuleInvalid), 3);
  stats.write(trace.writer());
  const std::vector<storage::StatRecord> written = trace.finish().stats();

  const storage::StatRecord* invalid = find_stat(written, "module_invalid");
  ASSERT_NE(invalid, nullptr);
  EXPECT_EQ(invalid->value, 3);
  EXPECT_EQ(invalid->description, "module records with an empty range or path");
  EXPECT_EQ(find_stat(written, "ring_corrupt"), nullptr);  // never counted
  for (const StatInfo& info : kStatInfo) {
    if (info.written != StatWritten::kAlways) continue;
    const storage::StatRecord* always = find_stat(written, std::string(info.name));
    ASSERT_NE(always, nullptr) << info.name;
    EXPECT_EQ(always->value, info.stat == Stat::kSymbolizerUnresolved ? 7 : 0) << info.name;
  }
}

TEST(IngestStatsTest, NoticesAddUpByNameAndKeepTheirFirstDescription) {
  testing::TrackerTrace trace;
  IngestStats stats;
  stats.add_notice("shim_hook_failed", storage::Severity::kError, "a hook failed", 2);
  stats.add_notice("shim_hook_failed", storage::Severity::kInfo, "another text", 3);
  stats.write(trace.writer());
  const std::vector<storage::StatRecord> written = trace.finish().stats();
  const storage::StatRecord* notice = find_stat(written, "shim_hook_failed");
  ASSERT_NE(notice, nullptr);
  EXPECT_EQ(notice->value, 5);
  EXPECT_EQ(notice->severity, storage::Severity::kError);
  EXPECT_EQ(notice->description, "a hook failed");
}

}  // namespace
}  // namespace vramtrace::collector
