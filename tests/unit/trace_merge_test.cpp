// merge_traces(): the merge of node traces (synthetic_trace.h) is exactly their union, with
// shared modules, frames and callsites stored once; merges merge again to the same counts; a
// failed merge writes nothing.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <tuple>

#include "analysis/reports/leak_report.h"
#include "analysis/reports/summary.h"
#include "sql_query.h"
#include "storage/trace_merge.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::storage {
namespace {

using testing::kGiB;
using testing::kMiB;
using testing::NodeTraceSpec;
using testing::TempDir;

using testing::execute_sql;
using testing::query_one;

std::unique_ptr<TraceReader> open_or_fail(const std::filesystem::path& path) {
  OpenFailure failure;
  auto reader = TraceReader::open(path, &failure);
  EXPECT_NE(reader, nullptr) << failure.message;
  return reader;
}

// A leak group by what it means rather than by ids, which the merge renumbers: the kind and
// the stack's frames. Maps to (bytes, count).
using LeakKey = std::tuple<std::string, std::vector<std::string>>;
using LeakTotals = std::map<LeakKey, std::pair<std::uint64_t, std::uint64_t>>;

LeakTotals leak_totals(const std::filesystem::path& path, LeakTotals totals = {}) {
  const auto trace = open_or_fail(path);
  if (!trace) return totals;
  for (const analysis::LeakGroup& group : analysis::build_leak_report(*trace).groups) {
    std::vector<std::string> frames;
    for (const StackFrame& frame : group.stack) {
      frames.push_back(frame.function.value_or("??") + " in " + frame.module + "+" +
                       std::to_string(frame.rel_pc));
    }
    auto& [bytes, count] = totals[{group.kind_name, frames}];
    bytes += group.bytes;
    count += group.count;
  }
  return totals;
}

// Per kind name: (successful allocations, bytes allocated, live bytes, failed allocations).
using KindCounts =
    std::map<std::string, std::tuple<std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t>>;

KindCounts kind_counts(const std::filesystem::path& path, KindCounts counts = {}) {
  const auto trace = open_or_fail(path);
  if (!trace) return counts;
  for (const analysis::KindTotals& kind : analysis::build_summary(*trace).kinds) {
    auto& [allocations, bytes, live, failed] = counts[kind.name];
    allocations += kind.allocations;
    bytes += kind.bytes_allocated;
    live += kind.live_bytes;
    failed += kind.failed_allocations;
  }
  return counts;
}

// Each process as (host, rank, pid).
std::multiset<std::tuple<std::string, int, std::uint32_t>> processes_of(
    const std::filesystem::path& path) {
  std::multiset<std::tuple<std::string, int, std::uint32_t>> processes;
  const auto trace = open_or_fail(path);
  if (!trace) return processes;
  for (const ProcessRecord& process : trace->processes()) {
    processes.emplace(process.start.host, process.start.rank.value_or(-1), process.start.pid);
  }
  return processes;
}

std::string table_count(const std::filesystem::path& path, const std::string& table) {
  return query_one(path, "SELECT count(*) FROM " + table);
}

std::vector<std::string> files_in(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

class TraceMergeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(testing::write_node_trace(a_, node("node-a", 0, "b1", Severity::kInfo, 1)), "");
    ASSERT_EQ(testing::write_node_trace(b_, node("node-b", 2, "b2", Severity::kDataLoss, 2)), "");
    ASSERT_EQ(testing::write_node_trace(c_, node("node-c", 4, "b1", Severity::kInfo, 4)), "");
  }

  static NodeTraceSpec node(std::string host, int first_rank, std::string build_id,
                            Severity overflow_severity, std::int64_t overflow_count) {
    NodeTraceSpec spec;
    spec.host = std::move(host);
    spec.first_rank = first_rank;
    spec.world_size = 6;
    spec.libtrain_build_id = std::move(build_id);
    spec.overflow_severity = overflow_severity;
    spec.overflow_count = overflow_count;
    return spec;
  }

  MergeResult merge(const std::vector<std::filesystem::path>& inputs,
                    const std::filesystem::path& output, bool replace = false) {
    MergeOptions options;
    options.replace_existing = replace;
    return merge_traces(inputs, output, options);
  }

  TempDir dir_;
  std::filesystem::path a_ = dir_ / "a.db", b_ = dir_ / "b.db", c_ = dir_ / "c.db";
};

TEST_F(TraceMergeTest, TheMergeHoldsEveryProcessAndAllocationOfBoth) {
  const auto merged = dir_ / "ab.db";
  const MergeResult result = merge({a_, b_}, merged);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_TRUE(result.complete);
  EXPECT_TRUE(result.warnings.empty());
  EXPECT_EQ(result.processes, 4u);

  auto expected_processes = processes_of(a_);
  expected_processes.merge(processes_of(b_));
  EXPECT_EQ(processes_of(merged), expected_processes);
  EXPECT_EQ(kind_counts(merged), kind_counts(b_, kind_counts(a_)));
  EXPECT_EQ(table_count(merged, "allocation"), "26");
  EXPECT_EQ(table_count(merged, "thread"), "4");
  EXPECT_EQ(table_count(merged, "mapping"), "8");

  // Rows of the first input keep their ids; the second's follow them, in their order.
  EXPECT_EQ(query_one(merged, "SELECT group_concat(upid || ':' || host, ',') FROM process"),
            "1:node-a,2:node-a,3:node-b,4:node-b");
  // Every reference still leads to a row of the same process.
  EXPECT_EQ(query_one(merged,
                      "SELECT count(*) FROM allocation JOIN thread ON utid = alloc_utid "
                      "WHERE thread.upid != allocation.upid"),
            "0");
  EXPECT_EQ(query_one(merged,
                      "SELECT count(*) FROM allocation WHERE alloc_callsite_id NOT IN "
                      "(SELECT id FROM callsite)"),
            "0");
  EXPECT_EQ(query_one(merged,
                      "SELECT count(*) FROM mapping WHERE module_id NOT IN "
                      "(SELECT id FROM module)"),
            "0");
}

TEST_F(TraceMergeTest, TheMergesLeakReportIsTheUnionOfTheInputs) {
  const auto merged = dir_ / "ab.db";
  ASSERT_TRUE(merge({a_, b_}, merged).ok);
  const LeakTotals expected = leak_totals(b_, leak_totals(a_));
  EXPECT_EQ(leak_totals(merged), expected);
  // The union has substance: the shared device-leak stack (libcuda, then python) got both
  // odd ranks' leaks, and each node's own libtrain build leaks under its own stack.
  const auto trace = open_or_fail(merged);
  ASSERT_NE(trace, nullptr);
  analysis::LeakReportOptions merge_ranks;
  merge_ranks.merge_ranks = true;
  const analysis::LeakReport report = analysis::build_leak_report(*trace, merge_ranks);
  EXPECT_EQ(report.total_bytes, 2 * (2 * kGiB + 256 * kMiB + 2 * kMiB));
  EXPECT_EQ(report.groups.size(), 7u);  // 3 VMM kinds x 2 libtrain builds, 1 shared device
  // By default the ranks stay apart: each leaking rank's groups are its own.
  const analysis::LeakReport by_rank = analysis::build_leak_report(*trace);
  EXPECT_EQ(by_rank.total_bytes, report.total_bytes);
  EXPECT_EQ(by_rank.groups.size(), 14u);  // each of the 7 split between the 2 ranks leaking it
  for (const analysis::LeakGroup& group : by_rank.groups)
    EXPECT_TRUE(group.rank) << group.kind_name;
  const analysis::LeakGroup& device = report.groups.back();
  EXPECT_EQ(device.kind_name, "device");
  EXPECT_EQ(device.count, 2u);
  EXPECT_EQ(device.bytes, 4 * kMiB);
}

// What the CUPTI backend adds (process.backend, allocation.correlation_id, memory_activity)
// comes through the merge, renumbered with the rows it refers to.
TEST_F(TraceMergeTest, CuptisColumnsAndActivityRecordsAreKept) {
  ASSERT_EQ(execute_sql(b_, R"sql(
      UPDATE process SET backend = 'cupti';
      INSERT INTO allocation_detail(id, correlation_id) SELECT id, 1000 + id
      FROM allocation_compact WHERE true
      ON CONFLICT(id) DO UPDATE SET correlation_id = excluded.correlation_id;
      INSERT INTO memory_activity(id, upid, operation, kind, correlation_id, address, size, device,
                                  stream, cupti_ns, allocation_id)
      SELECT id, upid, 'allocation', kind, 1000 + id, address, size, device, 0, 7, id
      FROM allocation WHERE result = 0;)sql"),
            "");
  const auto merged = dir_ / "merged.db";
  const MergeResult result = merge({a_, b_}, merged);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(query_one(merged,
                      "SELECT group_concat(DISTINCT p.host || '=' || p.backend) FROM "
                      "process p"),
            "node-a=preload,node-b=cupti");
  EXPECT_EQ(table_count(merged, "memory_activity"),
            query_one(b_, "SELECT count(*) FROM allocation WHERE result = 0"));
  // Every record still names its own allocation, by correlation id, in its own process.
  EXPECT_EQ(query_one(merged,
                      "SELECT count(*) FROM memory_activity m JOIN allocation a ON "
                      "a.id = m.allocation_id WHERE a.correlation_id = m.correlation_id "
                      "AND a.upid = m.upid AND a.address = m.address"),
            table_count(merged, "memory_activity"));
  EXPECT_EQ(query_one(merged, "SELECT count(*) FROM allocation WHERE correlation_id IS NOT NULL"),
            table_count(b_, "allocation"));
}

// Each failure keeps the device's memory after it, on its own (renumbered) allocation (rows put
// on some allocations of c, which has no failure of its own); an input
// written before the table was (here: b, without it) merges as it is.
TEST_F(TraceMergeTest, FailuresKeepTheDevicesMemory) {
  ASSERT_EQ(execute_sql(c_, R"sql(
      INSERT INTO failure_device_memory(id, device_free, device_total)
      SELECT id, 1000 + id, 80000 FROM allocation_compact WHERE id % 7 = 0;)sql"),
            "");
  ASSERT_EQ(execute_sql(b_, "DROP TABLE failure_device_memory"), "");
  ASSERT_NE(table_count(c_, "failure_device_memory"), "0");
  const auto merged = dir_ / "merged.db";
  const MergeResult result = merge({a_, b_, c_}, merged);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_EQ(table_count(merged, "failure_device_memory"), table_count(c_, "failure_device_memory"));
  EXPECT_EQ(query_one(merged,
                      "SELECT group_concat(DISTINCT p.host) FROM failure_device_memory m JOIN "
                      "allocation a ON a.id = m.id JOIN process p ON p.upid = a.upid WHERE "
                      "m.device_total = 80000"),
            "node-c");
  const auto reader = open_or_fail(merged);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(std::to_string(reader->failure_device_memory().size()),
            table_count(c_, "failure_device_memory"));
}

TEST_F(TraceMergeTest, SharedModulesFramesAndCallsitesAreStoredOnce) {
  const auto merged = dir_ / "ab.db";
  ASSERT_TRUE(merge({a_, b_}, merged).ok);
  // python3 and libcuda are shared; libtrain.so differs by build id, so it is two modules, and
  // its frame and callsite are two too.
  EXPECT_EQ(table_count(merged, "module"), "4");
  EXPECT_EQ(table_count(merged, "frame"), "5");
  EXPECT_EQ(table_count(merged, "callsite"), "5");
  EXPECT_EQ(query_one(merged,
                      "SELECT group_concat(ifnull(build_id, '-'), ',') FROM "
                      "(SELECT build_id FROM module WHERE path = '/usr/lib/libtrain.so' "
                      "ORDER BY build_id)"),
            "b1,b2");

  // Same build of every module: everything is shared.
  const auto same_build = dir_ / "ac.db";
  ASSERT_TRUE(merge({a_, c_}, same_build).ok);
  EXPECT_EQ(table_count(same_build, "module"), "3");
  EXPECT_EQ(table_count(same_build, "frame"), "4");
  EXPECT_EQ(table_count(same_build, "callsite"), "4");
  EXPECT_EQ(leak_totals(same_build), leak_totals(c_, leak_totals(a_)));
}

TEST_F(TraceMergeTest, MarkersKeepTheirNestingAndTheirEnds) {
  const auto merged = dir_ / "ab.db";
  ASSERT_TRUE(merge({a_, b_}, merged).ok);
  const auto trace = open_or_fail(merged);
  ASSERT_NE(trace, nullptr);
  const auto markers = trace->markers();
  ASSERT_EQ(markers.size(), 16u);
  std::map<std::int64_t, const MarkerRecord*> by_id;
  for (const MarkerRecord& marker : markers) by_id[marker.start.id] = &marker;
  int nested = 0, unended = 0;
  for (const MarkerRecord& marker : markers) {
    if (marker.start.name == "data_load") {
      EXPECT_FALSE(marker.end.has_value());
      EXPECT_EQ(marker.start.domain, "train");
      ++unended;
    }
    if (!marker.start.parent_id) continue;
    ++nested;
    const MarkerRecord* parent = by_id.at(*marker.start.parent_id);
    EXPECT_EQ(parent->start.name, "epoch 0");
    EXPECT_EQ(parent->start.upid, marker.start.upid);
    EXPECT_EQ(marker.start.name, "forward");
    EXPECT_EQ(marker.start.depth, 1);
  }
  EXPECT_EQ(nested, 4);
  EXPECT_EQ(unended, 4);
  EXPECT_EQ(query_one(merged,
                      "SELECT count(*) FROM marker JOIN thread ON thread.utid = marker.utid "
                      "WHERE thread.upid != marker.upid"),
            "0");
}

TEST_F(TraceMergeTest, StatsAddUpWithTheWorstSeverityAndMetaSaysWhereFrom) {
  const auto merged = dir_ / "ab.db";
  ASSERT_TRUE(merge({a_, b_}, merged).ok);
  const auto trace = open_or_fail(merged);
  ASSERT_NE(trace, nullptr);
  std::map<std::string, std::pair<Severity, std::int64_t>> stats;
  for (const StatRecord& stat : trace->stats()) stats[stat.name] = {stat.severity, stat.value};
  EXPECT_EQ(stats["ring_overflow"], std::make_pair(Severity::kDataLoss, std::int64_t{3}));
  EXPECT_EQ(stats["symbolizer_unresolved"], std::make_pair(Severity::kInfo, std::int64_t{4}));

  EXPECT_TRUE(trace->complete());
  EXPECT_EQ(trace->meta_value("merged_from"), "[\"" + a_.string() + "\",\"" + b_.string() + "\"]");
  EXPECT_EQ(trace->recorded_command(),
            (std::vector<std::string>{"torchrun", "--nproc-per-node=2", "train.py"}));
  EXPECT_FALSE(trace->meta_value("host").has_value()) << "the inputs' hosts differ";
  EXPECT_EQ(trace->meta_value("vramtrace_version"), VRAMTRACE_VERSION);
  EXPECT_EQ(trace->kind_name(7), "vmm_mapping");
  // A standalone file with the schema's indexes and none of the merge's own.
  EXPECT_EQ(query_one(merged, "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(query_one(merged, "SELECT count(*) FROM sqlite_master WHERE name LIKE 'merge_%'"), "0");
  EXPECT_EQ(
      query_one(merged, "SELECT count(*) FROM sqlite_master WHERE name = 'marker_by_process'"),
      "1");
}

TEST_F(TraceMergeTest, AMergedTraceMergesAgainToTheSameCounts) {
  const auto ab = dir_ / "ab.db", bc = dir_ / "bc.db";
  const auto ab_c = dir_ / "ab_c.db", a_bc = dir_ / "a_bc.db", abc = dir_ / "abc.db";
  ASSERT_TRUE(merge({a_, b_}, ab).ok);
  ASSERT_TRUE(merge({b_, c_}, bc).ok);
  ASSERT_TRUE(merge({ab, c_}, ab_c).ok);
  ASSERT_TRUE(merge({a_, bc}, a_bc).ok);
  ASSERT_TRUE(merge({a_, b_, c_}, abc).ok);

  const KindCounts kinds = kind_counts(abc);
  const LeakTotals leaks = leak_totals(abc);
  EXPECT_EQ(kinds, kind_counts(c_, kind_counts(b_, kind_counts(a_))));
  for (const auto& path : {ab_c, a_bc}) {
    SCOPED_TRACE(path.filename().string());
    EXPECT_EQ(processes_of(path), processes_of(abc));
    EXPECT_EQ(kind_counts(path), kinds);
    EXPECT_EQ(leak_totals(path), leaks);
    for (const std::string table :
         {"allocation", "marker", "thread", "mapping", "module", "frame", "callsite", "stats"}) {
      EXPECT_EQ(table_count(path, table), table_count(abc, table)) << table;
    }
    EXPECT_EQ(query_one(path, "SELECT value FROM stats WHERE name = 'ring_overflow'"), "7");
  }
  EXPECT_EQ(table_count(abc, "module"), "4");
}

TEST_F(TraceMergeTest, AnIncompleteInputMakesAnIncompleteMergeWithAWarning) {
  const auto unfinished = dir_ / "unfinished.db";
  ASSERT_EQ(testing::write_node_trace(unfinished, node("node-d", 6, "b1", Severity::kInfo, 0),
                                      /*finish=*/false),
            "");
  const auto merged = dir_ / "merged.db";
  const MergeResult result = merge({a_, unfinished}, merged);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_FALSE(result.complete);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find(unfinished.string()), std::string::npos);
  EXPECT_NE(result.warnings[0].find("incomplete"), std::string::npos);
  const auto trace = open_or_fail(merged);
  ASSERT_NE(trace, nullptr);
  EXPECT_FALSE(trace->complete());
  EXPECT_EQ(trace->processes().size(), 4u);
}

TEST_F(TraceMergeTest, ATraceStillBeingRecordedIsMergedAsFarAsCommitted) {
  const auto live = dir_ / "live.db";
  std::string error;
  auto writer = TraceWriter::create(live, &error);
  ASSERT_NE(writer, nullptr) << error;
  ProcessRow process;
  process.upid = 1;
  process.pid = 77;
  process.host = "node-live";
  process.unwinder = "libunwind";
  writer->add_process(process);
  writer->flush();
  ASSERT_TRUE(std::filesystem::exists(live.string() + "-wal"));
  process.upid = 2;
  writer->add_process(process);  // not committed: not merged

  const auto merged = dir_ / "merged.db";
  const MergeResult result = merge({a_, live}, merged);
  ASSERT_TRUE(result.ok) << result.error;
  EXPECT_FALSE(result.complete);
  EXPECT_EQ(result.processes, 3u);
  EXPECT_EQ(query_one(merged, "SELECT count(*) FROM process WHERE host = 'node-live'"), "1");
  writer->flush();
  EXPECT_TRUE(writer->ok()) << "the merge must not get in the recording's way";
}

TEST_F(TraceMergeTest, ABadInputFailsTheMergeAndWritesNothing) {
  const auto not_a_trace = dir_ / "notes.txt";
  std::ofstream(not_a_trace) << "not a trace\n";
  const auto before = files_in(dir_.path());
  const auto merged = dir_ / "merged.db";
  for (const auto& bad : {not_a_trace, dir_ / "absent.db"}) {
    const MergeResult result = merge({a_, bad, b_}, merged);
    EXPECT_FALSE(result.ok);
    EXPECT_NE(result.error.find(bad.string()), std::string::npos) << result.error;
    EXPECT_EQ(result.error.find('\n'), std::string::npos) << result.error;
    EXPECT_EQ(files_in(dir_.path()), before) << "no output, no temporary file";
  }
  const MergeResult twice = merge({a_, b_, a_}, merged);
  EXPECT_FALSE(twice.ok);
  EXPECT_NE(twice.error.find("the same trace"), std::string::npos) << twice.error;
  EXPECT_FALSE(merge({}, merged).ok);
  EXPECT_EQ(files_in(dir_.path()), before);
}

TEST_F(TraceMergeTest, AnInputDamagedPastWhatOpeningReadsIsBlamedByName) {
  // Scribble over the allocation table's page: the reader opens the trace (it reads the schema
  // and meta only), and the merge meets the damage while copying.
  const int page = std::stoi(query_one(b_,
                                       "SELECT rootpage FROM sqlite_master WHERE name = "
                                       "'allocation_compact'"));
  const int page_size = std::stoi(query_one(b_, "PRAGMA page_size"));
  {
    std::fstream file(b_, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(page - 1) * page_size);
    const std::string scribble(static_cast<std::size_t>(page_size), '\x5a');
    file.write(scribble.data(), static_cast<std::streamsize>(scribble.size()));
  }
  ASSERT_NE(open_or_fail(b_), nullptr);
  const auto before = files_in(dir_.path());
  const MergeResult result = merge({a_, b_}, dir_ / "merged.db");
  EXPECT_FALSE(result.ok);
  EXPECT_EQ(result.error.rfind(b_.string() + ": the trace is truncated or corrupt", 0), 0u)
      << result.error;
  EXPECT_EQ(files_in(dir_.path()), before);
}

TEST_F(TraceMergeTest, AnExistingOutputIsReplacedOnlyWhenAskedTo) {
  const auto merged = dir_ / "merged.db";
  std::ofstream(merged) << "keep me";
  const MergeResult refused = merge({a_, b_}, merged);
  EXPECT_FALSE(refused.ok);
  EXPECT_NE(refused.error.find("already exists"), std::string::npos) << refused.error;
  EXPECT_NE(refused.error.find("--force"), std::string::npos) << refused.error;
  EXPECT_EQ(std::filesystem::file_size(merged), 7u);

  std::ofstream(merged.string() + "-wal") << "a stale write-ahead log";
  const MergeResult replaced = merge({a_, b_}, merged, /*replace=*/true);
  ASSERT_TRUE(replaced.ok) << replaced.error;
  EXPECT_FALSE(std::filesystem::exists(merged.string() + "-wal"));
  EXPECT_EQ(processes_of(merged).size(), 4u);
}

TEST_F(TraceMergeTest, AnOutputThatCannotBeWrittenIsOneLine) {
  const auto merged = dir_ / "no-such-directory" / "merged.db";
  const MergeResult result = merge({a_, b_}, merged);
  EXPECT_FALSE(result.ok);
  EXPECT_NE(result.error.find(merged.string()), std::string::npos) << result.error;
  EXPECT_NE(result.error.find("No such file or directory"), std::string::npos) << result.error;
}

TEST_F(TraceMergeTest, ProgressIsReportedPerInput) {
  std::vector<std::pair<std::size_t, std::size_t>> calls;
  MergeOptions options;
  options.progress = [&](std::size_t merged, std::size_t total) {
    calls.emplace_back(merged, total);
  };
  ASSERT_TRUE(merge_traces({a_, b_, c_}, dir_ / "abc.db", options).ok);
  EXPECT_EQ(calls, (std::vector<std::pair<std::size_t, std::size_t>>{{1, 3}, {2, 3}, {3, 3}}));
}

}  // namespace
}  // namespace vramtrace::storage
