// Processes as people count them: one pid's exec'd images are one process, named by the image
// that used the GPU; and which processes recorded GPU events at all.
#include "analysis/scope/process_chains.h"

#include <gtest/gtest.h>

#include "storage/schema.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"

namespace vramtrace::analysis {
namespace {

storage::ProcessRecord image(std::int64_t upid, std::uint32_t pid, std::uint32_t ppid,
                             std::int64_t start_ns, std::string exe, std::string host = "vm") {
  storage::ProcessRecord record;
  record.start.upid = upid;
  record.start.pid = pid;
  record.start.ppid = ppid;
  record.start.start_ns = start_ns;
  record.start.exe = std::move(exe);
  record.start.host = std::move(host);
  return record;
}

std::vector<std::vector<std::int64_t>> upids_of(const std::vector<ProcessChain>& chains) {
  std::vector<std::vector<std::int64_t>> upids;
  for (const ProcessChain& chain : chains) {
    upids.emplace_back();
    for (const storage::ProcessRecord& i : chain.images) upids.back().push_back(i.start.upid);
  }
  return upids;
}

TEST(ProcessChains, OnePidsExecsAreOneProcessNamedByTheImageThatUsedTheGpu) {
  // bash (pid 10) forks 11, which execs seq; 10 execs env, which execs python; given out of
  // order, as a merged trace may list them.
  std::vector<storage::ProcessRecord> processes{
      image(4, 10, 1, 400, "/usr/bin/python3.11"), image(1, 10, 1, 100, "/usr/bin/bash"),
      image(2, 11, 10, 200, "/usr/bin/bash"),      image(3, 11, 10, 250, "/usr/bin/seq"),
      image(5, 10, 1, 300, "/usr/bin/env"),
  };
  const std::vector<ProcessChain> chains = chain_processes(processes, {4});
  EXPECT_EQ(upids_of(chains), (std::vector<std::vector<std::int64_t>>{{1, 5, 4}, {2, 3}}));
  ASSERT_EQ(chains.size(), 2u);
  EXPECT_TRUE(chains[0].gpu);
  EXPECT_EQ(chains[0].process().start.upid, 4);
  EXPECT_EQ(chains[0].gpu_images, std::vector<std::int64_t>{4});
  EXPECT_EQ(image_name(chains[0].process()), "python3.11");
  // No image used the GPU: the last one names it.
  EXPECT_FALSE(chains[1].gpu);
  EXPECT_EQ(chains[1].process().start.upid, 3);
  EXPECT_TRUE(chains[1].contains(2));
  EXPECT_FALSE(chains[1].contains(4));

  const GpuProcesses gpu = gpu_processes(chains);
  ASSERT_EQ(gpu.gpu.size(), 1u);
  EXPECT_EQ(gpu.gpu[0], &chains[0]);
  EXPECT_EQ(gpu.others, 1u);
}

TEST(ProcessChains, TheLastImageThatUsedTheGpuNamesTheChain) {
  // python used the GPU, then exec'd a second python that used it too, then a cleanup script.
  const std::vector<ProcessChain> chains = chain_processes(
      {image(1, 10, 1, 100, "/usr/bin/python3"), image(2, 10, 1, 200, "/usr/bin/python3"),
       image(3, 10, 1, 300, "/usr/bin/sh")},
      {1, 2});
  ASSERT_EQ(chains.size(), 1u);
  EXPECT_EQ(chains[0].process().start.upid, 2);
  EXPECT_EQ(chains[0].gpu_images, (std::vector<std::int64_t>{1, 2}));
}

TEST(ProcessChains, AnotherHostOrParentOrBackendIsAnotherProcess) {
  std::vector<storage::ProcessRecord> processes{
      image(1, 10, 1, 100, "/usr/bin/python3", "node-a"),
      image(2, 10, 1, 100, "/usr/bin/python3", "node-b"),  // the same pid on another host
      image(3, 10, 7, 900, "/usr/bin/python3", "node-a"),  // the pid given again, to another child
      image(4, 10, 1, 100, "/usr/bin/python3", "node-a"),  // recorded by CUPTI too
  };
  processes[3].start.backend = std::string(storage::kBackendCupti);
  const std::vector<ProcessChain> chains = chain_processes(processes, {1, 2, 3, 4});
  EXPECT_EQ(upids_of(chains), (std::vector<std::vector<std::int64_t>>{{1}, {2}, {4}, {3}}));
}

TEST(ProcessChains, TheTraceSaysWhichProcessesRecordedGpuEvents) {
  // Five processes: one allocates (a failed call only), one has a bad free, one an NVTX mark,
  // one only the shim's own marker, one nothing.
  testing::TempDir dir;
  const auto path = dir.path() / "gpu.db";
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  for (std::int64_t upid = 1; upid <= 5; ++upid) {
    storage::ProcessRow process;
    process.upid = upid;
    process.pid = static_cast<std::uint32_t>(100 + upid);
    process.exe = "/usr/bin/true";
    process.start_ns = upid * 1000;
    writer->add_process(process);
    writer->add_thread(upid, upid, process.pid);
  }
  storage::AllocationRow failed;
  failed.id = 1;
  failed.upid = 1;
  failed.kind = storage::allocation_kind::kDevice;
  failed.api = storage::api::kCudaMalloc;
  failed.size = 1 << 20;
  failed.result = 2;
  failed.alloc_seq = 1;
  failed.alloc_ns = 1010;
  failed.alloc_utid = 1;
  writer->add_allocation(failed);
  storage::BadFreeRow bad_free;
  bad_free.id = 1;
  bad_free.upid = 2;
  bad_free.seq = 1;
  bad_free.ns = 2010;
  bad_free.utid = 2;
  bad_free.api = storage::api::kCudaFree;
  bad_free.address = 0x1000;
  bad_free.reason = std::string(storage::kBadFreeUnknownAddress);
  writer->add_bad_free(bad_free);
  for (const auto& [upid, source] :
       {std::pair<std::int64_t, std::string_view>{3, storage::kMarkerFromNvtx},
        {4, storage::kMarkerFromShim}}) {
    storage::MarkerRow mark;
    mark.id = upid;
    mark.upid = upid;
    mark.utid = upid;
    mark.type = std::string(storage::kMarkerMark);
    mark.source = std::string(source);
    mark.name = "mark";
    mark.start_seq = 1;
    mark.start_ns = upid * 1000 + 10;
    writer->add_marker(mark);
  }
  ASSERT_TRUE(writer->finish(&error)) << error;
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(path, &failure);
  ASSERT_NE(trace, nullptr) << failure.message;
  EXPECT_EQ(trace->upids_with_gpu_events(), (std::vector<std::int64_t>{1, 2, 3}));
}

}  // namespace
}  // namespace vramtrace::analysis
