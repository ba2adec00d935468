// Moments: the points in a trace that the time-indexed reports look at (`--at`).
//
// A moment is named on the command line as
//   end          the end of each process (what `leaks` reports by default)
//   peak         each process's peak of device memory in use (its largest device's)
//   oom          each process's first out-of-memory failure
//   seq:N        event N of the one selected process (sequence numbers are per process)
//   N            CLOCK_MONOTONIC time N in ns, as the JSON reports give times, across processes
//   +D           D after the trace's first allocation: 1.5s, 250ms, 40us, 100ns
//   NAME         the last marker (mark or range) so named, in each process that has one: the
//                end of a range, the point of a mark
//   NAME#K       the K-th (from 1) marker so named, in each process that has that many
// and resolves, per process, to a sequence number s: the moment just after that process's
// event s, when the allocations with alloc_seq <= s < free_seq were live.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/scope/process_filter.h"
#include "analysis/time/report_time_index.h"
#include "storage/trace_reader.h"

namespace vramtrace::analysis {

// A moment that cannot be resolved on this trace (no such marker, no OOM, seq: with several
// processes): a user error, one line.
class BadMoment : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

struct MomentSpec {
  enum class Kind { kEnd, kPeak, kOom, kSeq, kTime, kSinceStart, kMarker };
  Kind kind = Kind::kEnd;
  std::uint64_t seq = 0;  // kSeq
  std::int64_t ns = 0;    // kTime: absolute; kSinceStart: after the first allocation
  std::string marker;     // kMarker
  std::optional<std::size_t> occurrence;  // kMarker: from 1; unset: the last
  std::string text;                       // as given
};

// Never fails: what is not one of the forms above is a marker name. Throws BadMoment for a
// malformed number after `seq:` or `+`.
MomentSpec parse_moment(std::string_view text);

struct ProcessMoment {
  std::int64_t upid = 0;
  std::uint32_t pid = 0;
  std::uint64_t seq = 0;                // live just after this event of the process
  std::optional<std::int64_t> time_ns;  // when; unset: not known (the process had no event yet)
};

// The moment in each selected process it applies to, by upid (peak and oom skip processes
// without one; a marker, processes without that marker). Throws BadMoment when it applies to
// none.
std::vector<ProcessMoment> resolve_moment(const storage::TraceReader& trace,
                                          const storage::TimeIndex& index, const MomentSpec& moment,
                                          const ProcessSelection& processes);

}  // namespace vramtrace::analysis
