#include "analysis/export/perfetto_export.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/export/spilled_sort.h"

#include "protos/perfetto/trace/trace_packet.pb.h"

namespace vramtrace::analysis {
namespace {

namespace pb = perfetto::protos;

constexpr std::uint32_t kSequenceId = 1;

// A Trace is `repeated TracePacket packet = 1`: each packet is field 1, length-delimited, so
// packets framed one by one and written one after another make a Trace message, never held
// whole in memory.
void frame(pb::TracePacket& packet, bool first, std::string* framed) {
  packet.set_trusted_packet_sequence_id(kSequenceId);
  if (first) packet.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  const std::string bytes = packet.SerializeAsString();
  framed->push_back(0x0a);  // field 1, wire type 2
  for (std::uint64_t size = bytes.size();; size >>= 7) {
    framed->push_back(static_cast<char>(size < 0x80 ? size : (size & 0x7f) | 0x80));
    if (size < 0x80) break;
  }
  framed->append(bytes);
}

void annotate(pb::TrackEvent* event, const std::vector<ExportArg>& args) {
  for (const ExportArg& arg : args) {
    pb::DebugAnnotation* annotation = event->add_debug_annotations();
    annotation->set_name(arg.name);
    if (const auto* number = std::get_if<std::int64_t>(&arg.value))
      annotation->set_int_value(*number);
    else
      annotation->set_string_value(std::get<std::string>(arg.value));
  }
}

// The track descriptors as the tracks are found, kept in memory (there is one per process,
// thread, lane and counter: few); the events as they come, sorted on disk. At the end the
// descriptors, then the events in time order: at one time, slices end (innermost first), then
// counters and instants, then slices begin (outermost first), so that slices nest on every
// track.
class PerfettoSink : public ExportSink {
 public:
  void process(const ExportProcess& process) override {
    pids_[process.upid] = process.shown_pid;
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(processes_[process.upid] = next_uuid_++);
    pb::ProcessDescriptor* descriptor = track->mutable_process();
    descriptor->set_pid(static_cast<std::int32_t>(process.shown_pid));
    descriptor->set_process_name(process.name);
    for (const std::string& arg : process.argv) descriptor->add_cmdline(arg);
    describe(packet);
  }

  void thread(const ExportThread& thread) override {
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(threads_[thread.utid] = next_uuid_++);
    pb::ThreadDescriptor* descriptor = track->mutable_thread();
    descriptor->set_pid(static_cast<std::int32_t>(pids_.at(thread.upid)));
    descriptor->set_tid(static_cast<std::int32_t>(thread.tid));
    if (!thread.name.empty()) descriptor->set_thread_name(thread.name);
    describe(packet);
  }

  void lane(std::int64_t upid, int lane) override {
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(lanes_[{upid, lane}] = next_uuid_++);
    track->set_parent_uuid(processes_.at(upid));
    track->set_name("ranges (lane " + std::to_string(lane) + ")");
    describe(packet);
  }

  void counter(const ExportCounter& counter) override {
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    counters_.push_back(next_uuid_++);
    track->set_uuid(counters_.at(counter.index));
    track->set_parent_uuid(processes_.at(counter.upid));
    track->set_name(counter.name);
    track->mutable_counter()->set_unit(pb::CounterDescriptor::UNIT_SIZE_BYTES);
    describe(packet);
  }

  void counter_point(const ExportCounter& counter, std::int64_t ns, std::uint64_t bytes) override {
    pb::TracePacket packet;
    pb::TrackEvent* event = event_packet(packet, ns);
    event->set_type(pb::TrackEvent::TYPE_COUNTER);
    event->set_track_uuid(counters_.at(counter.index));
    event->set_counter_value(static_cast<std::int64_t>(bytes));
    add_event({ns, kCounter, 0}, packet);
  }

  void slice(const ExportSlice& s) override {
    pb::TracePacket begin;
    pb::TrackEvent* event = event_packet(begin, s.start_ns);
    event->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
    event->set_track_uuid(place(s.place));
    event->set_name(s.name);
    event->add_categories(s.category);
    annotate(event, s.args);
    add_event({s.start_ns, kBegin, -s.end_ns}, begin);
    pb::TracePacket end;
    event = event_packet(end, s.end_ns);
    event->set_type(pb::TrackEvent::TYPE_SLICE_END);
    event->set_track_uuid(place(s.place));
    add_event({s.end_ns, kEnd, -s.start_ns}, end);
  }

  void instant(const ExportInstant& i) override {
    pb::TracePacket packet;
    pb::TrackEvent* event = event_packet(packet, i.ns);
    event->set_type(pb::TrackEvent::TYPE_INSTANT);
    event->set_track_uuid(place(i.place));
    event->set_name(i.name);
    event->add_categories(i.category);
    annotate(event, i.args);
    add_event({i.ns, kInstant, 0}, packet);
  }

  void finish(std::ostream& out) {
    out.write(descriptors_.data(), static_cast<std::streamsize>(descriptors_.size()));
    events_.drain([&](std::string_view framed) {
      out.write(framed.data(), static_cast<std::streamsize>(framed.size()));
    });
  }

 private:
  enum Type : std::int64_t { kEnd, kCounter, kInstant, kBegin };

  std::uint64_t place(const ExportPlace& where) const {
    if (where.utid) return threads_.at(*where.utid);
    if (where.lane > 0) return lanes_.at({where.upid, where.lane});
    return processes_.at(where.upid);
  }

  static pb::TrackEvent* event_packet(pb::TracePacket& packet, std::int64_t ns) {
    packet.set_timestamp(static_cast<std::uint64_t>(ns));
    return packet.mutable_track_event();
  }

  void describe(pb::TracePacket& packet) { frame(packet, descriptors_.empty(), &descriptors_); }

  // Descriptors come first in the file, and a trace always has one (its process) before any
  // event: an event is never the first packet.
  void add_event(const SortKey& key, pb::TracePacket& packet) {
    framed_.clear();
    frame(packet, false, &framed_);
    events_.add(key, framed_);
  }

  std::uint64_t next_uuid_ = 1;  // 0 is Perfetto's implicit global track
  std::map<std::int64_t, std::uint32_t> pids_;
  std::map<std::int64_t, std::uint64_t> processes_, threads_;
  std::map<std::pair<std::int64_t, int>, std::uint64_t> lanes_;
  std::vector<std::uint64_t> counters_;  // by counter index
  std::string descriptors_;
  std::string framed_;
  SpilledSort events_;
};

}  // namespace

ExportCounts write_perfetto_trace(const storage::TraceReader& trace, const ExportOptions& options,
                                  std::ostream& out) {
  PerfettoSink sink;
  const ExportCounts counts = export_timeline(trace, options, sink);
  sink.finish(out);
  return counts;
}

}  // namespace vramtrace::analysis
