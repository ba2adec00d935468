// Repeated bins stored as runs (storage/chunk_repeat.h) read back exactly as the chunks they
// stand for: a trace of a steady loop is written with its short lives packed, then its chunks
// that repeat an earlier one are folded into runs of allocation_chunk_repeat (as the writer
// folds them, but by this test, so that every shape a reader must handle is there: long runs,
// runs cut short, a bin that breaks a run, bins holding a stored chunk and an instance, bins
// holding two instances, a process's last bin an instance). Every query of TraceReader and
// TimeIndex, the view `allocation` in plain SQL, a merge and the index built aside then give
// the same answers for both traces, times included: the loop's times rise evenly, so a run's
// times are exact. A second process, interleaved and not periodic, keeps its chunks and rows.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "proto/shim_markers.h"
#include "same_answers.h"
#include "sql_query.h"
#include "storage/allocation_chunk.h"
#include "storage/chunk_repeat.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema.h"
#include "storage/time_index.h"
#include "storage/trace_error.h"
#include "storage/trace_merge.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace {
namespace {

using storage::ChunkRepeatRun;
using storage::PackedAllocation;
using testing::texts;

constexpr std::uint64_t kBin = 4096;
constexpr std::uint64_t kBins = 40;
constexpr std::uint64_t kVariantBin = 12;     // one allocation differs: stored, breaking a run
constexpr std::uint64_t kFinalizingBin = 35;  // process 1's program ends here
constexpr std::uint64_t kFirstGroup = 32, kGroups = 1008;

// Times rise evenly with numbers in each process, as a steady loop's would.
std::int64_t ns_of(std::int64_t upid, std::uint64_t seq) {
  return 1'000'000 * upid + static_cast<std::int64_t>(seq) * 7;
}

// Process 1 repeats one bin's events in every bin (the first starts at number 1, the variant
// bin has one size changed); process 2 allocates at fixed points of process 1's bins, so that
// the ids of process 1's bins are evenly spaced, but what it allocates and when it frees are
// drawn at random.
void write_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(
      path, &error, storage::TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
      storage::TraceWriter::RollupUpkeep::kAtBuild, storage::TraceWriter::Threading::kCallersThread,
      storage::TraceWriter::AllocationPacking::kPackShortLives);
  ASSERT_NE(writer, nullptr) << error;
  for (const std::int64_t upid : {1, 2}) {
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = static_cast<std::uint32_t>(70 + upid);
    process.start_ns = ns_of(upid, 0);
    writer->add_process(process);
    writer->add_thread(upid, upid, process.pid);
  }
  // No flush: a commit writes the rows it holds back as they stand, and an allocation whose
  // free it cuts from it would be a row, unlike its likes in other bins.
  std::int64_t next_id = 1;
  const auto allocate = [&](std::int64_t upid, std::uint64_t seq, std::uint64_t address,
                            std::uint64_t size, int api, int kind, int result) {
    storage::AllocationRow row;
    row.id = next_id++;
    row.upid = upid;
    row.alloc_utid = upid;
    row.api = api;
    row.kind = kind;
    row.device = 0;
    row.size = size;
    row.requested_size = size - 3;
    row.address = result == 0 ? address : 0;
    row.result = result;
    row.alloc_seq = seq;
    row.alloc_ns = ns_of(upid, seq);
    writer->add_allocation(row);
    return row.id;
  };
  const auto free = [&](std::int64_t upid, std::int64_t id, std::uint64_t seq, int api) {
    storage::FreeRow row;
    row.free_seq = seq;
    row.free_ns = ns_of(upid, seq);
    row.free_utid = upid;
    row.free_api = api;
    writer->set_free(id, row);
  };

  // Process 2: an allocation at every 16th number of process 1, frees (of those due) at every
  // 16th number between. Its numbers go 8 at a time, so that its allocations are soon old
  // enough for the writer to write them out of order, as process 1's are.
  std::mt19937_64 random(11);
  std::uint64_t seq_2 = 0;
  struct Pending {
    std::int64_t id;
    std::uint64_t free_at;
  };
  std::vector<Pending> pending_2;
  const auto process_2 = [&](std::uint64_t offset) {
    if (offset % 16 == 0) {
      const std::uint64_t now = seq_2 += 8;
      const std::uint64_t roll = random() % 20;
      const int kind =
          random() % 3 == 0 ? storage::allocation_kind::kBlock : storage::allocation_kind::kDevice;
      const std::int64_t id = allocate(2, now, 0x7e0000000000 + 0x1000 * (random() % 4096),
                                       512 * (1 + random() % 64), 1, kind, roll == 0 ? 2 : 0);
      if (roll <= 1) return;  // failed, or never freed
      const std::uint64_t life = roll < 15 ? 8 + random() % 40 : 500 + random() % 3'000;
      pending_2.push_back({id, now + life});
    } else if (offset % 16 == 8) {
      for (int frees = 0; frees < 2; ++frees) {
        const auto due = std::find_if(pending_2.begin(), pending_2.end(),
                                      [&](const Pending& p) { return p.free_at <= seq_2 + 8; });
        if (due == pending_2.end()) return;
        free(2, due->id, seq_2 += 8, 2);
        pending_2.erase(due);
      }
    }
  };

  // Process 1, bin by bin. Rows among its events: a failed call and a long life freed in the
  // next bin; all else is packed, a short life across the bin's edge among them (freed before
  // the next bin's first packed allocation, so that a bin's times span less than a bin's
  // worth, and a run's times are exact). After the last bin, that short life's free alone.
  std::optional<std::int64_t> long_life, across_edge;
  for (std::uint64_t bin = 0; bin <= kBins; ++bin) {
    const std::uint64_t first = bin * kBin;
    const auto event = [&](std::uint64_t offset, const std::function<void(std::uint64_t)>& run) {
      run(first + offset);
      process_2(offset);
    };
    if (across_edge) event(3, [&](std::uint64_t seq) { free(1, *across_edge, seq, 2); });
    if (bin == kBins) break;
    std::int64_t spanning = 0;
    event(4, [&](std::uint64_t seq) {
      spanning = allocate(1, seq, 0x7f0000000000, 4096, 1, storage::allocation_kind::kDevice, 0);
    });
    if (bin == kFinalizingBin) {
      // Python began to finalize: what is live here and freed later is live at the end.
      storage::MarkerRow marker;
      marker.id = 1;
      marker.upid = 1;
      marker.utid = 1;
      marker.type = std::string(storage::kMarkerMark);
      marker.source = std::string(storage::kMarkerFromShim);
      marker.name = std::string(wire_markers::kPythonFinalizing);
      marker.start_seq = first + 6;
      marker.start_ns = ns_of(1, first + 6);
      writer->add_marker(marker);
    }
    event(7, [&](std::uint64_t seq) { free(1, spanning, seq, 2); });
    if (long_life) event(8, [&](std::uint64_t seq) { free(1, *long_life, seq, 2); });
    event(10, [&](std::uint64_t seq) {
      long_life =
          allocate(1, seq, 0x7f1000000000, 1 << 20, 1, storage::allocation_kind::kDevice, 0);
    });
    event(20, [&](std::uint64_t seq) {
      allocate(1, seq, 0, 1 << 30, 1, storage::allocation_kind::kDevice, 2);
    });
    for (std::uint64_t g = 0; g < kGroups; ++g) {
      const std::uint64_t o = kFirstGroup + 4 * g;
      const int api = g % 3 == 0 ? 12 : 1;
      const int free_api = g % 3 == 0 ? 14 : 2;
      std::uint64_t size = 512 * (1 + g % 7);
      if (bin == kVariantBin && g == 7) size += 4096;
      const int kind =
          g % 5 == 0 ? storage::allocation_kind::kBlock : storage::allocation_kind::kDevice;
      std::int64_t x = 0, y = 0;
      event(o, [&](std::uint64_t seq) {
        x = allocate(1, seq, 0x7f2000000000 + 0x10000 * (g % 5), size, api, kind, 0);
      });
      event(o + 1, [&](std::uint64_t seq) {
        y = allocate(1, seq, 0x7f3000000000 + 0x10000 * (g % 3), 2 * size, 1, kind, 0);
      });
      // Lives of 2 each, or of 3 and 1.
      event(o + 2, [&](std::uint64_t seq) { free(1, g % 2 == 0 ? x : y, seq, free_api); });
      event(o + 3, [&](std::uint64_t seq) { free(1, g % 2 == 0 ? y : x, seq, 2); });
    }
    std::int64_t last = 0;
    event(4090, [&](std::uint64_t seq) {
      last = allocate(1, seq, 0x7f4000000000, 8192, 1, storage::allocation_kind::kDevice, 0);
    });
    event(4093, [&](std::uint64_t seq) { free(1, last, seq, 2); });
    event(4094, [&](std::uint64_t seq) {
      across_edge = allocate(1, seq, 0x7f5000000000, 256, 1, storage::allocation_kind::kDevice, 0);
    });
  }
  ASSERT_TRUE(writer->finish(&error)) << error;
}

// A chunk as the folding reads it: its allocations by number, and its text, the same for two
// chunks exactly when one repeats the other but for first number, first id and first time.
struct Chunk {
  std::int64_t upid = 0;
  std::vector<PackedAllocation> allocations;
  std::string text;
  bool folded = false;
  std::uint64_t first_seq() const { return allocations.front().alloc_seq; }
  std::int64_t first_id() const { return allocations.front().id; }
  std::int64_t first_ns() const { return allocations.front().alloc_ns; }
};

bool by_number(const PackedAllocation& x, const PackedAllocation& y) {
  return std::pair(x.alloc_seq, x.id) < std::pair(y.alloc_seq, y.id);
}

Chunk chunk_of(std::int64_t upid, std::vector<PackedAllocation> allocations) {
  std::sort(allocations.begin(), allocations.end(), by_number);
  Chunk chunk;
  chunk.upid = upid;
  chunk.text = storage::pack_allocations(upid, allocations).allocations;
  chunk.allocations = std::move(allocations);
  return chunk;
}

// How to fold a trace's chunks.
struct Folding {
  // Bins whose chunk is stored as two: the allocations of its first half of numbers, then the
  // others.
  std::function<bool(std::int64_t upid, std::uint64_t bin)> split;
  // Chunks never folded; a run goes on past them (a bin then holds a chunk and an instance).
  std::function<bool(const Chunk&)> keep;
  std::int64_t max_repeats = 0;
};

// Whether the run's instances expand to exactly these chunks' allocations.
bool expands_to(const ChunkRepeatRun& run, const Chunk& source,
                const std::vector<const Chunk*>& instances) {
  for (std::size_t k = 0; k < instances.size(); ++k) {
    std::vector<PackedAllocation> out;
    storage::append_repeat_instance(run, static_cast<std::int64_t>(k), source.allocations, &out);
    std::sort(out.begin(), out.end(), by_number);
    if (out != instances[k]->allocations) return false;
  }
  return true;
}

// Folds the chunks of a trace as the writer folds bins (storage/repeat_folder.h): in each
// process's order, a chunk whose allocations repeat an earlier stored chunk's exactly, numbers,
// ids and times moved by one step each, is an instance of a run; one that does not continue a
// process's open run ends it. Marks the trace as schema 4. Returns the runs written.
std::vector<ChunkRepeatRun> fold_repeats(const std::filesystem::path& path,
                                         const Folding& folding) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::vector<Chunk> chunks;
  sqlite3_stmt* read = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT upid, first_id, first_alloc_seq, first_alloc_ns, allocations FROM "
                     "allocation_chunk ORDER BY upid, first_alloc_seq",
                     -1, &read, nullptr);
  while (sqlite3_step(read) == SQLITE_ROW) {
    const std::int64_t upid = sqlite3_column_int64(read, 0);
    std::vector<PackedAllocation> allocations;
    const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(read, 4));
    EXPECT_TRUE(
        storage::unpack_allocations(text, sqlite3_column_int64(read, 1),
                                    static_cast<std::uint64_t>(sqlite3_column_int64(read, 2)),
                                    sqlite3_column_int64(read, 3), &allocations));
    const std::uint64_t bin = allocations.front().alloc_seq / kBin;
    if (!folding.split(upid, bin)) {
      chunks.push_back(chunk_of(upid, std::move(allocations)));
      continue;
    }
    std::vector<PackedAllocation> halves[2];
    for (const PackedAllocation& a : allocations)
      halves[a.alloc_seq % kBin >= kBin / 2].push_back(a);
    for (auto& half : halves)
      if (!half.empty()) chunks.push_back(chunk_of(upid, std::move(half)));
  }
  sqlite3_finalize(read);

  struct OpenRun {
    ChunkRepeatRun run;
    const Chunk* source = nullptr;
    std::vector<const Chunk*> instances;
  };
  std::vector<ChunkRepeatRun> runs;
  std::optional<OpenRun> open;
  std::map<std::pair<std::int64_t, std::string>, const Chunk*> sources;
  const auto end_run = [&] {
    if (open) runs.push_back(open->run);
    open.reset();
  };
  for (Chunk& chunk : chunks) {
    if (open && open->run.upid != chunk.upid) end_run();
    const auto source = sources.find({chunk.upid, chunk.text});
    if (folding.keep(chunk)) {
      if (source == sources.end()) sources.emplace(std::pair(chunk.upid, chunk.text), &chunk);
      continue;
    }
    if (open && open->source->text == chunk.text && open->run.repeats < folding.max_repeats) {
      OpenRun longer = *open;
      ChunkRepeatRun& run = longer.run;
      const Chunk& first = *longer.instances.front();
      run.seq_step =
          longer.instances.size() == 1 ? chunk.first_seq() - first.first_seq() : run.seq_step;
      run.id_step =
          longer.instances.size() == 1 ? chunk.first_id() - first.first_id() : run.id_step;
      run.instance_ns = (chunk.first_ns() - first.first_ns()) / run.repeats;
      run.repeats += 1;
      run.last_seq = storage::pack_allocations(1, chunk.allocations).last_seq;
      run.last_id = storage::pack_allocations(1, chunk.allocations).last_id;
      longer.instances.push_back(&chunk);
      if (expands_to(run, *longer.source, longer.instances)) {
        open = longer;
        chunk.folded = true;
        continue;
      }
    }
    end_run();
    if (source != sources.end()) {
      OpenRun started;
      started.source = source->second;
      started.instances = {&chunk};
      ChunkRepeatRun& run = started.run;
      const storage::AllocationChunk stored = storage::pack_allocations(1, chunk.allocations);
      run.upid = chunk.upid;
      run.source_first_alloc_seq = source->second->first_seq();
      run.source_first_id = source->second->first_id();
      run.source_first_alloc_ns = source->second->first_ns();
      for (const PackedAllocation& a : source->second->allocations)
        run.source_span_ns = std::max(run.source_span_ns, a.free_ns() - run.source_first_alloc_ns);
      run.first_alloc_seq = chunk.first_seq();
      run.first_id = chunk.first_id();
      run.first_alloc_ns = chunk.first_ns();
      run.instance_ns = run.source_span_ns;  // one instance keeps its source's times
      run.repeats = 1;
      run.count = static_cast<std::int64_t>(chunk.allocations.size());
      run.last_seq = stored.last_seq;
      run.last_id = stored.last_id;
      if (expands_to(run, *started.source, started.instances)) {
        open = started;
        chunk.folded = true;
        continue;
      }
    }
    sources.emplace(std::pair(chunk.upid, chunk.text), &chunk);
  }
  end_run();

  std::string sql = "BEGIN; DELETE FROM allocation_chunk;";
  for (const Chunk& chunk : chunks) {
    if (chunk.folded) continue;
    const storage::AllocationChunk row = storage::pack_allocations(chunk.upid, chunk.allocations);
    sql +=
        "INSERT INTO allocation_chunk(upid, first_alloc_seq, last_seq, first_id, last_id, "
        "first_alloc_ns, count, allocations) VALUES(" +
        std::to_string(row.upid) + ", " + std::to_string(row.first_alloc_seq) + ", " +
        std::to_string(row.last_seq) + ", " + std::to_string(row.first_id) + ", " +
        std::to_string(row.last_id) + ", " + std::to_string(row.first_alloc_ns) + ", " +
        std::to_string(row.count) + ", '" + row.allocations + "');";
  }
  for (const ChunkRepeatRun& run : runs) {
    sql +=
        "INSERT INTO allocation_chunk_repeat(upid, first_alloc_seq, last_seq, first_id, "
        "last_id, first_alloc_ns, seq_step, id_step, instance_ns, repeats, count, "
        "source_first_alloc_seq, source_span_ns) VALUES(" +
        std::to_string(run.upid) + ", " + std::to_string(run.first_alloc_seq) + ", " +
        std::to_string(run.last_seq) + ", " + std::to_string(run.first_id) + ", " +
        std::to_string(run.last_id) + ", " + std::to_string(run.first_alloc_ns) + ", " +
        std::to_string(run.seq_step) + ", " + std::to_string(run.id_step) + ", " +
        std::to_string(run.instance_ns) + ", " + std::to_string(run.repeats) + ", " +
        std::to_string(run.count) + ", " + std::to_string(run.source_first_alloc_seq) + ", " +
        std::to_string(run.source_span_ns) + ");";
  }
  sql += "PRAGMA user_version = " + std::to_string(storage::kSchemaVersion) + "; COMMIT;";
  char* message = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK)
      << (message != nullptr ? message : "");
  sqlite3_free(message);
  sqlite3_close(db);
  return runs;
}

// Bins 1 to 19 whole, runs of at most 6 (the variant bin between two); bins 20 to 29 as two
// chunks, the first half's kept: each bin a stored chunk and an instance of one long run;
// bins 30 to 39 as two chunks, both folded: each bin two instances of two runs.
Folding loop_folding() {
  Folding folding;
  folding.split = [](std::int64_t upid, std::uint64_t bin) { return upid == 1 && bin >= 20; };
  folding.keep = [](const Chunk& chunk) {
    const std::uint64_t bin = chunk.first_seq() / kBin;
    return chunk.upid == 1 && bin >= 20 && bin < 30 && chunk.first_seq() % kBin < kBin / 2;
  };
  folding.max_repeats = 6;
  return folding;
}

class RepeatRunsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new testing::TempDir;
    write_trace(chunks_path());
    std::filesystem::copy_file(chunks_path(), runs_path());
    runs_ = new std::vector<ChunkRepeatRun>(fold_repeats(runs_path(), loop_folding()));
  }
  static void TearDownTestSuite() {
    delete runs_;
    delete dir_;
  }
  static std::filesystem::path chunks_path() { return *dir_ / "chunks.db"; }
  static std::filesystem::path runs_path() { return *dir_ / "runs.db"; }
  static std::filesystem::path copy_of(const std::filesystem::path& path, const std::string& name) {
    const std::filesystem::path copy = *dir_ / name;
    std::filesystem::copy_file(path, copy, std::filesystem::copy_options::overwrite_existing);
    return copy;
  }

  static std::unique_ptr<storage::TraceReader> open(const std::filesystem::path& path) {
    storage::OpenFailure failure;
    auto trace = storage::TraceReader::open(path, &failure);
    EXPECT_NE(trace, nullptr) << failure.message;
    return trace;
  }
  static std::unique_ptr<storage::TimeIndex> open_index(const std::filesystem::path& path) {
    std::string error;
    auto index = storage::TimeIndex::open(path, storage::build_live_bytes_rollups, &error);
    EXPECT_NE(index, nullptr) << error;
    return index;
  }

  static testing::Questions questions() {
    testing::Questions ask;
    ask.live_just_after = {1,
                           6,
                           kBin + 40,
                           kVariantBin * kBin + 100,
                           20 * kBin + 2'050,
                           25 * kBin + 2'047,
                           33 * kBin + 3'000,
                           kFinalizingBin * kBin + 6,
                           39 * kBin + 4'093,
                           39 * kBin + 4'095,
                           kBins * kBin + 2};
    ask.live_just_after_any = 6'000;
    for (std::int64_t id = 1; id < 100'000; id += 37) ask.ids.push_back(id);
    ask.at_least = 50'000;
    return ask;
  }

  static testing::TempDir* dir_;
  static std::vector<ChunkRepeatRun>* runs_;
};
testing::TempDir* RepeatRunsTest::dir_ = nullptr;
std::vector<ChunkRepeatRun>* RepeatRunsTest::runs_ = nullptr;

TEST_F(RepeatRunsTest, TheTraceHoldsRunsOfEveryShape) {
  const auto count = [&](const std::string& sql) {
    return std::stoll(testing::query_one(runs_path(), sql));
  };
  EXPECT_EQ(testing::query_one(runs_path(), "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersion));
  EXPECT_EQ(count("SELECT count(*) FROM allocation_chunk_repeat"),
            static_cast<std::int64_t>(runs_->size()));
  // Every packed allocation is in a chunk or an instance, and most are in instances.
  const auto packed =
      std::stoll(testing::query_one(chunks_path(), "SELECT sum(count) FROM allocation_chunk"));
  const auto in_runs = count("SELECT sum(repeats * count) FROM allocation_chunk_repeat");
  EXPECT_EQ(count("SELECT sum(count) FROM allocation_chunk") + in_runs, packed);
  EXPECT_GT(in_runs, packed / 2);
  // Runs cut at 6, and runs of one instance.
  EXPECT_EQ(count("SELECT max(repeats) FROM allocation_chunk_repeat WHERE first_alloc_seq < " +
                  std::to_string(20 * kBin)),
            6);
  EXPECT_GT(count("SELECT count(*) FROM allocation_chunk_repeat WHERE repeats = 1"), 5);
  EXPECT_GT(count("SELECT max(repeats) FROM allocation_chunk_repeat"), 6 - 1);
  // The variant bin is a chunk; bins 20 to 29 hold a chunk and an instance; bins 30 to 39 two
  // instances; process 2 has no run.
  EXPECT_EQ(count("SELECT count(*) FROM allocation_chunk WHERE upid = 1 AND first_alloc_seq >> "
                  "12 = " +
                  std::to_string(kVariantBin)),
            1);
  EXPECT_EQ(count("SELECT count(*) FROM allocation_chunk WHERE upid = 1 AND first_alloc_seq >> "
                  "12 BETWEEN 21 AND 29"),
            9);
  EXPECT_EQ(count("SELECT count(*) FROM allocation_chunk WHERE upid = 1 AND first_alloc_seq >> "
                  "12 BETWEEN 31 AND 39"),
            0);
  EXPECT_EQ(count("SELECT count(*) FROM allocation_chunk_repeat WHERE upid = 2"), 0);
  EXPECT_GT(count("SELECT count(*) FROM allocation_chunk WHERE upid = 2"), 3);
  // Process 1's last bin is an instance's, and so are its last allocation and its last event,
  // a free in the bin after it.
  EXPECT_GT(count("SELECT max(first_alloc_seq + (repeats - 1) * seq_step) FROM "
                  "allocation_chunk_repeat WHERE upid = 1"),
            count("SELECT max(first_alloc_seq) FROM allocation_chunk WHERE upid = 1"));
  EXPECT_EQ(count("SELECT max(last_seq) FROM allocation_chunk_repeat WHERE upid = 1"),
            static_cast<std::int64_t>(kBins * kBin + 3));
  EXPECT_LT(count("SELECT max(max(alloc_seq), max(alloc_seq + free_seq_delta)) FROM "
                  "allocation_compact WHERE upid = 1"),
            static_cast<std::int64_t>(kBins * kBin - 6));
}

TEST_F(RepeatRunsTest, TheViewShowsEveryInstanceAsRows) {
  const std::string rows = testing::every_row_of(chunks_path(), "allocation_view");
  EXPECT_GT(rows.size(), 1'000'000u);
  EXPECT_EQ(testing::every_row_of(runs_path(), "allocation_view"), rows);
}

TEST_F(RepeatRunsTest, TheReaderGivesTheSameAllocations) {
  testing::expect_same_allocations(*open(chunks_path()), *open(runs_path()), questions());
}

TEST_F(RepeatRunsTest, TheTimeIndexGivesTheSameAnswers) {
  const auto chunks = open_index(chunks_path());
  const auto runs = open_index(runs_path());
  ASSERT_NE(chunks, nullptr);
  ASSERT_NE(runs, nullptr);
  testing::expect_same_time_index_answers(*chunks, *runs, {1, 2}, ns_of, 1021);
  EXPECT_EQ(testing::rollups_text(*runs), testing::rollups_text(*chunks));
  // Numbers at the ends of instances and of bins, where a bin's last event is an instance's.
  for (const std::uint64_t seq : {kBin - 1, kBin, 2 * kBin + 3, 2 * kBin + 4'093, 29 * kBin + 4'095,
                                  30 * kBin + 3, 39 * kBin + 4'094, kBins * kBin + 3})
    EXPECT_EQ(runs->time_of(1, seq), chunks->time_of(1, seq)) << seq;
}

// A merge copies the runs with their processes and ids moved; the merged trace's index is built
// by the reports, from the view.
TEST_F(RepeatRunsTest, AMergeReadsAsTheMergeOfChunks) {
  const auto merged = [&](const std::vector<std::filesystem::path>& inputs,
                          const std::string& name) {
    const std::filesystem::path output = *dir_ / (name + "-merged.db");
    std::filesystem::remove(output);
    const storage::MergeResult result = storage::merge_traces(inputs, output);
    EXPECT_TRUE(result.ok) << result.error;
    return output;
  };
  const auto chunks_2 = copy_of(chunks_path(), "chunks-2.db");
  const auto runs_2 = copy_of(runs_path(), "runs-2.db");
  const auto of_chunks = merged({chunks_path(), chunks_2}, "chunks");
  const auto of_runs = merged({runs_path(), runs_2}, "runs");
  // A trace with runs after one without, and before: the runs keep the version they need.
  const auto runs_last = merged({chunks_path(), runs_2}, "runs-last");
  const auto runs_first = merged({runs_path(), chunks_2}, "runs-first");
  const std::string want = testing::every_row_of(of_chunks, "allocation");
  EXPECT_EQ(testing::every_row_of(of_runs, "allocation"), want);
  EXPECT_EQ(testing::every_row_of(runs_last, "allocation"), want);
  EXPECT_EQ(testing::every_row_of(runs_first, "allocation"), want);
  EXPECT_EQ(testing::query_one(of_chunks, "PRAGMA user_version"),
            std::to_string(storage::kSchemaVersionWithChunks));
  for (const auto& path : {of_runs, runs_last, runs_first})
    EXPECT_EQ(testing::query_one(path, "PRAGMA user_version"),
              std::to_string(storage::kSchemaVersion))
        << path;
  EXPECT_EQ(testing::query_one(of_runs, "SELECT count(*) FROM allocation_chunk_repeat"),
            std::to_string(2 * runs_->size()));

  testing::Questions ask = questions();
  ask.other_upid = 4;
  testing::expect_same_allocations(*open(of_chunks), *open(of_runs), ask);
  const auto chunks_index = open_index(of_chunks);
  const auto runs_index = open_index(of_runs);
  ASSERT_NE(chunks_index, nullptr);
  ASSERT_NE(runs_index, nullptr);
  EXPECT_EQ(testing::rollups_text(*runs_index), testing::rollups_text(*chunks_index));
  EXPECT_EQ(runs_index->start_ns(), chunks_index->start_ns());
  EXPECT_EQ(runs_index->end_ns(), chunks_index->end_ns());
  EXPECT_EQ(runs_index->processes_with_allocator_events(),
            chunks_index->processes_with_allocator_events());
  for (const std::int64_t upid : {1, 3})
    for (std::uint64_t seq = 0; seq < kBins * kBin; seq += 401)
      ASSERT_EQ(texts(runs_index->live_at(upid, seq)), texts(chunks_index->live_at(upid, seq)))
          << upid << " " << seq;
}

// A trace that is not finished is indexed aside, by the build that reads the whole trace; one
// whose writer's upkeep is gone is indexed in place from the view: both read the runs.
TEST_F(RepeatRunsTest, AnIndexBuiltByTheReportsReadsTheRuns) {
  for (const std::string how : {"aside", "in-place"}) {
    const auto rebuilt = [&](const std::filesystem::path& input, const std::string& name) {
      const auto copy = copy_of(input, name + "-" + how + ".db");
      EXPECT_EQ(testing::execute_sql(
                    copy, how == "aside" ? "UPDATE meta SET value = '0' WHERE key = 'complete'"
                                         : "DROP TABLE IF EXISTS time_index_upkeep; DROP TABLE "
                                           "IF EXISTS time_index_info;"),
                "");
      return copy;
    };
    const auto chunks = open_index(rebuilt(chunks_path(), "chunks"));
    const auto runs = open_index(rebuilt(runs_path(), "runs"));
    ASSERT_NE(chunks, nullptr);
    ASSERT_NE(runs, nullptr);
    if (how == "aside") {
      EXPECT_NE(runs->note().find("built aside"), std::string::npos) << runs->note();
    }
    EXPECT_EQ(runs->start_ns(), chunks->start_ns()) << how;
    EXPECT_EQ(runs->end_ns(), chunks->end_ns()) << how;
    EXPECT_EQ(runs->allocator_segments(), chunks->allocator_segments()) << how;
    EXPECT_EQ(runs->processes_with_allocator_events(), chunks->processes_with_allocator_events())
        << how;
    EXPECT_EQ(testing::rollups_text(*runs), testing::rollups_text(*chunks)) << how;
    for (const std::int64_t upid : {1, 2})
      for (std::uint64_t seq = 0; seq < kBins * kBin; seq += 397)
        ASSERT_EQ(texts(runs->live_at(upid, seq)), texts(chunks->live_at(upid, seq)))
            << how << " " << upid << " " << seq;
  }
}

// A trace written before runs existed (schema 3: no allocation_chunk_repeat, the view without
// its instances) is read as before.
TEST_F(RepeatRunsTest, ATraceOfSchema3ReadsAsBefore) {
  const auto old = copy_of(chunks_path(), "schema-3.db");
  const auto& views = storage::schema_views().at("allocation");
  const auto schema_3 = std::find_if(views.begin(), views.end(), [](const std::string& sql) {
    return sql.find("allocation_chunk ") != std::string::npos &&
           sql.find("allocation_chunk_repeat") == std::string::npos;
  });
  ASSERT_NE(schema_3, views.end());
  const std::string view_of_names = testing::query_one(
      chunks_path(), "SELECT sql FROM sqlite_master WHERE name = 'allocation_view'");
  ASSERT_EQ(
      testing::execute_sql(old,
                           "DROP VIEW allocation_view; DROP VIEW allocation; DROP TABLE "
                           "allocation_chunk_repeat; " +
                               *schema_3 + "; " + view_of_names + "; PRAGMA user_version = 3;"),
      "");
  EXPECT_EQ(testing::every_row_of(old, "allocation_view"),
            testing::every_row_of(chunks_path(), "allocation_view"));
  testing::expect_same_allocations(*open(chunks_path()), *open(old), questions());
  const auto chunks = open_index(chunks_path());
  const auto index = open_index(old);
  ASSERT_NE(chunks, nullptr);
  ASSERT_NE(index, nullptr);
  testing::expect_same_time_index_answers(*chunks, *index, {1, 2}, ns_of, 1021);
}

// A run whose instances last longer than one step of the run has its times squeezed; the view
// and the readers squeeze them alike, and each instance ends before the next begins.
TEST_F(RepeatRunsTest, ASqueezedRunReadsAsTheViewShowsIt) {
  const auto squeezed = copy_of(runs_path(), "squeezed.db");
  ASSERT_EQ(testing::execute_sql(squeezed,
                                 "UPDATE allocation_chunk_repeat SET instance_ns = "
                                 "source_span_ns / 3 WHERE repeats > 1"),
            "");
  const std::string view = testing::query_one(
      squeezed,
      "SELECT group_concat(x, ';') FROM (SELECT id || ' ' || alloc_seq || ' ' || alloc_ns || ' ' "
      "|| free_seq || ' ' || free_ns AS x FROM allocation WHERE upid = 1 AND result = 0 AND "
      "free_seq IS NOT NULL ORDER BY id)");
  std::string read;
  storage::AllocationFilter filter;
  filter.upid = 1;
  filter.lifetime = storage::AllocationFilter::Lifetime::kFreed;
  auto records = open(squeezed)->allocations(filter);
  std::sort(records.begin(), records.end(),
            [](const auto& x, const auto& y) { return x.allocation.id < y.allocation.id; });
  for (const auto& r : records) {
    read += (read.empty() ? "" : ";") + std::to_string(r.allocation.id) + ' ' +
            std::to_string(r.allocation.alloc_seq) + ' ' + std::to_string(r.allocation.alloc_ns) +
            ' ' + std::to_string(r.free->free_seq) + ' ' + std::to_string(r.free->free_ns);
  }
  EXPECT_EQ(read, view);
  EXPECT_NE(view, testing::query_one(
                      runs_path(),
                      "SELECT group_concat(x, ';') FROM (SELECT id || ' ' || alloc_seq || ' ' || "
                      "alloc_ns || ' ' || free_seq || ' ' || free_ns AS x FROM allocation WHERE "
                      "upid = 1 AND result = 0 AND free_seq IS NOT NULL ORDER BY id)"));
  // Within a run, times rise from one instance to the next: each instance's packed
  // allocations (short lives within its numbers) end before the next one's begin.
  EXPECT_EQ(
      testing::query_one(
          squeezed,
          "WITH RECURSIVE i(run, k) AS (SELECT id, 0 FROM allocation_chunk_repeat UNION ALL "
          "SELECT i.run, i.k + 1 FROM i JOIN allocation_chunk_repeat AS r ON r.id = i.run "
          "WHERE i.k + 1 < r.repeats), span(run, k, first_ns, last_ns) AS (SELECT i.run, "
          "i.k, min(a.alloc_ns), max(a.free_ns) FROM i JOIN allocation_chunk_repeat AS r ON "
          "r.id = i.run JOIN allocation AS a ON a.upid = r.upid AND a.alloc_seq BETWEEN "
          "r.first_alloc_seq + i.k * r.seq_step AND r.first_alloc_seq + i.k * r.seq_step + "
          "r.last_seq - (r.first_alloc_seq + (r.repeats - 1) * r.seq_step) WHERE a.result = "
          "0 AND a.free_seq - a.alloc_seq BETWEEN 1 AND 1024 AND a.alloc_seq >> 12 = "
          "a.free_seq >> 12 GROUP BY i.run, i.k) SELECT count(*) || ' of ' || (SELECT "
          "count(*) FROM span) FROM span AS x JOIN span AS y ON y.run = x.run AND y.k = x.k "
          "+ 1 WHERE y.first_ns < x.last_ns"),
      "0 of " + testing::query_one(squeezed, "SELECT sum(repeats) FROM allocation_chunk_repeat"));
}

// A run whose source is gone, whose source's text was changed, or whose numbers no writer
// makes is refused with one message naming the file and the row, by the reader's scans and the
// time index's queries alike: never read as other allocations.
TEST_F(RepeatRunsTest, ADamagedRunIsRefusedWithOneMessage) {
  // Indexed first, so that opening the index reads no chunk: the queries meet the damage.
  ASSERT_NE(open_index(runs_path()), nullptr);
  const ChunkRepeatRun& run = runs_->front();
  ASSERT_GT(run.repeats, 1);
  const std::string source_row = "upid = " + std::to_string(run.upid) + " AND first_alloc_seq = " +
                                 std::to_string(run.source_first_alloc_seq);
  const std::string run_row = "upid = " + std::to_string(run.upid) +
                              " AND first_alloc_seq = " + std::to_string(run.first_alloc_seq);
  struct Damage {
    std::string name, sql, message;
  };
  const std::vector<Damage> damages{
      {"source-gone", "DELETE FROM allocation_chunk WHERE " + source_row,
       "the trace is damaged: a run of allocation_chunk_repeat repeats no chunk of "
       "allocation_chunk (in the row of process 1 from number "},
      {"source-changed",
       "UPDATE allocation_chunk SET allocations = '[[1,2,3]]' WHERE " + source_row,
       "the trace is damaged: allocation_chunk.allocations is not a list of packed allocations "
       "(in the row of process 1 from number " +
           std::to_string(run.source_first_alloc_seq) + ")"},
      {"no-instance", "UPDATE allocation_chunk_repeat SET repeats = 0 WHERE " + run_row,
       "the trace is damaged: a run of allocation_chunk_repeat has no instance or no allocation "
       "(in the row of process 1 from number " +
           std::to_string(run.first_alloc_seq) + ")"},
      {"steps-back", "UPDATE allocation_chunk_repeat SET id_step = -id_step WHERE " + run_row,
       "the trace is damaged: a run of allocation_chunk_repeat steps its instances by numbers or "
       "ids that do not rise within 64 bits (in the row of process 1 from number " +
           std::to_string(run.first_alloc_seq) + ")"},
  };
  const std::uint64_t in_run = run.instance_first_alloc_seq(1) + 100;
  for (const Damage& damage : damages) {
    const auto damaged = copy_of(runs_path(), "damaged-" + damage.name + ".db");
    ASSERT_EQ(testing::execute_sql(damaged, damage.sql), "");
    const auto expect_refused = [&](const char* query, const std::function<void()>& read) {
      try {
        read();
        ADD_FAILURE() << damage.name << ": " << query << " read a damaged run";
      } catch (const storage::TraceError& refused) {
        const std::string message = refused.what();
        EXPECT_NE(message.find(damaged.string() + ": " + damage.message), std::string::npos)
            << damage.name << ": " << query << ": " << message;
      }
    };
    const auto trace = open(damaged);
    ASSERT_NE(trace, nullptr);
    expect_refused("allocations", [&] { trace->allocations({}); });
    expect_refused("totals", [&] { trace->allocation_totals(); });
    expect_refused("by id", [&] {
      storage::AllocationFilter filter;
      filter.ids = std::vector<std::int64_t>{run.instance_first_id(1)};
      trace->allocations(filter);
    });
    expect_refused("live just after", [&] {
      storage::AllocationFilter filter;
      filter.upid = 1;
      filter.live_just_after = in_run;
      trace->allocations(filter);
    });
    const auto index = open_index(damaged);
    ASSERT_NE(index, nullptr);
    expect_refused("time of", [&] {
      for (std::uint64_t seq = in_run; seq < in_run + 100; ++seq) index->time_of(1, seq);
    });
    expect_refused("live at", [&] { index->live_at(1, in_run); });
    expect_refused("events", [&] {
      index->for_each_event_between(1, in_run - 50, in_run, [](const auto&) { return true; });
    });
  }
}

// The arithmetic of an instance: numbers and ids moved by k steps; times from the instance's
// start, the source's own when it fits in an instance, squeezed when it does not, and rising
// from one instance to the next either way.
TEST(ChunkRepeatTest, InstancesMoveNumbersIdsAndTimes) {
  // ids, numbers and times as unpack_allocations() gives them: absolute.
  const std::vector<PackedAllocation> source{
      {500, 3, 0x1000, 512, 0, 8'200, 10'000, 2, 4, 20},
      {502, 4, 0x2000, 256, 1, 8'201, 10'050, 2, 1, 5},
      {501, 3, 0x1000, 512, 0, 8'205, 10'100, 2, 3, 20},
  };
  ChunkRepeatRun run;
  run.upid = 1;
  run.source_first_alloc_seq = 8'200;
  run.source_first_id = 500;
  run.source_first_alloc_ns = 10'000;
  run.source_span_ns = 120;  // to the last free, 10'120
  run.first_alloc_seq = 20'480;
  run.seq_step = 4'096;
  run.first_id = 9'000;
  run.id_step = 40;
  run.first_alloc_ns = 50'000;
  run.repeats = 4;
  run.count = 3;
  for (const std::int64_t instance_ns : {200, 120, 60}) {
    run.instance_ns = instance_ns;
    std::int64_t previous_last_ns = INT64_MIN;
    for (std::int64_t k = 0; k < run.repeats; ++k) {
      std::vector<PackedAllocation> out;
      storage::append_repeat_instance(run, k, source, &out);
      ASSERT_EQ(out.size(), source.size());
      const std::int64_t start = 50'000 + k * instance_ns;
      // The source's times after its first: kept when they fit in an instance, else scaled by
      // instance_ns / source_span_ns, rounded toward zero.
      const auto time = [&](std::int64_t relative) {
        return start + (instance_ns >= 120 ? relative : relative * instance_ns / 120);
      };
      for (std::size_t i = 0; i < out.size(); ++i) {
        const PackedAllocation& a = out[i];
        const PackedAllocation& s = source[i];
        EXPECT_EQ(a.id, 9'000 + k * 40 + (s.id - 500));
        EXPECT_EQ(a.alloc_seq,
                  20'480 + static_cast<std::uint64_t>(k) * 4'096 + (s.alloc_seq - 8'200));
        EXPECT_EQ(a.free_seq(), a.alloc_seq + static_cast<std::uint64_t>(s.free_seq_delta));
        EXPECT_EQ(a.alloc_ns, time(s.alloc_ns - 10'000)) << instance_ns << " " << k << " " << i;
        EXPECT_EQ(a.free_ns(), time(s.free_ns() - 10'000)) << instance_ns << " " << k << " " << i;
        EXPECT_EQ(std::tie(a.site_id, a.address, a.size, a.size_minus_requested, a.free_site_id),
                  std::tie(s.site_id, s.address, s.size, s.size_minus_requested, s.free_site_id));
        EXPECT_GE(a.alloc_ns, previous_last_ns);
      }
      std::int64_t last_ns = INT64_MIN;
      for (const PackedAllocation& a : out) last_ns = std::max(last_ns, a.free_ns());
      EXPECT_LE(last_ns, start + instance_ns);
      previous_last_ns = last_ns;
    }
  }
  // Squeezed: the last free lands on the instance's end, 60 after its start.
  std::vector<PackedAllocation> out;
  run.instance_ns = 60;
  storage::append_repeat_instance(run, 2, source, &out);
  EXPECT_EQ(out[2].free_ns(), 50'000 + 2 * 60 + 60);
  EXPECT_EQ(out[1].alloc_ns, 50'000 + 2 * 60 + 25);
  EXPECT_EQ(out[1].free_ns(), 50'000 + 2 * 60 + 27);  // 55 * 60 / 120 = 27.5
}

}  // namespace
}  // namespace vramtrace
