// `run --backend both`: the shim's and CUPTI's rings of one process, through the collector, and
// what the summary's comparison makes of them.
#include "analysis/reports/backend_comparison.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "collector/trace_ingest.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "vramtrace.pb.h"

namespace vramtrace::analysis {
namespace {

constexpr uint32_t kPid = 4242;

// Two rings of the same process, one per backend, fed by hand.
class TwoBackends {
 public:
  TwoBackends() {
    path_ = std::filesystem::temp_directory_path() /
            ("vramtrace-backends-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
    std::string error;
    writer_ = storage::TraceWriter::create(path_, &error);
    ingest_ = std::make_unique<collector::TraceIngest>(*writer_);
    preload_ = start(wire::BACKEND_PRELOAD);
    cupti_ = start(wire::BACKEND_CUPTI);
  }
  ~TwoBackends() { std::filesystem::remove(path_); }

  void alloc(bool cupti, wire::Kind kind, uint64_t address, uint64_t size) {
    wire::Envelope e;
    wire::Alloc& a = *e.mutable_alloc();
    a.set_kind(kind);
    a.set_api(wire::API_CUDA_MALLOC);
    a.set_address(address);
    a.set_size(size);
    if (cupti) a.set_correlation_id(static_cast<uint32_t>(++correlation_));
    feed(cupti ? cupti_ : preload_, e);
  }
  void free(bool cupti, uint64_t address) {
    wire::Envelope e;
    e.mutable_free()->set_api(wire::API_CUDA_FREE);
    e.mutable_free()->set_address(address);
    feed(cupti ? cupti_ : preload_, e);
  }

  BackendComparison compare() {
    ingest_->close_ring(preload_, true, 1000);
    ingest_->close_ring(cupti_, true, 1000);
    std::string error;
    EXPECT_TRUE(writer_->finish(&error)) << error;
    storage::OpenFailure failure;
    reader_ = storage::TraceReader::open(path_, &failure);
    return compare_backends(*reader_);
  }

 private:
  int64_t start(wire::Backend backend) {
    const int64_t ring = ingest_->open_ring(kPid);
    wire::Envelope e;
    e.mutable_process_start()->set_pid(kPid);
    e.mutable_process_start()->set_backend(backend);
    feed(ring, e);
    return ring;
  }
  void feed(int64_t ring, const wire::Envelope& e) {
    const std::string bytes = e.SerializeAsString();
    uint64_t& seq = seqs_[ring];
    ++seq;
    ring::RecordHeader h{static_cast<uint32_t>(bytes.size()), seq, static_cast<int64_t>(seq)};
    ingest_->on_record(ring, h, reinterpret_cast<const unsigned char*>(bytes.data()));
  }

  std::filesystem::path path_;
  std::unique_ptr<storage::TraceWriter> writer_;
  std::unique_ptr<collector::TraceIngest> ingest_;
  std::unique_ptr<storage::TraceReader> reader_;
  int64_t preload_ = 0, cupti_ = 0;
  std::map<int64_t, uint64_t> seqs_;
  int correlation_ = 0;
};

TEST(BackendComparison, SameAllocationsSeenByBothMatch) {
  TwoBackends t;
  // The address is reused: the n-th allocation at it by one backend is the n-th by the other.
  for (bool cupti : {false, true}) {
    t.alloc(cupti, wire::KIND_DEVICE, 0x1000, 256);
    t.free(cupti, 0x1000);
    t.alloc(cupti, wire::KIND_DEVICE, 0x1000, 256);
    t.alloc(cupti, wire::KIND_HOST_PINNED, 0x9000, 64);
  }
  const BackendComparison c = t.compare();
  ASSERT_TRUE(c.both);
  EXPECT_EQ(c.only_preload, 0u);
  EXPECT_EQ(c.only_cupti, 0u);
  ASSERT_EQ(c.kinds.size(), 2u);
  EXPECT_EQ(c.kinds[0].name, "device");
  EXPECT_EQ(c.kinds[0].preload_allocations, 2u);
  EXPECT_EQ(c.kinds[0].cupti_allocations, 2u);
  EXPECT_EQ(c.kinds[0].cupti_bytes, 512u);
  EXPECT_EQ(c.kinds[1].name, "host_pinned");
}

TEST(BackendComparison, WhatOneBackendAloneSawIsListed) {
  TwoBackends t;
  t.alloc(false, wire::KIND_DEVICE, 0x1000, 256);
  t.alloc(true, wire::KIND_DEVICE, 0x1000, 256);
  t.alloc(true, wire::KIND_VMM_HANDLE, 0x77, 2 << 20);  // e.g. a driver call the shim missed
  t.alloc(false, wire::KIND_DEVICE, 0x2000, 128);       // and one CUPTI missed
  t.alloc(true, wire::KIND_DEVICE, 0x2000, 4096);       // same address, another size: no match
  const BackendComparison c = t.compare();
  ASSERT_TRUE(c.both);
  EXPECT_EQ(c.only_preload, 1u);
  EXPECT_EQ(c.only_cupti, 2u);
  ASSERT_EQ(c.unmatched.size(), 3u);
  EXPECT_EQ(c.unmatched[0].seen_by, "preload");
  EXPECT_EQ(c.unmatched[0].address, 0x2000u);
  EXPECT_EQ(c.unmatched[0].size, 128u);
  EXPECT_EQ(c.unmatched[1].seen_by, "cupti");
  EXPECT_EQ(c.unmatched[1].kind, "vmm_handle");
  EXPECT_EQ(c.unmatched[2].size, 4096u);
}

}  // namespace
}  // namespace vramtrace::analysis
