// End-to-end: real programs recorded by `vramtrace run` on the simulated GPU, then read back
// with `vramtrace leaks` and with plain SQL.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "process_runner.h"
#include "scratch_dir_test.h"
#include "trace_query.h"

namespace vramtrace::test {
namespace {

namespace fs = std::filesystem;

class RecordTest : public ScratchDirTest {
 protected:
  ProcessResult record(const std::string& output, std::vector<std::string> command,
                       std::vector<std::string> extra_env = {}) const {
    ProcessOptions options;
    options.argv = {VRAMTRACE_BIN, "run", "-o", output, "--"};
    options.argv.insert(options.argv.end(), command.begin(), command.end());
    options.extra_env = std::move(extra_env);
    return run_process(options);
  }
};

struct PlantedLeak {
  std::string kind;
  int64_t count;
  int64_t bytes;
  int line;
};

// "0x7f00" as printed by %p -> "32512" as SQLite prints the integer.
std::string as_decimal(const std::string& hex) {
  return std::to_string(std::stoull(hex, nullptr, 16));
}

// The LEAK(kind, count, bytes) markers of the sample's source, with their line numbers.
std::vector<PlantedLeak> planted_leaks() {
  std::ifstream source(LEAKY_SOURCE);
  std::regex marker(R"(LEAK\((\w+), (\d+), (\d+)\))");
  std::vector<PlantedLeak> leaks;
  std::string text;
  for (int line = 1; std::getline(source, text); ++line) {
    std::smatch m;
    if (std::regex_search(text, m, marker))
      leaks.push_back({m[1], std::stoll(m[2]), std::stoll(m[3]), line});
  }
  return leaks;
}

TEST_F(RecordTest, LeakReportListsExactlyThePlantedLeaksWithTheirLines) {
  const std::vector<PlantedLeak> planted = planted_leaks();
  ASSERT_EQ(planted.size(), 5u) << "the sample's LEAK markers changed; update this test";

  ProcessResult run = record(trace(), {LEAKY_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;

  ProcessOptions leaks;
  leaks.argv = {VRAMTRACE_BIN, "leaks", trace(), "--format", "json"};
  ProcessResult report = run_process(leaks);
  ASSERT_EQ(report.exit_code(), 0) << report.err;
  nlohmann::json json = nlohmann::json::parse(report.out);

  int64_t total_bytes = 0, total_count = 0;
  for (const auto& p : planted) {
    total_bytes += p.bytes;
    total_count += p.count;
  }
  EXPECT_EQ(json["trace"], trace());
  EXPECT_EQ(json["total_bytes"], total_bytes);
  EXPECT_EQ(json["total_count"], total_count);
  ASSERT_EQ(json["leaks"].size(), planted.size()) << json.dump(2);

  std::set<int> matched_lines;
  for (const auto& leak : json["leaks"]) {
    // The innermost frame is the sample's line that called the allocation function: the
    // shim's own frames never appear.
    const auto& top = leak["stack"].at(0);
    ASSERT_TRUE(top["file"].is_string()) << leak.dump(2);
    EXPECT_EQ(fs::path(top["file"].get<std::string>()).filename(), "leaky.cpp") << leak.dump(2);
    const int line = top["line"].get<int>();
    auto it = std::find_if(planted.begin(), planted.end(),
                           [&](const PlantedLeak& p) { return p.line == line; });
    ASSERT_NE(it, planted.end()) << "a leak at an unplanted line: " << leak.dump(2);
    EXPECT_EQ(leak["kind"], it->kind) << "line " << line;
    EXPECT_EQ(leak["count"], it->count) << "line " << line;
    EXPECT_EQ(leak["bytes"], it->bytes) << "line " << line;
    matched_lines.insert(line);
    for (const auto& frame : leak["stack"]) {
      if (frame["module"].is_string())
        EXPECT_EQ(frame["module"].get<std::string>().find("libvramtrace_preload"),
                  std::string::npos)
            << "a shim frame in " << leak.dump(2);
    }
  }
  EXPECT_EQ(matched_lines.size(), planted.size());
  // Every leak's function is the sample's; the stacks are bottomed by main.
  for (const auto& leak : json["leaks"]) {
    bool saw_main = false;
    for (const auto& frame : leak["stack"])
      saw_main |= frame["function"].is_string() && frame["function"] == "main";
    EXPECT_TRUE(saw_main || leak["kind"] == "managed")
        << leak.dump(2);  // workers start in std::thread
  }
}

// run's last lines say what a person wants next: the process that used the GPU, its peak, what
// it leaked with the line of the largest leak, its failures, and the commands that show more.
TEST_F(RecordTest, TheRunsLastLinesSayWhatItRecorded) {
  const std::vector<PlantedLeak> planted = planted_leaks();
  ASSERT_FALSE(planted.empty());
  std::int64_t bytes = 0, count = 0;
  for (const PlantedLeak& p : planted) {
    bytes += p.bytes;
    count += p.count;
  }
  const PlantedLeak largest = *std::max_element(
      planted.begin(), planted.end(),
      [](const PlantedLeak& a, const PlantedLeak& b) { return a.bytes < b.bytes; });
  ProcessResult run = record(trace(), {LEAKY_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  std::vector<std::string> lines;
  std::istringstream err(run.err);
  for (std::string line; std::getline(err, line);) {
    if (line.starts_with("vramtrace:")) lines.push_back(line);
  }
  ASSERT_EQ(lines.size(), 3u) << run.err;
  EXPECT_TRUE(std::regex_match(lines[0],
                               std::regex(R"(vramtrace: recorded \d+ allocations in )" + trace())))
      << lines[0];
  const auto mib = [](std::int64_t b) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(b) / (1 << 20));
    return std::string(text);
  };
  const std::string process = std::regex_replace(lines[1], std::regex(R"(pid \d+)"), "pid N");
  EXPECT_EQ(process, "vramtrace:   pid N leaky: peak 8.0 MiB on device 0; leaked " + mib(bytes) +
                         " in " + std::to_string(count) + " allocations at its end, most (" +
                         mib(largest.bytes) + ") from leaky.cpp:" + std::to_string(largest.line) +
                         " in fill_cache; 1 out-of-memory failure");
  EXPECT_EQ(lines[2], "vramtrace: more: vramtrace leaks " + trace() + ", vramtrace oom " + trace() +
                          ", vramtrace summary " + trace());

  // Without the index, no report is read: one line says so.
  ProcessOptions no_index;
  no_index.argv = {VRAMTRACE_BIN,         "run", "--no-index", "-o",
                   trace() + ".no-index", "--",  LEAKY_BIN};
  ProcessResult unindexed = run_process(no_index);
  ASSERT_EQ(unindexed.exit_code(), 0) << unindexed.err;
  EXPECT_NE(unindexed.err.find("(--no-index: the first report indexes it)"), std::string::npos)
      << unindexed.err;
  EXPECT_EQ(unindexed.err.find("vramtrace: more:"), std::string::npos) << unindexed.err;
}

TEST_F(RecordTest, FailedAllocationIsInTheTraceWithItsErrorAndIsNoLeak) {
  ProcessResult run = record(trace(), {LEAKY_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  auto failed = q.rows(
      "SELECT a.result, a.address, a.size, a.free_seq FROM allocation a "
      "JOIN api ON api.id = a.api WHERE a.result != 0");
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0][0], "2");  // cudaErrorMemoryAllocation
  EXPECT_EQ(failed[0][1], "0");
  EXPECT_EQ(failed[0][2], std::to_string(int64_t{1} << 50));
  EXPECT_EQ(failed[0][3], "NULL");
  // The device's memory after it, as the driver gave it: what torch's message starts with.
  const auto memory = q.rows(
      "SELECT m.device_free, m.device_total FROM failure_device_memory m "
      "JOIN allocation a ON a.id = m.id WHERE a.result = 2");
  ASSERT_EQ(memory.size(), 1u);
  EXPECT_GT(std::stoull(memory[0][1]), 0u);
  EXPECT_LE(std::stoull(memory[0][0]), std::stoull(memory[0][1]));
  // The program saw the same error.
  EXPECT_NE(run.out.find("returned 2 (cudaErrorMemoryAllocation)"), std::string::npos) << run.out;
}

// `run` leaves its trace indexed by time (storage/time_index.h), so that the first report over
// time, and the viewer's first picture, need not build the index; --no-index leaves that to
// the first report, which builds the same.
TEST_F(RecordTest, TheTraceIsIndexedByTimeUnlessToldNotTo) {
  const std::string unindexed = trace() + ".unindexed.db";
  ASSERT_EQ(record(trace(), {LEAKY_BIN}).exit_code(), 0);
  ProcessOptions options;
  options.argv = {VRAMTRACE_BIN, "run", "--no-index", "-o", unindexed, "--", LEAKY_BIN};
  ASSERT_EQ(run_process(options).exit_code(), 0);
  const std::string peak_rows =
      "SELECT upid, device, peak_group, bytes, seq FROM live_bytes_peak ORDER BY 1, 2, 3";
  const std::string has_index =
      "SELECT count(*) FROM sqlite_master WHERE name IN ('live_span', 'live_bytes_peak')";
  // The allocation table's own indexes come with the time index (storage/schema.h); the small
  // tables' are built when the recording ends.
  const std::string allocation_indexes =
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
      "('allocation_by_alloc_seq', 'allocation_by_free_seq', 'allocation_failed', "
      "'allocation_by_segment')";
  const std::string small_indexes =
      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN "
      "('callsite_by_parent', 'bad_free_by_process', 'marker_by_process')";
  EXPECT_EQ(TraceQuery(trace()).integer(has_index), 2);
  EXPECT_EQ(TraceQuery(trace()).integer(allocation_indexes), 4);
  EXPECT_EQ(TraceQuery(unindexed).integer(has_index), 0);
  EXPECT_EQ(TraceQuery(unindexed).integer(allocation_indexes), 0);
  EXPECT_EQ(TraceQuery(unindexed).integer(small_indexes), 3);
  // Reports read a trace without them all the same.
  ProcessOptions leaks;
  leaks.argv = {VRAMTRACE_BIN, "leaks", "--format", "json", unindexed};
  const ProcessResult unindexed_leaks = run_process(leaks);
  ASSERT_EQ(unindexed_leaks.exit_code(), 0) << unindexed_leaks.err;
  leaks.argv.back() = trace();
  ProcessResult indexed_leaks = run_process(leaks);
  ASSERT_EQ(indexed_leaks.exit_code(), 0) << indexed_leaks.err;
  EXPECT_EQ(nlohmann::json::parse(unindexed_leaks.out).at("leaks"),
            nlohmann::json::parse(indexed_leaks.out).at("leaks"));
  ProcessOptions report;
  report.argv = {VRAMTRACE_BIN, "peak", unindexed};
  ASSERT_EQ(run_process(report).exit_code(), 0);
  EXPECT_EQ(TraceQuery(unindexed).integer(has_index), 2);
  EXPECT_EQ(TraceQuery(unindexed).integer(allocation_indexes), 4);
  const auto indexed_peaks = TraceQuery(trace()).rows(peak_rows);
  EXPECT_FALSE(indexed_peaks.empty());
  EXPECT_EQ(indexed_peaks, TraceQuery(unindexed).rows(peak_rows));
  std::filesystem::remove(unindexed);
}

// Frees are recorded without stacks unless --free-stacks asks (VRAMTRACE_FREE_STACKS): a
// stack per free doubles the unwinding. A free that fails has its stack either way.
TEST_F(RecordTest, FreesHaveStacksOnlyWhenAskedAndFailedFreesAlways) {
  const std::string with_free_stacks = trace() + ".free-stacks.db";
  ASSERT_EQ(record(trace(), {CUDART_CODES_SIM_BIN}).exit_code(), 0);
  ProcessOptions options;
  options.argv = {VRAMTRACE_BIN,    "run", "--free-stacks",     "-o",
                  with_free_stacks, "--",  CUDART_CODES_SIM_BIN};
  ASSERT_EQ(run_process(options).exit_code(), 0);

  const std::string freed =
      "SELECT count(*), count(free_callsite_id), count(alloc_callsite_id) FROM allocation "
      "WHERE free_seq IS NOT NULL";
  // cudaFree(0x1234) fails: the bad free's stack reaches main at its line.
  const std::string bad_free_main =
      "WITH RECURSIVE chain(id, parent_id, frame_id) AS ("
      "  SELECT c.id, c.parent_id, c.frame_id FROM callsite c"
      "  JOIN bad_free b ON b.callsite_id = c.id WHERE b.address = 4660"
      "  UNION ALL SELECT c.id, c.parent_id, c.frame_id FROM callsite c"
      "  JOIN chain ON c.id = chain.parent_id) "
      "SELECT f.function || ':' || f.line || ' ' || b.reason || ' ' || (b.result != 0) "
      "FROM chain JOIN frame f ON f.id = chain.frame_id, bad_free b "
      "WHERE b.address = 4660 AND f.function = 'main'";
  for (const std::string& path : {trace(), with_free_stacks}) {
    SCOPED_TRACE(path);
    TraceQuery q(path);
    const auto counts = q.rows(freed);
    ASSERT_EQ(counts.size(), 1u);
    // device, managed, two pinned, pitched, 3D, async (the 1 PiB request failed)
    EXPECT_EQ(counts[0][0], "7");
    EXPECT_EQ(counts[0][2], "7");
    EXPECT_EQ(counts[0][1], path == trace() ? "0" : "7");
    EXPECT_EQ(q.rows(bad_free_main),
              (std::vector<std::vector<std::string>>{{"main:26 unknown_address 1"}}));
  }
  std::filesystem::remove(with_free_stacks);
}

// The shim walks stacks by frame rules and reuses each thread's last walk; libunwind walks
// every one with VRAMTRACE_UNWINDER=libunwind. Every allocation's stack, frame by frame, is the
// same either way: single-threaded, five threads, and one deeper than the wire's limit.
TEST_F(RecordTest, StacksAreTheSameWhicheverUnwinderWalksThem) {
  const std::string by_libunwind = trace() + ".libunwind.db";
  // Each allocation's size and its stack (function and address of each frame), sorted: the
  // threads' allocations interleave differently from run to run.
  const std::string stacks =
      "WITH RECURSIVE chain(alloc_id, callsite_id, depth, text) AS ("
      "  SELECT id, alloc_callsite_id, 0, '' FROM allocation"
      "  UNION ALL SELECT chain.alloc_id, c.parent_id, chain.depth + 1,"
      "    chain.text || ' < ' || coalesce(f.function, '?') || '@' || f.rel_pc"
      "  FROM chain JOIN callsite c ON c.id = chain.callsite_id JOIN frame f ON f.id = c.frame_id) "
      "SELECT a.size || (SELECT text FROM chain"
      "  WHERE chain.alloc_id = a.id ORDER BY depth DESC LIMIT 1) "
      "FROM allocation a ORDER BY 1";
  for (const std::vector<std::string>& command : std::vector<std::vector<std::string>>{
           {CUDART_CODES_SIM_BIN}, {LEAKY_BIN}, {DEEP_STACK_BIN, "400"}}) {
    SCOPED_TRACE(command[0]);
    ASSERT_EQ(record(trace(), command).exit_code(), 0);
    ASSERT_EQ(record(by_libunwind, command, {"VRAMTRACE_UNWINDER=libunwind"}).exit_code(), 0);
    TraceQuery walked(trace()), unwound(by_libunwind);
    EXPECT_EQ(walked.rows("SELECT DISTINCT unwinder FROM process"),
              (std::vector<std::vector<std::string>>{{"frame-rules+libunwind"}}));
    EXPECT_EQ(unwound.rows("SELECT DISTINCT unwinder FROM process"),
              (std::vector<std::vector<std::string>>{{"libunwind"}}));
    const auto walked_stacks = walked.rows(stacks);
    const auto unwound_stacks = unwound.rows(stacks);
    ASSERT_FALSE(walked_stacks.empty());
    EXPECT_EQ(walked_stacks.size(), unwound_stacks.size());
    // The first stack that differs, alone: whole lists of deep stacks do not read in a log.
    for (size_t i = 0; i < std::min(walked_stacks.size(), unwound_stacks.size()); ++i) {
      if (walked_stacks[i] == unwound_stacks[i]) continue;
      ADD_FAILURE() << "allocation " << i << " of " << walked_stacks.size()
                    << "\n walked:    " << walked_stacks[i][0]
                    << "\n libunwind: " << unwound_stacks[i][0];
      break;
    }
    // The stacks reach main: they are whole, not cut where the walk gave up.
    EXPECT_EQ(walked.integer("SELECT count(*) FROM allocation WHERE alloc_callsite_id IS NULL"), 0);
    std::filesystem::remove(trace());
    std::filesystem::remove(by_libunwind);
  }
}

// Stack names (preload/stack_names.h): two threads allocate from 4096 call paths each, twice,
// in shuffled orders, so that each thread's table of names fills and names are given to other
// stacks as slots are taken. Every allocation's stack must still be its own path (read from
// its frames, checked against its size), and the same as with names turned off.
TEST_F(RecordTest, StacksSentByNameAreTheStacksOfTheirEvents) {
  const std::string unnamed = trace() + ".unnamed.db";
  ASSERT_EQ(record(trace(), {MANY_CALL_PATHS_BIN, "2", "2", "12"}).exit_code(), 0);
  ASSERT_EQ(record(unnamed, {MANY_CALL_PATHS_BIN, "2", "2", "12"}, {"VRAMTRACE_STACK_NAMES=0"})
                .exit_code(),
            0);
  // Per allocation: its size less one, and the path its frames took, innermost level first.
  const std::string paths =
      "WITH RECURSIVE chain(leaf, callsite_id, path) AS ("
      "  SELECT DISTINCT alloc_callsite_id, alloc_callsite_id, '' FROM allocation"
      "  UNION ALL SELECT chain.leaf, c.parent_id, chain.path || CASE f.function"
      "    WHEN '(anonymous namespace)::go_right(int, int)' THEN '1'"
      "    WHEN '(anonymous namespace)::go_left(int, int)' THEN '0' ELSE '' END"
      "  FROM chain JOIN callsite c ON c.id = chain.callsite_id JOIN frame f ON f.id = c.frame_id),"
      " whole AS (SELECT leaf, path FROM chain WHERE callsite_id IS NULL) "
      "SELECT a.requested_size - 1, coalesce(w.path, 'no stack') FROM allocation a"
      " LEFT JOIN whole w ON w.leaf = a.alloc_callsite_id ORDER BY 1, 2";
  TraceQuery named_trace(trace()), unnamed_trace(unnamed);
  const auto named = named_trace.rows(paths);
  ASSERT_EQ(named.size(), 2u * 2u * 4096u);
  int wrong = 0;
  for (const auto& row : named) {
    std::string expected;  // the size's bits, level 11 (innermost) first
    const long path = std::stol(row[0]);
    for (int level = 11; level >= 0; --level) expected += ((path >> level) & 1) ? '1' : '0';
    if (row[1] != expected && ++wrong <= 3)
      ADD_FAILURE() << "allocation of path " << path << " has the stack of path " << row[1];
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_EQ(named, unnamed_trace.rows(paths));
  // Names were used: a stack met again may go by name. Only second meetings can, at most 4096
  // a thread; evictions from the full tables make it fewer.
  const int64_t by_name =
      named_trace.integer("SELECT value FROM stats WHERE name = 'stacks_by_name'");
  EXPECT_GT(by_name, 1000);
  EXPECT_LT(by_name, 2 * 4096);
  EXPECT_EQ(unnamed_trace.integer("SELECT value FROM stats WHERE name = 'stacks_by_name'"), 0);
  EXPECT_EQ(named_trace.integer("SELECT count(*) FROM stats WHERE name = 'stack_name_unknown'"), 0);
  std::filesystem::remove(unnamed);
}

// The shim asks the loader for newly loaded objects only when a stack may point into one (a
// frame rule read for the first time, or a stack libunwind walked). A library loaded after the
// program's first allocations, and a forked child, must still have every frame of every stack
// in an object the collector knows: each allocation's innermost frame is named, in its module.
TEST_F(RecordTest, ObjectsLoadedAfterTheFirstAllocationsAreKnownToTheirStacks) {
  const std::string program = fs::path(LATE_LOADER_BIN).filename();
  const std::string library = fs::path(LATE_LOADED_LIB).filename();
  const std::string in_program = "(anonymous namespace)::alloc_from_program";
  // By size: the parent's three from its own code, then one from its code and one through the
  // library; then the child's two, made from the same call sites.
  const std::vector<std::pair<std::string, std::string>> expected = {
      {in_program, program},          {in_program, program},           {in_program, program},
      {in_program, program},          {"late_library_alloc", library}, {in_program, program},
      {"late_library_alloc", library}};
  // libunwind reads no frame rules: with it, the loader is asked at every event.
  for (const std::string unwinder : {"", "libunwind"}) {
    SCOPED_TRACE("VRAMTRACE_UNWINDER=" + unwinder);
    fs::remove(trace());
    ProcessResult run =
        record(trace(), {LATE_LOADER_BIN, LATE_LOADED_LIB}, {"VRAMTRACE_UNWINDER=" + unwinder});
    ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
    TraceQuery q(trace());
    ASSERT_EQ(q.integer("SELECT count(*) FROM process"), 2);
    const auto innermost = q.rows(
        "SELECT a.size, coalesce(f.function, '?'), coalesce(m.path, '?') FROM allocation a"
        " JOIN callsite c ON c.id = a.alloc_callsite_id JOIN frame f ON f.id = c.frame_id"
        " LEFT JOIN module m ON m.id = f.module_id ORDER BY a.size, a.id");
    ASSERT_EQ(innermost.size(), expected.size()) << run.out;
    for (size_t i = 0; i < expected.size(); ++i) {
      SCOPED_TRACE("allocation of " + innermost[i][0] + " bytes");
      // The function's name without its parameters, which the symbolizer spells its own way.
      EXPECT_EQ(innermost[i][1].substr(0, innermost[i][1].find('(', 1)), expected[i].first);
      EXPECT_EQ(fs::path(innermost[i][2]).filename(), expected[i].second);
    }
  }
}

// Whether the running kernel has MADV_POPULATE_WRITE (Linux 5.14).
bool kernel_can_populate() {
  utsname name{};
  int major = 0, minor = 0;
  if (uname(&name) != 0 || std::sscanf(name.release, "%d.%d", &major, &minor) != 2) return false;
  return major > 5 || (major == 5 && minor >= 14);
}

// The shim faults its ring in at the process's first event: a program that writes more than a
// lap of the ring (8 MiB) takes no page fault for it in its hooked calls, where it took one
// every 4 KiB (2,048 a lap) before.
TEST_F(RecordTest, TheRingIsFaultedInAtTheFirstEventNotPageByPage) {
  if (!kernel_can_populate()) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE";
  constexpr int kIterations = 150000;  // two records each: about 13 MB of records
  // An 8 MiB ring is faulted in whole at the first event: a lap and a half of records takes
  // no fault in the loop (the populating counts as faults, so it must come before).
  ProcessResult run =
      record(trace(), {RING_FAULTS_BIN, std::to_string(kIterations)}, {"VRAMTRACE_RING_BYTES=8M"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  long faults = -1;
  ASSERT_EQ(std::sscanf(run.out.c_str(), "faults %ld", &faults), 1) << run.out;
  EXPECT_LT(faults, 512) << "page faults while writing a lap and a half of the ring";
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NOT NULL"),
            kIterations + 1);
}

// The default ring is faulted in 8 MiB at a time, 4 MiB ahead of its writes: 13 MB of records
// leave three such parts resident of the 32 MiB, not the whole ring, and not less than was
// written.
TEST_F(RecordTest, ARingCostsMemoryOnlyAsFarAsItsWritesHaveCome) {
  if (!kernel_can_populate()) GTEST_SKIP() << "the kernel has no MADV_POPULATE_WRITE";
  constexpr int kIterations = 150000;
  ProcessResult run = record(trace(), {RING_FAULTS_BIN, std::to_string(kIterations)});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  unsigned long resident = 0, size = 0;
  const std::size_t at = run.out.find("ring ");
  ASSERT_NE(at, std::string::npos) << run.out;
  ASSERT_EQ(std::sscanf(run.out.c_str() + at, "ring %lu of %lu", &resident, &size), 2) << run.out;
  EXPECT_EQ(size, 4096ul + (32ul << 20));
  EXPECT_GE(resident, 13ul << 20);
  EXPECT_LE(resident, 4096ul + (24ul << 20));
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NOT NULL"),
            kIterations + 1);
}

// Stacks through a signal frame: the walk by frame rules declines them, libunwind walks them
// whole, and the trace counts them (stats shim_native_stack_by_libunwind: the first when it
// happened, two more at exit); the ordinary allocation after them is the walk's own. With
// VRAMTRACE_UNWINDER=libunwind nothing is counted.
TEST_F(RecordTest, StacksThroughASignalFrameAreLibunwindsAndCounted) {
  const std::string functions =
      "WITH RECURSIVE chain(size, callsite_id, depth, function) AS ("
      "  SELECT size, alloc_callsite_id, 0, NULL FROM allocation"
      "  UNION ALL SELECT chain.size, c.parent_id, chain.depth + 1, f.function"
      "  FROM chain JOIN callsite c ON c.id = chain.callsite_id JOIN frame f ON f.id = c.frame_id) "
      "SELECT size, group_concat(function, ' < ') FROM (SELECT * FROM chain"
      "  WHERE function IN ('(anonymous namespace)::allocate_in_handler(int)',"
      "  '(anonymous namespace)::allocate_outside_handler()', 'main') ORDER BY size, depth) "
      "GROUP BY size ORDER BY size";
  const std::vector<std::vector<std::string>> expected = {
      {"1234", "(anonymous namespace)::allocate_outside_handler() < main"},
      {"4321", "(anonymous namespace)::allocate_in_handler(int) < main"},
      {"4322", "(anonymous namespace)::allocate_in_handler(int) < main"},
      {"4323", "(anonymous namespace)::allocate_in_handler(int) < main"}};
  const std::string declined =
      "SELECT coalesce(sum(value), 0) FROM stats WHERE name = 'shim_native_stack_by_libunwind'";

  ASSERT_EQ(record(trace(), {ALLOC_IN_SIGNAL_HANDLER_BIN}).exit_code(), 0);
  {
    TraceQuery q(trace());
    EXPECT_EQ(q.rows(functions), expected);
    EXPECT_EQ(q.integer(declined), 3);
  }
  const std::string by_libunwind = trace() + ".libunwind.db";
  ASSERT_EQ(record(by_libunwind, {ALLOC_IN_SIGNAL_HANDLER_BIN}, {"VRAMTRACE_UNWINDER=libunwind"})
                .exit_code(),
            0);
  {
    TraceQuery q(by_libunwind);
    EXPECT_EQ(q.rows(functions), expected);
    EXPECT_EQ(q.integer(declined), 0);
  }
  std::filesystem::remove(by_libunwind);
}

TEST_F(RecordTest, EveryEventCarriesItsIdentity) {
  ProcessResult run = record(trace(), {LEAKY_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM process"), 1);
  EXPECT_EQ(q.integer("SELECT complete FROM process"), 1);
  EXPECT_EQ(q.integer("SELECT exit_status FROM process"), 0);
  // Main thread plus four workers.
  EXPECT_EQ(q.integer("SELECT count(DISTINCT alloc_utid) FROM allocation"), 5);
  // Sequence numbers are distinct within the process, and frees come after their allocation.
  EXPECT_EQ(q.integer("SELECT count(*) - count(DISTINCT alloc_seq) FROM allocation"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq <= alloc_seq"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_ns < alloc_ns"), 0);
  // Successful allocations know their device; every one has a stack.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE result = 0 AND device != 0"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE alloc_callsite_id IS NULL"), 0);
  // Async allocations carry their stream; pitched ones their requested and reserved sizes.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE kind = 4 AND stream = 0"), 0);
  EXPECT_EQ(q.integer("SELECT requested_size FROM allocation WHERE api = 7"), 4096 * 64);
  EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE severity != 'info' AND value > 0"), 0);
}

TEST_F(RecordTest, ExitStatusIsTheCommandsOwn) {
  EXPECT_EQ(record(trace("a.db"), {EXIT_WITH_BIN, "exit", "3"}).exit_code(), 3);
  ProcessResult killed = record(trace("b.db"), {EXIT_WITH_BIN, "signal", "15"});
  EXPECT_EQ(killed.exit_code(), 128 + SIGTERM);
  TraceQuery q(trace("b.db"));
  EXPECT_EQ(q.integer("SELECT signal FROM process"), SIGTERM);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), 1);
  ProcessResult missing = record(trace("c.db"), {"/nonexistent/program"});
  EXPECT_EQ(missing.exit_code(), 127);
  EXPECT_NE(missing.err.find("/nonexistent/program"), std::string::npos);
}

// vramtrace's writer thread runs at the lowest priority; the command keeps vramtrace's own.
TEST_F(RecordTest, TheCommandRunsAtThePriorityItWasGiven) {
  errno = 0;
  const int own = getpriority(PRIO_PROCESS, 0);
  ASSERT_EQ(errno, 0);
  // Field 19 of /proc/PID/stat is the nice value; the name before it is "(cut)".
  ProcessResult run = record(trace(), {"/bin/sh", "-c", "cut -d ' ' -f 19 /proc/self/stat"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  EXPECT_EQ(run.out, std::to_string(own) + "\n");
}

// Processes the collector did not start end by a signal, abort or _exit: their parent, traced
// too, reaps them and reports how they ended.
TEST_F(RecordTest, GrandchildrensEndsAreReportedByTheirParents) {
  const std::string e = EXIT_WITH_BIN;
  ProcessResult run = record(
      trace(),
      {"/bin/sh", "-c", "'" + e + "' signal 9; '" + e + "' abort 0; '" + e + "' exit 5; exit 3"});
  EXPECT_EQ(run.exit_code(), 3) << run.err;
  TraceQuery q(trace());
  auto ends = q.rows(
      "SELECT coalesce(exit_status, -1), coalesce(signal, -1) FROM process "
      "WHERE exe LIKE '%e2e_exit_with' ORDER BY upid");
  const std::vector<std::vector<std::string>> expected = {
      {"-1", std::to_string(SIGKILL)}, {"-1", std::to_string(SIGABRT)}, {"5", "-1"}};
  EXPECT_EQ(ends, expected);
  // Each of them still has its one allocation, recorded before it died.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation a JOIN process p ON p.upid = a.upid "
                      "WHERE p.exe LIKE '%e2e_exit_with'"),
            3);
}

TEST_F(RecordTest, DefaultOutputNameNeverReplacesATrace) {
  // The default name holds vramtrace's pid; a shell that execs vramtrace lends it its own
  // pid, so the shell can take that name first.
  const std::string program = fs::path(EXIT_WITH_BIN).filename();
  ProcessOptions o;
  o.argv = {"/bin/sh", "-c",
            "cd '" + dir_.string() + "' && echo precious > vramtrace." + program +
                ".$$.db && echo $$ && exec '" + VRAMTRACE_BIN + "' run -- '" + EXIT_WITH_BIN + "'"};
  ProcessResult run = run_process(o);
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  const std::string pid = run.out.substr(0, run.out.find('\n'));
  std::ifstream taken(dir_ / ("vramtrace." + program + "." + pid + ".db"));
  std::string content;
  taken >> content;
  EXPECT_EQ(content, "precious");
  EXPECT_TRUE(fs::exists(dir_ / ("vramtrace." + program + "." + pid + ".1.db")));

  // A chosen name that exists is refused, and left as it was.
  const std::string existing = trace("existing.db");
  std::ofstream(existing) << "precious";
  ProcessResult clash = record(existing, {EXIT_WITH_BIN});
  EXPECT_EQ(clash.exit_code(), 2);
  EXPECT_NE(clash.err.find("--force"), std::string::npos) << clash.err;
  std::ifstream in(existing);
  in >> content;
  EXPECT_EQ(content, "precious");
  // --force replaces it.
  ProcessOptions forced;
  forced.argv = {VRAMTRACE_BIN, "run", "--force", "-o", existing, "--", EXIT_WITH_BIN};
  EXPECT_EQ(run_process(forced).exit_code(), 0);
  TraceQuery q(existing);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), 1);
}

TEST_F(RecordTest, EightThreadsOfFiftyThousandPairsLoseNothing) {
  // A small ring, so that the threads also wait on a full ring many times.
  ProcessOptions o;
  o.argv = {VRAMTRACE_BIN, "run", "--ring-size",    "256K", "-o",
            trace(),       "--",  THREAD_STORM_BIN, "8",    "50000"};
  ProcessResult run = run_process(o);
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), 400000);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NULL"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM bad_free"), 0);
  EXPECT_EQ(q.integer("SELECT count(DISTINCT alloc_utid) FROM allocation"), 8);
}

TEST_F(RecordTest, ForkedAndExecedProcessesEachKeepTheirOwnAllocations) {
  ProcessResult run = record(trace(), {FORK_AND_EXEC_BIN, EXIT_WITH_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  // parent, forked child, and the child's exec'd image (same pid as the child)
  auto processes = q.rows("SELECT upid, pid, ppid, complete FROM process ORDER BY upid");
  ASSERT_EQ(processes.size(), 3u);
  const std::string parent_pid = processes[0][1];
  EXPECT_EQ(processes[1][2], parent_pid);       // the child's parent
  EXPECT_EQ(processes[2][1], processes[1][1]);  // exec keeps the pid
  for (const auto& p : processes) EXPECT_EQ(p[3], "1");
  // Per process: what it allocated and what it left live.
  auto per_process = q.rows(
      "SELECT p.upid, count(a.id), coalesce(sum(a.size) FILTER (WHERE a.free_seq IS NULL), 0) "
      "FROM process p LEFT JOIN allocation a ON a.upid = p.upid GROUP BY p.upid ORDER BY p.upid");
  ASSERT_EQ(per_process.size(), 3u);
  EXPECT_EQ(per_process[0][1], "2");  // 1 MiB leaked, 3 MiB freed: nothing of the child's
  EXPECT_EQ(per_process[0][2], std::to_string(1 << 20));
  EXPECT_EQ(per_process[1][1], "2");  // 2 MiB leaked, 4 KiB freed
  EXPECT_EQ(per_process[1][2], std::to_string(2 << 20));
  EXPECT_EQ(per_process[2][1], "1");  // exit_with's 1 MiB
  EXPECT_EQ(per_process[2][2], std::to_string(1 << 20));
  // Each process's sequence numbers are its own: they start again at the fork.
  EXPECT_EQ(q.integer("SELECT count(*) FROM bad_free"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE severity != 'info' AND value > 0"), 0);
}

TEST_F(RecordTest, EveryProcessOfAJobKeepsItsParentRankAndLeaks) {
  ProcessResult run = record(trace(), {MULTIPROCESS_JOB_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
  TraceQuery q(trace());
  // pid, ppid, rank, world_size, argv, exit_status, and what each process left live
  auto rows = q.rows(
      "SELECT p.pid, p.ppid, coalesce(p.rank, -1), coalesce(p.world_size, -1), p.argv, "
      "coalesce(p.exit_status, -1), p.complete, "
      "coalesce(sum(a.size) FILTER (WHERE a.free_seq IS NULL AND a.kind = 1), 0), "
      "coalesce(sum(a.size) FILTER (WHERE a.free_seq IS NULL AND a.kind = 3), 0), "
      "count(a.id) "
      "FROM process p LEFT JOIN allocation a ON a.upid = p.upid GROUP BY p.upid ORDER BY p.upid");
  // Workers are forked from ranks, so they share the rank's argv: a rank is a process with
  // "--rank" in its argv whose parent is not itself such a process.
  std::set<std::string> rank_argv_pids;
  for (const auto& r : rows)
    if (r[4].find("--rank") != std::string::npos) rank_argv_pids.insert(r[0]);
  std::map<std::string, int> rank_of_pid;
  std::string launcher;
  int workers = 0, images_before_exec = 0;
  for (const auto& r : rows) EXPECT_EQ(r[6], "1") << "incomplete process " << r[0];
  for (const auto& r : rows) {
    if (r[4].find("--rank") == std::string::npos || rank_argv_pids.count(r[1]) == 1) continue;
    const int rank = std::stoi(r[2]);
    rank_of_pid[r[0]] = rank;
    EXPECT_EQ(r[3], "4");
    EXPECT_EQ(r[5], "0");
    EXPECT_EQ(r[7], std::to_string((rank + 1) << 20)) << "rank " << rank;
    EXPECT_EQ(r[8], "0");
  }
  ASSERT_EQ(rank_of_pid.size(), 4u);
  std::set<int> ranks_seen;
  for (const auto& [pid, rank] : rank_of_pid) ranks_seen.insert(rank);
  EXPECT_EQ(ranks_seen, (std::set<int>{0, 1, 2, 3}));
  for (const auto& r : rows) {
    if (rank_of_pid.count(r[1]) == 1) {  // a worker: its parent is a rank
      ++workers;
      EXPECT_EQ(std::stoi(r[2]), rank_of_pid[r[1]]) << "a worker inherits its rank";
      EXPECT_EQ(r[5], "0") << "the exit status its parent reaped";
      EXPECT_EQ(r[7], "0");  // its device scratch was freed
      EXPECT_TRUE(r[8] == std::to_string(64 << 10) || r[8] == std::to_string(128 << 10)) << r[8];
      EXPECT_EQ(r[9], "2");
    } else if (rank_of_pid.count(r[0]) == 1 && r[4].find("--rank") == std::string::npos) {
      ++images_before_exec;  // a rank between its fork and its exec: no allocations
      EXPECT_EQ(r[9], "0");
    } else if (rank_of_pid.count(r[0]) == 0) {
      EXPECT_TRUE(launcher.empty()) << "two launchers? " << r[0] << " and " << launcher;
      launcher = r[0];
      EXPECT_EQ(r[9], "0");
      EXPECT_EQ(r[5], "0");
    }
  }
  EXPECT_EQ(workers, 8);
  EXPECT_EQ(images_before_exec, 4);
  for (const auto& [pid, rank] : rank_of_pid)
    for (const auto& r : rows)
      if (r[0] == pid && r[4].find("--rank") != std::string::npos) EXPECT_EQ(r[1], launcher);
  // Worker leaks of the same line group by stack, across processes: 8 workers, 4 ranks.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_seq IS NULL AND kind = 3"), 8);
  // run's last lines name each process of the job by its rank, then its pid.
  std::map<std::string, std::string> rank_by_pid;
  for (const auto& r : rows) rank_by_pid[r[0]] = r[2];
  const std::regex ranked(R"(^vramtrace:   rank (\d+) \(pid (\d+)\) )");
  const std::regex unranked(R"(^vramtrace:   pid (\d+) )");
  int named_by_rank = 0;
  std::istringstream lines(run.err);
  for (std::string line; std::getline(lines, line);) {
    std::smatch match;
    if (std::regex_search(line, match, ranked)) {
      ++named_by_rank;
      EXPECT_EQ(rank_by_pid[match[2]], match[1]) << line;
    } else if (std::regex_search(line, match, unranked)) {
      EXPECT_EQ(rank_by_pid[match[1]], "-1") << "a ranked process named by pid: " << line;
    }
  }
  EXPECT_GT(named_by_rank, 0) << run.err;
}

TEST_F(RecordTest, VirtualMemoryReservationsHandlesAndMappingsAreTrackedApart) {
  ProcessResult run = record(trace(), {VMM_SAMPLE_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
  TraceQuery q(trace());
  auto live = [&](int kind) {
    return q.rows(
        "SELECT count(*), coalesce(sum(size), 0) FROM allocation WHERE result = 0 AND "
        "free_seq IS NULL AND kind = " +
        std::to_string(kind))[0];
  };
  constexpr int64_t kMiB = 1 << 20;
  EXPECT_EQ(live(5), (std::vector<std::string>{"1", std::to_string(256 * kMiB)}));  // reservation
  EXPECT_EQ(live(6), (std::vector<std::string>{"4", std::to_string(44 * kMiB)}));   // handles
  EXPECT_EQ(live(7), (std::vector<std::string>{"4", std::to_string(44 * kMiB)}));   // mappings
  // Seven handles were created and mapped; three released, three mappings unmapped (two by
  // one cuMemUnmap of a 4 MiB range, which ends both at the same point in the sequence).
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE kind = 6"), 7);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE kind = 7"), 7);
  EXPECT_EQ(q.integer("SELECT count(DISTINCT free_seq) FROM allocation WHERE kind = 7 AND "
                      "free_seq IS NOT NULL"),
            2);
  // Each mapping names the handle it maps, and the handle is a cuMemCreate of this trace.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation m WHERE m.kind = 7 AND NOT EXISTS "
                      "(SELECT 1 FROM allocation h WHERE h.kind = 6 AND h.address = m.vmm_handle)"),
            0);
  // Mappings start inside the reservation, which shares its first address with a mapping.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation m, allocation r WHERE m.kind = 7 AND "
                      "r.kind = 5 AND (m.address < r.address OR m.address + m.size > r.address + "
                      "r.size)"),
            0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM bad_free"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE alloc_callsite_id IS NULL"), 0);
  // The handles' device comes from the properties they were created with.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE kind = 6 AND device != 0"), 0);
}

#ifdef NVTX_SAMPLE_BIN
// A program built with the CUDA toolkit's NVTX 3 headers: NVTX loads the shim through
// NVTX_INJECTION64_PATH, which `vramtrace run` sets, and every range and mark is a marker.
TEST_F(RecordTest, NvtxRangesAndMarksBecomeMarkersWithTheirNesting) {
  ProcessResult run = record(trace(), {NVTX_SAMPLE_BIN, "--expect-levels"});
  ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
  TraceQuery q(trace());
  // name, type, source, domain, depth, parent's name, ended, ended on another thread
  auto markers = q.rows(
      "SELECT m.name, m.type, m.source, coalesce(m.domain, ''), m.depth, "
      "coalesce(p.name, ''), m.end_ns IS NOT NULL, coalesce(m.end_utid != m.utid, 0), "
      "coalesce(m.color, 0), coalesce(m.category, 0) "
      "FROM marker m LEFT JOIN marker p ON p.id = m.parent_id ORDER BY m.start_seq");
  const std::vector<std::vector<std::string>> expected = {
      {"sample:start", "mark", "nvtx", "", "0", "", "0", "0", "0", "0"},
      {"epoch", "range", "nvtx", "", "0", "", "1", "0", "0", "0"},
      {"forward", "range", "nvtx", "", "1", "epoch", "1", "0", "0", "0"},
      {"layer1", "range", "nvtx", "", "2", "forward", "1", "0", std::to_string(0xFF00FF00u), "1"},
      {"async-load", "range", "nvtx", "", "0", "", "1", "1", "0", "0"},
      {"io-step", "range", "nvtx", "sample.io", "0", "", "1", "0", std::to_string(0xFF3366CCu),
       "2"},
      {"io-mark", "mark", "nvtx", "sample.io", "0", "", "0", "0", "0", "0"},
      {"wide-\u00fcn\u00efc\u00f8d\u00e9-\u65e5\u672c", "range", "nvtx", "", "0", "", "1", "0", "0",
       "0"},
      {"api-phase", "range", "api", "", "0", "", "1", "0", "0", "0"},
      {"api-mark", "mark", "api", "", "0", "", "0", "0", "0", "0"},
      {"sample:end", "mark", "nvtx", "", "0", "", "0", "0", "0", "0"},
  };
  EXPECT_EQ(markers, expected);
  // Ranges contain the allocations made inside them: the 2 MiB one inside layer1.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation a, marker m WHERE m.name = 'layer1' AND "
                      "a.upid = m.upid AND a.alloc_seq > m.start_seq AND a.alloc_seq < m.end_seq"),
            1);
  EXPECT_EQ(q.integer("SELECT count(*) FROM marker WHERE end_ns < start_ns"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE name LIKE 'marker_%' AND value > 0"), 0);
}
#endif

// A program that reaches the driver as a static cudart does (dlopen libcuda.so.1, dlsym
// cuGetProcAddress_v2, then ask it for each function): the shim's dlsym and cuGetProcAddress
// hand out its wrappers, so the driver calls are recorded with their stacks.
TEST_F(RecordTest, DriverReachedThroughCuGetProcAddressIsRecorded) {
  ProcessResult run = record(trace(), {STATIC_STYLE_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
  // "live <kind> ptr=0x... size=N" / "live vmm_handle handle=0x... size=N"
  std::multiset<std::pair<std::string, std::string>> announced;  // (kind, "address size")
  std::istringstream out(run.out);
  std::regex live(R"(^live (\w+) (?:ptr|handle)=(0x[0-9a-f]+) size=(\d+))");
  for (std::string line; std::getline(out, line);) {
    std::smatch m;
    if (std::regex_search(line, m, live))
      announced.insert({m[1], as_decimal(m[2]) + " " + std::string(m[3])});
  }
  ASSERT_EQ(announced.size(), 5u) << run.out;
  TraceQuery q(trace());
  std::multiset<std::pair<std::string, std::string>> recorded;
  for (const auto& r : q.rows("SELECT k.name, a.address || ' ' || a.size FROM allocation a JOIN "
                              "allocation_kind k ON k.id = a.kind WHERE a.result = 0 AND "
                              "a.free_seq IS NULL"))
    recorded.insert({r[0], r[1]});
  EXPECT_EQ(recorded, announced);
  // Every driver call has a stack that reaches the program's own source.
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE api < 12"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation a WHERE NOT EXISTS ("
                      "WITH RECURSIVE s(id) AS (SELECT a.alloc_callsite_id UNION ALL "
                      "SELECT c.parent_id FROM callsite c JOIN s ON c.id = s.id "
                      "WHERE c.parent_id IS NOT NULL) "
                      "SELECT 1 FROM s JOIN callsite c ON c.id = s.id JOIN frame f ON "
                      "f.id = c.frame_id WHERE f.file LIKE '%static_cudart_style.cpp')"),
            0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM bad_free"), 0);
}

// The simulated runtime reaches the device through the simulated driver, as the real one
// does: each cudaMalloc enters cuMemAlloc_v2 through a pointer from cuGetProcAddress, which is
// the shim's wrapper. It must be recorded once, as the runtime call.
TEST_F(RecordTest, RuntimeCallEnteringTheDriverIsRecordedOnce) {
  ProcessResult run = record(trace(), {THREAD_STORM_BIN, "1", "1000"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  TraceQuery q(trace());
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation"), 1000);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE api = 1"), 1000);       // cudaMalloc
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE free_api = 2"), 1000);  // cudaFree
}

TEST_F(RecordTest, SigkillLosesNoAnnouncedAllocation) {
  std::mt19937 random(12345);
  for (int trial = 0; trial < 20; ++trial) {
    SCOPED_TRACE("trial " + std::to_string(trial));
    const std::string output = trace("kill" + std::to_string(trial) + ".db");
    const int kill_after = std::uniform_int_distribution<int>(1, 4000)(random);
    std::vector<std::pair<std::string, bool>> events;
    std::string pending;
    pid_t target = 0;
    int seen = 0;
    bool killed = false;
    ProcessOptions o;
    o.argv = {VRAMTRACE_BIN, "run", "-o", output, "--", ANNOUNCE_ALLOCS_BIN};
    o.on_stdout = [&](const std::string& chunk, pid_t) {
      pending += chunk;
      size_t nl;
      while ((nl = pending.find('\n')) != std::string::npos) {
        std::string line = pending.substr(0, nl);
        pending.erase(0, nl + 1);
        if (line.rfind("pid ", 0) == 0) target = std::stoi(line.substr(4));
        if (killed) continue;
        if (line.rfind("alloc ", 0) == 0) {
          events.emplace_back(as_decimal(line.substr(6)), false);
          ++seen;
        }
        if (line.rfind("free ", 0) == 0) events.emplace_back(as_decimal(line.substr(5)), true);
        if (line == "reset") events.emplace_back("reset", true);
        if (seen >= kill_after && target > 0) {
          kill(target, SIGKILL);
          killed = true;
        }
      }
    };
    ProcessResult run = run_process(o);
    ASSERT_TRUE(killed);
    EXPECT_EQ(run.exit_code(), 128 + SIGKILL) << run.err;

    TraceQuery q(output);
    EXPECT_EQ(q.integer("SELECT signal FROM process"), SIGKILL);
    // Each announced allocation, in order, must be the next allocation in the trace (by
    // sequence) at that address; each announced free must have ended it.
    auto rows = q.rows("SELECT address, free_seq IS NOT NULL FROM allocation ORDER BY alloc_seq");
    size_t allocs_announced = 0;
    for (const auto& e : events)
      if (!e.second) ++allocs_announced;
    ASSERT_GE(rows.size(), allocs_announced);
    size_t next = 0;
    std::map<std::string, size_t> row_of;  // address -> index of its latest announced row
    for (const auto& [address, is_free] : events) {
      if (address == "reset") continue;
      if (!is_free) {
        ASSERT_EQ(rows[next][0], address) << "allocation #" << next;
        row_of[address] = next++;
      } else {
        EXPECT_EQ(rows[row_of.at(address)][1], "1") << "announced free of " << address;
      }
    }
  }
}

// The first line of `path` matching `pattern`, with its captures; line 0 when none.
std::pair<int, std::smatch> marked_line(const std::string& path, const std::regex& pattern,
                                        std::string* text_out) {
  std::ifstream source(path);
  std::string text;
  for (int line = 1; std::getline(source, text); ++line) {
    std::smatch m;
    if (std::regex_search(text, m, pattern)) {
      *text_out = text;
      std::regex_search(*text_out, m, pattern);
      return {line, m};
    }
  }
  return {0, {}};
}

// PyTorch's allocator level on the simulated caching allocator (libc10_cuda_sim.so): its
// blocks reach the shim through c10::reportMemoryUsageToProfiler, its segments through
// cudaMalloc. The leaked losses are the only leaks, at block level and at their line; the
// allocator's segments at exit are cache; the OOM is in the trace with the allocator's totals.
TEST_F(RecordTest, TorchLikeLeaksAreBlocksAndTheAllocatorsSegmentsAreCache) {
  std::string leak_text, oom_text;
  auto [leak_line, leak] =
      marked_line(TORCH_LIKE_SOURCE, std::regex(R"(LEAK\(block, (\d+), (\d+)\))"), &leak_text);
  auto [oom_line, oom] = marked_line(TORCH_LIKE_SOURCE, std::regex(R"(OOM\((\d+)\))"), &oom_text);
  ASSERT_NE(leak_line, 0) << "the sample's LEAK marker changed; update this test";
  ASSERT_NE(oom_line, 0) << "the sample's OOM marker changed; update this test";
  const int64_t leaked_count = std::stoll(leak[1]);
  const int64_t leaked_bytes = std::stoll(leak[2]);
  const std::string oom_bytes = oom[1];

  ProcessResult run =
      record(trace(), {TORCH_LIKE_BIN}, {"SIMCUDA_DEVICE_COUNT=1", "SIMCUDA_DEVICE_MEMORY=256MiB"});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  // The allocator's own view at exit, as the sample printed it.
  std::smatch printed;
  ASSERT_TRUE(std::regex_search(run.out, printed,
                                std::regex(R"(allocated=(\d+) reserved=(\d+) segments=(\d+))")))
      << run.out;
  const int64_t allocated = std::stoll(printed[1]);
  const int64_t reserved = std::stoll(printed[2]);
  const int64_t segments = std::stoll(printed[3]);
  ASSERT_EQ(allocated, leaked_bytes);
  ASSERT_GE(segments, 2);  // small pool and large pool segments are cached at exit

  ProcessResult leaks =
      run_process({.argv = {VRAMTRACE_BIN, "leaks", trace(), "--format", "json"}});
  ASSERT_EQ(leaks.exit_code(), 0) << leaks.err;
  const nlohmann::json json = nlohmann::json::parse(leaks.out);
  EXPECT_EQ(json["level"], "block");
  EXPECT_EQ(json["total_bytes"], leaked_bytes);
  EXPECT_EQ(json["total_count"], leaked_count);
  ASSERT_EQ(json["leaks"].size(), 1u) << json.dump(2);
  const auto& entry = json["leaks"][0];
  EXPECT_EQ(entry["kind"], "block");
  EXPECT_EQ(entry["level"], "block");
  EXPECT_EQ(entry["count"], leaked_count);
  EXPECT_EQ(entry["bytes"], leaked_bytes);
  // The innermost frame of the sample's own is the marked line (the allocator's frames, in
  // libc10_cuda_sim.so, come first; the shim's never appear).
  bool found = false;
  for (const auto& frame : entry["stack"]) {
    if (frame["module"].is_string())
      EXPECT_EQ(frame["module"].get<std::string>().find("libvramtrace_preload"), std::string::npos);
    if (!frame["file"].is_string() ||
        fs::path(frame["file"].get<std::string>()).filename() != "torch_like.cpp")
      continue;
    EXPECT_EQ(frame["line"], leak_line) << entry.dump(2);
    found = true;
    break;
  }
  EXPECT_TRUE(found) << entry.dump(2);
  // Cached: every byte of the allocator's live segments that is not in a leaked block.
  EXPECT_EQ(json["cached"]["count"], segments);
  EXPECT_EQ(json["cached"]["bytes"], reserved - leaked_bytes);

  // At the segment level the same memory is the allocator's segments, and no block.
  ProcessResult segment_leaks = run_process(
      {.argv = {VRAMTRACE_BIN, "leaks", trace(), "--format", "json", "--level", "segment"}});
  ASSERT_EQ(segment_leaks.exit_code(), 0) << segment_leaks.err;
  const nlohmann::json by_segment = nlohmann::json::parse(segment_leaks.out);
  EXPECT_EQ(by_segment["level"], "segment");
  EXPECT_EQ(by_segment["total_bytes"], reserved);
  EXPECT_EQ(by_segment["total_count"], segments);
  for (const auto& e : by_segment["leaks"]) EXPECT_EQ(e["kind"], "device") << e.dump(2);

  TraceQuery q(trace());
  // The OOM: a failed block with its size and the allocator's totals at that moment.
  const auto ooms = q.rows(
      "SELECT size, allocator_allocated, allocator_reserved, result FROM allocation "
      "WHERE api = 29");
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0][0], oom_bytes);
  EXPECT_EQ(ooms[0][1], std::to_string(leaked_bytes));  // the losses, at that point
  EXPECT_EQ(ooms[0][2], "2097152");  // the small segment; the large one was given back first
  EXPECT_EQ(ooms[0][3], "2");
  // The segments' cudaMallocs are recorded too (the allocator's calls, not nested in a report).
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation WHERE kind = 1 AND api = 1 AND result = 0 "
                      "AND free_seq IS NULL"),
            segments);
  EXPECT_GE(q.integer("SELECT count(*) FROM allocation WHERE kind = 1 AND api = 1 AND result = 2"),
            1);
  // Every block lies inside the cudaMalloc its segment_id names.
  EXPECT_GT(q.integer("SELECT count(*) FROM allocation WHERE kind = 8 AND result = 0"), 0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM allocation AS b WHERE b.kind = 8 AND b.result = 0 AND "
                      "NOT EXISTS (SELECT 1 FROM allocation AS s WHERE s.id = b.segment_id AND "
                      "s.kind = 1 AND b.address >= s.address AND "
                      "b.address + b.size <= s.address + s.size)"),
            0);
  EXPECT_EQ(q.integer("SELECT count(*) FROM stats WHERE name = 'block_without_segment' AND "
                      "value > 0"),
            0);

  // The summary's allocator level agrees with the allocator's own totals.
  ProcessResult summary =
      run_process({.argv = {VRAMTRACE_BIN, "summary", trace(), "--format", "json"}});
  ASSERT_EQ(summary.exit_code(), 0) << summary.err;
  const nlohmann::json s = nlohmann::json::parse(summary.out);
  ASSERT_EQ(s["allocator"].size(), 1u);
  const auto& a = s["allocator"][0];
  EXPECT_EQ(a["level"], "block");
  EXPECT_EQ(a["live_block_bytes"], leaked_bytes);
  EXPECT_EQ(a["segment_bytes"], reserved);
  EXPECT_EQ(a["cached_bytes"], reserved - leaked_bytes);
  EXPECT_EQ(a["allocator_allocated"], allocated);
  EXPECT_EQ(a["allocator_reserved"], reserved);
  EXPECT_EQ(a["out_of_memory"], 1);
}

// A program with no allocator: the summary says it is seen at the segment level only.
TEST_F(RecordTest, WithoutAnAllocatorTheSummarySaysSegmentLevelOnly) {
  ProcessResult run = record(trace(), {LEAKY_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  ProcessResult summary = run_process({.argv = {VRAMTRACE_BIN, "summary", trace()}});
  ASSERT_EQ(summary.exit_code(), 0) << summary.err;
  EXPECT_NE(summary.out.find("no allocator events (segment level only)"), std::string::npos)
      << summary.out;
}

// A job started through a shell: 32 processes (the shell, whose pid execs env and then the
// program that uses the GPU, `seq`, and 30 others), one of which recorded GPU memory. The
// summary names that one, by the image that used the GPU, and sums up the rest in a line;
// --all-processes and the JSON keep every image.
TEST_F(RecordTest, AJobThroughAShellIsSummedUpAsItsOneGpuProcess) {
  const std::string script =
      std::string("for i in $(seq 30); do /bin/true; done; exec env ") + LEAKY_BIN;
  ProcessResult run = record(trace(), {"/bin/sh", "-c", script});
  ASSERT_EQ(run.exit_code(), 0) << run.err;
  EXPECT_NE(run.err.find("; 1 of 32 processes used the GPU\n"), std::string::npos) << run.err;

  ProcessResult summary = run_process({.argv = {VRAMTRACE_BIN, "summary", trace()}});
  ASSERT_EQ(summary.exit_code(), 0) << summary.err;
  const std::string& text = summary.out;
  const std::size_t section = text.find("\nprocesses that recorded GPU memory (1 of 32):\n");
  ASSERT_NE(section, std::string::npos) << text;
  std::istringstream lines(text.substr(section + 1));
  std::vector<std::string> listed;
  for (std::string line; std::getline(lines, line) && !line.empty();) listed.push_back(line);
  ASSERT_EQ(listed.size(), 3u) << text;
  const std::string leaky_line =
      std::string(": ") + LEAKY_BIN + ": exited with status 0 (the same pid also ran ";
  EXPECT_NE(listed[1].find(leaky_line), std::string::npos) << listed[1];
  EXPECT_NE(listed[1].find("sh, env)"), std::string::npos) << listed[1];
  EXPECT_EQ(listed[2], "  31 other processes recorded no GPU memory; --all-processes lists them");
  // The allocator level speaks of the one process too, once.
  const std::size_t allocator = text.find("\nallocator level");
  ASSERT_NE(allocator, std::string::npos) << text;
  const std::string rest = text.substr(allocator);
  const std::string no_allocator = "no allocator events (segment level only)";
  const std::size_t first = rest.find(no_allocator);
  EXPECT_NE(first, std::string::npos) << text;
  EXPECT_EQ(rest.find(no_allocator, first + 1), std::string::npos) << text;

  ProcessResult all = run_process({.argv = {VRAMTRACE_BIN, "summary", "--all-processes", trace()}});
  ASSERT_EQ(all.exit_code(), 0) << all.err;
  EXPECT_NE(all.out.find("\nprocesses (32; 1 recorded GPU memory):\n"), std::string::npos)
      << all.out;
  EXPECT_NE(all.out.find(std::string("    earlier image: env ") + LEAKY_BIN + "\n"),
            std::string::npos)
      << all.out;

  // The JSON keeps every image: the shell's pid ran three, chained by exec_from, and only the
  // last is the GPU process.
  ProcessResult json =
      run_process({.argv = {VRAMTRACE_BIN, "summary", "--format", "json", trace()}});
  ASSERT_EQ(json.exit_code(), 0) << json.err;
  const nlohmann::json document = nlohmann::json::parse(json.out);
  std::map<std::int64_t, nlohmann::json> by_upid;
  std::vector<std::int64_t> gpu;
  for (const nlohmann::json& process : document.at("processes")) {
    by_upid[process.at("upid").get<std::int64_t>()] = process;
    if (process.at("gpu_process").get<bool>()) gpu.push_back(process.at("upid"));
  }
  EXPECT_GT(by_upid.size(), 32u);
  ASSERT_EQ(gpu.size(), 1u);
  std::vector<std::string> chain;
  for (nlohmann::json at = by_upid.at(gpu[0]);; at = by_upid.at(at.at("exec_from"))) {
    chain.insert(chain.begin(), fs::path(at.at("exe").get<std::string>()).filename().string());
    if (at.at("exec_from").is_null()) break;
  }
  EXPECT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain.back(), fs::path(LEAKY_BIN).filename().string());

  // A moment's report of one process finds it without --pid.
  ProcessResult frag = run_process({.argv = {VRAMTRACE_BIN, "frag", trace()}});
  EXPECT_EQ(frag.exit_code(), 0) << frag.err;
}

// The caching allocator's OOM, read back with `vramtrace oom`: the failed request with the
// sample's line, the allocator's own cudaMalloc attempts before it, and what was live then
// (the leaked loss tensors) beside the cached segments.
TEST_F(RecordTest, OomReportShowsTheFailedRequestAndTheLiveTensors) {
  ProcessResult run = record(trace(), {TORCH_LIKE_BIN});
  ASSERT_EQ(run.exit_code(), 0) << run.err << run.out;
  ProcessOptions oom;
  oom.argv = {VRAMTRACE_BIN, "oom", trace(), "--format", "json"};
  ProcessResult report = run_process(oom);
  ASSERT_EQ(report.exit_code(), 0) << report.err;
  nlohmann::json json = nlohmann::json::parse(report.out);
  std::string oom_text;
  const int oom_line =
      marked_line(TORCH_LIKE_SOURCE, std::regex(R"(OOM\((\d+)\))"), &oom_text).first;
  ASSERT_NE(oom_line, 0) << "the sample's OOM marker changed; update this test";
  int block_ooms = 0;
  for (const auto& o : json["ooms"]) {
    EXPECT_EQ(o["requested_bytes"], int64_t{64} << 30) << o.dump(2);
    EXPECT_EQ(o["live"]["total_bytes"], 1536) << "the three leaked loss tensors";
    ASSERT_FALSE(o["allocator"].is_null()) << "block level: the process reports blocks";
    bool reaches_line = false;
    for (const auto& frame : o["stack"])
      reaches_line |=
          frame["file"].is_string() &&
          frame["file"].get<std::string>().find("torch_like.cpp") != std::string::npos &&
          frame["line"] == oom_line;
    EXPECT_TRUE(reaches_line) << o["stack"].dump(2);
    if (o["kind"] == "block") {
      ++block_ooms;
      EXPECT_EQ(o["api"], "c10::reportOutOfMemoryToProfiler");
    }
  }
  EXPECT_EQ(block_ooms, 1);
  // Before reporting, the allocator tried cudaMalloc, emptied its cache and tried again.
  EXPECT_EQ(json["ooms"].size(), 3u) << json.dump(2);
}

}  // namespace
}  // namespace vramtrace::test
