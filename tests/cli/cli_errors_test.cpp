// `vramtrace summary|leaks` on files that are not readable traces: exit status 2 and exactly
// one line on stderr naming the file, never a crash. `vramtrace run` given an output it cannot
// use, or a command that cannot start: the same, one line. And --help/--version exit 0.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/stat.h>

#include <nlohmann/json.hpp>

#include "random_trace.h"
#include "run_vramtrace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

class CliErrorsTest : public ::testing::Test {
 protected:
  // Runs both report commands in both formats on `path` and checks each fails cleanly.
  void expect_clean_failure(const std::filesystem::path& path, const std::string& words) {
    for (const std::string command : {"summary", "leaks"}) {
      for (const std::string format : {"text", "json"}) {
        SCOPED_TRACE(command + " --format " + format + " " + path.string());
        const CommandResult result =
            run_vramtrace({command, path.string(), "--format", format}, scratch_.path());
        EXPECT_EQ(result.exit_status, 2);
        EXPECT_EQ(line_count(result.err), 1u) << result.err;
        EXPECT_NE(result.err.find(path.string()), std::string::npos) << result.err;
        EXPECT_NE(result.err.find(words), std::string::npos) << result.err;
        EXPECT_EQ(result.err.rfind("vramtrace " + command + ": ", 0), 0u) << result.err;
        EXPECT_TRUE(result.out.empty()) << result.out;
      }
    }
  }

  void write(const std::filesystem::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }

  TempDir dir_;
  TempDir scratch_;
};

TEST_F(CliErrorsTest, AMissingFile) {
  expect_clean_failure(dir_ / "absent.db", "no such file");
}

TEST_F(CliErrorsTest, ATextFile) {
  write(dir_ / "notes.txt", "hello\nworld\n");
  expect_clean_failure(dir_ / "notes.txt", "not a vramtrace trace");
}

TEST_F(CliErrorsTest, AnEmptyFile) {
  write(dir_ / "empty.db", "");
  expect_clean_failure(dir_ / "empty.db", "empty");
}

TEST_F(CliErrorsTest, AnSqliteDatabaseThatIsNotATrace) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ / "other.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE allocation(x)", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  expect_clean_failure(dir_ / "other.db", "not a vramtrace trace");
}

// The synthetic trace at `path`, marked as schema `version`.
void write_trace_of_schema(const std::filesystem::path& path, int version) {
  ASSERT_EQ(write_synthetic_trace(path), "");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql = "PRAGMA user_version = " + std::to_string(version);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
}

TEST_F(CliErrorsTest, ATraceFromANewerVramtrace) {
  const auto path = dir_ / "future.db";
  write_trace_of_schema(path, 99);
  expect_clean_failure(path, "newer vramtrace");
}

TEST_F(CliErrorsTest, ATraceOfSchema1) {
  const auto path = dir_ / "schema_1.db";
  write_trace_of_schema(path, 1);
  expect_clean_failure(path, "written by an older vramtrace (trace schema 1");
}

TEST_F(CliErrorsTest, ARealTraceTruncatedAtSeveralOffsets) {
  const auto whole = dir_ / "whole.db";
  ASSERT_EQ(write_synthetic_trace(whole), "");
  const std::string bytes = slurp(whole);
  for (const std::size_t size :
       {std::size_t{8}, std::size_t{100}, std::size_t{4096}, bytes.size() / 2, bytes.size() - 1}) {
    const auto path = dir_ / ("cut-" + std::to_string(size) + ".db");
    write(path, bytes.substr(0, size));
    expect_clean_failure(path, "truncated");
  }
}

TEST_F(CliErrorsTest, ATraceWithScribbledPages) {
  const auto path = dir_ / "scribbled.db";
  ASSERT_EQ(write_synthetic_trace(path), "");
  std::string bytes = slurp(path);
  std::fill(bytes.begin() + 4096, bytes.end(), '\x5a');
  write(path, bytes);
  expect_clean_failure(path, "corrupt");
}

// `run -o OUTPUT ARGS -- /bin/sh -c 'echo ran'`, with --force if asked.
CommandResult run_into(const std::filesystem::path& output, bool force,
                       const std::filesystem::path& scratch) {
  std::vector<std::string> args{"run", "-o", output.string()};
  if (force) args.emplace_back("--force");
  args.insert(args.end(), {"--", "/bin/sh", "-c", "echo ran"});
  return run_vramtrace(args, scratch);
}

// A link planted where SQLite keeps a trace's shared memory, log or journal is refused before
// the command runs, in one line naming it, --force or not; the link and its target stay.
TEST_F(CliErrorsTest, RunRefusesALinkPlantedNextToItsOutputNamingIt) {
  namespace fs = std::filesystem;
  const auto victim = dir_ / "victim";
  write(victim, "precious");
  const auto trace = dir_ / "t.db";
  for (const std::string suffix : {"-shm", "-wal", "-journal"}) {
    const auto link = dir_ / ("t.db" + suffix);
    fs::create_symlink(victim, link);
    for (const bool force : {false, true}) {
      SCOPED_TRACE(suffix + (force ? " --force" : ""));
      const CommandResult result = run_into(trace, force, scratch_.path());
      EXPECT_EQ(result.exit_status, 2);
      EXPECT_EQ(line_count(result.err), 1u) << result.err;
      EXPECT_EQ(result.err.rfind("vramtrace run: " + link.string() +
                                     " is in the way: it is a symbolic link where SQLite keeps",
                                 0),
                0u)
          << result.err;
      EXPECT_NE(result.err.find("remove it"), std::string::npos) << result.err;
      EXPECT_TRUE(result.out.empty()) << result.out;  // the command did not run
      EXPECT_TRUE(fs::is_symlink(link));
      EXPECT_FALSE(fs::exists(fs::symlink_status(trace)));
    }
    fs::remove(link);
  }
  EXPECT_EQ(slurp(victim), "precious");
}

// --force replaces a file, never a directory, empty or not; and a directory is called one.
TEST_F(CliErrorsTest, RunNeverReplacesADirectory) {
  namespace fs = std::filesystem;
  const auto empty = dir_ / "empty.db";
  const auto full = dir_ / "full.db";
  fs::create_directory(empty);
  fs::create_directory(full);
  write(full / "kept", "precious");
  for (const auto& directory : {empty, full}) {
    for (const bool force : {false, true}) {
      SCOPED_TRACE(directory.string() + (force ? " --force" : ""));
      const CommandResult result = run_into(directory, force, scratch_.path());
      EXPECT_EQ(result.exit_status, 2);
      EXPECT_EQ(line_count(result.err), 1u) << result.err;
      EXPECT_EQ(result.err.rfind("vramtrace run: " + directory.string() + " is a directory", 0), 0u)
          << result.err;
      EXPECT_EQ(result.err.find("use --force"), std::string::npos) << result.err;
      EXPECT_TRUE(result.out.empty()) << result.out;
      EXPECT_TRUE(fs::is_directory(directory));
    }
  }
  EXPECT_EQ(slurp(full / "kept"), "precious");
  EXPECT_EQ(std::distance(fs::directory_iterator(empty), fs::directory_iterator()), 0);
}

// A command that cannot start records nothing, and leaves nothing: its status (127 not
// found, 126 not executable) and one line. One that starts and exits 127 keeps its trace.
TEST_F(CliErrorsTest, RunOfACommandThatCannotStartLeavesNoTrace) {
  namespace fs = std::filesystem;
  const auto data = dir_ / "data.txt";
  write(data, "not a program\n");  // 0644: no one may execute it, root included
  const auto trace = dir_ / "t.db";
  struct Case {
    std::string command;
    int status;
    std::string reason;
  };
  for (const Case& c : {Case{(dir_ / "absent").string(), 127, "No such file or directory"},
                        Case{"vramtrace-no-such-command", 127, "No such file or directory"},
                        Case{data.string(), 126, "Permission denied"}}) {
    SCOPED_TRACE(c.command);
    const CommandResult result =
        run_vramtrace({"run", "-o", trace.string(), "--", c.command}, scratch_.path());
    EXPECT_EQ(result.exit_status, c.status);
    EXPECT_EQ(result.err, "vramtrace run: cannot run '" + c.command + "': " + c.reason +
                              "; no trace was written\n");
    for (const std::string suffix : {"", "-wal", "-shm", "-journal"})
      EXPECT_FALSE(fs::exists(fs::symlink_status(trace.string() + suffix))) << suffix;
  }
  const CommandResult started = run_vramtrace(
      {"run", "-o", trace.string(), "--", "/bin/sh", "-c", "exit 127"}, scratch_.path());
  EXPECT_EQ(started.exit_status, 127) << started.err;
  EXPECT_TRUE(fs::exists(trace)) << started.err;
}

// A ring size the shim would not take is refused before anything is created or run: the
// option's and the environment variable's alike, never replaced by some other size.
TEST_F(CliErrorsTest, ARingSizeThatIsNotOne) {
  const auto trace = dir_ / "t.db";
  const auto marker = dir_ / "ran";
  const std::string command = "touch " + marker.string();
  struct Case {
    std::string value, reason;
  };
  const std::string how = "give bytes with an optional K, M or G suffix, from 64K to 1G";
  for (const Case& c : {Case{"abc", "is not a size; " + how}, Case{"-5", "is not a size; " + how},
                        Case{"8.5M", "is not a size; " + how}, Case{"", "is empty; " + how},
                        Case{"1000", "is smaller than the smallest ring, 64K"},
                        Case{"2G", "is larger than the largest ring, 1G"},
                        Case{"1T", "is larger than the largest ring, 1G"}}) {
    SCOPED_TRACE(c.value);
    CommandResult result = run_vramtrace(
        {"run", "--ring-size", c.value, "-o", trace.string(), "--", "/bin/sh", "-c", command},
        scratch_.path());
    EXPECT_EQ(result.exit_status, 2);
    EXPECT_EQ(result.err, "vramtrace run: --ring-size '" + c.value + "' " + c.reason + "\n");
    result = run_vramtrace({"run", "-o", trace.string(), "--", "/bin/sh", "-c", command},
                           scratch_.path(), {"VRAMTRACE_RING_BYTES=" + c.value});
    EXPECT_EQ(result.exit_status, 2);
    EXPECT_EQ(result.err,
              "vramtrace run: VRAMTRACE_RING_BYTES '" + c.value + "' " + c.reason + "\n");
    EXPECT_FALSE(std::filesystem::exists(trace));
    EXPECT_FALSE(std::filesystem::exists(marker));
  }
}

TEST_F(CliErrorsTest, AFifo) {
  // Opened as a file, a FIFO blocks until something writes to it: the command would hang.
  ASSERT_EQ(mkfifo((dir_ / "pipe.db").c_str(), 0600), 0);
  expect_clean_failure(dir_ / "pipe.db", "FIFO");
}

// `vramtrace run` killed (SIGKILL, or the machine going down) while it indexes the trace by
// time leaves the trace's pages partly overwritten and a hot journal beside them. Each report,
// the first to meet that trace, rolls the write back and reads every allocation.
TEST_F(CliErrorsTest, EveryReportReadsATraceWhoseIndexingWasKilled) {
  constexpr std::int64_t kAllocations = 200000;
  const auto killed = dir_ / "killed";
  std::filesystem::create_directory(killed);
  const auto trace = killed / "run.db";
  ASSERT_EQ(write_many_allocations_trace(trace, kAllocations), "");
  ASSERT_EQ(kill_while_indexing(trace), "");
  const std::vector<std::vector<std::string>> reports{
      {"summary", "--format", "json"},
      {"leaks", "--format", "json"},
      {"timeline", "--format", "json"},
      {"peak", "--format", "json"},
      {"frag", "--format", "json"},
      {"oom", "--format", "json"},
      {"gate", "--max-leaked-count", std::to_string(kAllocations / 2)},
      {"export", "--no-allocation-events", "--chrome", (dir_ / "out.json").string(), "--force"},
      {"diff"},
  };
  for (const auto& report : reports) {
    SCOPED_TRACE(report[0]);
    // Each report meets the trace as the killed run left it.
    const auto copy = dir_ / report[0];
    std::filesystem::create_directory(copy);
    for (const char* suffix : {"", "-journal"}) {
      std::filesystem::copy_file(killed / ("run.db" + std::string(suffix)),
                                 copy / ("run.db" + std::string(suffix)));
    }
    std::vector<std::string> args{report[0], (copy / "run.db").string()};
    if (report[0] == "diff") args.push_back((copy / "run.db").string());
    args.insert(args.end(), report.begin() + 1, report.end());
    const CommandResult result = run_vramtrace(args, scratch_.path());
    EXPECT_EQ(result.exit_status, 0) << result.err;
    EXPECT_FALSE(std::filesystem::exists(copy / "run.db-journal"));
    if (report[0] == "summary") {
      const auto summary = nlohmann::json::parse(result.out, nullptr, false);
      ASSERT_FALSE(summary.is_discarded()) << result.out;
      EXPECT_EQ(summary.at("kinds").at(0).at("allocations"), kAllocations);
      EXPECT_EQ(summary.at("incomplete"), false);
    }
    if (report[0] == "leaks") {
      const auto leaks = nlohmann::json::parse(result.out, nullptr, false);
      ASSERT_FALSE(leaks.is_discarded()) << result.out;
      EXPECT_EQ(leaks.at("total_count"), kAllocations / 2);
    }
  }
}

TEST_F(CliErrorsTest, ANullWhereTheSchemaForbidsOneIsNamedByEveryCommand) {
  const auto path = dir_ / "null_argv.db";
  ASSERT_EQ(write_synthetic_trace(path), "");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = "
                         "replace(sql, 'argv TEXT NOT NULL', 'argv TEXT') WHERE name = 'process';",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(
      sqlite3_exec(db, "UPDATE process SET argv = NULL WHERE upid = 1", nullptr, nullptr, nullptr),
      SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  expect_clean_failure(path, "process.argv is NULL");
  // merge blames the input, not the file it writes.
  const CommandResult merged =
      run_vramtrace({"merge", path.string(), "-o", (dir_ / "merged.db").string()}, scratch_.path());
  EXPECT_EQ(merged.exit_status, 2);
  EXPECT_EQ(line_count(merged.err), 1u) << merged.err;
  EXPECT_NE(merged.err.find(path.string() + ": the trace is damaged: process.argv is NULL"),
            std::string::npos)
      << merged.err;
  EXPECT_FALSE(std::filesystem::exists(dir_ / "merged.db"));
}

// A process.argv that is not JSON: every report reads the trace, shows the text as it is and
// names the field in its warnings; merge keeps it as it is.
TEST_F(CliErrorsTest, AnArgvThatIsNotJsonIsReadAndNamedByEveryCommand) {
  const auto path = dir_ / "text_argv.db";
  ASSERT_EQ(write_synthetic_trace(path), "");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE process SET argv = 'leaky --size 1' WHERE upid = 1", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  for (const std::string command : {"summary", "leaks"}) {
    SCOPED_TRACE(command);
    const CommandResult result =
        run_vramtrace({command, path.string(), "--format", "json"}, scratch_.path());
    EXPECT_EQ(result.exit_status, 0) << result.err;
    const auto report = nlohmann::json::parse(result.out, nullptr, false);
    ASSERT_FALSE(report.is_discarded()) << result.out;
    EXPECT_NE(report.at("warnings").dump().find("process.argv of upid 1 is not a JSON array"),
              std::string::npos)
        << report.at("warnings").dump();
    if (command == "summary") {
      EXPECT_EQ(report.at("processes").at(0).at("argv"), nlohmann::json::array({"leaky --size 1"}));
    }
  }
  const auto merged = dir_ / "merged.db";
  const CommandResult merge =
      run_vramtrace({"merge", path.string(), "-o", merged.string()}, scratch_.path());
  EXPECT_EQ(merge.exit_status, 0) << merge.err;
  const CommandResult summary =
      run_vramtrace({"summary", merged.string(), "--format", "json"}, scratch_.path());
  EXPECT_EQ(summary.exit_status, 0) << summary.err;
  EXPECT_NE(summary.out.find("process.argv of upid 1 is not a JSON array"), std::string::npos);
}

TEST_F(CliErrorsTest, UsageErrorsExit2WithOneLine) {
  const std::vector<std::vector<std::string>> usages{
      {},
      {"frobnicate"},
      {"leaks"},
      {"summary", "a.db", "--format", "xml"},
      {"leaks", "a.db", "--no-such-option"},
  };
  for (const auto& args : usages) {
    const CommandResult result = run_vramtrace(args, scratch_.path());
    EXPECT_EQ(result.exit_status, 2) << ::testing::PrintToString(args);
    EXPECT_EQ(line_count(result.err), 1u) << result.err;
  }
}

TEST_F(CliErrorsTest, HelpAndVersionExit0AndDocumentTheExitStatus) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"summary", "--help"}, {"leaks", "--help"}}) {
    const CommandResult result = run_vramtrace(args, scratch_.path());
    EXPECT_EQ(result.exit_status, 0) << ::testing::PrintToString(args);
    EXPECT_NE(result.out.find("Exit status"), std::string::npos) << result.out;
    EXPECT_TRUE(result.err.empty()) << result.err;
  }
  const CommandResult leaks_help = run_vramtrace({"leaks", "--help"}, scratch_.path());
  EXPECT_NE(leaks_help.out.find("--format"), std::string::npos) << leaks_help.out;

  const CommandResult version = run_vramtrace({"--version"}, scratch_.path());
  EXPECT_EQ(version.exit_status, 0);
  EXPECT_EQ(version.out, "vramtrace " VRAMTRACE_VERSION "\n");
}

}  // namespace
}  // namespace vramtrace::testing
