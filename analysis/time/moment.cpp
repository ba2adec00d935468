#include "analysis/time/moment.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "analysis/time/whole_moment.h"
#include "analysis/values/cuda_errors.h"
#include "storage/live_bytes_rollups.h"
#include "storage/schema_enums.h"

namespace vramtrace::analysis {
namespace {

std::optional<std::uint64_t> parse_unsigned(std::string_view text) {
  std::uint64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// "1.5s", "250ms", "40us", "100ns": a duration in ns.
std::optional<std::int64_t> parse_duration(std::string_view text) {
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1.0}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  for (const auto& [suffix, scale] : kUnits) {
    if (!text.ends_with(suffix)) continue;
    const std::string_view number = text.substr(0, text.size() - suffix.size());
    if (number.empty() || number.find_first_not_of("0123456789.") != std::string_view::npos)
      return std::nullopt;
    double value = 0;
    const auto [end, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    if (error != std::errc() || end != number.data() + number.size()) return std::nullopt;
    // Past 2^63 ns (292 years) no trace has a moment, and the conversion would not be defined.
    if (value * scale >= 0x1p63) return std::nullopt;
    return static_cast<std::int64_t>(value * scale + 0.5);
  }
  return std::nullopt;
}

}  // namespace

MomentSpec parse_moment(std::string_view text) {
  MomentSpec moment;
  moment.text = std::string(text);
  if (text == "end") return moment;
  if (text == "peak") {
    moment.kind = MomentSpec::Kind::kPeak;
  } else if (text == "oom") {
    moment.kind = MomentSpec::Kind::kOom;
  } else if (text.starts_with("seq:")) {
    const auto seq = parse_unsigned(text.substr(4));
    if (!seq) throw BadMoment("'" + moment.text + "' is not seq:N with N a sequence number");
    moment.kind = MomentSpec::Kind::kSeq;
    moment.seq = *seq;
  } else if (text.starts_with("+")) {
    const auto ns = parse_duration(text.substr(1));
    if (!ns)
      throw BadMoment("'" + moment.text + "' is not +D with D like 1.5s, 250ms, 40us, 100ns");
    moment.kind = MomentSpec::Kind::kSinceStart;
    moment.ns = *ns;
  } else if (const auto ns = parse_unsigned(text)) {
    // A time a trace cannot hold would wrap to a negative one, before every event.
    if (*ns > static_cast<std::uint64_t>(INT64_MAX))
      throw BadMoment("'" + moment.text + "' is past the latest time a trace holds (" +
                      std::to_string(INT64_MAX) + " ns)");
    moment.kind = MomentSpec::Kind::kTime;
    moment.ns = static_cast<std::int64_t>(*ns);
  } else {
    moment.kind = MomentSpec::Kind::kMarker;
    moment.marker = moment.text;
    const std::size_t hash = text.rfind('#');
    if (hash != std::string_view::npos && hash > 0) {
      if (const auto k = parse_unsigned(text.substr(hash + 1)); k && *k > 0) {
        moment.marker = std::string(text.substr(0, hash));
        moment.occurrence = static_cast<std::size_t>(*k);
      }
    }
  }
  return moment;
}

std::vector<ProcessMoment> resolve_moment(const storage::TraceReader& trace,
                                          const storage::TimeIndex& index, const MomentSpec& moment,
                                          const ProcessSelection& processes) {
  using Kind = MomentSpec::Kind;
  std::map<std::int64_t, ProcessMoment> found;  // by upid
  std::map<std::int64_t, std::uint32_t> pids;
  for (const storage::ProcessRecord& process : trace.processes()) {
    if (is_selected(processes, process.start.upid)) pids[process.start.upid] = process.start.pid;
  }
  const auto at_seq = [&](std::int64_t upid, std::uint64_t seq) {
    found[upid] = {upid, pids[upid], seq, index.time_of(upid, seq)};
  };
  switch (moment.kind) {
    case Kind::kEnd:
      // The program's end: a Python process's teardown frees what it still held, and that is
      // what "at the end" means to its user (TraceReader::program_end_seq).
      for (const auto& [upid, pid] : pids)
        at_seq(upid, trace.program_end_seq(upid).value_or(index.last_seq(upid)));
      break;
    case Kind::kPeak: {
      std::map<std::int64_t, std::uint64_t> largest;
      for (const storage::LiveBytesPeak& peak : index.peaks()) {
        if (!pids.contains(peak.upid) || peak.group != storage::kPeakGroupDeviceMemory) continue;
        if (peak.bytes <= largest[peak.upid]) continue;
        largest[peak.upid] = peak.bytes;
        found[peak.upid] = {peak.upid, pids[peak.upid], peak.seq, peak.ns};
      }
      if (found.empty()) throw BadMoment("no device memory was in use, so there is no peak");
      for (auto& [upid, at] : found) {
        const std::uint64_t whole = with_new_segments_blocks(index, upid, at.seq);
        if (whole != at.seq) at = {upid, at.pid, whole, index.time_of(upid, whole)};
      }
      break;
    }
    case Kind::kOom: {
      // The failure the program saw: in a PyTorch process the first its allocator raised
      // (torch.OutOfMemoryError), not a device allocation it failed and then went past or
      // retried; elsewhere the first failure.
      storage::AllocationFilter failed;
      failed.outcome = storage::AllocationFilter::Outcome::kFailed;
      std::set<std::int64_t> raised;
      trace.for_each_allocation(failed, [&](const storage::AllocationRecord& record) {
        const storage::AllocationRow& a = record.allocation;
        if (a.result != kOutOfMemoryResult || !pids.contains(a.upid) || raised.contains(a.upid))
          return;
        const bool by_allocator = a.kind == storage::allocation_kind::kBlock;
        if (found.contains(a.upid) && !by_allocator) return;
        found[a.upid] = {a.upid, pids[a.upid], a.alloc_seq, a.alloc_ns};
        if (by_allocator) raised.insert(a.upid);
      });
      if (found.empty()) throw BadMoment("no out-of-memory failure in the trace");
      break;
    }
    case Kind::kSeq:
      if (pids.size() > 1) {
        // Among many processes, the one that recorded GPU memory (a job through a shell).
        const std::vector<std::int64_t> gpu = trace.upids_with_gpu_events();
        std::erase_if(pids, [&](const auto& entry) {
          return !std::binary_search(gpu.begin(), gpu.end(), entry.first);
        });
        if (pids.empty()) throw BadMoment("no process recorded GPU memory, so it has no seq:N");
      }
      if (pids.size() != 1) {
        throw BadMoment("seq:N names an event of one process, and " + std::to_string(pids.size()) +
                        " processes recorded GPU memory: choose one with --pid, --rank or --host");
      }
      at_seq(pids.begin()->first, moment.seq);
      break;
    case Kind::kTime:
    case Kind::kSinceStart: {
      const std::int64_t ns = moment.kind == Kind::kTime ? moment.ns : index.start_ns() + moment.ns;
      for (const auto& [upid, pid] : pids)
        found[upid] = {upid, pid, index.last_seq_at(upid, ns), ns};
      break;
    }
    case Kind::kMarker:
      // Markers come in (upid, start_seq) order: without an occurrence, the last one wins.
      std::map<std::int64_t, std::size_t> seen;
      for (const storage::MarkerRecord& marker : trace.markers()) {
        if (marker.start.name != moment.marker || !pids.contains(marker.start.upid)) continue;
        const std::size_t occurrence = ++seen[marker.start.upid];
        if (moment.occurrence && occurrence != *moment.occurrence) continue;
        const bool ended = marker.end.has_value();
        found[marker.start.upid] = {marker.start.upid, pids[marker.start.upid],
                                    ended ? marker.end->end_seq : marker.start.start_seq,
                                    ended ? marker.end->end_ns : marker.start.start_ns};
      }
      if (found.empty()) {
        throw BadMoment(moment.occurrence
                            ? "no process has " + std::to_string(*moment.occurrence) +
                                  " markers named '" + moment.marker + "'"
                            : "no marker named '" + moment.marker +
                                  "' (and not end, peak, oom, seq:N, a time in ns or +D)");
      }
      break;
  }
  std::vector<ProcessMoment> moments;
  for (auto& [upid, at] : found) moments.push_back(std::move(at));
  return moments;
}

}  // namespace vramtrace::analysis
