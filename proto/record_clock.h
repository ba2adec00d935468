// The clock that stamps ring records: CLOCK_MONOTONIC nanoseconds, as the collector and every
// reader expect, read from the CPU's time-stamp counter where the kernel itself keeps time by it.
//
// Why: every record is stamped under the ring's lock, two a cudaMalloc/cudaFree pair; the vDSO's
// clock_gettime costs about 20 ns there (a sequence lock, a fenced RDTSC, a multiply) against
// 9 for a plain RDTSC, and the lock is held that much longer.
//
// How: the counter is turned into nanoseconds by a rate and an anchor (a counter reading and
// clock_gettime's reading at the same moment). The anchor is taken again at least every
// kReanchorNs, and the rate measured over the span between two anchors, so an error in the rate
// (the two reads are not simultaneous, NTP slews CLOCK_MONOTONIC) costs nanoseconds over one
// span at most and never accumulates. Until the first rate is known (the first kReanchorNs of a
// process), and wherever the counter is not the kernel's clocksource (a VM with kvm-clock, a
// machine whose TSC the kernel found unstable, not x86-64), every reading is clock_gettime's.
// Readings never go backwards: a reading below the last one given is raised to it, and a
// counter found going back (or jumping: a rate far from the last one) is not extrapolated from
// until a fresh span has been measured.
//
// Not thread-safe: the caller serialises (RingProducer calls it under the ring's lock).
// libc only: compiled into the preload shim.
#pragma once

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace vramtrace::ring {

inline int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

inline uint64_t read_tsc() {
#if defined(__x86_64__)
  return __builtin_ia32_rdtsc();
#else
  return 0;
#endif
}

// Whether the kernel keeps CLOCK_MONOTONIC by the TSC: then the counter runs at a constant
// rate, through sleep states, in step on every CPU (the kernel checked, and switches away from
// it when it finds otherwise).
inline bool tsc_is_the_kernels_clock() {
#if defined(__x86_64__)
  const int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                      O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char name[16] = {};
  const ssize_t n = read(fd, name, sizeof name - 1);
  close(fd);
  return n >= 3 && std::memcmp(name, "tsc", 3) == 0 && (n == 3 || name[3] == '\n');
#else
  return false;
#endif
}

class RecordClock {
 public:
  struct Sources {
    uint64_t (*ticks)();
    int64_t (*ns)();
  };
  // The longest a reading is extrapolated from its anchor; also the shortest span the first
  // rate is measured over (later ones, over at least half of it: anchor()).
  static constexpr int64_t kReanchorNs = 1'000'000;
  // Spans longer than this (a thread idle for a long time) re-anchor without measuring a rate,
  // so that the rate's arithmetic stays within 64 bits.
  static constexpr int64_t kLongestSpanNs = 1'000'000'000;

  // `ticks_usable` false: every reading is sources.ns().
  void init(bool ticks_usable, Sources sources = {&read_tsc, &monotonic_ns}) {
    *this = RecordClock{};
    ticks_usable_ = ticks_usable;
    sources_ = sources;
  }

  int64_t now() {
    int64_t ns;
    if (!ticks_usable_) {
      ns = sources_.ns();
    } else {
      const uint64_t ticks = sources_.ticks();
      const uint64_t since_anchor = ticks - anchor_ticks_;
      if (mult_ != 0 && since_anchor < reanchor_ticks_) {
        // since_anchor < reanchor_ticks_ keeps the product below about kReanchorNs << kShift.
        ns = anchor_ns_ + static_cast<int64_t>((since_anchor * mult_) >> kShift);
        if (ns >= last_ns_) {
          last_ns_ = ns;
          return ns;
        }
        // Behind the last reading: the counter went back (another CPU's, behind this one's).
      }
      uint64_t anchor_ticks = 0;
      ns = read_kernel_clock(&anchor_ticks);
      anchor(anchor_ticks, ns);
    }
    if (ns < last_ns_) ns = last_ns_;
    last_ns_ = ns;
    return ns;
  }

 private:
  static constexpr int kShift = 32;  // mult_ is nanoseconds per tick, times 2^kShift

  // The kernel's clock, and in *ticks the counter at the same moment: the middle of two counter
  // readings around it. A bracket wider than kNarrowTicks was interrupted (an interrupt, the
  // hypervisor), and an anchor taken across it would put every reading until the next one
  // ahead by the interruption: read again, up to kTries times, and keep the narrowest.
  static constexpr uint64_t kNarrowTicks = 1'000;  // a third of a microsecond at 3 GHz
  static constexpr int kTries = 3;
  int64_t read_kernel_clock(uint64_t* ticks) {
    int64_t ns = 0;
    uint64_t narrowest = 0;
    for (int attempt = 0; attempt < kTries; ++attempt) {
      const uint64_t first = sources_.ticks();
      const int64_t kernel = sources_.ns();
      const uint64_t width = sources_.ticks() - first;  // huge when the counter went back
      if (attempt == 0 || width < narrowest) {
        narrowest = width;
        ns = kernel;
        *ticks = first + width / 2;
      }
      if (narrowest <= kNarrowTicks) break;
    }
    return ns;
  }

  void anchor(uint64_t ticks, int64_t ns) {
    if (anchored_) {
      const int64_t span_ns = ns - anchor_ns_;
      if (span_ns < kReanchorNs && mult_ == 0) return;  // too short to measure: keep the anchor
      const uint64_t span_ticks = ticks - anchor_ticks_;
      if (ticks <= anchor_ticks_) {
        mult_ = 0;  // the counter went back: measure afresh, from here
      } else if (span_ns >= kReanchorNs / 2 && span_ns <= kLongestSpanNs) {
        // A span the old rate took for kReanchorNs may measure a little less by the kernel's
        // clock (a slower slew since), hence half of it as the shortest span to measure. Longer
        // spans (an idle thread) only anchor: the arithmetic stays within 64 bits.
        uint64_t mult = (static_cast<uint64_t>(span_ns) << kShift) / span_ticks;
        // Further from the last rate than NTP ever slews (500 ppm): the counter jumped within
        // the span. Measure afresh rather than extrapolate from it.
        if (mult_ != 0 && (mult > mult_ + mult_ / 64 || mult < mult_ - mult_ / 64)) mult = 0;
        mult_ = mult;
        reanchor_ticks_ = mult != 0 ? (static_cast<uint64_t>(kReanchorNs) << kShift) / mult : 0;
      }
    }
    anchored_ = true;
    anchor_ticks_ = ticks;
    anchor_ns_ = ns;
  }

  bool ticks_usable_ = false;
  Sources sources_{&read_tsc, &monotonic_ns};
  bool anchored_ = false;
  uint64_t anchor_ticks_ = 0;
  int64_t anchor_ns_ = 0;
  uint64_t mult_ = 0;  // 0: no rate yet
  uint64_t reanchor_ticks_ = 0;
  int64_t last_ns_ = 0;
};

}  // namespace vramtrace::ring
