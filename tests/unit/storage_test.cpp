// TraceWriter and TraceReader together: what goes in comes back, field by field; readers see
// committed rows while the writer runs; failures are reported, sticky, and never throw.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <fstream>

#include "sql_query.h"
#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace::storage {
namespace {

using testing::TempDir;

// An address above 2^63: stored as the int64 with the same bits, it must still come back.
constexpr std::uint64_t kHighBits = 0xfedc'ba98'7654'3210;

std::unique_ptr<TraceReader> open_or_fail(const std::filesystem::path& path) {
  OpenFailure failure;
  auto reader = TraceReader::open(path, &failure);
  EXPECT_NE(reader, nullptr) << failure.message;
  return reader;
}

using testing::query_one;

ProcessRow sample_process(std::int64_t upid) {
  return {upid,
          static_cast<std::uint32_t>(100 + upid),
          1,
          1000,
          "host-a",
          "/bin/app",
          {"app", "with space", "quote\"back\\slash", "tab\tnewline\n\x01"},
          1000 * upid,
          1'600'000'000'000'000'000 + upid,
          "libunwind"};
}

AllocationRow sample_allocation(std::int64_t id, std::uint64_t seq) {
  AllocationRow row;
  row.id = id;
  row.upid = 1;
  row.kind = allocation_kind::kDevice;
  row.api = api::kCudaMalloc;
  row.device = 0;
  row.address = 0x7f00'0000'0000 + static_cast<std::uint64_t>(id) * 0x1000;
  row.size = 4096;
  row.requested_size = 4000;
  row.alloc_seq = seq;
  row.alloc_ns = 10 * static_cast<std::int64_t>(seq);
  row.alloc_utid = 1;
  return row;
}

TEST(TraceWriterTest, EveryValueWrittenIsReadBack) {
  TempDir dir;
  const auto path = dir / "trace.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;

  writer->set_meta("host", "first");
  writer->set_meta("host", "host-a");
  writer->set_command({"vramtrace-sample", "--epochs=2"});
  writer->add_process(sample_process(1));
  writer->add_process(sample_process(2));
  writer->end_process({1, 99'000, 3, std::nullopt, true});
  writer->end_process({2, std::nullopt, std::nullopt, 9, false});
  writer->add_thread(1, 1, 101);
  writer->add_thread(2, 1, 102);
  writer->set_thread_name(2, "worker");
  writer->add_module(1, "/bin/app", "deadbeef");
  writer->add_module(2, "/lib/libcudart.so.12", "");
  writer->add_mapping(1, 1, 1, 0x400000, 0x401000, 0);
  writer->add_mapping(2, 1, 2, kHighBits, kHighBits + 0x1000, kHighBits);
  writer->add_frame({1, 1, 0x1234, "main", "app.cpp", 10, false});
  writer->add_frame({2, 1, 0x1300, "inlined_fn", "app.h", 3, true});
  writer->add_frame({3, 2, kHighBits, std::nullopt, std::nullopt, std::nullopt, false});
  writer->add_callsite(1, std::nullopt, 1, 0);
  writer->add_callsite(2, 1, 2, 1);
  writer->add_callsite(3, 2, 3, 2);

  AllocationRow full = sample_allocation(1, 1);
  full.kind = allocation_kind::kAsync;
  full.api = api::kCudaMallocFromPoolAsync;
  full.device = 3;
  full.stream = kHighBits;
  full.address = kHighBits;
  // A successful allocation's size is below 2^63 (the reader refuses another as damaged); a
  // failed call's request may be any size_t (the failed row below).
  full.size = kHighBits >> 1;
  full.requested_size = 12345;
  full.flags = 0xffff'ffff;
  full.pool = kHighBits;
  full.alloc_utid = 2;
  full.alloc_callsite_id = 3;
  writer->add_allocation(full);
  writer->set_free(1, {7, 70, 1, 1, api::kCudaFreeAsync});
  writer->add_allocation(sample_allocation(2, 2));  // freed, then the free failed
  writer->set_free(2, {3, 30, 1, std::nullopt, api::kCudaFree});
  writer->clear_free(2);
  AllocationRow failed = sample_allocation(3, 4);
  failed.address = 0;
  failed.result = 2;
  failed.size = kHighBits;
  failed.requested_size = kHighBits;
  writer->add_allocation(failed);
  writer->add_bad_free({1, 1, 5, 50, 2, api::kCudaFree, 0xdead, 1, 2, "call_failed"});
  writer->add_bad_free(
      {2, 1, 6, 60, 1, api::kCudaFreeHost, 0xbeef, 0, std::nullopt, "unknown_address"});
  writer->set_stat("ring_overflow", Severity::kInfo, 1, "old");
  writer->set_stat("ring_overflow", Severity::kDataLoss, 5, "events dropped");
  writer->set_stat("bad_message", Severity::kError, 2, "undecodable");
  ASSERT_TRUE(writer->finish(&error)) << error;
  EXPECT_TRUE(writer->ok());

  // finish() leaves a file that stands alone, with its identity and indexes.
  EXPECT_FALSE(std::filesystem::exists(path.string() + "-wal"));
  EXPECT_EQ(query_one(path, "PRAGMA journal_mode"), "delete");
  EXPECT_EQ(query_one(path, "PRAGMA application_id"), std::to_string(kApplicationId));
  EXPECT_EQ(query_one(path, "PRAGMA user_version"), "2");
  EXPECT_EQ(query_one(path,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                      "'allocation_by_free_seq'"),
            "1");
  // Tables the reader has no accessor for, checked straight through SQLite.
  EXPECT_EQ(query_one(path, "SELECT build_id FROM module WHERE id = 1"), "deadbeef");
  EXPECT_EQ(query_one(path, "SELECT build_id FROM module WHERE id = 2"), "<null>");
  EXPECT_EQ(query_one(path,
                      "SELECT start || ',' || \"end\" || ',' || load_bias FROM mapping "
                      "WHERE id = 1"),
            "4194304,4198400,0");
  EXPECT_EQ(query_one(path, "SELECT load_bias FROM mapping WHERE id = 2"),
            std::to_string(static_cast<std::int64_t>(kHighBits)));
  EXPECT_EQ(query_one(path,
                      "SELECT kind_name || ' ' || api_name || ' ' || free_api_name "
                      "FROM allocation_view WHERE id = 1"),
            "async cudaMallocFromPoolAsync cudaFreeAsync");

  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_TRUE(reader->complete());
  EXPECT_EQ(reader->schema_version(), 2);
  EXPECT_EQ(reader->meta_value("host"), "host-a");
  EXPECT_EQ(reader->meta_value("complete"), "1");
  EXPECT_EQ(reader->meta_value("vramtrace_version"), VRAMTRACE_VERSION);
  EXPECT_TRUE(reader->meta_value("created_realtime_ns").has_value());
  EXPECT_FALSE(reader->meta_value("no_such_key").has_value());
  EXPECT_EQ(reader->recorded_command(),
            (std::vector<std::string>{"vramtrace-sample", "--epochs=2"}));

  EXPECT_EQ(reader->kind_name(allocation_kind::kHostPinned), "host_pinned");
  EXPECT_EQ(reader->kind_name(77), "kind_77");
  EXPECT_EQ(reader->api_name(api::kCudaMalloc3D), "cudaMalloc3D");
  EXPECT_EQ(reader->api_name(-1), "api_-1");

  const auto processes = reader->processes();
  ASSERT_EQ(processes.size(), 2u);
  const ProcessRow expected = sample_process(1);
  EXPECT_EQ(processes[0].start.upid, 1);
  EXPECT_EQ(processes[0].start.pid, 101u);
  EXPECT_EQ(processes[0].start.ppid, 1u);
  EXPECT_EQ(processes[0].start.uid, 1000u);
  EXPECT_EQ(processes[0].start.host, "host-a");
  EXPECT_EQ(processes[0].start.exe, "/bin/app");
  EXPECT_EQ(processes[0].start.argv, expected.argv);
  EXPECT_EQ(processes[0].start.start_ns, 1000);
  EXPECT_EQ(processes[0].start.start_realtime_ns, expected.start_realtime_ns);
  EXPECT_EQ(processes[0].start.unwinder, "libunwind");
  EXPECT_EQ(processes[0].end.end_ns, 99'000);
  EXPECT_EQ(processes[0].end.exit_status, 3);
  EXPECT_FALSE(processes[0].end.signal.has_value());
  EXPECT_TRUE(processes[0].end.complete);
  EXPECT_FALSE(processes[1].end.end_ns.has_value());
  EXPECT_FALSE(processes[1].end.exit_status.has_value());
  EXPECT_EQ(processes[1].end.signal, 9);
  EXPECT_FALSE(processes[1].end.complete);

  const auto threads = reader->threads();
  ASSERT_EQ(threads.size(), 2u);
  EXPECT_EQ(threads[0].tid, 101u);
  EXPECT_FALSE(threads[0].name.has_value());
  EXPECT_EQ(threads[1].utid, 2);
  EXPECT_EQ(threads[1].upid, 1);
  EXPECT_EQ(threads[1].name, "worker");

  const auto allocations = reader->allocations({});
  ASSERT_EQ(allocations.size(), 3u);
  const AllocationRow& a = allocations[0].allocation;
  EXPECT_EQ(a.id, 1);
  EXPECT_EQ(a.upid, 1);
  EXPECT_EQ(a.kind, allocation_kind::kAsync);
  EXPECT_EQ(a.api, api::kCudaMallocFromPoolAsync);
  EXPECT_EQ(a.device, 3);
  EXPECT_EQ(a.stream, kHighBits);
  EXPECT_EQ(a.address, kHighBits);
  EXPECT_EQ(a.size, kHighBits >> 1);
  EXPECT_EQ(a.requested_size, 12345u);
  EXPECT_EQ(a.flags, 0xffff'ffffu);
  EXPECT_EQ(a.pool, kHighBits);
  EXPECT_EQ(a.result, 0);
  EXPECT_EQ(a.alloc_seq, 1u);
  EXPECT_EQ(a.alloc_ns, 10);
  EXPECT_EQ(a.alloc_utid, 2);
  EXPECT_EQ(a.alloc_callsite_id, 3);
  ASSERT_TRUE(allocations[0].free.has_value());
  EXPECT_EQ(allocations[0].free->free_seq, 7u);
  EXPECT_EQ(allocations[0].free->free_ns, 70);
  EXPECT_EQ(allocations[0].free->free_utid, 1);
  EXPECT_EQ(allocations[0].free->free_callsite_id, 1);
  EXPECT_EQ(allocations[0].free->free_api, api::kCudaFreeAsync);
  EXPECT_FALSE(allocations[0].live_at_end());

  EXPECT_FALSE(allocations[1].allocation.pool.has_value());
  EXPECT_FALSE(allocations[1].allocation.alloc_callsite_id.has_value());
  EXPECT_FALSE(allocations[1].free.has_value()) << "clear_free must undo set_free";
  EXPECT_TRUE(allocations[1].live_at_end());
  EXPECT_TRUE(allocations[2].failed());
  EXPECT_FALSE(allocations[2].live_at_end());
  EXPECT_EQ(allocations[2].allocation.size, kHighBits);  // what the failed call asked for
  EXPECT_EQ(allocations[2].allocation.requested_size, kHighBits);

  AllocationFilter live;
  live.lifetime = AllocationFilter::Lifetime::kLiveAtEnd;
  ASSERT_EQ(reader->allocations(live).size(), 1u);
  EXPECT_EQ(reader->allocations(live)[0].allocation.id, 2);
  AllocationFilter failures;
  failures.outcome = AllocationFilter::Outcome::kFailed;
  ASSERT_EQ(reader->allocations(failures).size(), 1u);
  EXPECT_EQ(reader->allocations(failures)[0].allocation.id, 3);
  AllocationFilter async_only;
  async_only.kind = allocation_kind::kAsync;
  EXPECT_EQ(reader->allocations(async_only).size(), 1u);
  AllocationFilter other_process;
  other_process.upid = 2;
  EXPECT_TRUE(reader->allocations(other_process).empty());

  std::vector<std::pair<AllocationEvent::Type, std::uint64_t>> events;
  reader->for_each_allocation_event(
      [&](const AllocationEvent& event) { events.emplace_back(event.type, event.seq); });
  using Type = AllocationEvent::Type;
  EXPECT_EQ(events, (std::vector<std::pair<Type, std::uint64_t>>{
                        {Type::kAlloc, 1}, {Type::kAlloc, 2}, {Type::kFree, 7}}));

  const auto stack = reader->stack(3);
  ASSERT_EQ(stack.size(), 3u);
  EXPECT_EQ(stack[0].callsite_id, 3);
  EXPECT_EQ(stack[0].frame_id, 3);
  EXPECT_FALSE(stack[0].function.has_value());
  EXPECT_FALSE(stack[0].file.has_value());
  EXPECT_FALSE(stack[0].line.has_value());
  EXPECT_EQ(stack[0].module, "/lib/libcudart.so.12");
  EXPECT_EQ(stack[0].rel_pc, kHighBits);
  EXPECT_EQ(stack[1].function, "inlined_fn");
  EXPECT_EQ(stack[1].file, "app.h");
  EXPECT_EQ(stack[1].line, 3);
  EXPECT_TRUE(stack[1].inlined);
  EXPECT_EQ(stack[2].function, "main");
  EXPECT_EQ(stack[2].module, "/bin/app");
  EXPECT_EQ(stack[2].rel_pc, 0x1234u);
  EXPECT_FALSE(stack[2].inlined);
  EXPECT_TRUE(reader->stack(std::nullopt).empty());
  EXPECT_TRUE(reader->stack(999).empty());

  const auto bad_frees = reader->bad_frees();
  ASSERT_EQ(bad_frees.size(), 2u);
  EXPECT_EQ(bad_frees[0].id, 1);
  EXPECT_EQ(bad_frees[0].seq, 5u);
  EXPECT_EQ(bad_frees[0].ns, 50);
  EXPECT_EQ(bad_frees[0].utid, 2);
  EXPECT_EQ(bad_frees[0].api, api::kCudaFree);
  EXPECT_EQ(bad_frees[0].address, 0xdeadu);
  EXPECT_EQ(bad_frees[0].result, 1);
  EXPECT_EQ(bad_frees[0].callsite_id, 2);
  EXPECT_EQ(bad_frees[0].reason, "call_failed");
  EXPECT_FALSE(bad_frees[1].callsite_id.has_value());
  EXPECT_EQ(bad_frees[1].reason, "unknown_address");

  const auto stats = reader->stats();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats[0].name, "bad_message");
  EXPECT_EQ(stats[0].severity, Severity::kError);
  EXPECT_EQ(stats[1].name, "ring_overflow");
  EXPECT_EQ(stats[1].severity, Severity::kDataLoss);
  EXPECT_EQ(stats[1].value, 5);
  EXPECT_EQ(stats[1].description, "events dropped");
}

TEST(TraceWriterTest, RanksVirtualMemoryColumnsAndTheirNamesAreReadBack) {
  TempDir dir;
  const auto path = dir / "vmm.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  ProcessRow ranked = sample_process(1);
  ranked.rank = 5;
  ranked.local_rank = 1;
  ranked.world_size = 8;
  writer->add_process(ranked);
  writer->add_process(sample_process(2));  // not part of a distributed job
  AllocationRow mapping = sample_allocation(1, 1);
  mapping.kind = allocation_kind::kVmmMapping;
  mapping.api = api::kCuMemMap;
  mapping.vmm_handle = kHighBits;
  mapping.vmm_offset = 0x20'0000;
  writer->add_allocation(mapping);
  AllocationRow plain = sample_allocation(2, 2);
  plain.api = api::kCuMemAlloc;
  writer->add_allocation(plain);
  writer->set_free(1, {3, 30, 1, std::nullopt, api::kCuMemUnmap});
  ASSERT_TRUE(writer->finish(&error)) << error;

  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  const auto processes = reader->processes();
  ASSERT_EQ(processes.size(), 2u);
  EXPECT_EQ(processes[0].start.rank, 5);
  EXPECT_EQ(processes[0].start.local_rank, 1);
  EXPECT_EQ(processes[0].start.world_size, 8);
  EXPECT_FALSE(processes[1].start.rank.has_value());
  EXPECT_FALSE(processes[1].start.local_rank.has_value());
  EXPECT_FALSE(processes[1].start.world_size.has_value());

  const auto allocations = reader->allocations({});
  ASSERT_EQ(allocations.size(), 2u);
  EXPECT_EQ(allocations[0].allocation.kind, allocation_kind::kVmmMapping);
  EXPECT_EQ(allocations[0].allocation.vmm_handle, kHighBits);
  EXPECT_EQ(allocations[0].allocation.vmm_offset, 0x20'0000u);
  EXPECT_EQ(allocations[0].free->free_api, api::kCuMemUnmap);
  EXPECT_FALSE(allocations[1].allocation.vmm_handle.has_value());
  EXPECT_FALSE(allocations[1].allocation.vmm_offset.has_value());

  // The new enumeration rows, by the names a user knows (no _v2).
  EXPECT_EQ(reader->kind_name(allocation_kind::kVmmReservation), "vmm_reservation");
  EXPECT_EQ(reader->kind_name(allocation_kind::kVmmHandle), "vmm_handle");
  EXPECT_EQ(reader->kind_name(allocation_kind::kVmmMapping), "vmm_mapping");
  EXPECT_EQ(reader->api_name(api::kCuMemAlloc), "cuMemAlloc");
  EXPECT_EQ(reader->api_name(api::kCuMemAllocHost), "cuMemAllocHost");
  EXPECT_EQ(reader->api_name(api::kCuMemAddressReserve), "cuMemAddressReserve");
  EXPECT_EQ(reader->api_name(api::kCuMemUnmap), "cuMemUnmap");
  EXPECT_EQ(query_one(path, "SELECT count(*) FROM api"), "30");
  EXPECT_EQ(query_one(path,
                      "SELECT group_concat(name, ',') FROM (SELECT name FROM api "
                      "WHERE id BETWEEN 12 AND 27 ORDER BY id)"),
            "cuMemAlloc,cuMemAllocPitch,cuMemFree,cuMemAllocManaged,cuMemHostAlloc,"
            "cuMemAllocHost,cuMemFreeHost,cuMemAllocAsync,cuMemAllocFromPoolAsync,cuMemFreeAsync,"
            "cuMemCreate,cuMemRelease,cuMemAddressReserve,cuMemAddressFree,cuMemMap,cuMemUnmap");
  EXPECT_EQ(query_one(path,
                      "SELECT api_name || ' ' || free_api_name || ' ' || kind_name "
                      "FROM allocation_view WHERE id = 1"),
            "cuMemMap cuMemUnmap vmm_mapping");
}

MarkerRow sample_marker(std::int64_t id, std::string_view type, std::string name,
                        std::uint64_t seq) {
  MarkerRow row;
  row.id = id;
  row.upid = 1;
  row.utid = 1;
  row.type = std::string(type);
  row.source = std::string(kMarkerFromNvtx);
  row.name = std::move(name);
  row.start_seq = seq;
  row.start_ns = 100 * static_cast<std::int64_t>(seq);
  return row;
}

TEST(TraceWriterTest, MarksNestedRangesAndUnendedRangesAreReadBack) {
  TempDir dir;
  const auto path = dir / "markers.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->add_process(sample_process(1));
  writer->add_process(sample_process(2));
  writer->add_thread(1, 1, 101);
  writer->add_thread(2, 1, 102);

  // Written out of order on purpose: the reader gives (upid, start_seq) order.
  MarkerRow other_process = sample_marker(9, kMarkerMark, "other", 1);
  other_process.upid = 2;
  writer->add_marker(other_process);
  writer->add_marker(sample_marker(1, kMarkerRange, "epoch", 2));
  MarkerRow inner = sample_marker(2, kMarkerRange, "forward", 3);
  inner.depth = 1;
  inner.parent_id = 1;
  inner.color = 0xff11'2233;
  inner.category = 7;
  writer->add_marker(inner);
  MarkerRow mark = sample_marker(3, kMarkerMark, "checkpoint", 5);
  mark.source = std::string(kMarkerFromApi);
  writer->add_marker(mark);
  MarkerRow unended = sample_marker(4, kMarkerRange, "load", 6);
  unended.domain = "dataloader";
  unended.utid = 2;
  writer->add_marker(unended);
  writer->end_marker(2, {4, 400, 1});
  writer->end_marker(1, {8, 800, 2});   // ended on another thread
  writer->end_marker(77, {9, 900, 1});  // never added: counted, not fatal
  EXPECT_TRUE(writer->ok()) << writer->error();
  ASSERT_TRUE(writer->finish(&error)) << error;

  EXPECT_EQ(query_one(path,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = "
                      "'marker_by_process'"),
            "1");
  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  const auto markers = reader->markers();
  ASSERT_EQ(markers.size(), 5u);
  std::vector<std::string> names;
  for (const MarkerRecord& marker : markers) names.push_back(marker.start.name);
  EXPECT_EQ(names, (std::vector<std::string>{"epoch", "forward", "checkpoint", "load", "other"}));

  const MarkerRecord& epoch = markers[0];
  EXPECT_EQ(epoch.start.id, 1);
  EXPECT_EQ(epoch.start.type, "range");
  EXPECT_EQ(epoch.start.source, "nvtx");
  EXPECT_FALSE(epoch.start.domain.has_value());
  EXPECT_EQ(epoch.start.depth, 0);
  EXPECT_FALSE(epoch.start.parent_id.has_value());
  EXPECT_FALSE(epoch.start.color.has_value());
  ASSERT_TRUE(epoch.end.has_value());
  EXPECT_EQ(epoch.end->end_seq, 8u);
  EXPECT_EQ(epoch.end->end_ns, 800);
  EXPECT_EQ(epoch.end->end_utid, 2);

  const MarkerRecord& forward = markers[1];
  EXPECT_EQ(forward.start.upid, 1);
  EXPECT_EQ(forward.start.utid, 1);
  EXPECT_EQ(forward.start.start_seq, 3u);
  EXPECT_EQ(forward.start.start_ns, 300);
  EXPECT_EQ(forward.start.depth, 1);
  EXPECT_EQ(forward.start.parent_id, 1);
  EXPECT_EQ(forward.start.color, 0xff11'2233u);
  EXPECT_EQ(forward.start.category, 7u);
  ASSERT_TRUE(forward.end.has_value());
  EXPECT_EQ(forward.end->end_seq, 4u);

  const MarkerRecord& checkpoint = markers[2];
  EXPECT_EQ(checkpoint.start.type, "mark");
  EXPECT_EQ(checkpoint.start.source, "api");
  EXPECT_FALSE(checkpoint.end.has_value());

  const MarkerRecord& load = markers[3];
  EXPECT_EQ(load.start.domain, "dataloader");
  EXPECT_EQ(load.start.utid, 2);
  EXPECT_FALSE(load.end.has_value()) << "a range never ended has no end";
  EXPECT_EQ(markers[4].start.upid, 2);

  std::map<std::string, std::int64_t> stats;
  for (const StatRecord& stat : reader->stats()) stats[stat.name] = stat.value;
  EXPECT_EQ(stats, (std::map<std::string, std::int64_t>{{"storage_end_of_unknown_marker", 1}}));
}

TEST(TraceWriterTest, ReadersSeeCommittedRowsWhileTheWriterRuns) {
  TempDir dir;
  const auto path = dir / "live.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->add_process(sample_process(1));
  writer->add_allocation(sample_allocation(1, 1));
  writer->flush();

  // The collector writes in WAL mode, which is what lets a reader in while it writes.
  EXPECT_TRUE(std::filesystem::exists(path.string() + "-wal"));
  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->complete());
  EXPECT_EQ(reader->processes().size(), 1u);
  EXPECT_EQ(reader->allocations({}).size(), 1u);

  writer->add_allocation(sample_allocation(2, 2));
  EXPECT_EQ(reader->allocations({}).size(), 1u) << "an uncommitted row must not be visible";
  writer->flush();
  EXPECT_EQ(reader->allocations({}).size(), 2u);

  // A reader holding the file open does not make finish() fail.
  ASSERT_TRUE(writer->finish(&error)) << error;
  const auto after = open_or_fail(path);
  ASSERT_NE(after, nullptr);
  EXPECT_TRUE(after->complete());
  EXPECT_EQ(after->allocations({}).size(), 2u);
}

TEST(TraceWriterTest, AWriterDroppedWithoutFinishKeepsItsRowsAndStaysIncomplete) {
  TempDir dir;
  const auto path = dir / "dropped.db";
  {
    auto writer = TraceWriter::create(path, nullptr);
    ASSERT_NE(writer, nullptr);
    writer->add_process(sample_process(1));
    writer->add_allocation(sample_allocation(1, 1));
  }
  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->complete());
  EXPECT_EQ(reader->meta_value("complete"), "0");
  EXPECT_EQ(reader->allocations({}).size(), 1u);
}

TEST(TraceWriterTest, CreateRefusesAnExistingFile) {
  TempDir dir;
  const auto path = dir / "existing.db";
  std::ofstream(path) << "keep me";
  std::string error;
  EXPECT_EQ(TraceWriter::create(path, &error), nullptr);
  EXPECT_NE(error.find(path.string()), std::string::npos) << error;
  EXPECT_NE(error.find("already exists"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
  std::ifstream file(path);
  std::string content;
  std::getline(file, content);
  EXPECT_EQ(content, "keep me");
}

// Writes the child's verdict as its exit status: 0 when create() failed as it should.
int create_in_read_only_directory(const std::filesystem::path& path) {
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  if (writer != nullptr) return 1;
  if (error.find(path.string()) == std::string::npos) return 2;
  if (error.find("Permission denied") == std::string::npos) return 3;
  return 0;
}

TEST(TraceWriterTest, CreateFailsInAReadOnlyDirectory) {
  TempDir dir;
  const auto read_only = dir / "read-only";
  std::filesystem::create_directory(read_only);
  std::filesystem::permissions(
      read_only, std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec |
                     std::filesystem::perms::others_read | std::filesystem::perms::others_exec);
  const auto path = read_only / "trace.db";
  if (geteuid() != 0) {
    EXPECT_EQ(create_in_read_only_directory(path), 0);
    return;
  }
  // root writes anywhere: try as nobody, in a child, so that this process keeps its rights.
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(10);
    _exit(create_in_read_only_directory(path));
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: created; 2: message lacks the path; 3: lacks the "
                                       "reason; 10: could not drop privileges";
  EXPECT_FALSE(std::filesystem::exists(path));
}

// Lowers this process's file size limit, so that the trace's next large write fails as on a
// full disk. Restores the limit and SIGXFSZ's disposition when it goes.
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    getrlimit(RLIMIT_FSIZE, &saved_);
    previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, previous_handler_);
  }

 private:
  rlimit saved_{};
  void (*previous_handler_)(int) = nullptr;
};

TEST(TraceWriterTest, TheFirstFailureIsStickyWhenTheFileCannotGrow) {
  TempDir dir;
  const auto path = dir / "full.db";
  std::string error;
  auto writer = TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->add_process(sample_process(1));
  writer->flush();
  ASSERT_TRUE(writer->ok()) << writer->error();
  {
    const FileSizeLimit limit(256 * 1024);
    for (std::int64_t id = 1; id <= 20000; ++id) {
      writer->add_allocation(sample_allocation(id, static_cast<std::uint64_t>(id)));
    }
    writer->flush();
  }
  ASSERT_FALSE(writer->ok());
  const std::string first = writer->error();
  EXPECT_NE(first.find(path.string()), std::string::npos) << first;
  EXPECT_EQ(first.find('\n'), std::string::npos) << first;

  // Later calls do nothing, and the first message stays.
  writer->add_process(sample_process(2));
  writer->flush();
  EXPECT_EQ(writer->error(), first);
  std::string finish_error;
  EXPECT_FALSE(writer->finish(&finish_error));
  EXPECT_EQ(finish_error, first);

  // What was committed before the failure is still a (incomplete) trace.
  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->complete());
  EXPECT_EQ(reader->processes().size(), 1u);
}

TEST(TraceWriterTest, ADuplicateIdIsAStickyFailureThatKeepsEarlierRows) {
  TempDir dir;
  const auto path = dir / "duplicate.db";
  auto writer = TraceWriter::create(path, nullptr);
  ASSERT_NE(writer, nullptr);
  writer->add_process(sample_process(1));
  writer->add_allocation(sample_allocation(1, 1));
  writer->add_allocation(sample_allocation(1, 2));
  ASSERT_FALSE(writer->ok());
  EXPECT_NE(writer->error().find("UNIQUE"), std::string::npos) << writer->error();
  EXPECT_NE(writer->error().find("adding an allocation"), std::string::npos) << writer->error();
  writer->add_allocation(sample_allocation(2, 3));
  EXPECT_FALSE(writer->finish(nullptr));

  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_FALSE(reader->complete());
  const auto allocations = reader->allocations({});
  ASSERT_EQ(allocations.size(), 1u);
  EXPECT_EQ(allocations[0].allocation.alloc_seq, 1u);
}

TEST(TraceWriterTest, UpdatesOfUnknownRowsAreCountedNotFatal) {
  TempDir dir;
  const auto path = dir / "unknown.db";
  auto writer = TraceWriter::create(path, nullptr);
  ASSERT_NE(writer, nullptr);
  writer->set_free(404, {1, 1, 1, std::nullopt, api::kCudaFree});
  writer->clear_free(405);
  writer->end_process({406, 1, 0, std::nullopt, true});
  writer->set_thread_name(407, "ghost");
  EXPECT_TRUE(writer->ok()) << writer->error();
  std::string error;
  ASSERT_TRUE(writer->finish(&error)) << error;

  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  std::map<std::string, std::int64_t> stats;
  for (const StatRecord& stat : reader->stats()) {
    EXPECT_EQ(stat.severity, Severity::kError);
    stats[stat.name] = stat.value;
  }
  EXPECT_EQ(stats, (std::map<std::string, std::int64_t>{{"storage_end_of_unknown_process", 1},
                                                        {"storage_free_of_unknown_allocation", 2},
                                                        {"storage_name_of_unknown_thread", 1}}));
}

TEST(TraceWriterTest, FinishIsIdempotentAndLaterWritesAreIgnored) {
  TempDir dir;
  const auto path = dir / "twice.db";
  auto writer = TraceWriter::create(path, nullptr);
  ASSERT_NE(writer, nullptr);
  writer->add_process(sample_process(1));
  ASSERT_TRUE(writer->finish(nullptr));
  writer->add_process(sample_process(2));
  writer->flush();
  EXPECT_TRUE(writer->finish(nullptr));
  const auto reader = open_or_fail(path);
  ASSERT_NE(reader, nullptr);
  EXPECT_EQ(reader->processes().size(), 1u);
}

}  // namespace
}  // namespace vramtrace::storage
