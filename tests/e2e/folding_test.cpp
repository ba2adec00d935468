// End-to-end: a real program's steady loop recorded by `vramtrace run` folds its repeated bins
// into runs by default, keeps them all with `--keep all`, and the two traces of the same
// program give the same leaks, peak, OOM and growth (the reports of both, times aside, which
// differ from run to run; tests/cli/cli_folded_reports_test.cpp compares the same events
// written both ways, times included).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "process_runner.h"
#include "scratch_dir_test.h"
#include "trace_query.h"

namespace vramtrace::test {
namespace {

class FoldingTest : public ScratchDirTest {
 protected:
  // 20,000 iterations, a leak from iteration 12,000, an OOM at 15,000.
  ProcessResult record(const std::string& output, std::vector<std::string> options) const {
    ProcessOptions run;
    run.argv = {VRAMTRACE_BIN, "run", "-o", output};
    run.argv.insert(run.argv.end(), options.begin(), options.end());
    run.argv.insert(run.argv.end(), {"--", STEADY_LOOP_BIN, "20000", "12000", "15000"});
    return run_process(run);
  }

  // A report's JSON without what differs between two runs of one program: times, pids, the
  // trace's name, and event numbers (the shim's own events before main() vary).
  static nlohmann::json report(const std::string& trace, std::vector<std::string> args) {
    ProcessOptions options;
    options.argv = {VRAMTRACE_BIN};
    options.argv.insert(options.argv.end(), args.begin(), args.end());
    options.argv.insert(options.argv.end(), {trace, "--format", "json"});
    const ProcessResult result = run_process(options);
    EXPECT_EQ(result.exit_code(), 0) << result.err;
    nlohmann::json doc = nlohmann::json::parse(result.out, nullptr, false);
    strip(doc);
    return doc;
  }
  static void strip(nlohmann::json& doc) {
    if (doc.is_array())
      for (nlohmann::json& item : doc) strip(item);
    if (!doc.is_object()) return;
    for (auto it = doc.begin(); it != doc.end();) {
      const std::string& key = it.key();
      if (key == "trace" || key == "pid" || key == "tid" || key == "ppid" || key == "seq" ||
          key.find("ns") != std::string::npos || key.find("time") != std::string::npos ||
          key == "filters" || key == "iterations") {
        it = doc.erase(it);
      } else {
        strip(*it);
        ++it;
      }
    }
  }
};

TEST_F(FoldingTest, RunFoldsRepeatedBinsUnlessToldToKeepAll) {
  const std::string folded = trace("folded.db"), all = trace("all.db");
  ASSERT_EQ(record(folded, {}).exit_code(), 0);
  ASSERT_EQ(record(all, {"--keep", "all"}).exit_code(), 0);
  TraceQuery f(folded), a(all);
  const std::string runs = "SELECT count(*) FROM allocation_chunk_repeat";
  const std::string folded_stat =
      "SELECT coalesce((SELECT value FROM stats WHERE name = 'storage_folded_allocations'), 0)";
  EXPECT_GT(f.integer(runs), 0);
  // Of 208,000 allocations, most of the 120,000 before the leak (the first bins are stored).
  EXPECT_GT(f.integer(folded_stat), 90'000);
  EXPECT_EQ(a.integer(runs), 0);
  EXPECT_EQ(a.integer(folded_stat), 0);
  const std::string every = "SELECT count(*), sum(size), count(free_seq) FROM allocation";
  EXPECT_EQ(f.rows(every), a.rows(every));

  EXPECT_EQ(report(folded, {"leaks"}), report(all, {"leaks"}));
  EXPECT_EQ(report(folded, {"peak"}), report(all, {"peak"}));
  EXPECT_EQ(report(folded, {"oom"}), report(all, {"oom"}));
  EXPECT_EQ(report(folded, {"leaks", "--growth", "iteration"}),
            report(all, {"leaks", "--growth", "iteration"}));
  EXPECT_EQ(report(folded, {"leaks", "--at", "iteration#5000"}),
            report(all, {"leaks", "--at", "iteration#5000"}));
  // The leak that began late is found, by its line.
  const nlohmann::json leaks = report(folded, {"leaks"});
  ASSERT_FALSE(leaks["leaks"].empty());
  EXPECT_EQ(leaks["leaks"][0]["count"], 8000);
  EXPECT_EQ(leaks["leaks"][0]["stack"][0]["function"], "(anonymous namespace)::keep_one()");
}

TEST_F(FoldingTest, KeepTakesOnlyFoldedOrAll) {
  ProcessOptions bad;
  bad.argv = {VRAMTRACE_BIN, "run", "--keep", "some", "-o", trace(), "--", STEADY_LOOP_BIN, "1"};
  const ProcessResult result = run_process(bad);
  EXPECT_EQ(result.exit_code(), 2);
  EXPECT_NE(result.err.find("--keep"), std::string::npos) << result.err;
}

}  // namespace
}  // namespace vramtrace::test
