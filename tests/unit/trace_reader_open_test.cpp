// TraceReader::open() on everything that is not a readable trace: each way of failing has its
// own reason and a one-line message that names the file.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

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
                                 "build does not read: it reads schema 2); record it again");
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

}  // namespace
}  // namespace vramtrace::storage
