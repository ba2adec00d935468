#include "collector/trace_ingest.h"

#include <algorithm>
#include <string>

#include "storage/schema.h"

namespace vramtrace::collector {

TraceIngest::TraceIngest(storage::TraceWriter& writer)
    : writer_(writer),
      processes_(writer, stats_),
      modules_(writer, stats_),
      stacks_(writer, modules_, stats_),
      allocations_(writer, stats_),
      markers_(writer, stats_),
      memory_activity_(writer, stats_) {}

TraceIngest::~TraceIngest() = default;

int64_t TraceIngest::open_ring(uint32_t pid) {
  ProcessTracker::Process& p = processes_.open(pid);
  rings_.push_back(Ring{&p, {}});
  return p.upid;
}

TraceIngest::Ring* TraceIngest::ring_for(int64_t ring_id) {
  if (ring_id < 1 || ring_id > static_cast<int64_t>(rings_.size())) return nullptr;
  return &rings_[static_cast<size_t>(ring_id) - 1];
}

wire::Envelope::BodyCase TraceIngest::parse_hot_record(const unsigned char* payload,
                                                       uint32_t bytes) {
  // The Envelope's one field: a one-byte key (field number < 16, length-delimited), then the
  // length, which must reach exactly to the end. Anything else takes the general path.
  if (bytes < 2) return wire::Envelope::BODY_NOT_SET;
  const unsigned key = payload[0];
  if ((key & 0x80) != 0 || (key & 7) != 2) return wire::Envelope::BODY_NOT_SET;
  uint64_t length = 0;
  uint32_t at = 1;
  for (int shift = 0; at < bytes && shift < 35; shift += 7) {
    const unsigned char byte = payload[at++];
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      if (length != bytes - at) return wire::Envelope::BODY_NOT_SET;
      const int size = static_cast<int>(length);
      if (key >> 3 == wire::Envelope::kAllocFieldNumber &&
          hot_.decode_alloc(payload + at, static_cast<uint32_t>(size)))
        return wire::Envelope::kAlloc;
      if (key >> 3 == wire::Envelope::kFreeFieldNumber &&
          hot_.decode_free(payload + at, static_cast<uint32_t>(size)))
        return wire::Envelope::kFree;
      return wire::Envelope::BODY_NOT_SET;
    }
  }
  return wire::Envelope::BODY_NOT_SET;
}

template <class Message>
std::optional<AllocationTracker::Origin> TraceIngest::origin_of(Ring& r, const Message& m) {
  if (!stacks_.fits(m)) return std::nullopt;
  ProcessState& state = r.state;
  const int64_t utid = processes_.utid(*r.process, state.threads, m.tid());
  return AllocationTracker::Origin{r.process->upid, utid,
                                   stacks_.callsite(state.stacks, state.modules, m)};
}

void TraceIngest::on_record(int64_t ring_id, const ring::RecordHeader& header,
                            const unsigned char* payload) {
  Ring* r = ring_for(ring_id);
  if (r == nullptr) return;
  wire::Envelope::BodyCase body = parse_hot_record(payload, header.payload_bytes);
  const bool hot = body != wire::Envelope::BODY_NOT_SET;
  if (!hot) {
    envelope_.Clear();
    if (!envelope_.ParseFromArray(payload, static_cast<int>(header.payload_bytes))) {
      stats_.add(Stat::kRecordUndecodable);
      return;
    }
    body = envelope_.body_case();
  }
  ProcessTracker::Process& p = *r->process;
  ProcessState& state = r->state;
  p.last_ns = std::max(p.last_ns, header.time_ns);
  if (!p.started && body != wire::Envelope::kProcessStart) {
    // The shim always starts with ProcessStart; make the row anyway so nothing is dropped.
    processes_.start_unannounced(p, header.time_ns);
    stats_.add(Stat::kProcessStartMissing);
  }
  switch (body) {
    case wire::Envelope::kProcessStart:
      if (p.started) {
        stats_.add(Stat::kProcessStartRepeated);
        return;
      }
      processes_.start(p, header.time_ns, envelope_.process_start());
      return;
    case wire::Envelope::kModule:
      if (modules_.on_module(state.modules, p.upid, envelope_.module()))
        StackTracker::forget_cached(state.stacks);
      return;
    case wire::Envelope::kAlloc: {
      const wire::Alloc& m = hot ? hot_.alloc() : envelope_.alloc();
      if (const auto origin = origin_of(*r, m))
        allocations_.on_alloc(state.allocations, header, m, *origin);
      return;
    }
    case wire::Envelope::kFree: {
      const wire::Free& m = hot ? hot_.free() : envelope_.free();
      if (const auto origin = origin_of(*r, m))
        allocations_.on_free(state.allocations, header, m, *origin);
      return;
    }
    case wire::Envelope::kFreeFailed:
      on_free_failed(*r, envelope_.free_failed());
      return;
    case wire::Envelope::kNotice:
      on_notice(envelope_.notice());
      return;
    case wire::Envelope::kMarker: {
      const wire::Marker& m = envelope_.marker();
      const int64_t utid = processes_.utid(p, state.threads, m.tid());
      markers_.on_marker(state.markers, p.upid, utid, header, m);
      return;
    }
    case wire::Envelope::kPythonCode:
      modules_.on_python_code(state.modules, envelope_.python_code());
      return;
    case wire::Envelope::kMemoryActivity:
      memory_activity_.on_activity(state.allocations.correlations, p.upid,
                                   envelope_.memory_activity());
      return;
    case wire::Envelope::kPythonInterpreter:
      state.modules.python_interpreter_address = envelope_.python_interpreter().api_address();
      return;
    case wire::Envelope::kChildExit:
      set_wait_status(envelope_.child_exit().pid(), envelope_.child_exit().wait_status());
      return;
    case wire::Envelope::kLiveCheckpoint:
      on_live_checkpoint(*r, header.seq);
      return;
    case wire::Envelope::kLiveQuery:
      on_live_query(*r, envelope_.live_query());
      return;
    case wire::Envelope::kThreadName:
      processes_.name_thread(p, state.threads, envelope_.thread_name().tid(),
                             envelope_.thread_name().name());
      return;
    case wire::Envelope::kProcessExit:
      processes_.said_exit(p, envelope_.process_exit().exit_status());
      return;
    case wire::Envelope::BODY_NOT_SET:
      stats_.add(Stat::kRecordUnknownMessage);
      return;
  }
}

void TraceIngest::on_free_failed(Ring& r, const wire::FreeFailed& m) {
  ProcessState& state = r.state;
  allocations_.on_free_failed(state.allocations, r.process->upid, m,
                              [&]() -> std::optional<int64_t> {
                                if (!stacks_.fits(m)) return std::nullopt;
                                return stacks_.callsite(state.stacks, state.modules, m);
                              });
}

void TraceIngest::on_notice(const wire::Notice& m) {
  const storage::Severity severity =
      m.severity() == wire::Notice::SEVERITY_ERROR       ? storage::Severity::kError
      : m.severity() == wire::Notice::SEVERITY_DATA_LOSS ? storage::Severity::kDataLoss
                                                         : storage::Severity::kInfo;
  const auto times = static_cast<int64_t>(std::min<uint64_t>(m.count(), INT64_MAX));
  stats_.add_notice("shim_" + m.name(), severity, m.text(), times > 0 ? times : 1);
}

void TraceIngest::on_live_checkpoint(Ring& r, uint64_t seq) {
  LiveQueries& queries = r.state.allocations.queries;
  const uint64_t dropped = queries.dropped_checkpoints();
  queries.open_checkpoint(seq);
  if (queries.dropped_checkpoints() != dropped) stats_.add(Stat::kLiveCheckpointsDropped);
}

void TraceIngest::on_live_query(Ring& r, const wire::LiveQuery& m) {
  const LiveQueries::Reply reply = r.state.allocations.queries.answer(
      m.query_id(), m.checkpoint_seq(),
      [this](std::optional<int64_t> callsite) { return stacks_.stack_of(callsite); },
      [](int kind) {
        for (const storage::NamedId& row : storage::allocation_kind_rows())
          if (row.id == kind) return std::string(row.name);
        return "kind_" + std::to_string(kind);
      });
  if (reply.header.status == wire::kLiveReplyUnknownCheckpoint)
    stats_.add(Stat::kLiveQueryUnknownCheckpoint);
  if (!reply_sink_) {
    stats_.add(Stat::kLiveQueryUnanswered);
    return;
  }
  reply_sink_(r.process->upid, reply);
}

void TraceIngest::close_ring(int64_t ring_id, bool complete, int64_t end_ns,
                             std::optional<int> wait_status) {
  Ring* r = ring_for(ring_id);
  if (r == nullptr) return;
  processes_.close(*r->process, complete, end_ns, wait_status);
  // The process's identity stays for a later wait status; all it built up goes.
  r->state = ProcessState{};
}

void TraceIngest::ring_corrupt(int64_t) {
  stats_.add(Stat::kRingCorrupt);
}

void TraceIngest::recording_stopped(int64_t) {
  stats_.add(Stat::kRecordingStopped);
}

void TraceIngest::exec_untraced(int64_t) {
  stats_.add(Stat::kExecUntraced);
}

std::string TraceIngest::program(int64_t ring_id) {
  const Ring* r = ring_for(ring_id);
  return r != nullptr ? r->process->exe : std::string();
}

void TraceIngest::set_wait_status(uint32_t pid, int wait_status) {
  processes_.set_wait_status(pid, wait_status);
}

void TraceIngest::write_stats() {
  const Symbolizer::Stats& s = modules_.symbolizer_stats();
  stats_.set(Stat::kSymbolizerModulesMissing, s.modules_missing);
  stats_.set(Stat::kSymbolizerBuildIdMismatch, s.build_id_mismatch);
  stats_.set(Stat::kSymbolizerUnresolved, s.unresolved);
  stats_.write(writer_);
}

}  // namespace vramtrace::collector
