// The shared-memory ring that carries one traced process's events to the collector.
//
// Contract
// - One ring per traced process. The process creates it (a sealed memfd), maps it, and
//   passes the descriptor to the collector over a unix socket; both map it MAP_SHARED.
// - Writers: the threads of that one process (RingProducer). They serialise on a futex lock
//   that lives in the ring, so that the sequence number and the timestamp stamped on each
//   record follow ring order. The lock is held only to stamp and copy an already encoded
//   record; unwinding and encoding happen before it is taken.
// - Reader: the collector alone (RingConsumer). The collector never takes the lock, so a
//   process killed while holding it (SIGKILL, the OOM killer) leaves every record it had
//   published readable: a record is published by advancing `write_pos` after it is copied.
// - Full ring: the writer waits (futex on `read_wakeups`) until the reader frees space. It
//   asks its caller every wait interval whether the collector is still alive, and gives up
//   when it is not: the program must run on, untraced, rather than hang.
// - No wait without bound: a writer gives up (kStalled) when the reader has not advanced for
//   the stall limit (kDefaultStallNs unless set) while it waits for space or for the lock, and
//   (kHeaderOverwritten) when the header's fields that only writers change are not what they
//   wrote (the writers keep their own copies): the target scribbled on its ring. Either is
//   final: every later write returns the same at once.
// - Records are contiguous: one that does not fit before the end of the buffer is preceded
//   by a padding marker (or by nothing, when fewer than a stamp's bytes remain) and starts
//   at offset 0.
// - A record's sequence number is not on the ring: records are written in sequence order
//   under the lock, dense from 1, so the reader counts them. The stamp keeps the number's low
//   16 bits, which the reader checks against its count.
// - Nor, mostly, is its time: records are written in time order too, so a stamp carries the
//   nanoseconds since the record before it. A LongStamp after the stamp carries the time whole
//   (and the payload's length, when 16 bits cannot): the process's first record, and any that
//   comes more than four seconds after the one before it.
//
// Trust: the reader treats the whole mapping as untrusted input. The target process may
// have scribbled on it, so the reader keeps its own copy of the capacity, of its read
// position and of its count of records, reads each field once into a local, and stops reading
// the ring at the first record that does not make sense.
//
// This header uses libc and <atomic> only: it is compiled into the preload shim, which may
// not depend on anything else.
#pragma once

#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "record_clock.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif

namespace vramtrace::ring {

inline constexpr uint64_t kMagic = 0x31474e4952545256ull;  // "VRTRING1", little-endian
inline constexpr uint32_t kVersion = 3;
inline constexpr uint32_t kHeaderBytes = 4096;  // the data area starts one page in
inline constexpr uint16_t kPaddingMarker = 0xffff;
inline constexpr uint16_t kLongStampFollows = 0xfffe;
inline constexpr uint64_t kMinCapacity = 64 * 1024;
inline constexpr uint64_t kMaxCapacity = 1ull << 30;
// How long a writer waits on a reader that does not advance before it gives up.
inline constexpr int64_t kDefaultStallNs = 10'000'000'000;

// Precedes every record's payload (an encoded vramtrace.wire.Envelope) on the ring. Eight
// bytes: a storm's records are about 16 and 20 bytes of payload, and every byte of them is
// written once by the program and read once by the collector, through the caches.
struct RecordStamp {
  // The payload's length; kLongStampFollows: a LongStamp follows, which has it; kPaddingMarker:
  // skip to the start of the buffer.
  uint16_t payload_bytes;
  uint16_t seq_low;        // the low 16 bits of the record's sequence number
  uint32_t time_delta_ns;  // since the record before it; 0 after a LongStamp
};
static_assert(sizeof(RecordStamp) == 8);

// Follows a stamp for a record whose time the stamp cannot carry (the first, or one more than
// a 32-bit count of nanoseconds after the record before it) or whose payload is 65,534 bytes or
// more.
struct LongStamp {
  uint64_t payload_bytes;
  int64_t time_ns;  // CLOCK_MONOTONIC (record_clock.h)
};
static_assert(sizeof(LongStamp) == 16);

// What the reader hands on with each record's payload: its stamp, with the whole sequence
// number.
struct RecordHeader {
  uint32_t payload_bytes;
  uint64_t seq;     // per-process sequence number, dense from 1
  int64_t time_ns;  // CLOCK_MONOTONIC (record_clock.h)
};

inline constexpr uint64_t align8(uint64_t n) {
  return (n + 7) & ~uint64_t{7};
}
// Where a record's payload starts: after its stamp, and its LongStamp where it has one.
inline constexpr uint64_t stamp_bytes(bool long_stamp) {
  return sizeof(RecordStamp) + (long_stamp ? sizeof(LongStamp) : 0);
}
inline constexpr uint64_t record_bytes(uint64_t payload, bool long_stamp = false) {
  return align8(stamp_bytes(long_stamp) + payload);
}

// Why a process stopped recording before it ended (SharedHeader::stopped); 0: it did not.
enum class StopReason : uint32_t {
  kNone = 0,
  kStalled = 1,            // the reader did not advance for the stall limit
  kReaderGone = 2,         // the collector went away
  kHeaderOverwritten = 3,  // the program wrote over the ring's header
  kInternalError = 4,      // an event that did not encode or did not fit
};

// The first page of the mapping. Fields in their own cache lines where one side writes them
// often and the other side reads them.
struct SharedHeader {
  uint64_t magic;
  uint32_t version;
  uint32_t header_bytes;
  uint64_t capacity;  // bytes of the data area, a power of two
  uint32_t pid;       // the writer's pid, for diagnostics only
  // Non-zero (a StopReason) once the process stopped recording while it ran on: every event
  // after that is missing, which the reader must not take for a process recorded to its end.
  std::atomic<uint32_t> stopped;

  alignas(64) std::atomic<uint64_t> write_pos;  // bytes published, monotonic

  alignas(64) std::atomic<uint64_t> read_pos;  // bytes consumed, monotonic
  std::atomic<uint32_t> read_wakeups;          // futex word, bumped when read_pos advances
  std::atomic<uint32_t> writer_waiting;        // non-zero while a writer waits for space

  alignas(64) std::atomic<uint32_t> lock;  // 0 free, 1 held, 2 held with waiters; nothing else
  std::atomic<uint32_t> closed;            // the process exited through exit()
};
static_assert(sizeof(SharedHeader) <= kHeaderBytes);
static_assert(std::atomic<uint64_t>::is_always_lock_free);
static_assert(std::atomic<uint32_t>::is_always_lock_free);

namespace detail {
inline void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, bool shared,
                       const timespec* timeout) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), shared ? FUTEX_WAIT : FUTEX_WAIT_PRIVATE,
          expected, timeout, nullptr, 0);
}
inline void futex_wake(std::atomic<uint32_t>* word, bool shared, int count) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE,
          count, nullptr, nullptr, 0);
}
}  // namespace detail

// The writing side, inside the traced process.
class RingProducer {
 public:
  // kGaveUp: still_alive() said the reader is gone. kStalled: the reader did not advance for
  // the stall limit. kHeaderOverwritten: the header is not what the writers left. The last
  // three are final (gave_up()).
  enum class WriteResult { kOk, kTooLarge, kGaveUp, kStalled, kHeaderOverwritten };

  // Takes over a zero-filled mapping of kHeaderBytes + capacity bytes. `tsc_clock`: records are
  // stamped by the time-stamp counter (record_clock.h; only where tsc_is_the_kernels_clock()).
  bool init(void* mapping, uint64_t capacity, uint32_t pid, bool tsc_clock = false) {
    if (capacity < kMinCapacity || capacity > kMaxCapacity || (capacity & (capacity - 1)) != 0)
      return false;
    clock_.init(tsc_clock);
    populated_.store(0, std::memory_order_relaxed);
    header_ = static_cast<SharedHeader*>(mapping);
    data_ = static_cast<unsigned char*>(mapping) + kHeaderBytes;
    capacity_ = capacity;
    header_->version = kVersion;
    header_->header_bytes = kHeaderBytes;
    header_->capacity = capacity;
    header_->pid = pid;
    next_seq_ = 1;
    last_time_ns_ = kNoTime;
    write_pos_ = 0;
    cached_read_pos_ = 0;
    gave_up_.store(WriteResult::kOk, std::memory_order_relaxed);
    full_waits_.store(0, std::memory_order_relaxed);
    full_wait_ns_.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    header_->magic = kMagic;
    return true;
  }

  // How long a writer waits on a reader that does not advance (kDefaultStallNs by default).
  void set_stall_limit_ns(int64_t ns) { stall_limit_ns_ = ns > 0 ? ns : kDefaultStallNs; }
  int64_t stall_limit_ns() const { return stall_limit_ns_; }

  // kOk, or the final result that ended writing to this ring.
  WriteResult gave_up() const { return gave_up_.load(std::memory_order_relaxed); }

  // Largest payload one record can carry. Half the buffer, so that a wrap never starves.
  uint64_t max_payload() const { return capacity_ / 2 - stamp_bytes(/*long_stamp=*/true); }

  // Asks the cache for the lines the next record will write, for writing: the reader has
  // had them (it read the ring's last lap and polls the write position), and without this
  // the stores wait for them at unlock(), whose locked instruction drains the store buffer.
  // Called on the way into an event, before the stack walk, so that the transfer overlaps
  // it. A hint only: the position is read without the lock, and another thread may take it.
  // It also faults in the ring ahead of the writers (populate_ahead()).
  void prepare_to_write() {
    const uint64_t pos = header_->write_pos.load(std::memory_order_relaxed);
    if (pos + kPopulateLeadBytes > populated_.load(std::memory_order_relaxed) &&
        populated_.load(std::memory_order_relaxed) < capacity_)
      populate_ahead(pos);
    const unsigned char* next = data_ + (pos & (capacity_ - 1));
    const unsigned char* end = data_ + capacity_;
    prefetch_for_write(&header_->write_pos);
    for (int line = 0; line < kPreparedLines && next < end; ++line, next += 64)
      prefetch_for_write(next);
  }

  // Stamps and publishes one record. While the ring is full, waits for the reader and calls
  // `still_alive()` every wait interval; when it returns false the record is dropped and
  // kGaveUp returned. Never waits longer than the stall limit on a reader that does not
  // advance (kStalled). On kOk, *seq_out is the record's sequence number.
  template <class StillAlive>
  WriteResult write(const void* payload, uint32_t payload_bytes, uint64_t* seq_out,
                    StillAlive&& still_alive) {
    if (payload_bytes > max_payload()) return WriteResult::kTooLarge;
    if (WriteResult ended = gave_up(); ended != WriteResult::kOk) return ended;
    if (WriteResult locked = lock(); locked != WriteResult::kOk) return give_up(locked);
    // Another writer gave up while this one waited for the lock.
    if (WriteResult ended = gave_up(); ended != WriteResult::kOk) {
      unlock();
      return ended;
    }
    if (!header_intact()) {
      unlock();
      return give_up(WriteResult::kHeaderOverwritten);
    }
    // The time is the event's, taken before any wait for the reader.
    const int64_t now = clock_.now();
    const uint64_t delta = static_cast<uint64_t>(now) - static_cast<uint64_t>(last_time_ns_);
    const bool long_stamp = last_time_ns_ == kNoTime || now < last_time_ns_ || delta > UINT32_MAX ||
                            payload_bytes >= kLongStampFollows;
    const uint64_t needed = record_bytes(payload_bytes, long_stamp);
    uint64_t pos = write_pos_;
    uint64_t offset = pos & (capacity_ - 1);
    uint64_t tail = capacity_ - offset;
    uint64_t skip = tail < needed ? tail : 0;
    if (WriteResult room = wait_for_space(pos, skip + needed, still_alive);
        room != WriteResult::kOk) {
      unlock();
      return give_up(room);
    }
    if (skip != 0) {
      if (skip >= sizeof(RecordStamp)) {
        const RecordStamp pad{kPaddingMarker, 0, 0};
        std::memcpy(data_ + offset, &pad, sizeof pad);
      }
      pos += skip;
      offset = 0;
    }
    const uint64_t seq = next_seq_++;
    last_time_ns_ = now;
    unsigned char* const at = data_ + offset;
    if (long_stamp) {
      const RecordStamp rec{kLongStampFollows, static_cast<uint16_t>(seq), 0};
      const LongStamp whole{payload_bytes, now};
      std::memcpy(at, &rec, sizeof rec);
      std::memcpy(at + sizeof rec, &whole, sizeof whole);
    } else {
      const RecordStamp rec{static_cast<uint16_t>(payload_bytes), static_cast<uint16_t>(seq),
                            static_cast<uint32_t>(delta)};
      std::memcpy(at, &rec, sizeof rec);
    }
    std::memcpy(at + stamp_bytes(long_stamp), payload, payload_bytes);
    write_pos_ = pos + needed;
    header_->write_pos.store(write_pos_, std::memory_order_release);
    unlock();
    *seq_out = seq;
    return WriteResult::kOk;
  }

  // Writes that found the ring full and waited for the reader, and how long they waited in
  // all: for that long the program ran at the collector's pace. Read at any time.
  uint64_t full_waits() const { return full_waits_.load(std::memory_order_relaxed); }
  uint64_t full_wait_ns() const { return full_wait_ns_.load(std::memory_order_relaxed); }

  // How far the reader has read (bytes, monotonic): its progress, for a writer that can no
  // longer tell otherwise whether the reader is there.
  uint64_t reader_position() const { return header_->read_pos.load(std::memory_order_acquire); }

  // Marks a clean exit, so the reader can tell it from a kill.
  void mark_closed() { header_->closed.store(1, std::memory_order_release); }

  // Says to the reader that this process records nothing more while it runs on; the first
  // reason stays. Written to the shared header, which a reader that was stalled reads when it
  // comes back, since no record can say it on a ring that nobody drains.
  void mark_stopped(StopReason why) {
    uint32_t none = 0;
    header_->stopped.compare_exchange_strong(none, static_cast<uint32_t>(why),
                                             std::memory_order_release);
  }

 private:
  // Lines prepare_to_write() asks for: a record with a 16-frame native stack is about 200
  // bytes, and the first line is often the previous record's last.
  static constexpr int kPreparedLines = 4;

  // Faults the ring in ahead of the writers, kPopulateChunkBytes at a time, the first chunk at
  // the first event: otherwise the first lap of records takes a page fault every 4 KiB inside
  // the program's hooked calls, 2,048 for 8 MiB, which cost 35 ns an allocation over a run of
  // 200,000 (docs/performance.md). One system call a chunk instead, once. A memfd is sparse:
  // a ring sized for bursts costs memory only as far as its writers have come, and a process
  // that never writes (shells, data-loader workers) pays nothing. Two threads may populate the
  // same chunk; the second call finds it done. Where the kernel lacks MADV_POPULATE_WRITE
  // (before 5.14) the pages fault as they come.
  static constexpr uint64_t kPopulateChunkBytes = 8ull << 20;
  static constexpr uint64_t kPopulateLeadBytes = 4ull << 20;
  void populate_ahead(uint64_t pos) {
    uint64_t done = populated_.load(std::memory_order_relaxed);
    while (done < capacity_ && pos + kPopulateLeadBytes > done) {
      const uint64_t end =
          done + kPopulateChunkBytes < capacity_ ? done + kPopulateChunkBytes : capacity_;
      if (!populated_.compare_exchange_weak(done, end, std::memory_order_relaxed)) continue;
      // The header page comes with the first chunk.
      unsigned char* from = done == 0 ? reinterpret_cast<unsigned char*>(header_) : data_ + done;
      madvise(from, static_cast<size_t>(data_ + end - from), MADV_POPULATE_WRITE);
      done = end;
    }
  }

  static void prefetch_for_write(const void* p) {
#if defined(__x86_64__)
    // PREFETCHW: the line in a writable state. Encoded as a NOP on CPUs without it.
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
    __builtin_prefetch(p, 1, 3);
#endif
  }

  // The wait interval: how often a waiting writer looks at the reader and the clock.
  static constexpr long kWaitIntervalNs = 50'000'000;

  // Ends writing to this ring for good; the first reason stays.
  WriteResult give_up(WriteResult why) {
    WriteResult expected = WriteResult::kOk;
    gave_up_.compare_exchange_strong(expected, why, std::memory_order_relaxed);
    return why;
  }

  // The fields only writers change (under the lock, or once at init) are what they wrote. The
  // reader never writes them; a difference is the target's scribbling. Called under the lock.
  bool header_intact() const {
    return header_->magic == kMagic && header_->version == kVersion &&
           header_->header_bytes == kHeaderBytes && header_->capacity == capacity_ &&
           header_->write_pos.load(std::memory_order_relaxed) == write_pos_;
  }

  // Watches the reader while a writer waits: not advanced for the stall limit is a stall.
  class StallClock {
   public:
    StallClock(const SharedHeader* header, int64_t limit_ns)
        : header_(header), limit_ns_(limit_ns) {}
    // False once the reader has not moved for the limit since the first call.
    bool reader_moving() {
      const uint64_t read = header_->read_pos.load(std::memory_order_relaxed);
      const int64_t now = monotonic_ns();
      if (since_ns_ == 0 || read != read_) {
        read_ = read;
        since_ns_ = now;
        return true;
      }
      return now - since_ns_ < limit_ns_;
    }

   private:
    const SharedHeader* header_;
    int64_t limit_ns_;
    uint64_t read_ = 0;
    int64_t since_ns_ = 0;
  };

  // Counts one write's wait for space, if it waited, when it ends.
  class FullWait {
   public:
    explicit FullWait(RingProducer* ring) : ring_(ring) {}
    FullWait(const FullWait&) = delete;
    FullWait& operator=(const FullWait&) = delete;
    void begin() {
      if (since_ns_ == 0) since_ns_ = monotonic_ns();
    }
    ~FullWait() {
      if (since_ns_ == 0) return;
      ring_->full_waits_.fetch_add(1, std::memory_order_relaxed);
      ring_->full_wait_ns_.fetch_add(static_cast<uint64_t>(monotonic_ns() - since_ns_),
                                     std::memory_order_relaxed);
    }

   private:
    RingProducer* ring_;
    int64_t since_ns_ = 0;
  };

  template <class StillAlive>
  WriteResult wait_for_space(uint64_t pos, uint64_t bytes, StillAlive& still_alive) {
    // The reader's position only grows, so a copy from an earlier record is a safe answer
    // while it shows room; reading the shared one each time would fetch a line the reader
    // writes at every turn. Guarded by the lock, as the caller holds it.
    if (pos + bytes - cached_read_pos_ <= capacity_ && cached_read_pos_ <= pos)
      return WriteResult::kOk;
    StallClock stall(header_, stall_limit_ns_);
    FullWait full_wait(this);
    for (;;) {
      uint64_t read = header_->read_pos.load(std::memory_order_acquire);
      cached_read_pos_ = read;
      // A reader position ahead of ours, or one that lags by more than the buffer, can only
      // come from a broken reader: treat it as gone rather than overwrite unread records.
      if (read > pos || pos - read > capacity_) return WriteResult::kGaveUp;
      if (pos + bytes - read <= capacity_) return WriteResult::kOk;
      uint32_t wakeups = header_->read_wakeups.load(std::memory_order_acquire);
      header_->writer_waiting.store(1, std::memory_order_seq_cst);
      read = header_->read_pos.load(std::memory_order_seq_cst);
      if (pos + bytes - read <= capacity_) continue;
      if (!stall.reader_moving()) return WriteResult::kStalled;
      full_wait.begin();
      timespec timeout{0, kWaitIntervalNs};
      detail::futex_wait(&header_->read_wakeups, wakeups, /*shared=*/true, &timeout);
      if (!still_alive()) return WriteResult::kGaveUp;
    }
  }

  // Drepper's three-state futex mutex ("Futexes Are Tricky", mutex #2), with a short spin.
  // Only threads of this process contend, so the futex can be process-private. Bounded: the
  // word is in memory the target can scribble on, so a value that is not a state ends writing
  // (kHeaderOverwritten), and so does a wait through which neither the lock nor the reader
  // moved for the stall limit (kStalled): a holder waits for space only while the reader moves.
  WriteResult lock() {
    uint32_t c = 0;
    if (header_->lock.compare_exchange_strong(c, 1, std::memory_order_acquire))
      return WriteResult::kOk;
    for (int spin = 0; spin < 100; ++spin) {
      c = 0;
      if (header_->lock.compare_exchange_weak(c, 1, std::memory_order_acquire))
        return WriteResult::kOk;
      __builtin_ia32_pause();
    }
    if (c > 2) return WriteResult::kHeaderOverwritten;
    if (c != 2) c = header_->lock.exchange(2, std::memory_order_acquire);
    StallClock stall(header_, stall_limit_ns_);
    while (c != 0) {
      if (c > 2) return WriteResult::kHeaderOverwritten;
      if (WriteResult ended = gave_up(); ended != WriteResult::kOk) return ended;
      if (!stall.reader_moving()) return WriteResult::kStalled;
      timespec timeout{0, kWaitIntervalNs};
      detail::futex_wait(&header_->lock, 2, /*shared=*/false, &timeout);
      c = header_->lock.exchange(2, std::memory_order_acquire);
    }
    return WriteResult::kOk;
  }
  void unlock() {
    if (header_->lock.fetch_sub(1, std::memory_order_release) != 1) {
      header_->lock.store(0, std::memory_order_release);
      detail::futex_wake(&header_->lock, /*shared=*/false, 1);
    }
  }

  SharedHeader* header_ = nullptr;
  unsigned char* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t cached_read_pos_ = 0;  // the reader's position when last read; guarded by `lock`
  uint64_t write_pos_ = 0;        // what the header's write_pos must hold; guarded by `lock`
  uint64_t next_seq_ = 1;         // guarded by `lock`
  static constexpr int64_t kNoTime = INT64_MIN;
  int64_t last_time_ns_ = kNoTime;  // the last record's time; guarded by `lock`
  RecordClock clock_;               // guarded by `lock`
  int64_t stall_limit_ns_ = kDefaultStallNs;
  std::atomic<WriteResult> gave_up_{WriteResult::kOk};
  std::atomic<uint64_t> populated_{0};  // data bytes faulted in from the start, by populate_ahead
  std::atomic<uint64_t> full_waits_{0}, full_wait_ns_{0};
};

// The reading side, in the collector.
class RingConsumer {
 public:
  enum class Status { kOk, kCorrupt };

  // `mapping` and `mapped_bytes` are the collector's own view (the size from fstat, never
  // from the header). Returns false, with *why set, when the header is not a valid ring.
  bool attach(const void* mapping, uint64_t mapped_bytes, const char** why) {
    auto* header = static_cast<const SharedHeader*>(mapping);
    if (mapped_bytes < kHeaderBytes + kMinCapacity) return fail(why, "ring too small");
    if (header->magic != kMagic) return fail(why, "bad ring magic");
    if (header->version != kVersion) return fail(why, "unsupported ring version");
    uint64_t capacity = mapped_bytes - kHeaderBytes;
    if (header->capacity != capacity || (capacity & (capacity - 1)) != 0)
      return fail(why, "ring capacity does not match its mapping");
    header_ = const_cast<SharedHeader*>(header);
    data_ = static_cast<const unsigned char*>(mapping) + kHeaderBytes;
    capacity_ = capacity;
    read_pos_ = header->read_pos.load(std::memory_order_acquire);
    next_seq_ = 1;
    last_time_ns_ = 0;
    have_time_ = false;
    return true;
  }

  // Hands each complete record to fn(const RecordHeader&, const unsigned char* payload),
  // at most max_records of them, then frees their space. The payload pointer points into
  // the shared mapping and is valid only during the call. Returns kCorrupt at the first
  // record that cannot be valid (its stamp's sequence number is not the count's, or its size
  // does not fit); the records before it were delivered.
  template <class Fn>
  Status drain(Fn&& fn, size_t max_records, size_t* delivered) {
    *delivered = 0;
    const uint64_t write = header_->write_pos.load(std::memory_order_acquire);
    if (write < read_pos_ || write - read_pos_ > capacity_) return Status::kCorrupt;
    Status status = Status::kOk;
    while (read_pos_ != write && *delivered < max_records) {
      const uint64_t offset = read_pos_ & (capacity_ - 1);
      const uint64_t tail = capacity_ - offset;
      if (tail < sizeof(RecordStamp)) {  // the writer skipped this sliver without a marker
        if (write - read_pos_ < tail) return finish(Status::kCorrupt);
        read_pos_ += tail;
        continue;
      }
      RecordStamp rec;
      std::memcpy(&rec, data_ + offset, sizeof rec);
      if (rec.payload_bytes == kPaddingMarker) {
        if (write - read_pos_ < tail) return finish(Status::kCorrupt);
        read_pos_ += tail;
        continue;
      }
      uint64_t payload_bytes = rec.payload_bytes;
      int64_t time_ns = 0;
      const bool long_stamp = rec.payload_bytes == kLongStampFollows;
      if (long_stamp) {
        LongStamp whole{};
        if (tail < stamp_bytes(true) || write - read_pos_ < stamp_bytes(true)) {
          status = Status::kCorrupt;
          break;
        }
        std::memcpy(&whole, data_ + offset + sizeof rec, sizeof whole);
        payload_bytes = whole.payload_bytes;
        time_ns = whole.time_ns;
      } else {
        // A delta needs a time before it; wrapping arithmetic, as the deltas are untrusted.
        if (!have_time_) {
          status = Status::kCorrupt;
          break;
        }
        time_ns = static_cast<int64_t>(static_cast<uint64_t>(last_time_ns_) + rec.time_delta_ns);
      }
      const uint64_t bytes =
          payload_bytes > capacity_ / 2 ? 0 : record_bytes(payload_bytes, long_stamp);
      if (bytes == 0 || bytes > tail || bytes > write - read_pos_ ||
          rec.seq_low != static_cast<uint16_t>(next_seq_)) {
        status = Status::kCorrupt;
        break;
      }
      last_time_ns_ = time_ns;
      have_time_ = true;
      const RecordHeader header{static_cast<uint32_t>(payload_bytes), next_seq_, time_ns};
      fn(header, data_ + offset + stamp_bytes(long_stamp));
      read_pos_ += bytes;
      ++next_seq_;
      ++*delivered;
    }
    return finish(status);
  }

  bool closed() const { return header_->closed.load(std::memory_order_acquire) != 0; }
  // Why the writer stopped recording before its process ended (kNone: it did not). Untrusted
  // like the rest of the header: any value but 0 is taken as a stop.
  uint32_t stopped() const { return header_->stopped.load(std::memory_order_acquire); }
  uint64_t pending_bytes() const {
    uint64_t write = header_->write_pos.load(std::memory_order_acquire);
    return write >= read_pos_ ? write - read_pos_ : 0;
  }

 private:
  Status finish(Status status) {
    header_->read_pos.store(read_pos_, std::memory_order_seq_cst);
    if (header_->writer_waiting.load(std::memory_order_seq_cst) != 0) {
      header_->writer_waiting.store(0, std::memory_order_relaxed);
      header_->read_wakeups.fetch_add(1, std::memory_order_release);
      detail::futex_wake(&header_->read_wakeups, /*shared=*/true, INT32_MAX);
    }
    return status;
  }
  static bool fail(const char** why, const char* reason) {
    *why = reason;
    return false;
  }

  SharedHeader* header_ = nullptr;
  const unsigned char* data_ = nullptr;
  uint64_t capacity_ = 0;
  uint64_t read_pos_ = 0;
  uint64_t next_seq_ = 1;     // the sequence number of the next record read
  int64_t last_time_ns_ = 0;  // the last record's time, which the next one's delta follows
  bool have_time_ = false;    // a record has been read: the first must carry its time whole
};

}  // namespace vramtrace::ring
