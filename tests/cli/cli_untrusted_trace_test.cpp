// Every report on traces that a scribbled ring or a hostile file can leave (docs/security.md):
// times that cannot be right, and callsites whose parents loop. Each report answers (exit 0,
// or gate's 1 for a failed check) and says what it could not take as it was.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <chrono>
#include <nlohmann/json.hpp>

#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using nlohmann::json;

class CliUntrustedTimesTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_untrusted_times_trace(trace_), ""); }

  CommandResult vramtrace(std::vector<std::string> args) {
    args.insert(args.begin() + 1, trace_.string());
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "times.db";
};

TEST_F(CliUntrustedTimesTest, EveryReportAnswers) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"summary"},
                                               {"leaks"},
                                               {"leaks", "--at", "peak"},
                                               {"timeline"},
                                               {"peak"},
                                               {"frag"},
                                               {"frag", "--at", "+1.5s"}}) {
    const CommandResult result = vramtrace(args);
    EXPECT_EQ(result.exit_status, 0) << args[0] << ": " << result.out << result.err;
    EXPECT_EQ(result.err, "") << args[0];
  }
}

TEST_F(CliUntrustedTimesTest, SummaryAndLeaksNameEachProblem) {
  const CommandResult summary = vramtrace({"summary"});
  ASSERT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_NE(summary.out.find("warning: process 7000 (/usr/bin/leaky): 1 event timed before the "
                             "process started (time_problem before_process_start, the first at "
                             "seq 3); reports over time take it as at its start\n"),
            std::string::npos)
      << summary.out;
  EXPECT_NE(summary.out.find("time_problem after_process_end, the first at seq 7"),
            std::string::npos);
  EXPECT_NE(summary.out.find("time_problem out_of_order, the first at seq 6"), std::string::npos);
  const CommandResult leaks = vramtrace({"leaks", "--format", "json"});
  ASSERT_EQ(leaks.exit_status, 0) << leaks.err;
  const json doc = json::parse(leaks.out);
  EXPECT_EQ(doc["warnings"].size(), 3u) << doc["warnings"];
  EXPECT_EQ(doc["total_bytes"], 4 * kMiB);  // a1, a3, a5, a6
}

TEST_F(CliUntrustedTimesTest, PeakIsTheFirstEventToReachTheMost) {
  const CommandResult result = vramtrace({"peak", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["peaks"].size(), 1u);
  EXPECT_EQ(doc["peaks"][0]["bytes"], 4 * kMiB);
  EXPECT_EQ(doc["peaks"][0]["seq"], 4);
}

class CliCallsiteCycleTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_callsite_cycle_trace(trace_), ""); }

  CommandResult vramtrace(std::vector<std::string> args) {
    args.insert(args.begin() + 1, trace_.string());
    return run_vramtrace(args, scratch_.path());
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "cycle.db";
  const std::string mark_ = "[stack cut: its callsites loop back in the trace]";
};

TEST_F(CliCallsiteCycleTest, PeakFinishesAndShowsTheCut) {
  const CommandResult text = vramtrace({"peak"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find(mark_), std::string::npos) << text.out;
  EXPECT_LT(line_count(text.out), 40u) << text.out;
  const CommandResult result = vramtrace({"peak", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["peaks"].size(), 1u);
  EXPECT_EQ(doc["peaks"][0]["bytes"], 7 * kMiB);
}

TEST_F(CliCallsiteCycleTest, LeaksPrintEachStackToItsCut) {
  const CommandResult text = vramtrace({"leaks"});
  ASSERT_EQ(text.exit_status, 0) << text.err;
  EXPECT_NE(text.out.find("    #2 " + mark_ + "\n"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("    #1 " + mark_ + "\n"), std::string::npos) << text.out;
  EXPECT_LT(line_count(text.out), 30u) << text.out;
  const CommandResult result = vramtrace({"leaks", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  const json doc = json::parse(result.out);
  ASSERT_EQ(doc["leaks"].size(), 3u);
  std::size_t cut = 0;
  for (const json& leak : doc["leaks"]) {
    const json& stack = leak["stack"];
    ASSERT_LE(stack.size(), 3u) << stack;
    if (stack.back().contains("cut")) {
      EXPECT_EQ(stack.back()["cut"], "cycle");
      EXPECT_EQ(stack.back()["function"], mark_);
      ++cut;
    }
  }
  EXPECT_EQ(cut, 2u);
}

TEST_F(CliCallsiteCycleTest, GateFinishesAndShowsTheCut) {
  const CommandResult result = vramtrace({"gate", "--max-leaked-bytes", "0"});
  EXPECT_EQ(result.exit_status, 1) << result.out << result.err;  // the check fails, no more
  EXPECT_NE(result.out.find(mark_), std::string::npos) << result.out;
  EXPECT_LT(line_count(result.out), 40u) << result.out;
}

// A trace is a file passed between people and CI jobs: one whose author added a view or a
// trigger of their own, or wrote an index row no vramtrace writes, must not hang or bloat a
// report. Each command runs under an alarm, so that a hang fails the test rather than waits.
class CliHostileTraceTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(write_synthetic_trace(trace_), ""); }

  void execute(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(trace_.c_str(), &db), SQLITE_OK);
    char* error = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error), SQLITE_OK)
        << (error != nullptr ? error : "");
    sqlite3_free(error);
    sqlite3_close(db);
  }
  // The alarm only stops a hang; a report on a hostile trace must end within kPromptly (the
  // reports here refuse or finish in milliseconds).
  static constexpr std::chrono::seconds kPromptly{5};
  CommandResult vramtrace(std::vector<std::string> args) {
    args.insert(args.begin() + 1, trace_.string());
    const auto started = std::chrono::steady_clock::now();
    CommandResult result = run_vramtrace_limited(args, scratch_.path(), {.alarm_seconds = 60});
    EXPECT_LT(std::chrono::steady_clock::now() - started, kPromptly) << args[0];
    return result;
  }
  // Every report refuses the trace at once: exit 2 and one line that names what it holds.
  void expect_every_report_refuses(const std::string& what) {
    const std::vector<std::vector<std::string>> reports = {
        {"summary"},  {"leaks"}, {"gate", "--max-leaked-bytes", "0"},
        {"timeline"}, {"peak"},  {"frag"},
        {"roles"},    {"oom"},   {"export", "--memory-viz", (dir_ / "out.pickle").string()}};
    for (const std::vector<std::string>& args : reports) {
      SCOPED_TRACE(args[0]);
      const CommandResult result = vramtrace(args);
      EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
      EXPECT_EQ(line_count(result.err), 1u) << result.err;
      EXPECT_NE(result.err.find(what + " that vramtrace did not write"), std::string::npos)
          << result.err;
    }
  }

  TempDir dir_;
  TempDir scratch_;
  std::filesystem::path trace_ = dir_ / "hostile.db";
};

TEST_F(CliHostileTraceTest, AViewThatNeverEndsIsRefusedBeforeAnyQuery) {
  execute(
      "DROP VIEW allocation; CREATE VIEW allocation AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL "
      "SELECT i + 1 FROM n) SELECT i AS id FROM n;");
  expect_every_report_refuses("view 'allocation'");
}

TEST_F(CliHostileTraceTest, AViewOrTriggerOfItsOwnIsRefused) {
  execute("CREATE VIEW extra AS SELECT 1;");
  expect_every_report_refuses("view 'extra'");
}

TEST_F(CliHostileTraceTest, ATriggerIsRefused) {
  execute("CREATE TRIGGER meddle AFTER INSERT ON meta BEGIN DELETE FROM meta; END;");
  expect_every_report_refuses("trigger 'meddle'");
}

// A size no allocation has (negative, text, a real), on allocations live at the end: every
// report refuses the trace as damaged, naming the column, rather than read a size it never had
// (before, a crafted size made `leaks` say "0 B leaked in 10 allocations" and the gate pass).
TEST_F(CliHostileTraceTest, ASizeNoAllocationHasIsDamage) {
  const std::string live = "(SELECT id FROM allocation WHERE result = 0 AND free_seq IS NULL)";
  for (const char* size : {"-1", "'abc'", "1.5e300"}) {
    SCOPED_TRACE(size);
    std::filesystem::remove(trace_);
    ASSERT_EQ(write_synthetic_trace(trace_), "");
    execute(std::string("UPDATE allocation_compact SET size = ") + size + " WHERE id IN " + live);
    for (const std::vector<std::string>& args : {std::vector<std::string>{"leaks"},
                                                 {"gate", "--max-leaked-bytes", "0"},
                                                 {"summary"},
                                                 {"peak"}}) {
      SCOPED_TRACE(args[0]);
      const CommandResult result = vramtrace(args);
      EXPECT_EQ(result.exit_status, 2) << result.out << result.err;
      EXPECT_NE(result.err.find("the trace is damaged: allocation.size holds"), std::string::npos)
          << result.err;
    }
  }
}

// A process row whose numbers are text: refused, naming the column, not read as pid 0.
TEST_F(CliHostileTraceTest, AProcessNumberThatIsTextIsDamage) {
  execute("UPDATE process SET pid = 'abc' WHERE upid = (SELECT min(upid) FROM process);");
  const CommandResult result = vramtrace({"summary"});
  EXPECT_EQ(result.exit_status, 2) << result.out;
  EXPECT_NE(result.err.find("process.pid holds 'abc', not an integer"), std::string::npos)
      << result.err;
}

// A trace without its process rows (before: export died of "map::at").
TEST_F(CliHostileTraceTest, ATraceWithoutItsProcessRowsIsExportedEmpty) {
  execute("DELETE FROM process;");
  const CommandResult result = vramtrace({"export", "--chrome", (dir_ / "out.json").string(),
                                          "--perfetto", (dir_ / "out.pftrace").string()});
  EXPECT_EQ(result.exit_status, 0) << result.err;
  EXPECT_NE(result.out.find("0 processes"), std::string::npos) << result.out;
}

// A time-index row far outside the index's span (before, `timeline --format json` filled
// buckets up to it: 3.5 GB).
TEST_F(CliHostileTraceTest, AnIndexRowOutsideTheSpanIsLeftOut) {
  const CommandResult built = vramtrace({"timeline"});  // builds the index, kept in the file
  ASSERT_EQ(built.exit_status, 0) << built.err;
  execute(
      "INSERT INTO live_bytes_bucket SELECT upid, device, kind, -1000000, 1, 2, 3 FROM "
      "live_bytes_bucket LIMIT 1;");
  const CommandResult result = vramtrace({"timeline", "--format", "json"});
  ASSERT_EQ(result.exit_status, 0) << result.err;
  EXPECT_LT(result.out.size(), 1'000'000u);
  const json doc = json::parse(result.out);
  EXPECT_FALSE(doc["series"].empty()) << result.out;
}

// Names a program (or whoever wrote the file) chose, with an escape sequence, a newline that
// would forge a line, and Markdown that would close a code block and start a heading and a link.
// Each output shows them without handing the terminal, the log or the CI summary anything raw:
// the reader gives the control characters as \xNN (storage/printable.h), Markdown escapes the
// rest.
class CliHostileNamesTest : public CliHostileTraceTest {
 protected:
  static constexpr const char* kHostile = "evil\x1b[2J\n# FORGED ``` [link](http://x) | cell";
  void SetUp() override {
    CliHostileTraceTest::SetUp();
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(trace_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* update = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE frame SET function = ?1", -1, &update, nullptr),
              SQLITE_OK);
    sqlite3_bind_text(update, 1, kHostile, -1, SQLITE_STATIC);
    EXPECT_EQ(sqlite3_step(update), SQLITE_DONE);
    sqlite3_finalize(update);
    sqlite3_close(db);
  }
  static void expect_nothing_raw(const std::string& text) {
    EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
    EXPECT_EQ(text.find("\n# FORGED"), std::string::npos) << text;
    EXPECT_NE(text.find("evil\\x1b[2J\\x0a# FORGED"), std::string::npos) << text;
  }
};

TEST_F(CliHostileNamesTest, TextReportsShowControlCharactersEscaped) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"leaks"}, {"leaks", "--native"}, {"peak"}, {"summary"}}) {
    SCOPED_TRACE(args[0]);
    const CommandResult result = vramtrace(args);
    ASSERT_EQ(result.exit_status, 0) << result.err;
    EXPECT_EQ(result.out.find('\x1b'), std::string::npos) << result.out;
    EXPECT_EQ(result.out.find("\n# FORGED"), std::string::npos) << result.out;
  }
  expect_nothing_raw(vramtrace({"leaks", "--native"}).out);
  const CommandResult gate = vramtrace({"gate", "--max-leaked-bytes", "0", "--native"});
  EXPECT_EQ(gate.exit_status, 1) << gate.err;
  expect_nothing_raw(gate.out);
}

TEST_F(CliHostileNamesTest, MarkdownKeepsTheNameInsideItsCodeBlock) {
  const std::filesystem::path md = dir_ / "gate.md";
  const CommandResult gate =
      vramtrace({"gate", "--max-leaked-bytes", "0", "--native", "--markdown", md.string()});
  EXPECT_EQ(gate.exit_status, 1) << gate.err;
  const std::string text = slurp(md);
  expect_nothing_raw(text);
  // The block's fence is longer than the name's ```: the name cannot close it.
  EXPECT_NE(text.find("\n````\n"), std::string::npos) << text;
}

// A test's id from pytest's parametrize can hold a pipe and backticks: the "Leaks by test" table
// keeps it in its cell, in a code span its backticks cannot close.
TEST_F(CliHostileNamesTest, ATestIdStaysInItsMarkdownCell) {
  execute(
      "INSERT INTO marker(id, upid, utid, type, source, name, start_seq, start_ns, end_seq, "
      "end_ns) SELECT 900, upid, (SELECT min(utid) FROM thread WHERE thread.upid = process.upid), "
      "'range', 'api', 'test:t[a|b]``x', 0, 0, 1000000, 0 FROM process ORDER BY upid LIMIT 1;");
  const std::filesystem::path md = dir_ / "tests.md";
  vramtrace({"gate", "--markdown", md.string()});
  const std::string text = slurp(md);
  const std::size_t row = text.find("\n| ```t[a\\|b]``x``` | ");
  ASSERT_NE(row, std::string::npos) << text;
  const std::string line = text.substr(row + 1, text.find('\n', row + 1) - row - 1);
  std::size_t cells = 0;  // unescaped pipes
  for (std::size_t i = 0; i < line.size(); ++i)
    cells += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
  EXPECT_EQ(cells, 3u) << line;
}

TEST_F(CliHostileNamesTest, JsonAndJUnitCarryTheNameEscapedForTheirFormat) {
  const CommandResult leaks = vramtrace({"leaks", "--format", "json"});
  ASSERT_EQ(leaks.exit_status, 0) << leaks.err;
  EXPECT_EQ(leaks.out.find('\x1b'), std::string::npos);
  const json doc = json::parse(leaks.out);
  bool found = false;
  for (const json& leak : doc["leaks"])
    for (const json& frame : leak["stack"])
      found = found || frame["function"] == "evil\\x1b[2J\\x0a# FORGED ``` [link](http://x) | cell";
  EXPECT_TRUE(found) << "JSON carries the name as every other output shows it";
  const std::filesystem::path xml = dir_ / "gate.xml";
  vramtrace({"gate", "--max-leaked-bytes", "0", "--junit", xml.string()});
  const std::string junit = slurp(xml);
  EXPECT_FALSE(junit.empty());
  EXPECT_EQ(junit.find('\x1b'), std::string::npos) << junit;
}

}  // namespace
}  // namespace vramtrace::testing
