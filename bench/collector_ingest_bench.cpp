// The collector's sustained ingest: records decoded, matched (each allocation freed), their
// stacks interned, and rows written to SQLite in batched transactions, as `vramtrace run`
// does. The stacks point into this benchmark's own code, so symbolization runs for real on
// the first sight of each address and is cached afterwards. Arguments: the stack depth,
// whether frees carry stacks too (`vramtrace run --free-stacks`; the shim's default is not),
// and whether stacks come by name after their first time (the shim's default; 0 as before
// names, or VRAMTRACE_STACK_NAMES=0), and whether the writer keeps the reports' indexes and the
// time index's rollups up as rows arrive, with short lives packed many to a row (`vramtrace run`'s
// default; 0 as `run --no-index`),
// and whether the writer writes on a thread of its own (`vramtrace run`'s; 0: on the ingest's).
// The time is until the trace is finished, as `run` finishes it: rows still queued count.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <filesystem>

#include "collector/trace_ingest.h"
#include "storage/live_bytes_rollups.h"
#include "storage/trace_writer.h"
#include "vramtrace.pb.h"

namespace {

namespace fs = std::filesystem;

std::string encode(const vramtrace::wire::Envelope& env) {
  return env.SerializeAsString();
}

__attribute__((noinline)) void anchor() {}

void BM_CollectorIngest(benchmark::State& state) {
  const int depth = static_cast<int>(state.range(0));
  const bool free_stacks = state.range(1) != 0;
  const bool names = state.range(2) != 0;
  const auto upkeep = state.range(3) != 0
                          ? vramtrace::storage::TraceWriter::TimeIndexUpkeep::kAsRowsArrive
                          : vramtrace::storage::TraceWriter::TimeIndexUpkeep::kNone;
  const auto threading = state.range(4) != 0
                             ? vramtrace::storage::TraceWriter::Threading::kOwnThread
                             : vramtrace::storage::TraceWriter::Threading::kCallersThread;
  const fs::path path =
      fs::temp_directory_path() / ("vramtrace-ingest-bench-" + std::to_string(getpid()) + ".db");
  fs::remove(path);
  std::string error;
  auto writer = vramtrace::storage::TraceWriter::create(
      path, &error, upkeep,
      state.range(3) != 0 ? vramtrace::storage::TraceWriter::RollupUpkeep::kAsRowsArrive
                          : vramtrace::storage::TraceWriter::RollupUpkeep::kAtBuild,
      threading,
      // As `vramtrace run` records: short lives packed where the indexes are kept up.
      state.range(3) != 0 ? vramtrace::storage::TraceWriter::AllocationPacking::kPackShortLives
                          : vramtrace::storage::TraceWriter::AllocationPacking::kRows);
  if (!writer) {
    state.SkipWithError(error.c_str());
    return;
  }
  vramtrace::collector::TraceIngest ingest(*writer);
  const int64_t ring = ingest.open_ring(static_cast<uint32_t>(getpid()));

  vramtrace::wire::Envelope start;
  start.mutable_process_start()->set_pid(static_cast<uint32_t>(getpid()));
  vramtrace::wire::Envelope module;
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  Dl_info self{};
  dladdr(reinterpret_cast<void*>(&anchor), &self);
  const auto base = reinterpret_cast<uint64_t>(self.dli_fbase);  // PIE: the load bias
  module.mutable_module()->set_path(exe);
  module.mutable_module()->set_start(base);
  module.mutable_module()->set_end(base + (64ull << 20));
  module.mutable_module()->set_load_bias(base);
  uint64_t seq = 0;
  auto feed = [&](const std::string& bytes) {
    vramtrace::ring::RecordHeader h{static_cast<uint32_t>(bytes.size()), ++seq,
                                    static_cast<int64_t>(seq)};
    ingest.on_record(ring, h, reinterpret_cast<const unsigned char*>(bytes.data()));
  };
  feed(encode(start));
  feed(encode(module));

  // 64 distinct stacks, as a program has a few hot allocation sites. With stack names, each is
  // sent whole and named the first time, then by its name (preload/stack_names.h).
  std::vector<std::string> allocs, frees, named_allocs, named_frees;
  for (int s = 0; s < 64; ++s) {
    vramtrace::wire::Envelope a;
    auto* alloc = a.mutable_alloc();
    alloc->set_tid(1);
    alloc->set_kind(vramtrace::wire::KIND_DEVICE);
    alloc->set_api(vramtrace::wire::API_CUDA_MALLOC);
    alloc->set_address(0x7f0000000000 + static_cast<uint64_t>(s) * 4096);
    alloc->set_size(4096);
    for (int d = 0; d < depth; ++d)
      alloc->add_stack(reinterpret_cast<uint64_t>(&anchor) + 1 +
                       static_cast<uint64_t>((s * 7 + d) % 16));
    vramtrace::wire::Envelope f;
    f.mutable_free()->set_tid(1);
    f.mutable_free()->set_address(alloc->address());
    f.mutable_free()->set_api(vramtrace::wire::API_CUDA_FREE);
    if (free_stacks)
      for (int d = 0; d < depth; ++d) f.mutable_free()->add_stack(alloc->stack(d));
    const auto name = static_cast<uint32_t>(s + 1);
    if (names) alloc->set_stack_name(name);
    allocs.push_back(encode(a));
    alloc->clear_stack();
    alloc->set_stack_name(0);
    alloc->set_same_stack_as(name);
    named_allocs.push_back(encode(a));
    frees.push_back(encode(f));
    if (free_stacks) {
      f.mutable_free()->clear_stack();
      f.mutable_free()->set_same_stack_as(name);
    }
    named_frees.push_back(encode(f));
  }
  size_t i = 0;
  int64_t events = 0;
  for (auto _ : state) {
    const bool by_name = names && i >= allocs.size();
    feed((by_name ? named_allocs : allocs)[i % allocs.size()]);
    feed((by_name ? named_frees : frees)[i % frees.size()]);
    ++i;
    events += 2;
    if ((i & 8191) == 0) writer->flush();
    // The last iteration waits until every row is written: with the writer's own thread, the
    // rows still queued are part of the cost.
    if (static_cast<benchmark::IterationCount>(i) == state.max_iterations) {
      if (!writer->finish(&error,
                          vramtrace::storage::TraceWriter::AllocationIndexes::kLeaveToTimeIndex))
        state.SkipWithError(error.c_str());
    }
  }
  state.SetItemsProcessed(events);
  writer.reset();
  fs::remove(path);
  fs::remove(path.string() + "-wal");
  fs::remove(path.string() + "-shm");
}
BENCHMARK(BM_CollectorIngest)
    ->Args({16, 0, 1, 1, 1})
    ->Args({64, 0, 1, 1, 1})
    ->Args({16, 0, 1, 1, 0})
    ->Args({64, 0, 1, 1, 0})
    ->Args({16, 0, 0, 1, 1})
    ->Args({64, 0, 0, 1, 1})
    ->Args({16, 1, 0, 1, 1})
    ->Args({64, 1, 0, 1, 1})
    ->Args({64, 1, 1, 1, 1})
    ->Args({16, 0, 1, 0, 1})
    ->Args({64, 0, 1, 0, 1})
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
