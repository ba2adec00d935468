// The writer's own thread (storage/trace_writer.h, Threading::kOwnThread) and the pipe that feeds
// it (storage/batch_pipe.h): the file it writes is the one the caller's thread writes, call for
// call; a failure on the thread reaches the caller; a full pipe holds the producer back.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "sql_query.h"
#include "storage/batch_pipe.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace::storage {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

// ---- BatchPipe ----

TEST(BatchPipeTest, EveryItemIsConsumedOnceInTheOrderPushed) {
  std::vector<int> consumed;  // the consumer's alone until stop() returns
  std::size_t largest_batch = 0;
  BatchPipe<int> pipe(64, 2, [&](std::vector<int>& batch) {
    largest_batch = std::max(largest_batch, batch.size());
    consumed.insert(consumed.end(), batch.begin(), batch.end());
  });
  for (int i = 0; i < 10007; ++i) pipe.push(i);  // not a multiple of the batch: a partial last
  pipe.stop();
  ASSERT_EQ(consumed.size(), 10007u);
  for (int i = 0; i < 10007; ++i) ASSERT_EQ(consumed[static_cast<std::size_t>(i)], i);
  EXPECT_LE(largest_batch, 64u);
}

TEST(BatchPipeTest, DrainReturnsOnceEveryItemPushedIsConsumed) {
  std::atomic<long> sum{0};
  BatchPipe<int> pipe(100, 3, [&](std::vector<int>& batch) {
    std::this_thread::sleep_for(1ms);  // a consumer slower than the producer
    for (const int item : batch) sum.fetch_add(item, std::memory_order_relaxed);
  });
  long expected = 0;
  for (int i = 1; i <= 2050; ++i) {
    pipe.push(i);
    expected += i;
  }
  pipe.drain();
  EXPECT_EQ(sum.load(), expected);
  pipe.push(5);  // the pipe goes on after a drain
  pipe.drain();
  EXPECT_EQ(sum.load(), expected + 5);
}

TEST(BatchPipeTest, AFullPipeHoldsTheProducerBackUntilTheConsumerTakesABatch) {
  std::mutex mutex;
  std::condition_variable released_cv;
  bool released = false;
  BatchPipe<int> pipe(1, 2, [&](std::vector<int>&) {
    std::unique_lock lock(mutex);
    released_cv.wait(lock, [&] { return released; });
  });
  std::atomic<int> pushed{0};
  std::thread producer([&] {
    for (int i = 0; i < 4; ++i) {
      pipe.push(i);
      pushed.store(i + 1);
    }
  });
  // Item 0 is with the blocked consumer and items 1 and 2 wait: item 3 must not get in.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (pushed.load() < 3 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  ASSERT_EQ(pushed.load(), 3);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(pushed.load(), 3) << "a push went past a full pipe";
  {
    std::lock_guard lock(mutex);
    released = true;
  }
  released_cv.notify_all();
  producer.join();
  EXPECT_EQ(pushed.load(), 4);
  pipe.stop();
}

// ---- TraceWriter on its own thread ----

ProcessRow a_process(std::int64_t upid) {
  ProcessRow row;
  row.upid = upid;
  row.pid = static_cast<std::uint32_t>(100 + upid);
  row.host = "host";
  row.exe = "/bin/app";
  row.argv = {"app", "--epochs", "3"};
  row.start_ns = 1000;
  row.unwinder = "frame-rules";
  return row;
}

AllocationRow an_allocation(std::int64_t id, std::uint64_t seq) {
  AllocationRow row;
  row.id = id;
  row.upid = 1;
  row.kind = id % 7 == 0 ? allocation_kind::kBlock : allocation_kind::kDevice;
  row.api = api::kCudaMalloc;
  row.address = 0x7f00'0000'0000 + static_cast<std::uint64_t>(id) * 0x1000;
  row.size = 4096 + static_cast<std::uint64_t>(id % 5) * 512;
  row.requested_size = row.size - 16;
  row.alloc_seq = seq;
  row.alloc_ns = 2000 + static_cast<std::int64_t>(seq) * 10;
  row.alloc_utid = 1;
  row.alloc_callsite_id = 1 + id % 2;
  if (row.kind == allocation_kind::kBlock) row.allocator_allocated = 4096 * id;
  return row;
}

FreeRow a_free(std::uint64_t seq) {
  FreeRow row;
  row.free_seq = seq;
  row.free_ns = 2000 + static_cast<std::int64_t>(seq) * 10;
  row.free_utid = 1;
  row.free_api = api::kCudaFree;
  return row;
}

// Every kind of call, many allocations (more than one batch of calls and more than the rows
// the writer holds back), frees soon and after a commit; with `undo_a_free`, a failed free
// undone (which ends the time index's upkeep: storage/trace_file_writer.h).
void write_every_kind_of_call(TraceWriter& writer, bool undo_a_free) {
  writer.set_command({"app", "--epochs", "3"});
  writer.set_meta("host", "host");
  writer.add_process(a_process(1));
  writer.add_thread(1, 1, 101);
  writer.set_thread_name(1, "main");
  writer.add_module(1, "/bin/app", "0badc0de");
  writer.add_mapping(1, 1, 1, 0x400000, 0x500000, 0);
  FrameRow frame;
  frame.id = 1;
  frame.module_id = 1;
  frame.rel_pc = 0x1234;
  frame.function = "train";
  frame.file = "train.py";
  frame.line = 42;
  writer.add_frame(frame);
  writer.add_callsite(1, std::nullopt, 1, 0);
  writer.add_callsite(2, 1, 1, 1);
  std::uint64_t seq = 1;
  std::vector<std::int64_t> held;  // freed only after a commit
  for (std::int64_t id = 1; id <= 20000; ++id) {
    writer.add_allocation(an_allocation(id, seq++));
    if (id % 10 == 0) {
      held.push_back(id);
    } else {
      writer.set_free(id, a_free(seq++));
    }
    if (id % 5000 == 0) writer.flush();
  }
  for (const std::int64_t id : held)
    if (id % 20 == 0) writer.set_free(id, a_free(seq++));
  if (undo_a_free) writer.clear_free(40);
  BadFreeRow bad;
  bad.id = 1;
  bad.upid = 1;
  bad.seq = seq++;
  bad.ns = 999999;
  bad.utid = 1;
  bad.api = api::kCudaFree;
  bad.address = 0xdead;
  bad.reason = std::string(kBadFreeUnknownAddress);
  writer.add_bad_free(bad);
  writer.fail_bad_free(1, 1, 2);
  MarkerRow marker;
  marker.id = 1;
  marker.upid = 1;
  marker.utid = 1;
  marker.type = std::string(kMarkerRange);
  marker.source = std::string(kMarkerFromNvtx);
  marker.name = "epoch";
  marker.start_seq = 1;
  marker.start_ns = 2000;
  writer.add_marker(marker);
  writer.end_marker(1, {seq, 2000 + static_cast<std::int64_t>(seq) * 10, 1});
  MemoryActivityRow activity;
  activity.id = 1;
  activity.upid = 1;
  activity.operation = "allocation";
  activity.kind = allocation_kind::kDevice;
  activity.correlation_id = 7;
  activity.address = 0x7f00'0000'1000;
  activity.size = 4096;
  activity.allocation_id = 1;
  writer.add_memory_activity(activity);
  writer.set_stat("collector_test_stat", Severity::kInfo, 3, "a stat");
  ProcessEndRow end;
  end.upid = 1;
  end.end_ns = 2000 + static_cast<std::int64_t>(seq + 1) * 10;
  end.exit_status = 0;
  end.complete = true;
  writer.end_process(end);
}

// Every row of every table, as text, but for the creation time (a wall-clock reading).
std::map<std::string, std::vector<std::string>> dump(const std::filesystem::path& path) {
  std::map<std::string, std::vector<std::string>> tables;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return tables;
  }
  std::vector<std::string> names;
  sqlite3_stmt* list = nullptr;
  sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name", -1,
                     &list, nullptr);
  while (sqlite3_step(list) == SQLITE_ROW)
    names.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(list, 0)));
  sqlite3_finalize(list);
  for (const std::string& name : names) {
    sqlite3_stmt* rows = nullptr;
    const std::string sql = "SELECT * FROM \"" + name + "\"" +
                            (name == "meta" ? " WHERE key != 'created_realtime_ns'" : "") +
                            " ORDER BY 1, 2";
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &rows, nullptr) != SQLITE_OK) {
      tables[name].push_back("<cannot read: " + std::string(sqlite3_errmsg(db)) + ">");
      continue;
    }
    std::vector<std::string>& out = tables[name];
    while (sqlite3_step(rows) == SQLITE_ROW) {
      std::string row;
      for (int c = 0; c < sqlite3_column_count(rows); ++c) {
        const auto* text = sqlite3_column_text(rows, c);
        row += (text != nullptr ? reinterpret_cast<const char*>(text) : "NULL");
        row += '|';
      }
      out.push_back(std::move(row));
    }
    sqlite3_finalize(rows);
  }
  sqlite3_close(db);
  return tables;
}

std::filesystem::path write_trace(const TempDir& dir, const std::string& name,
                                  TraceWriter::Threading threading, bool undo_a_free) {
  const auto path = dir / name;
  std::string error;
  auto writer = TraceWriter::create(path, &error, TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
                                    storage::TraceWriter::RollupUpkeep::kAsRowsArrive, threading);
  EXPECT_NE(writer, nullptr) << error;
  if (!writer) return path;
  write_every_kind_of_call(*writer, undo_a_free);
  EXPECT_TRUE(writer->finish(&error, TraceWriter::AllocationIndexes::kLeaveToTimeIndex)) << error;
  return path;
}

using Dump = std::map<std::string, std::vector<std::string>>;

void expect_same_tables(const Dump& direct, const Dump& threaded) {
  ASSERT_EQ(threaded.size(), direct.size());
  for (const auto& [table, rows] : direct) {
    ASSERT_TRUE(threaded.count(table)) << table;
    EXPECT_EQ(threaded.at(table), rows) << "table " << table;
  }
}

TEST(TraceWriterThreadingTest, ItsOwnThreadWritesTheTraceTheCallersThreadWrites) {
  TempDir dir;
  const Dump direct =
      dump(write_trace(dir, "direct.db", TraceWriter::Threading::kCallersThread, false));
  const Dump threaded =
      dump(write_trace(dir, "threaded.db", TraceWriter::Threading::kOwnThread, false));
  ASSERT_TRUE(direct.count("allocation_compact"));
  ASSERT_EQ(direct.at("allocation_compact").size(), 20000u);
  // The time index's tables were kept up: a span for the rows freed late, the rollups.
  ASSERT_TRUE(direct.count("live_span") && direct.count("live_bytes_bucket"));
  ASSERT_GT(direct.at("live_span").size(), 0u);
  ASSERT_GT(direct.at("live_bytes_bucket").size(), 0u);
  expect_same_tables(direct, threaded);
}

TEST(TraceWriterThreadingTest, ItsOwnThreadUndoesAFreeAsTheCallersThreadDoes) {
  TempDir dir;
  const Dump direct =
      dump(write_trace(dir, "direct.db", TraceWriter::Threading::kCallersThread, true));
  const Dump threaded =
      dump(write_trace(dir, "threaded.db", TraceWriter::Threading::kOwnThread, true));
  ASSERT_TRUE(direct.count("allocation_compact"));
  ASSERT_EQ(direct.at("allocation_compact").size(), 20000u);
  expect_same_tables(direct, threaded);
}

TEST(TraceWriterThreadingTest, AFailureOnItsThreadReachesTheCaller) {
  TempDir dir;
  std::string direct_error;
  {
    auto writer = TraceWriter::create(dir / "direct.db", &direct_error);
    ASSERT_NE(writer, nullptr) << direct_error;
    writer->add_process(a_process(1));
    writer->add_process(a_process(1));  // a upid twice: the table refuses it
    EXPECT_FALSE(writer->ok());
    EXPECT_FALSE(writer->finish(&direct_error));
  }
  std::string error;
  auto writer =
      TraceWriter::create(dir / "threaded.db", &error, TraceWriter::TimeIndexUpkeep::kNone,
                          TraceWriter::RollupUpkeep::kAtBuild, TraceWriter::Threading::kOwnThread);
  ASSERT_NE(writer, nullptr) << error;
  writer->add_process(a_process(1));
  writer->add_process(a_process(1));
  writer->flush();
  // The thread meets the failure after the calls returned: ok() and error() tell it then.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (writer->ok() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(1ms);
  EXPECT_FALSE(writer->ok());
  EXPECT_NE(writer->error().find("threaded.db"), std::string::npos) << writer->error();
  EXPECT_FALSE(writer->finish(&error));
  EXPECT_EQ(error.substr(error.find(": ")),
            direct_error.substr(direct_error.find(": ")));  // the same failure, its own file
  EXPECT_FALSE(writer->ok());
}

// A writer on its own thread, given a process and `count` live allocations.
std::unique_ptr<TraceWriter> threaded_writer_with(const std::filesystem::path& path,
                                                  std::int64_t count) {
  std::string error;
  auto writer =
      TraceWriter::create(path, &error, TraceWriter::TimeIndexUpkeep::kNone,
                          TraceWriter::RollupUpkeep::kAtBuild, TraceWriter::Threading::kOwnThread);
  EXPECT_NE(writer, nullptr) << error;
  if (!writer) return writer;
  writer->add_process(a_process(1));
  std::uint64_t seq = 1;
  for (std::int64_t id = 1; id <= count; ++id) writer->add_allocation(an_allocation(id, seq++));
  return writer;
}

TEST(TraceWriterThreadingTest, AFlushCommitsForReadersWhileTheWriterGoesOn) {
  TempDir dir;
  const auto path = dir / "live.db";
  auto writer = threaded_writer_with(path, 100);
  ASSERT_NE(writer, nullptr);
  writer->flush();
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  std::string seen;
  do {
    seen = testing::query_one(path, "SELECT count(*) FROM allocation");
    if (seen == "100") break;
    std::this_thread::sleep_for(1ms);
  } while (std::chrono::steady_clock::now() < deadline);
  EXPECT_EQ(seen, "100");
  EXPECT_EQ(testing::query_one(path, "SELECT value FROM meta WHERE key = 'complete'"), "0");
  std::string error;
  EXPECT_TRUE(writer->finish(&error)) << error;
  EXPECT_EQ(testing::query_one(path, "SELECT value FROM meta WHERE key = 'complete'"), "1");
}

// The nice value of each of this process's threads (field 19 of /proc/self/task/TID/stat).
std::vector<long> nice_values_of_threads() {
  std::vector<long> nice;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream stat(task.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const auto after_name = line.rfind(')');  // the name may hold spaces
    if (after_name == std::string::npos) continue;
    std::istringstream fields(line.substr(after_name + 2));
    std::string field;
    for (int i = 3; i <= 19 && fields >> field; ++i)
      if (i == 19) nice.push_back(std::stol(field));
  }
  return nice;
}

// The writer's thread never runs below its creator: starved behind a busy machine's other
// processes, it held the program back through the ring, and the end of the run, for tens of
// seconds. Checked at a nice value the thread could be set apart from: a thread made in the
// test starts at the test's, and the writer's must keep it.
TEST(TraceWriterThreadingTest, ItsThreadRunsAtItsCreatorsPriority) {
  TempDir dir;
  const auto own_nice = [] {
    errno = 0;
    return static_cast<long>(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())));
  };
  const long tests = own_nice();
  if (tests >= 19) GTEST_SKIP() << "the test already runs at the lowest priority";
  const long target = std::min(tests + 5, 19L);
  std::vector<long> during;
  long creators = 0;
  std::size_t threads_before = 0;
  // On a thread of its own, so that lowering its priority leaves the test's threads alone.
  std::thread creator([&] {
    setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), static_cast<int>(target));
    creators = own_nice();
    threads_before = nice_values_of_threads().size();
    auto writer = threaded_writer_with(dir / "nice.db", 1);
    ASSERT_NE(writer, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    do {
      during = nice_values_of_threads();
      if (during.size() == threads_before + 1) break;
      std::this_thread::sleep_for(1ms);
    } while (std::chrono::steady_clock::now() < deadline);
    std::string error;
    EXPECT_TRUE(writer->finish(&error)) << error;
  });
  creator.join();
  ASSERT_EQ(creators, target) << "the creator's priority was not set";
  ASSERT_EQ(during.size(), threads_before + 1) << "the writer's thread was not seen";
  // The test's other threads keep its priority; the creator and the writer's are at `target`.
  EXPECT_EQ(std::count(during.begin(), during.end(), target), 2) << "the writer's thread, niced";
  EXPECT_EQ(std::count(during.begin(), during.end(), tests), static_cast<long>(during.size()) - 2);
}

TEST(TraceWriterThreadingTest, DestroyedUnfinishedItWritesEveryCallAndLeavesTheTraceIncomplete) {
  TempDir dir;
  const auto path = dir / "unfinished.db";
  ASSERT_NE(threaded_writer_with(path, 9000), nullptr);  // destroyed at once, unfinished
  EXPECT_EQ(testing::query_one(path, "SELECT count(*) FROM allocation"), "9000");
  EXPECT_EQ(testing::query_one(path, "SELECT value FROM meta WHERE key = 'complete'"), "0");
}

}  // namespace
}  // namespace vramtrace::storage
