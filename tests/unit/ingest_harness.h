// Drives the collector's TraceIngest with wire records built by the test, as the rings would,
// into a trace file that the test then reads back: the collector's logic without a shim.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "collector/trace_ingest.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "vramtrace.pb.h"

namespace vramtrace::testing_support {

class IngestHarness {
 public:
  // One process, pid 4242 unless given, already started (by the shim, or by the backend
  // given); the trace file is named after the running test.
  explicit IngestHarness(wire::Backend backend = wire::BACKEND_PRELOAD, uint32_t pid = 4242) {
    path_ = std::filesystem::temp_directory_path() /
            ("vramtrace-ingest-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db");
    std::filesystem::remove(path_);
    std::string error;
    writer_ = storage::TraceWriter::create(path_, &error);
    EXPECT_TRUE(writer_) << error;
    ingest_ = std::make_unique<collector::TraceIngest>(*writer_);
    ring_ = ingest_->open_ring(pid);
    wire::Envelope start;
    start.mutable_process_start()->set_pid(pid);
    start.mutable_process_start()->set_backend(backend);
    feed(start);
  }
  ~IngestHarness() {
    reader_.reset();
    std::filesystem::remove(path_);
  }
  IngestHarness(const IngestHarness&) = delete;
  IngestHarness& operator=(const IngestHarness&) = delete;

  // One ring record; its sequence number and time are the count of records so far.
  void feed(const wire::Envelope& envelope) { feed_bytes(envelope.SerializeAsString()); }
  // One ring record of any bytes, as a ring may hold them.
  void feed_bytes(const std::string& bytes) {
    ++seq_;
    ring::RecordHeader h{static_cast<uint32_t>(bytes.size()), seq_, static_cast<int64_t>(seq_)};
    ingest_->on_record(ring_, h, reinterpret_cast<const unsigned char*>(bytes.data()));
  }

  // An object loaded at `start` (its load bias), `bytes` long, named `path`.
  void feed_module(uint64_t start, const std::string& path, uint64_t bytes = 0x100000) {
    wire::Envelope e;
    auto* m = e.mutable_module();
    m->set_start(start);
    m->set_end(start + bytes);
    m->set_load_bias(start);
    m->set_path(path);
    feed(e);
  }

  // A cudaMalloc of `size` bytes that returned `address`, with `stack` (innermost first); the
  // test may set more fields before feeding it.
  static wire::Envelope cuda_malloc(uint64_t address, uint64_t size,
                                    const std::vector<uint64_t>& stack) {
    wire::Envelope e;
    auto* a = e.mutable_alloc();
    a->set_kind(wire::KIND_DEVICE);
    a->set_api(wire::API_CUDA_MALLOC);
    a->set_address(address);
    a->set_size(size);
    for (uint64_t ip : stack) a->add_stack(ip);
    return e;
  }

  // Ends the process and the recording, and opens the trace.
  const storage::TraceReader& finish() {
    ingest_->close_ring(ring_, true, static_cast<int64_t>(seq_) + 1);
    ingest_->write_stats();
    std::string error;
    EXPECT_TRUE(writer_->finish(&error)) << error;
    ingest_.reset();
    writer_.reset();
    storage::OpenFailure failure;
    reader_ = storage::TraceReader::open(path_, &failure);
    EXPECT_TRUE(reader_) << failure.message;
    return *reader_;
  }

  const storage::TraceReader& reader() const { return *reader_; }
  const std::filesystem::path& path() const { return path_; }
  // The sequence number of the last record fed.
  uint64_t seq() const { return seq_; }

  // A stat's value after finish(); 0 when it was never counted.
  int64_t stat(const std::string& name) const {
    for (const auto& s : reader_->stats())
      if (s.name == name) return s.value;
    return 0;
  }

 private:
  std::filesystem::path path_;
  std::unique_ptr<storage::TraceWriter> writer_;
  std::unique_ptr<collector::TraceIngest> ingest_;
  std::unique_ptr<storage::TraceReader> reader_;
  int64_t ring_ = 0;
  uint64_t seq_ = 0;
};

}  // namespace vramtrace::testing_support
