// A steady loop's trace with its repeated bins folded into runs (storage/chunk_repeat.h, the
// default of `vramtrace run`) answers every report exactly as the same events kept in full
// (`run --keep all`): the same events are written twice through the real writer, as the
// collector writes them (indexes and rollups kept up, commits every 65,536 events), once packed
// and once packed and folded. Times rise by 1 µs an event, so that the times a run spreads over
// its instances are the true ones and even reports of times must agree to the byte. The loop
// leaks from one iteration on (a leak that begins late), fails one allocation later (an OOM),
// and a second process allocates beside it at the start and the end only.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "run_vramtrace.h"
#include "sql_query.h"
#include "storage/schema.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace::testing {
namespace {

using storage::TraceWriter;
namespace kind = storage::allocation_kind;
namespace api = storage::api;

constexpr std::int64_t kIterations = 12'000;
constexpr std::int64_t kLeakFrom = 7'000;
constexpr std::int64_t kOomAt = 9'000;
constexpr std::uint64_t kEventsPerCommit = 65'536;

enum Callsite : std::int64_t { kMain = 1, kTemporaries, kKeepOne, kAskTooMuch, kWorker };

class LoopWriter {
 public:
  explicit LoopWriter(TraceWriter& writer) : writer_(writer) {}

  void write() {
    write_process(1, 100, "loop");
    write_process(2, 200, "worker");
    write_stacks();
    std::vector<std::int64_t> worker_live;
    for (std::int64_t i = 0; i < kIterations; ++i) {
      if (i < 100 && i % 10 == 0) worker_live.push_back(allocate(2, kWorker, 65536, 0x50000 + i));
      const std::int64_t marker = next_marker_++;
      storage::MarkerRow range;
      range.id = marker;
      range.upid = 1;
      range.utid = 1;
      range.type = storage::kMarkerRange;
      range.source = storage::kMarkerFromApi;
      range.name = "iteration";
      range.start_seq = next_seq(1);
      range.start_ns = ns_of(1, range.start_seq);
      writer_.add_marker(range);
      for (int j = 0; j < 8; ++j) {
        const std::uint64_t size = std::uint64_t{256} << (j % 4);
        free(1, allocate(1, kTemporaries, size, 0x7f0000000000 + (j % 4) * 0x100000));
      }
      const std::int64_t a = allocate(1, kTemporaries, 1 << 20, 0x7f1000000000);
      free(1, allocate(1, kTemporaries, 3 << 18, 0x7f2000000000));
      free(1, a);
      if (i >= kLeakFrom) allocate(1, kKeepOne, 4096, 0x7e0000000000 + (i - kLeakFrom) * 4096);
      if (i == kOomAt) allocate(1, kAskTooMuch, std::uint64_t{1} << 50, 0, 2);
      storage::MarkerEndRow end;
      end.end_seq = next_seq(1);
      end.end_ns = ns_of(1, end.end_seq);
      end.end_utid = 1;
      writer_.end_marker(marker, end);
    }
    for (const std::int64_t id : worker_live) free(2, id);
    for (const std::int64_t upid : {1, 2}) {
      storage::ProcessEndRow end;
      end.upid = upid;
      end.end_ns = ns_of(upid, seq_[upid] + 1);
      end.exit_status = 0;
      end.complete = true;
      writer_.end_process(end);
    }
  }

 private:
  static std::int64_t ns_of(std::int64_t upid, std::uint64_t seq) {
    return 5'000'000'000 + 1'000 * static_cast<std::int64_t>(seq) + upid;
  }

  std::uint64_t next_seq(std::int64_t upid) {
    const std::uint64_t seq = ++seq_[upid];
    if (upid == 1 && seq % kEventsPerCommit == 0) writer_.flush();
    return seq;
  }

  void write_process(std::int64_t upid, std::uint32_t pid, const std::string& exe) {
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = pid;
    process.host = "node";
    process.exe = "/opt/loop/bin/" + exe;
    process.argv = {exe};
    process.start_ns = ns_of(upid, 0);
    writer_.add_process(process);
    writer_.add_thread(upid, upid, pid);
  }

  void write_stacks() {
    writer_.add_module(1, "/opt/loop/bin/loop", "ab12");
    const struct {
      std::int64_t id;
      const char* function;
      int line;
      std::optional<std::int64_t> parent;
    } frames[] = {{kMain, "main", 10, std::nullopt},
                  {kTemporaries, "temporaries", 20, kMain},
                  {kKeepOne, "keep_one", 30, kMain},
                  {kAskTooMuch, "ask_too_much", 40, kMain},
                  {kWorker, "worker", 50, std::nullopt}};
    for (const auto& f : frames) {
      writer_.add_frame({f.id, 1, static_cast<std::uint64_t>(0x1000 * f.id), f.function, "loop.cpp",
                         f.line, false});
      writer_.add_callsite(f.id, f.parent, f.id, f.parent ? 1 : 0);
    }
  }

  std::int64_t allocate(std::int64_t upid, std::int64_t callsite, std::uint64_t size,
                        std::uint64_t address, int result = 0) {
    storage::AllocationRow row;
    row.id = next_id_++;
    row.upid = upid;
    row.kind = kind::kDevice;
    row.api = api::kCudaMalloc;
    row.address = address;
    row.size = row.requested_size = size;
    row.result = result;
    row.alloc_seq = next_seq(upid);
    row.alloc_ns = ns_of(upid, row.alloc_seq);
    row.alloc_utid = upid;
    row.alloc_callsite_id = callsite;
    writer_.add_allocation(row);
    return row.id;
  }

  void free(std::int64_t upid, std::int64_t id) {
    storage::FreeRow row;
    row.free_seq = next_seq(upid);
    row.free_ns = ns_of(upid, row.free_seq);
    row.free_utid = upid;
    row.free_api = api::kCudaFree;
    writer_.set_free(id, row);
  }

  TraceWriter& writer_;
  std::map<std::int64_t, std::uint64_t> seq_{{1, 0}, {2, 0}};
  std::int64_t next_id_ = 1, next_marker_ = 1;
};

void write_loop(const std::filesystem::path& path, TraceWriter::AllocationPacking packing) {
  std::string error;
  auto writer = TraceWriter::create(path, &error, TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
                                    TraceWriter::RollupUpkeep::kAsRowsArrive,
                                    TraceWriter::Threading::kOwnThread, packing);
  ASSERT_NE(writer, nullptr) << error;
  LoopWriter(*writer).write();
  ASSERT_TRUE(writer->finish(&error)) << error;
}

class CliFoldedReportsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    write_loop(folded(), TraceWriter::AllocationPacking::kPackAndFoldRepeats);
    write_loop(full(), TraceWriter::AllocationPacking::kPackShortLives);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::filesystem::path folded() { return *dir_ / "folded.db"; }
  static std::filesystem::path full() { return *dir_ / "full.db"; }

  // The report on both traces, each trace's name replaced by TRACE: equal in status, output and
  // message.
  void expect_same_report(std::vector<std::string> args) {
    SCOPED_TRACE(::testing::PrintToString(args));
    const auto on = [&](const std::filesystem::path& trace) {
      std::vector<std::string> with_trace;
      for (const std::string& arg : args)
        with_trace.push_back(arg == "TRACE" ? trace.string() : arg);
      CommandResult result = run_vramtrace(with_trace, scratch_.path());
      for (std::string* text : {&result.out, &result.err})
        for (std::size_t at; (at = text->find(trace.string())) != std::string::npos;)
          text->replace(at, trace.string().size(), "TRACE");
      return result;
    };
    CommandResult a = on(folded()), b = on(full());
    // What differs by design: the folded trace's stats say what it folded.
    if (args.front() == "summary") {
      EXPECT_NE(a.out.find("storage_folded_allocations"), std::string::npos);
      for (CommandResult* result : {&a, &b}) without_folding_stats(&result->out);
    }
    EXPECT_EQ(a.exit_status, b.exit_status) << a.err << b.err;
    EXPECT_EQ(a.out, b.out);
    EXPECT_EQ(a.err, b.err);
    EXPECT_FALSE(a.out.empty() && a.err.empty());
  }

  // A summary without the stats of folding: its JSON's entries, or its text's lines (and the
  // heading of stats, when nothing else is under it).
  static void without_folding_stats(std::string* out) {
    nlohmann::json doc = nlohmann::json::parse(*out, nullptr, false);
    if (!doc.is_discarded()) {
      nlohmann::json& stats = doc["stats"];
      for (auto it = stats.begin(); it != stats.end();)
        it = it->at("name").get<std::string>().starts_with("storage_folded_") ? stats.erase(it)
                                                                              : it + 1;
      *out = doc.dump(2);
      return;
    }
    std::string kept;
    std::size_t at = 0;
    while (at < out->size()) {
      const std::size_t end = std::min(out->find('\n', at), out->size());
      const std::string line = out->substr(at, end - at);
      if (line.find("storage_folded_") == std::string::npos) kept += line + "\n";
      at = end + 1;
    }
    const std::string empty_heading = "\nimport stats:\n";
    if (kept.ends_with(empty_heading)) kept.resize(kept.size() - empty_heading.size());
    *out = kept;
  }

  static TempDir* dir_;
  TempDir scratch_;
};

TempDir* CliFoldedReportsTest::dir_ = nullptr;

TEST_F(CliFoldedReportsTest, TheFoldedTraceKeepsRunsInsteadOfRepeatedBins) {
  const auto count = [](const std::filesystem::path& trace, const std::string& sql) {
    return std::stoll(testing::query_one(trace, sql));
  };
  // Most bins of the loop are instances of runs, and the stats say how many allocations.
  const std::int64_t folded_bins =
      count(folded(), "SELECT coalesce(sum(repeats), 0) FROM allocation_chunk_repeat");
  EXPECT_GT(folded_bins, 30);  // of about 70
  EXPECT_EQ(count(folded(), "SELECT value FROM stats WHERE name = 'storage_folded_bins'"),
            folded_bins);
  EXPECT_EQ(count(folded(), "SELECT value FROM stats WHERE name = 'storage_folded_allocations'"),
            count(folded(), "SELECT sum(repeats * count) FROM allocation_chunk_repeat"));
  EXPECT_LT(count(folded(), "SELECT count(*) FROM allocation_chunk_repeat"), 40);
  const std::string packed_text = "SELECT sum(length(allocations)) FROM allocation_chunk";
  EXPECT_LT(count(folded(), packed_text) * 2, count(full(), packed_text));
  EXPECT_LT(std::filesystem::file_size(folded()), std::filesystem::file_size(full()));
  EXPECT_EQ(testing::query_one(folded(), "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersion));
  // Kept in full: no run, and a trace a reader of schema 3 reads.
  EXPECT_EQ(count(full(), "SELECT count(*) FROM allocation_chunk_repeat"), 0);
  EXPECT_EQ(testing::query_one(full(), "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersionWithChunks));
  // The view shows every allocation of both alike, times included.
  const std::string every =
      "SELECT count(*), sum(id), sum(alloc_seq), sum(free_seq), sum(address % 1000003), "
      "sum(size), sum(alloc_ns % 1000003), sum(free_ns % 1000003), sum(alloc_callsite_id) "
      "FROM allocation";
  EXPECT_EQ(testing::query_one(folded(), every), testing::query_one(full(), every));
}

TEST_F(CliFoldedReportsTest, TheReportsAtTheEndAreTheSame) {
  expect_same_report({"summary", "TRACE"});
  expect_same_report({"summary", "TRACE", "--format", "json"});
  expect_same_report({"leaks", "TRACE", "--format", "json"});
  expect_same_report({"peak", "TRACE", "--format", "json"});
  expect_same_report({"oom", "TRACE", "--format", "json"});
  expect_same_report({"frag", "TRACE", "--pid", "100", "--format", "json"});
  expect_same_report(
      {"gate", "TRACE", "--max-leaked-bytes", "0", "--max-growth", "1KiB", "--format", "json"});
}

TEST_F(CliFoldedReportsTest, TheReportsOverTimeAreTheSame) {
  expect_same_report({"timeline", "TRACE", "--format", "json"});
  // Finer than the rollups: read from the events themselves, inside the runs.
  expect_same_report({"timeline", "TRACE", "--format", "json", "--buckets", "16384"});
  expect_same_report({"leaks", "TRACE", "--growth", "iteration", "--format", "json"});
  // Moments inside folded stretches, before the leak and after it: a marker, an event's
  // number, a time.
  for (const std::string moment : {"iteration#3000", "iteration#10000", "seq:100001", "seq:95555",
                                   "seq:250007", "+50ms", "+250ms"}) {
    expect_same_report({"leaks", "TRACE", "--pid", "100", "--at", moment, "--format", "json"});
    expect_same_report({"frag", "TRACE", "--pid", "100", "--at", moment, "--format", "json"});
  }
  expect_same_report({"leaks", "TRACE", "--pid", "100", "--between", "iteration#2000",
                      "iteration#8000", "--format", "json"});
  expect_same_report({"diff", "TRACE", "TRACE", "--format", "json"});
}

TEST_F(CliFoldedReportsTest, TheExportsAreTheSame) {
  for (const std::string format : {"--chrome", "--perfetto"}) {
    SCOPED_TRACE(format);
    const std::filesystem::path a = scratch_.path() / "folded.out",
                                b = scratch_.path() / "full.out";
    const CommandResult folded_export = run_vramtrace(
        {"export", folded().string(), format, a.string(), "--force"}, scratch_.path());
    ASSERT_EQ(folded_export.exit_status, 0) << folded_export.err;
    const CommandResult full_export =
        run_vramtrace({"export", full().string(), format, b.string(), "--force"}, scratch_.path());
    ASSERT_EQ(full_export.exit_status, 0) << full_export.err;
    EXPECT_EQ(slurp(a), slurp(b));
  }
}

}  // namespace
}  // namespace vramtrace::testing
