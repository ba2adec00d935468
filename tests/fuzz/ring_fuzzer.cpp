// libFuzzer target: what the collector reads from a traced process's ring. Rings are
// untrusted input (proto/shm_ring.h): a process may scribble on its ring, so the collector must
// survive any bytes in the data area, any write and read positions, and any payload that
// libprotobuf may or may not decode (collector/trace_ingest.h).
//
// Input: [u64 write_pos][u64 read_pos][data area bytes...], the positions as little-endian
// integers; the data area is 64 KiB (the smallest ring), zero where the input ends. The rest
// of the ring header is valid, as the collector checks it before it reads anything.
//
// Each input is one ring of one process, drained as CollectorServer drains it and closed as
// if the process had hung up. The trace behind it is renewed every few thousand inputs, so
// that the collector's state (processes, interned stacks) stays small.
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "collector/trace_ingest.h"
#include "shm_ring.h"
#include "storage/trace_writer.h"

namespace {

namespace fs = std::filesystem;
using vramtrace::ring::RingConsumer;

constexpr size_t kInputsPerTrace = 4096;

// A writer and an ingest over a scratch trace, as `vramtrace run` has them.
class Session {
 public:
  // Static: destroyed when libFuzzer exits, which leaves no scratch trace behind.
  ~Session() {
    ingest_.reset();
    writer_.reset();
    remove_files();
  }

  vramtrace::collector::TraceIngest& ingest() {
    if (ingest_ == nullptr || ++inputs_ % kInputsPerTrace == 0) renew();
    return *ingest_;
  }

 private:
  void renew() {
    ingest_.reset();
    writer_.reset();
    const fs::path dir = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    path_ = dir / ("vramtrace-ring-fuzz-" + std::to_string(getpid()) + ".db");
    remove_files();
    std::string error;
    writer_ = vramtrace::storage::TraceWriter::create(path_, &error);
    if (!writer_) __builtin_trap();  // the fuzzer's own environment is broken
    ingest_ = std::make_unique<vramtrace::collector::TraceIngest>(*writer_);
  }

  void remove_files() const {
    std::error_code ignored;
    for (const char* suffix : {"", "-wal", "-shm"}) fs::remove(path_.string() + suffix, ignored);
  }

  fs::path path_;
  std::unique_ptr<vramtrace::storage::TraceWriter> writer_;
  std::unique_ptr<vramtrace::collector::TraceIngest> ingest_;
  size_t inputs_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace ring = vramtrace::ring;
  static Session session;
  alignas(4096) static unsigned char mapping[ring::kHeaderBytes + ring::kMinCapacity];
  std::memset(mapping, 0, sizeof mapping);
  auto* header = reinterpret_cast<ring::SharedHeader*>(mapping);
  header->magic = ring::kMagic;
  header->version = ring::kVersion;
  header->header_bytes = ring::kHeaderBytes;
  header->capacity = ring::kMinCapacity;
  uint64_t write_pos = 0, read_pos = 0;
  if (size >= 16) {
    std::memcpy(&write_pos, data, 8);
    std::memcpy(&read_pos, data + 8, 8);
    data += 16;
    size -= 16;
  }
  header->write_pos.store(write_pos);
  header->read_pos.store(read_pos);
  std::memcpy(mapping + ring::kHeaderBytes, data, std::min<size_t>(size, ring::kMinCapacity));

  RingConsumer consumer;
  const char* why = nullptr;
  if (!consumer.attach(mapping, sizeof mapping, &why)) return 0;
  vramtrace::collector::TraceIngest& ingest = session.ingest();
  const int64_t ring_id = ingest.open_ring(4242);
  // As CollectorServer::retire: drain until nothing is left or the ring turns out corrupt.
  for (;;) {
    size_t delivered = 0;
    const auto status =
        consumer.drain([&](const ring::RecordHeader& h,
                           const unsigned char* payload) { ingest.on_record(ring_id, h, payload); },
                       1024, &delivered);
    if (status == RingConsumer::Status::kCorrupt) {
      ingest.ring_corrupt(ring_id);
      break;
    }
    if (delivered == 0) break;
  }
  ingest.close_ring(ring_id, /*complete=*/true, ring::monotonic_ns());
  return 0;
}
