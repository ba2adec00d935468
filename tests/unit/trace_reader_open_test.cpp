// TraceReader::open() on everything that is not a readable trace: each way of failing has its
// own reason and a one-line message that names the file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "random_trace.h"
#include "storage/trace_reader.h"
#include "synthetic_trace.h"
#include "temp_dir.h"

namespace vramtrace::storage {
namespace {

using Reason = OpenFailure::Reason;
using testing::TempDir;

OpenFailure open_failure(const std::filesystem::path& path) {
  OpenFailure failure;
  failure.message = "<open succeeded>";
  const auto reader = TraceReader::open(path, &failure);
  EXPECT_EQ(reader, nullptr) << path;
  EXPECT_NE(failure.message.find(path.string()), std::string::npos) << failure.message;
  EXPECT_EQ(failure.message.find('\n'), std::string::npos) << failure.message;
  return failure;
}

void write_file(const std::filesystem::path& path, const std::string& content) {
  std::ofstream(path, std::ios::binary) << content;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

void run_sql(const std::filesystem::path& path, const char* sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, sql, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(TraceReaderOpenTest, AMissingFile) {
  TempDir dir;
  const OpenFailure failure = open_failure(dir / "absent.db");
  EXPECT_EQ(failure.reason, Reason::kMissing);
  EXPECT_NE(failure.message.find("no such file"), std::string::npos);
}

TEST(TraceReaderOpenTest, ADirectory) {
  TempDir dir;
  EXPECT_EQ(open_failure(dir.path()).reason, Reason::kUnreadable);
}

TEST(TraceReaderOpenTest, AnEmptyFile) {
  TempDir dir;
  write_file(dir / "empty.db", "");
  const OpenFailure failure = open_failure(dir / "empty.db");
  EXPECT_EQ(failure.reason, Reason::kNotATrace);
  EXPECT_NE(failure.message.find("empty"), std::string::npos);
}

TEST(TraceReaderOpenTest, ATextFile) {
  TempDir dir;
  write_file(dir / "notes.txt", "these are not the bytes you are looking for\n");
  const OpenFailure failure = open_failure(dir / "notes.txt");
  EXPECT_EQ(failure.reason, Reason::kNotATrace);
  EXPECT_NE(failure.message.find("not an SQLite file"), std::string::npos);
}

TEST(TraceReaderOpenTest, AnSqliteDatabaseThatIsNotATrace) {
  TempDir dir;
  run_sql(dir / "other.db", "CREATE TABLE t(x); INSERT INTO t VALUES(1);");
  const OpenFailure failure = open_failure(dir / "other.db");
  EXPECT_EQ(failure.reason, Reason::kNotATrace);
  EXPECT_NE(failure.message.find("not a vramtrace trace"), std::string::npos);
}

TEST(TraceReaderOpenTest, ATraceWithATableMissing) {
  TempDir dir;
  const auto path = dir / "damaged.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  run_sql(path, "DROP VIEW allocation_view; DROP VIEW allocation;");
  const OpenFailure failure = open_failure(path);
  EXPECT_EQ(failure.reason, Reason::kNotATrace);
  EXPECT_NE(failure.message.find("'allocation'"), std::string::npos) << failure.message;
}

// Schema 2 stores allocations in four tables under the view; each is required.
TEST(TraceReaderOpenTest, ATraceWithATableUnderTheAllocationViewMissing) {
  for (const char* table :
       {"allocation_compact", "allocation_site", "free_site", "allocation_detail"}) {
    TempDir dir;
    const auto path = dir / "damaged.db";
    ASSERT_EQ(testing::write_synthetic_trace(path), "");
    run_sql(path, (std::string("DROP TABLE ") + table + ";").c_str());
    const OpenFailure failure = open_failure(path);
    EXPECT_EQ(failure.reason, Reason::kNotATrace) << table;
    EXPECT_NE(failure.message.find(std::string("'") + table + "'"), std::string::npos)
        << failure.message;
  }
}

// The synthetic trace at `path`, marked as schema `version`.
void write_trace_of_schema(const std::filesystem::path& path, int version) {
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  run_sql(path, ("PRAGMA user_version = " + std::to_string(version) + ";").c_str());
}

TEST(TraceReaderOpenTest, ATraceFromANewerVramtrace) {
  TempDir dir;
  const auto path = dir / "future.db";
  write_trace_of_schema(path, 99);
  const OpenFailure failure = open_failure(path);
  EXPECT_EQ(failure.reason, Reason::kNewerSchema);
  EXPECT_NE(failure.message.find("newer vramtrace"), std::string::npos);
  EXPECT_NE(failure.message.find("upgrade"), std::string::npos);
}

// Schema 1 kept allocations in a table; no release wrote it, and this build does not read it.
TEST(TraceReaderOpenTest, ATraceOfSchema1IsRefusedWithOneMessage) {
  TempDir dir;
  const auto path = dir / "schema_1.db";
  write_trace_of_schema(path, 1);
  const OpenFailure failure = open_failure(path);
  EXPECT_EQ(failure.reason, Reason::kOlderSchema);
  EXPECT_EQ(failure.message, path.string() +
                                 ": written by an older vramtrace (trace schema 1, which this "
                                 "build does not read: it reads schemas 2 to 4); record it again");
}

TEST(TraceReaderOpenTest, ATraceTruncatedAnywhere) {
  TempDir dir;
  const auto whole = dir / "whole.db";
  ASSERT_EQ(testing::write_synthetic_trace(whole), "");
  const std::string bytes = read_file(whole);
  ASSERT_GT(bytes.size(), 8192u);
  for (const std::size_t size :
       {std::size_t{10}, std::size_t{16}, std::size_t{99}, std::size_t{100}, std::size_t{4096},
        bytes.size() / 2, bytes.size() - 4096, bytes.size() - 1}) {
    SCOPED_TRACE(size);
    const auto path = dir / ("cut-" + std::to_string(size) + ".db");
    write_file(path, bytes.substr(0, size));
    const OpenFailure failure = open_failure(path);
    EXPECT_EQ(failure.reason, Reason::kCorrupt);
    EXPECT_NE(failure.message.find("truncated"), std::string::npos) << failure.message;
  }
}

// Damage that keeps the file's size: SQLite itself notices, at open() or at the first query
// that reaches the damaged pages. Either way the caller gets one line naming the file.
TEST(TraceReaderOpenTest, ATraceWithDamagedPages) {
  TempDir dir;
  const auto path = dir / "scribbled.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  std::string bytes = read_file(path);
  std::fill(bytes.begin() + 4096, bytes.end(), '\x5a');
  write_file(path, bytes);

  OpenFailure failure;
  const auto reader = TraceReader::open(path, &failure);
  std::string message = failure.message;
  if (reader != nullptr) {
    try {
      reader->allocations({});
      reader->processes();
      message = "<no error>";
    } catch (const TraceError& error) {
      message = error.what();
    }
  } else {
    EXPECT_EQ(failure.reason, Reason::kCorrupt);
  }
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_NE(message.find("corrupt"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(TraceReaderOpenTest, AnIncompleteTraceOpensWithItsFlagDown) {
  TempDir dir;
  const auto path = dir / "incomplete.db";
  ASSERT_EQ(testing::write_synthetic_trace(path, /*finish=*/false), "");
  OpenFailure failure;
  const auto reader = TraceReader::open(path, &failure);
  ASSERT_NE(reader, nullptr) << failure.message;
  EXPECT_FALSE(reader->complete());
  EXPECT_EQ(reader->allocations({}).size(), 12u);
  // No collector is writing it any more: reading must not leave SQLite's side files behind.
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-shm"));
}

TEST(TraceReaderOpenTest, ATraceWhosePathNeedsEscapingInAUri) {
  TempDir dir;
  const auto path = dir / "odd name?#%.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  OpenFailure failure;
  const auto reader = TraceReader::open(path, &failure);
  ASSERT_NE(reader, nullptr) << failure.message;
  EXPECT_EQ(reader->processes().size(), 2u);
}

TEST(TraceReaderOpenTest, AFifoIsRefusedWithoutBlocking) {
  TempDir dir;
  const auto path = dir / "pipe.db";
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
  const OpenFailure failure = open_failure(path);
  EXPECT_EQ(failure.reason, Reason::kUnreadable);
  EXPECT_NE(failure.message.find("FIFO"), std::string::npos) << failure.message;
}

// As `vramtrace run` killed while it indexes the trace by time leaves it: the trace's pages
// partly overwritten, and the journal that says what they held.
class InterruptedIndexTest : public ::testing::Test {
 protected:
  static constexpr std::int64_t kAllocations = 200000;

  void SetUp() override {
    ASSERT_EQ(testing::write_many_allocations_trace(path_, kAllocations), "");
    const std::string before = read_file(path_);
    ASSERT_EQ(testing::kill_while_indexing(path_), "");
    // Otherwise the test shows nothing: the file must be what only the journal can undo.
    ASSERT_NE(read_file(path_), before) << "the killed build did not write into the trace";
  }

  TempDir dir_;
  const std::filesystem::path path_ = dir_ / "interrupted.db";
};

TEST_F(InterruptedIndexTest, TheReaderRollsTheWriteBackAndReadsEverything) {
  OpenFailure failure;
  const auto reader = TraceReader::open(path_, &failure);
  ASSERT_NE(reader, nullptr) << failure.message;
  EXPECT_TRUE(reader->complete());
  EXPECT_EQ(reader->allocations({}).size(), static_cast<std::size_t>(kAllocations));
  EXPECT_EQ(reader->processes().size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(path_.string() + "-journal"));
}

// Where the user cannot write the trace's folder, the journal cannot be rolled back: one line
// says so and how to recover, and the two files are left as they are.
TEST_F(InterruptedIndexTest, InAFolderThisUserCannotWriteItSaysHowToRecover) {
  std::filesystem::permissions(dir_.path(), std::filesystem::perms(0555));
  std::string message;
  if (geteuid() != 0) {
    message = open_failure(path_).message;
  } else {
    // Root may write anywhere: read as nobody, in a child.
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(pipe_fds[0]);
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(3);
      OpenFailure failure;
      const auto reader = TraceReader::open(path_, &failure);
      const std::string out = reader ? "<open succeeded>" : failure.message;
      if (write(pipe_fds[1], out.data(), out.size()) < 0) _exit(4);
      _exit(0);
    }
    close(pipe_fds[1]);
    char buffer[4096];
    for (ssize_t n; (n = read(pipe_fds[0], buffer, sizeof buffer)) > 0;) message.append(buffer, n);
    close(pipe_fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  EXPECT_NE(message.find("interrupted"), std::string::npos) << message;
  EXPECT_NE(message.find("-journal"), std::string::npos) << message;
  EXPECT_NE(message.find("write access"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  EXPECT_TRUE(std::filesystem::exists(path_.string() + "-journal"));
  // With write access, the next reader recovers it.
  std::filesystem::permissions(dir_.path(), std::filesystem::perms::owner_all);
  OpenFailure failure;
  const auto reader = TraceReader::open(path_, &failure);
  ASSERT_NE(reader, nullptr) << failure.message;
  EXPECT_EQ(reader->allocations({}).size(), static_cast<std::size_t>(kAllocations));
}

// The synthetic trace with `column_definition` of `table` made nullable (as a trace edited, or
// written by another tool, can have it), then `sql` run on it.
void damage(const std::filesystem::path& path, const std::string& table,
            const std::string& column_definition, const std::string& sql) {
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  const std::string nullable = column_definition.substr(0, column_definition.find(" NOT NULL"));
  const std::string edit =
      "PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = "
      "replace(sql, '" +
      column_definition + "', '" + nullable + "') WHERE name = '" + table +
      "'; PRAGMA writable_schema = OFF;";
  run_sql(path, edit.c_str());
  run_sql(path, sql.c_str());
}

// What a query on the damaged trace threw; "" when it threw nothing.
template <typename Query>
std::string thrown_by(const std::filesystem::path& path, Query&& query) {
  OpenFailure failure;
  const auto reader = TraceReader::open(path, &failure);
  if (!reader) return "open failed: " + failure.message;
  try {
    query(*reader);
  } catch (const TraceError& error) {
    return error.what();
  }
  return "";
}

TEST(TraceReaderOpenTest, ANullWhereTheSchemaForbidsOneIsNamed) {
  TempDir dir;
  const auto path = dir / "null_argv.db";
  damage(path, "process", "argv TEXT NOT NULL", "UPDATE process SET argv = NULL WHERE upid = 2");
  const std::string message = thrown_by(path, [](const TraceReader& r) { r.processes(); });
  EXPECT_NE(message.find("process.argv is NULL"), std::string::npos) << message;
  EXPECT_NE(message.find("upid 2"), std::string::npos) << message;
  EXPECT_NE(message.find(path.string()), std::string::npos) << message;
  EXPECT_EQ(message.find("JSON"), std::string::npos) << message;

  const auto sizes = dir / "null_size.db";
  damage(sizes, "allocation_compact", "size INTEGER NOT NULL",
         "UPDATE allocation_compact SET size = NULL WHERE id = 3");
  const std::string size_message =
      thrown_by(sizes, [](const TraceReader& r) { r.allocations({}); });
  EXPECT_NE(size_message.find("allocation.size is NULL"), std::string::npos) << size_message;
  EXPECT_NE(size_message.find("id 3"), std::string::npos) << size_message;
}

TEST(TraceReaderOpenTest, AValueOutOfItsFieldsRangeIsNamed) {
  TempDir dir;
  const auto path = dir / "big_pid.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  run_sql(path, "UPDATE process SET pid = 1099511627776 WHERE upid = 1");
  const std::string message = thrown_by(path, [](const TraceReader& r) { r.processes(); });
  EXPECT_NE(message.find("process.pid holds 1099511627776"), std::string::npos) << message;
}

TEST(TraceReaderOpenTest, AnArgvThatIsNotJsonReadsAsItsTextAndIsNamed) {
  TempDir dir;
  const auto path = dir / "text_argv.db";
  ASSERT_EQ(testing::write_synthetic_trace(path), "");
  run_sql(path,
          "UPDATE process SET argv = 'leaky --size 1' WHERE upid = 1;"
          "UPDATE meta SET value = '{\"not\": \"an array\"}' WHERE key = 'command'");
  OpenFailure failure;
  const auto reader = TraceReader::open(path, &failure);
  ASSERT_NE(reader, nullptr) << failure.message;
  const auto processes = reader->processes();
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].start.argv, std::vector<std::string>{"leaky --size 1"});
  EXPECT_EQ(reader->recorded_command(), std::vector<std::string>{"{\"not\": \"an array\"}"});
  EXPECT_EQ(reader->allocations({}).size(), 12u);
  ASSERT_EQ(reader->damaged_fields().size(), 2u);
  EXPECT_NE(reader->damaged_fields()[0].find("process.argv of upid 1"), std::string::npos);
  EXPECT_NE(reader->damaged_fields()[1].find("meta 'command'"), std::string::npos);
}

}  // namespace
}  // namespace vramtrace::storage
