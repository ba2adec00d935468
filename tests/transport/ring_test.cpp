// The shared-memory ring between the shim and the collector (proto/shm_ring.h).
#include "shm_ring.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

namespace vramtrace::ring {
namespace {

class Mapping {
 public:
  explicit Mapping(uint64_t capacity) : bytes_(kHeaderBytes + capacity) {
    base_ = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (base_ == MAP_FAILED) throw std::runtime_error("mmap");
  }
  ~Mapping() { munmap(base_, bytes_); }
  void* base() const { return base_; }
  uint64_t bytes() const { return bytes_; }
  SharedHeader* header() const { return static_cast<SharedHeader*>(base_); }

 private:
  uint64_t bytes_;
  void* base_;
};

struct Received {
  uint64_t seq;
  std::string payload;
};

std::vector<Received> drain_all(RingConsumer& consumer, RingConsumer::Status* status = nullptr) {
  std::vector<Received> out;
  size_t delivered = 0;
  RingConsumer::Status s;
  do {
    s = consumer.drain(
        [&](const RecordHeader& h, const unsigned char* p) {
          out.push_back({h.seq, std::string(reinterpret_cast<const char*>(p), h.payload_bytes)});
        },
        1000, &delivered);
  } while (s == RingConsumer::Status::kOk && delivered != 0);
  if (status) *status = s;
  return out;
}

constexpr auto kAlive = [] { return true; };

// Everything a reader attached now finds in the ring.
std::vector<Received> drain_new_reader(const Mapping& m, RingConsumer::Status* status) {
  RingConsumer consumer;
  const char* why = nullptr;
  if (!consumer.attach(m.base(), m.bytes(), &why)) {
    ADD_FAILURE() << why;
    return {};
  }
  return drain_all(consumer, status);
}

TEST(Ring, RecordsWrapAroundTheEndIntact) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  RingConsumer consumer;
  const char* why = nullptr;
  ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why)) << why;

  // Sizes that are not multiples of 8 and do not divide the buffer: records must pad and
  // wrap at every possible offset.
  uint64_t expected_seq = 1;
  for (int round = 0; round < 2000; ++round) {
    std::vector<std::string> sent;
    for (int i = 0; i < 7; ++i) {
      std::string payload(static_cast<size_t>((round * 7 + i) % 997 + 1),
                          static_cast<char>('a' + (round + i) % 26));
      uint64_t seq = 0;
      ASSERT_EQ(producer.write(payload.data(), static_cast<uint32_t>(payload.size()), &seq, kAlive),
                RingProducer::WriteResult::kOk);
      sent.push_back(payload);
    }
    std::vector<Received> got = drain_all(consumer);
    ASSERT_EQ(got.size(), sent.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].seq, expected_seq++);
      ASSERT_EQ(got[i].payload, sent[i]);
    }
  }
  EXPECT_GT(m.header()->write_pos.load(), 3 * kMinCapacity);  // it really wrapped
}

TEST(Ring, ManyWritersOneReaderLoseNothingAndKeepOrder) {
  constexpr int kThreads = 4;
  constexpr int kPerThread = 50000;
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  RingConsumer consumer;
  const char* why = nullptr;
  ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why));

  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int payload[2] = {t, i};
        uint64_t seq;
        // The ring is small: writers keep waiting for the reader.
        if (producer.write(payload, sizeof payload, &seq, kAlive) != RingProducer::WriteResult::kOk)
          std::abort();
      }
    });
  }
  std::vector<int> next(kThreads, 0);
  uint64_t last_seq = 0;
  int total = 0;
  while (total < kThreads * kPerThread) {
    size_t delivered = 0;
    ASSERT_EQ(consumer.drain(
                  [&](const RecordHeader& h, const unsigned char* p) {
                    int payload[2];
                    std::memcpy(payload, p, sizeof payload);
                    EXPECT_EQ(h.seq, last_seq + 1);
                    last_seq = h.seq;
                    EXPECT_EQ(payload[1], next[static_cast<size_t>(payload[0])]++);
                  },
                  4096, &delivered),
              RingConsumer::Status::kOk);
    total += static_cast<int>(delivered);
  }
  for (auto& w : writers) w.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(next[static_cast<size_t>(t)], kPerThread);
}

TEST(Ring, FullRingWaitsThenGivesUpWhenTheReaderIsGone) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  std::string payload(1000, 'x');
  uint64_t seq;
  int written = 0;
  int asked = 0;
  RingProducer::WriteResult r;
  while ((r = producer.write(payload.data(), 1000, &seq, [&] { return ++asked < 3; })) ==
         RingProducer::WriteResult::kOk)
    ++written;
  EXPECT_EQ(r, RingProducer::WriteResult::kGaveUp);
  EXPECT_EQ(asked, 3);  // it waited, asking each interval, and gave up when told
  // The first record carries its time whole (a LongStamp), the others a difference.
  EXPECT_EQ(written, static_cast<int>(1 + (kMinCapacity - record_bytes(1000, /*long_stamp=*/true)) /
                                              record_bytes(1000)));
}

TEST(Ring, OversizedRecordIsRefused) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  std::vector<char> big(kMinCapacity);
  uint64_t seq;
  EXPECT_EQ(producer.write(big.data(), static_cast<uint32_t>(big.size()), &seq, kAlive),
            RingProducer::WriteResult::kTooLarge);
}

TEST(Ring, ReaderStopsAtACorruptRecordKeepingThoseBefore) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  uint64_t seq;
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(producer.write("abcd", 4, &seq, kAlive), RingProducer::WriteResult::kOk);
  // Scribble on the third record's length, as a buggy target might.
  auto* data = static_cast<unsigned char*>(m.base()) + kHeaderBytes;
  const uint16_t absurd = 0xfff0;  // more than the ring holds after it
  std::memcpy(data + record_bytes(4, /*long_stamp=*/true) + record_bytes(4), &absurd,
              sizeof absurd);
  RingConsumer::Status status = RingConsumer::Status::kOk;
  std::vector<Received> got = drain_new_reader(m, &status);
  EXPECT_EQ(status, RingConsumer::Status::kCorrupt);
  EXPECT_EQ(got.size(), 2u);
}

// The sequence number is not on the ring: the reader counts records, and checks its count
// against the low bits the stamp keeps. A record slipped in between (a target writing its own)
// or one taken out (the write position moved on by hand) ends the reading there.
TEST(Ring, ReaderCountsSequenceNumbersAndStopsWhereTheStampDisagrees) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  uint64_t seq = 0;
  for (int i = 0; i < 4; ++i)
    ASSERT_EQ(producer.write("abcd", 4, &seq, kAlive), RingProducer::WriteResult::kOk);
  EXPECT_EQ(seq, 4u);
  // Each record takes its stamp and its payload, rounded up to 8 bytes: 8 + 4 -> 16; the first
  // also its time whole: 8 + 16 + 4 -> 32.
  EXPECT_EQ(record_bytes(4), 16u);
  EXPECT_EQ(record_bytes(4, /*long_stamp=*/true), 32u);
  EXPECT_EQ(m.header()->write_pos.load(), 32u + 3 * 16u);
  // The third record's stamp says it is the fifth.
  auto* data = static_cast<unsigned char*>(m.base()) + kHeaderBytes;
  const uint16_t fifth = 5;
  std::memcpy(data + 32 + 16 + offsetof(RecordStamp, seq_low), &fifth, sizeof fifth);
  RingConsumer::Status status = RingConsumer::Status::kOk;
  std::vector<Received> got = drain_new_reader(m, &status);
  EXPECT_EQ(status, RingConsumer::Status::kCorrupt);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].seq, 1u);
  EXPECT_EQ(got[1].seq, 2u);
}

// The clock's readings around each write, and the time each record arrived with.
struct StampedWrites {
  std::vector<int64_t> before, after, stamped;

  // Writes one record and reads what the ring holds at once.
  void write_and_read(RingProducer& producer, RingConsumer& consumer) {
    uint64_t seq = 0;
    before.push_back(monotonic_ns());
    ASSERT_EQ(producer.write("abcd", 4, &seq, kAlive), RingProducer::WriteResult::kOk);
    after.push_back(monotonic_ns());
    size_t delivered = 0;
    consumer.drain(
        [&](const RecordHeader& h, const unsigned char*) { stamped.push_back(h.time_ns); }, 1000,
        &delivered);
  }

  // How many records arrived with a time outside the readings around their write, by more than
  // a microsecond (the counter's extrapolation). Fails the test where the times go back.
  int outside_their_brackets() const {
    EXPECT_EQ(stamped.size(), before.size());
    int outside = 0;
    for (size_t i = 0; i < stamped.size() && i < before.size(); ++i) {
      if (i > 0) {
        EXPECT_GE(stamped[i], stamped[i - 1]) << "record " << i;
      }
      if (stamped[i] < before[i] - 1'000 || stamped[i] > after[i] + 1'000) ++outside;
    }
    return outside;
  }
};

// A stamp carries the time as the nanoseconds since the record before it; the reader adds them
// up. Every record arrives with the time its write took, between the clock's readings around
// the write, whichever clock stamps it.
TEST(Ring, TimesTravelAsDifferencesAndArriveWhole) {
  for (const bool tsc_clock : {false, true}) {
    if (tsc_clock && !tsc_is_the_kernels_clock()) continue;
    Mapping m(kMinCapacity);
    RingProducer producer;
    ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1, tsc_clock));
    RingConsumer consumer;
    const char* why = nullptr;
    ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why)) << why;
    StampedWrites writes;
    for (int i = 0; i < 3000; ++i) {  // several laps of the ring
      writes.write_and_read(producer, consumer);
      if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    // Summed differences that went wrong would drift ever further from the brackets.
    EXPECT_LE(writes.outside_their_brackets(), 30) << "tsc " << tsc_clock;
    // Only the first record took the long stamp: 32 bytes, then 16 each.
    EXPECT_EQ(m.header()->write_pos.load(), 32u + 2999u * 16u);
  }
}

// A payload too long for the stamp's 16 bits goes with a LongStamp, which carries its length.
TEST(Ring, APayloadBeyondSixteenBitsCarriesItsLengthWhole) {
  constexpr uint64_t kCapacity = 1 << 20;
  Mapping m(kCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kCapacity, 1));
  const std::string longest_short(kLongStampFollows - 1, 's');
  const std::string exactly(kLongStampFollows, 'e');
  const std::string large(200'000, 'l');
  uint64_t seq = 0;
  for (const std::string* payload : {&longest_short, &exactly, &large, &longest_short})
    ASSERT_EQ(producer.write(payload->data(), static_cast<uint32_t>(payload->size()), &seq, kAlive),
              RingProducer::WriteResult::kOk);
  RingConsumer::Status status = RingConsumer::Status::kCorrupt;
  std::vector<Received> got = drain_new_reader(m, &status);
  EXPECT_EQ(status, RingConsumer::Status::kOk);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].payload, longest_short);
  EXPECT_EQ(got[1].payload, exactly);
  EXPECT_EQ(got[2].payload, large);
  EXPECT_EQ(got[3].payload, longest_short);
  EXPECT_EQ(m.header()->write_pos.load(),
            record_bytes(longest_short.size(), true) + record_bytes(exactly.size(), true) +
                record_bytes(large.size(), true) + record_bytes(longest_short.size()));
}

// Stamps written by hand, as a target could write them: a LongStamp sets the time, a difference
// moves it on, and a difference with no time before it (the reader's first record) is corrupt.
TEST(Ring, ReaderTakesTimesFromLongStampsAndDifferences) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  auto* data = static_cast<unsigned char*>(m.base()) + kHeaderBytes;
  uint64_t at = 0;
  const auto put = [&](const void* bytes, size_t n) {
    std::memcpy(data + at, bytes, n);
    at += n;
  };
  const auto long_record = [&](uint16_t seq, int64_t time_ns) {
    const RecordStamp stamp{kLongStampFollows, seq, 0};
    const LongStamp whole{4, time_ns};
    put(&stamp, sizeof stamp);
    put(&whole, sizeof whole);
    put("abcd\0\0\0\0", 8);
  };
  const auto short_record = [&](uint16_t seq, uint32_t delta_ns) {
    const RecordStamp stamp{4, seq, delta_ns};
    put(&stamp, sizeof stamp);
    put("abcd\0\0\0\0", 8);
  };
  long_record(1, 5'000'000'000);
  short_record(2, 7);
  short_record(3, UINT32_MAX);
  long_record(4, 100);  // a clock that went back is the writer's to say; the reader takes it
  short_record(5, 1);
  m.header()->write_pos.store(at);
  RingConsumer consumer;
  const char* why = nullptr;
  ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why)) << why;
  std::vector<int64_t> times;
  size_t delivered = 0;
  EXPECT_EQ(consumer.drain(
                [&](const RecordHeader& h, const unsigned char*) { times.push_back(h.time_ns); },
                100, &delivered),
            RingConsumer::Status::kOk);
  EXPECT_EQ(times, (std::vector<int64_t>{5'000'000'000, 5'000'000'007,
                                         5'000'000'007 + int64_t{UINT32_MAX}, 100, 101}));

  Mapping first_short(kMinCapacity);
  RingProducer other;
  ASSERT_TRUE(other.init(first_short.base(), kMinCapacity, 1));
  data = static_cast<unsigned char*>(first_short.base()) + kHeaderBytes;
  at = 0;
  short_record(1, 10);
  first_short.header()->write_pos.store(at);
  RingConsumer::Status status = RingConsumer::Status::kOk;
  EXPECT_TRUE(drain_new_reader(first_short, &status).empty());
  EXPECT_EQ(status, RingConsumer::Status::kCorrupt);
}

TEST(Ring, ReaderRejectsAWritePositionBeyondTheBuffer) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  RingConsumer consumer;
  const char* why = nullptr;
  ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why));
  m.header()->write_pos.store(kMinCapacity * 5);
  size_t delivered;
  EXPECT_EQ(consumer.drain([](const RecordHeader&, const unsigned char*) {}, 10, &delivered),
            RingConsumer::Status::kCorrupt);
}

TEST(Ring, AttachRejectsForeignOrMismatchedHeaders) {
  Mapping m(kMinCapacity);
  RingConsumer consumer;
  const char* why = nullptr;
  EXPECT_FALSE(consumer.attach(m.base(), m.bytes(), &why));  // never initialised
  EXPECT_STREQ(why, "bad ring magic");
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  EXPECT_FALSE(
      consumer.attach(m.base(), m.bytes() - 4096, &why));  // header claims more than mapped
  m.header()->capacity = kMinCapacity * 2;
  EXPECT_FALSE(consumer.attach(m.base(), m.bytes(), &why));
  EXPECT_FALSE(producer.init(m.base(), kMinCapacity + 8, 1));  // not a power of two
}

// Records stamped by the time-stamp counter (record_clock.h), as the shim stamps them where the
// kernel keeps time by it: CLOCK_MONOTONIC nanoseconds, in ring order, each between the clock's
// readings around its write (to within the extrapolation's microsecond).
TEST(Ring, RecordsStampedByTheCounterCarryTheKernelsTime) {
  if (!tsc_is_the_kernels_clock()) GTEST_SKIP() << "the kernel's clocksource is not the TSC";
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1, /*tsc_clock=*/true));
  RingConsumer consumer;
  const char* why = nullptr;
  ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why)) << why;
  StampedWrites writes;
  const int64_t end = monotonic_ns() + 20'000'000;
  while (monotonic_ns() < end) writes.write_and_read(producer, consumer);
  // A preemption between the reads can widen single brackets' error, never many.
  EXPECT_LE(writes.outside_their_brackets(), static_cast<int>(writes.stamped.size() / 100))
      << "of " << writes.stamped.size();
}

// Runs `write` on a thread of its own and waits at most `limit` for it: a writer that never
// returns fails the test rather than hanging it (its thread is left behind, blocked).
std::optional<RingProducer::WriteResult> write_within(
    std::chrono::milliseconds limit, std::function<RingProducer::WriteResult()> write) {
  auto done = std::make_shared<std::promise<RingProducer::WriteResult>>();
  std::future<RingProducer::WriteResult> result = done->get_future();
  std::thread([done, write] { done->set_value(write()); }).detach();
  if (result.wait_for(limit) != std::future_status::ready) return std::nullopt;
  return result.get();
}

constexpr auto kStallLimit = std::chrono::milliseconds(300);
constexpr auto kPatience = std::chrono::seconds(10);

// A full ring whose reader is there (the socket says so) but never advances: a stopped
// collector. The writer gives up after the stall limit, and every later write at once.
TEST(Ring, FullRingGivesUpOnAReaderThatDoesNotAdvance) {
  auto m = std::make_shared<Mapping>(kMinCapacity);
  auto producer = std::make_shared<RingProducer>();
  ASSERT_TRUE(producer->init(m->base(), kMinCapacity, 1));
  producer->set_stall_limit_ns(std::chrono::nanoseconds(kStallLimit).count());
  const std::string payload(1000, 'x');
  const auto started = std::chrono::steady_clock::now();
  auto r = write_within(kPatience, [producer, m, payload] {
    uint64_t seq;
    RingProducer::WriteResult w;
    while ((w = producer->write(payload.data(), 1000, &seq, kAlive)) ==
           RingProducer::WriteResult::kOk) {
    }
    return w;
  });
  ASSERT_TRUE(r.has_value()) << "the writer still waits on a reader that never advances";
  EXPECT_EQ(*r, RingProducer::WriteResult::kStalled);
  EXPECT_GE(std::chrono::steady_clock::now() - started, kStallLimit);
  uint64_t seq;
  EXPECT_EQ(producer->write("abcd", 4, &seq, kAlive), RingProducer::WriteResult::kStalled);
  EXPECT_EQ(producer->gave_up(), RingProducer::WriteResult::kStalled);
}

// A reader that advances, however slowly, is waited for past the stall limit.
TEST(Ring, FullRingWaitsForAReaderThatAdvancesSlowly) {
  Mapping m(kMinCapacity);
  RingProducer producer;
  ASSERT_TRUE(producer.init(m.base(), kMinCapacity, 1));
  producer.set_stall_limit_ns(std::chrono::nanoseconds(kStallLimit).count());
  RingConsumer consumer;
  const char* why = nullptr;
  ASSERT_TRUE(consumer.attach(m.base(), m.bytes(), &why)) << why;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load()) {
      size_t delivered = 0;
      consumer.drain([](const RecordHeader&, const unsigned char*) {}, 1, &delivered);
      std::this_thread::sleep_for(kStallLimit / 3);
    }
  });
  const std::string payload(8000, 'x');
  uint64_t seq;
  const auto until = std::chrono::steady_clock::now() + 4 * kStallLimit;
  while (std::chrono::steady_clock::now() < until)
    ASSERT_EQ(producer.write(payload.data(), 8000, &seq, kAlive), RingProducer::WriteResult::kOk);
  stop.store(true);
  reader.join();
}

// The target scribbled on the header: the writer sees fields it did not write and gives up at
// once, for good, rather than wait on a lock no one holds or write where the reader cannot look.
TEST(Ring, WriterGivesUpOnAScribbledHeader) {
  struct Case {
    const char* what;
    void (*scribble)(SharedHeader*);
    RingProducer::WriteResult expected;
  };
  const Case cases[] = {
      {"all of it", [](SharedHeader* h) { std::memset(static_cast<void*>(h), 0xa5, sizeof *h); },
       RingProducer::WriteResult::kHeaderOverwritten},
      {"the magic", [](SharedHeader* h) { h->magic = 0; },
       RingProducer::WriteResult::kHeaderOverwritten},
      {"the capacity", [](SharedHeader* h) { h->capacity *= 2; },
       RingProducer::WriteResult::kHeaderOverwritten},
      {"the write position", [](SharedHeader* h) { h->write_pos.store(h->write_pos + 8); },
       RingProducer::WriteResult::kHeaderOverwritten},
      {"the lock, with a value no lock has", [](SharedHeader* h) { h->lock.store(0xdeadbeef); },
       RingProducer::WriteResult::kHeaderOverwritten},
      // Looks held, by no one: only the stall limit can tell, the reader never advancing.
      {"the lock, as held with waiters", [](SharedHeader* h) { h->lock.store(2); },
       RingProducer::WriteResult::kStalled},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto m = std::make_shared<Mapping>(kMinCapacity);
    auto producer = std::make_shared<RingProducer>();
    ASSERT_TRUE(producer->init(m->base(), kMinCapacity, 1));
    producer->set_stall_limit_ns(std::chrono::nanoseconds(kStallLimit).count());
    uint64_t seq;
    ASSERT_EQ(producer->write("abcd", 4, &seq, kAlive), RingProducer::WriteResult::kOk);
    c.scribble(m->header());
    auto r = write_within(kPatience, [producer, m] {
      uint64_t s;
      return producer->write("abcd", 4, &s, kAlive);
    });
    ASSERT_TRUE(r.has_value()) << "the writer hangs on a scribbled header";
    EXPECT_EQ(*r, c.expected);
    EXPECT_EQ(producer->write("abcd", 4, &seq, kAlive), c.expected);
  }
}

}  // namespace
}  // namespace vramtrace::ring
