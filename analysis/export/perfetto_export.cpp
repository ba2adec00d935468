#include "analysis/export/perfetto_export.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "protos/perfetto/trace/trace_packet.pb.h"

namespace vramtrace::analysis {
namespace {

namespace pb = perfetto::protos;

constexpr std::uint32_t kSequenceId = 1;
constexpr std::uint32_t kMergedPidBase = 1'000'000;

// A Trace is `repeated TracePacket packet = 1`: each packet is field 1, length-delimited, so a
// stream of them is a Trace message without ever holding the whole trace in memory.
class PacketStream {
 public:
  explicit PacketStream(std::ostream& out) : out_(out) {}
  void write(pb::TracePacket& packet) {
    packet.set_trusted_packet_sequence_id(kSequenceId);
    if (first_) {
      packet.set_sequence_flags(pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
      first_ = false;
    }
    packet.SerializeToString(&bytes_);
    out_.put(0x0a);  // field 1, wire type 2
    for (std::uint64_t size = bytes_.size();; size >>= 7) {
      out_.put(static_cast<char>(size < 0x80 ? size : (size & 0x7f) | 0x80));
      if (size < 0x80) break;
    }
    out_.write(bytes_.data(), static_cast<std::streamsize>(bytes_.size()));
  }

 private:
  std::ostream& out_;
  std::string bytes_;
  bool first_ = true;
};

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

// Track uuids, handed out in the order the descriptors are written.
class Tracks {
 public:
  std::uint64_t process(std::int64_t upid) const { return processes_.at(upid); }
  std::uint64_t place(const ExportPlace& where) const {
    if (where.utid) return threads_.at(*where.utid);
    if (where.lane > 0) return lanes_.at({where.upid, where.lane});
    return process(where.upid);
  }
  std::uint64_t add_process(std::int64_t upid) { return processes_[upid] = next_++; }
  std::uint64_t add_thread(std::int64_t utid) { return threads_[utid] = next_++; }
  std::uint64_t add_lane(std::int64_t upid, int lane) { return lanes_[{upid, lane}] = next_++; }
  std::uint64_t add_counter() { return next_++; }

 private:
  std::uint64_t next_ = 1;  // 0 is Perfetto's implicit global track
  std::map<std::int64_t, std::uint64_t> processes_, threads_;
  std::map<std::pair<std::int64_t, int>, std::uint64_t> lanes_;
};

}  // namespace

std::uint32_t export_pid(const ExportTimeline& timeline, const ExportProcess& process) {
  const auto same_pid =
      std::count_if(timeline.processes.begin(), timeline.processes.end(),
                    [&](const ExportProcess& other) { return other.pid == process.pid; });
  return same_pid > 1 ? kMergedPidBase + static_cast<std::uint32_t>(process.upid) : process.pid;
}

void write_perfetto_trace(const ExportTimeline& timeline, std::ostream& out) {
  PacketStream stream(out);
  Tracks tracks;
  std::map<std::int64_t, std::uint32_t> pids;
  for (const ExportProcess& process : timeline.processes) {
    pids[process.upid] = export_pid(timeline, process);
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(tracks.add_process(process.upid));
    pb::ProcessDescriptor* descriptor = track->mutable_process();
    descriptor->set_pid(static_cast<std::int32_t>(pids[process.upid]));
    descriptor->set_process_name(process.name);
    for (const std::string& arg : process.argv) descriptor->add_cmdline(arg);
    stream.write(packet);
    for (int lane = 1; lane <= process.lanes; ++lane) {
      pb::TracePacket lane_packet;
      pb::TrackDescriptor* lane_track = lane_packet.mutable_track_descriptor();
      lane_track->set_uuid(tracks.add_lane(process.upid, lane));
      lane_track->set_parent_uuid(tracks.process(process.upid));
      lane_track->set_name("ranges (lane " + std::to_string(lane) + ")");
      stream.write(lane_packet);
    }
  }
  for (const ExportThread& thread : timeline.threads) {
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(tracks.add_thread(thread.utid));
    pb::ThreadDescriptor* descriptor = track->mutable_thread();
    descriptor->set_pid(static_cast<std::int32_t>(pids.at(thread.upid)));
    descriptor->set_tid(static_cast<std::int32_t>(thread.tid));
    if (!thread.name.empty()) descriptor->set_thread_name(thread.name);
    stream.write(packet);
  }
  std::vector<std::uint64_t> counter_tracks;
  for (const ExportCounter& counter : timeline.counters) {
    pb::TracePacket packet;
    pb::TrackDescriptor* track = packet.mutable_track_descriptor();
    track->set_uuid(counter_tracks.emplace_back(tracks.add_counter()));
    track->set_parent_uuid(tracks.process(counter.upid));
    track->set_name(counter.name);
    track->mutable_counter()->set_unit(pb::CounterDescriptor::UNIT_SIZE_BYTES);
    stream.write(packet);
  }

  // Every event, in time order. At one time: slices end (innermost first), then counters and
  // instants, then slices begin (outermost first), so that slices nest on every track.
  enum Type { kEnd, kCounter, kInstant, kBegin };
  struct Event {
    std::int64_t ns;
    Type type;
    std::int64_t tiebreak;
    std::size_t index, point;
  };
  std::vector<Event> events;
  for (std::size_t i = 0; i < timeline.slices.size(); ++i) {
    const ExportSlice& s = timeline.slices[i];
    events.push_back({s.start_ns, kBegin, -s.end_ns, i, 0});
    events.push_back({s.end_ns, kEnd, -s.start_ns, i, 0});
  }
  for (std::size_t i = 0; i < timeline.instants.size(); ++i)
    events.push_back({timeline.instants[i].ns, kInstant, 0, i, 0});
  for (std::size_t c = 0; c < timeline.counters.size(); ++c) {
    for (std::size_t p = 0; p < timeline.counters[c].points.size(); ++p)
      events.push_back({timeline.counters[c].points[p].ns, kCounter, 0, c, p});
  }
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return std::tuple(a.ns, a.type, a.tiebreak) < std::tuple(b.ns, b.type, b.tiebreak);
  });

  for (const Event& e : events) {
    pb::TracePacket packet;
    packet.set_timestamp(static_cast<std::uint64_t>(e.ns));
    pb::TrackEvent* event = packet.mutable_track_event();
    switch (e.type) {
      case kBegin: {
        const ExportSlice& s = timeline.slices[e.index];
        event->set_type(pb::TrackEvent::TYPE_SLICE_BEGIN);
        event->set_track_uuid(tracks.place(s.place));
        event->set_name(s.name);
        event->add_categories(s.category);
        annotate(event, s.args);
        break;
      }
      case kEnd:
        event->set_type(pb::TrackEvent::TYPE_SLICE_END);
        event->set_track_uuid(tracks.place(timeline.slices[e.index].place));
        break;
      case kInstant: {
        const ExportInstant& i = timeline.instants[e.index];
        event->set_type(pb::TrackEvent::TYPE_INSTANT);
        event->set_track_uuid(tracks.place(i.place));
        event->set_name(i.name);
        event->add_categories(i.category);
        annotate(event, i.args);
        break;
      }
      case kCounter:
        event->set_type(pb::TrackEvent::TYPE_COUNTER);
        event->set_track_uuid(counter_tracks[e.index]);
        event->set_counter_value(
            static_cast<std::int64_t>(timeline.counters[e.index].points[e.point].bytes));
        break;
    }
    stream.write(packet);
  }
}

}  // namespace vramtrace::analysis
