// analysis/export: a hand-built trace exported as a Perfetto trace, decoded back with libprotobuf
// against the Perfetto schema in analysis/export/protos, and as Chrome trace event JSON, parsed
// back. One MiB = M; seq n is at t(n) = 1 s + n ms. pid 5000, thread tid 5001 named "main":
//   seq 1  device 20M (callsite 1), live        seq 3  block 4M (callsite 2), freed at seq 7
//   seq 5  block 8M (callsite 2), live           seq 10 cudaMalloc 64M failed: out of memory
//   range 'step'    seq 2 to 9, depth 0          range 'forward' seq 4 to 6, depth 1
//   range 'overlap' seq 6 to 11: ends after 'step', so it cannot nest: lane 1
//   mark 'checkpoint' at seq 8
// Live block bytes: 0, 4M at t(3), 12M at t(5), 8M at t(7); device bytes 0, 20M at t(1).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include <google/protobuf/unknown_field_set.h>
#include "analysis/export/chrome_export.h"
#include "analysis/export/export_timeline.h"
#include "analysis/export/perfetto_export.h"

#include "protos/perfetto/trace/trace.pb.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "temp_dir.h"
#include "trace_builder.h"

namespace vramtrace {
namespace {

namespace kind = storage::allocation_kind;
namespace api = storage::api;
namespace pb = perfetto::protos;
using testing::ns_of_seq;

constexpr std::uint64_t M = 1024 * 1024;
constexpr std::uint64_t S = 0x7f0000000000;

void write_trace(const std::filesystem::path& path) {
  std::string error;
  auto writer = storage::TraceWriter::create(path, &error);
  ASSERT_TRUE(writer) << error;
  storage::TraceWriter& w = *writer;
  testing::add_train_stacks(w);
  const testing::ProcessWriter p = testing::start_process(w, 1, 5000);
  w.set_thread_name(1, "main");
  p.add(p.row(1, kind::kDevice, api::kCudaMalloc, S, 20 * M, 1, 1));
  p.range(1, "step", 2, 9);
  p.block(2, S, 4 * M, 3, 1);
  p.range(2, "forward", 4, 6, 1);
  p.block(3, S + 4 * M, 8 * M, 5, 1);
  p.range(3, "overlap", 6, 11);
  p.free(2, 7, api::kC10ReportMemoryUsage);
  storage::MarkerRow mark;
  mark.id = 4;
  mark.upid = 1;
  mark.utid = 1;
  mark.type = std::string(storage::kMarkerMark);
  mark.source = std::string(storage::kMarkerFromApi);
  mark.name = "checkpoint";
  mark.start_seq = 8;
  mark.start_ns = ns_of_seq(8);
  w.add_marker(mark);
  storage::AllocationRow oom = p.row(4, kind::kDevice, api::kCudaMalloc, 0, 64 * M, 10, 1);
  oom.result = 2;
  p.add(oom);
  ASSERT_TRUE(w.finish(&error)) << error;
}

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    write_trace(dir_ / "t.db");
    storage::OpenFailure failure;
    trace_ = storage::TraceReader::open(dir_ / "t.db", &failure);
    ASSERT_TRUE(trace_) << failure.message;
  }
  std::string perfetto() const {
    std::ostringstream out;
    const analysis::ExportCounts counts = analysis::write_perfetto_trace(*trace_, {}, out);
    EXPECT_EQ(counts.processes, 1u);
    EXPECT_EQ(counts.counters, 2u);
    EXPECT_EQ(counts.slices, 3u);
    EXPECT_EQ(counts.instants, 6u);  // 3 allocations, 1 free, the mark, the OOM
    return out.str();
  }
  testing::TempDir dir_;
  std::unique_ptr<storage::TraceReader> trace_;
};

// A decoded Perfetto trace, indexed for the checks below.
struct Decoded {
  std::map<std::string, std::uint64_t> uuid_by_name;  // tracks by name, process by its name
  std::map<std::uint64_t, pb::TrackDescriptor> tracks;
  std::vector<pb::TracePacket> events;  // the TrackEvent packets, in file order
};

Decoded decode(const std::string& bytes) {
  pb::Trace trace;
  EXPECT_TRUE(trace.ParseFromString(bytes));
  Decoded decoded;
  for (const pb::TracePacket& packet : trace.packet()) {
    EXPECT_EQ(packet.trusted_packet_sequence_id(), 1u);
    if (packet.has_track_descriptor()) {
      const pb::TrackDescriptor& track = packet.track_descriptor();
      decoded.tracks[track.uuid()] = track;
      std::string name = track.name();
      if (track.has_process()) name = "process " + track.process().process_name();
      if (track.has_thread()) name = "thread " + track.thread().thread_name();
      decoded.uuid_by_name[name] = track.uuid();
    } else {
      EXPECT_TRUE(packet.has_track_event());
      decoded.events.push_back(packet);
    }
  }
  EXPECT_EQ(trace.packet(0).sequence_flags(), pb::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  return decoded;
}

TEST_F(ExportTest, PerfettoTraceDecodesToTracksCountersAndSlices) {
  const Decoded d = decode(perfetto());

  const std::uint64_t process = d.uuid_by_name.at("process python3");
  EXPECT_EQ(d.tracks.at(process).process().pid(), 5000);
  const pb::TrackDescriptor& thread = d.tracks.at(d.uuid_by_name.at("thread main"));
  EXPECT_EQ(thread.thread().pid(), 5000);
  EXPECT_EQ(thread.thread().tid(), 5001);
  const std::uint64_t lane = d.uuid_by_name.at("ranges (lane 1)");
  EXPECT_EQ(d.tracks.at(lane).parent_uuid(), process);
  const std::uint64_t blocks = d.uuid_by_name.at("device 0 block live bytes");
  const std::uint64_t device = d.uuid_by_name.at("device 0 device live bytes");
  for (const std::uint64_t counter : {blocks, device}) {
    EXPECT_EQ(d.tracks.at(counter).parent_uuid(), process);
    EXPECT_EQ(d.tracks.at(counter).counter().unit(), pb::CounterDescriptor::UNIT_SIZE_BYTES);
  }

  std::vector<std::pair<std::uint64_t, std::int64_t>> block_values, device_values;
  std::vector<std::string> slices;  // "B step@2 thread", "E@6 thread", ...
  std::vector<std::string> instants;
  std::uint64_t last_timestamp = 0;
  for (const pb::TracePacket& packet : d.events) {
    EXPECT_GE(packet.timestamp(), last_timestamp) << "events in time order";
    last_timestamp = packet.timestamp();
    const pb::TrackEvent& e = packet.track_event();
    const auto seq = (static_cast<std::int64_t>(packet.timestamp()) - ns_of_seq(0)) / 1'000'000;
    const std::string where =
        e.track_uuid() == lane ? "lane" : (e.track_uuid() == process ? "process" : "thread");
    switch (e.type()) {
      case pb::TrackEvent::TYPE_COUNTER:
        (e.track_uuid() == blocks ? block_values : device_values)
            .emplace_back(packet.timestamp(), e.counter_value());
        break;
      case pb::TrackEvent::TYPE_SLICE_BEGIN:
        slices.push_back("B " + e.name() + "@" + std::to_string(seq) + " " + where);
        break;
      case pb::TrackEvent::TYPE_SLICE_END:
        slices.push_back("E@" + std::to_string(seq) + " " + where);
        break;
      case pb::TrackEvent::TYPE_INSTANT:
        instants.push_back(e.name() + "@" + std::to_string(seq) + " " + where);
        break;
      default:
        ADD_FAILURE() << "unexpected event type " << e.type();
    }
  }
  const auto t = [](std::uint64_t seq) { return static_cast<std::uint64_t>(ns_of_seq(seq)); };
  EXPECT_EQ(block_values, (std::vector<std::pair<std::uint64_t, std::int64_t>>{
                              {t(3), 0}, {t(3), 4 * M}, {t(5), 12 * M}, {t(7), 8 * M}}));
  EXPECT_EQ(device_values,
            (std::vector<std::pair<std::uint64_t, std::int64_t>>{{t(1), 0}, {t(1), 20 * M}}));
  EXPECT_EQ(slices, (std::vector<std::string>{"B step@2 thread", "B forward@4 thread", "E@6 thread",
                                              "B overlap@6 lane", "E@9 thread", "E@11 lane"}));
  EXPECT_EQ(instants, (std::vector<std::string>{
                          "alloc device 20.0 MiB@1 thread", "alloc block 4.0 MiB@3 thread",
                          "alloc block 8.0 MiB@5 thread", "free block 4.0 MiB@7 thread",
                          "checkpoint@8 thread", "OOM: cudaMalloc device 64.0 MiB@10 process"}));
}

TEST_F(ExportTest, PerfettoAnnotationsCarryTheAllocationsNumbers) {
  const Decoded d = decode(perfetto());
  for (const pb::TracePacket& packet : d.events) {
    const pb::TrackEvent& e = packet.track_event();
    if (e.name() != "alloc block 8.0 MiB") continue;
    std::map<std::string, std::string> args;
    for (const pb::DebugAnnotation& a : e.debug_annotations())
      args[a.name()] = a.has_string_value() ? a.string_value() : std::to_string(a.int_value());
    EXPECT_EQ(args, (std::map<std::string, std::string>{{"address", "0x7f0000400000"},
                                                        {"size", std::to_string(8 * M)},
                                                        {"device", "0"},
                                                        {"callsite", "forward (model.py:42)"}}));
    return;
  }
  ADD_FAILURE() << "no alloc block 8.0 MiB instant";
}

// The field numbers on the wire, read without our .proto files: the numbers of Perfetto's
// published schema (google/perfetto protos/perfetto/trace/trace.proto, trace_packet.proto,
// track_event/track_descriptor.proto, track_event.proto), written here by hand.
TEST_F(ExportTest, PerfettoWireFieldsAreUpstreamsNumbers) {
  google::protobuf::UnknownFieldSet trace;
  ASSERT_TRUE(trace.ParseFromString(perfetto()));
  constexpr int kTracePacket = 1;                                    // Trace.packet
  constexpr int kTimestamp = 8, kTrackEvent = 11, kSequenceId = 10;  // TracePacket
  constexpr int kTrackDescriptor = 60;                               // TracePacket
  constexpr int kUuid = 1, kProcess = 3, kCounter = 8;               // TrackDescriptor
  constexpr int kType = 9, kTrackUuid = 11, kCounterValue = 30;      // TrackEvent
  constexpr int kTypeCounter = 4;                                    // TrackEvent.Type
  int descriptors = 0, processes = 0, counter_tracks = 0, counter_events = 0;
  for (int i = 0; i < trace.field_count(); ++i) {
    const google::protobuf::UnknownField& field = trace.field(i);
    ASSERT_EQ(field.number(), kTracePacket);
    google::protobuf::UnknownFieldSet packet;
    ASSERT_TRUE(packet.ParseFromString(field.length_delimited()));
    std::map<int, const google::protobuf::UnknownField*> fields;
    for (int j = 0; j < packet.field_count(); ++j)
      fields[packet.field(j).number()] = &packet.field(j);
    EXPECT_EQ(fields.at(kSequenceId)->varint(), 1u);
    if (fields.contains(kTrackDescriptor)) {
      ++descriptors;
      google::protobuf::UnknownFieldSet track;
      ASSERT_TRUE(track.ParseFromString(fields.at(kTrackDescriptor)->length_delimited()));
      for (int j = 0; j < track.field_count(); ++j) {
        processes += track.field(j).number() == kProcess;
        counter_tracks += track.field(j).number() == kCounter;
        if (track.field(j).number() == kUuid) {
          EXPECT_NE(track.field(j).varint(), 0u);
        }
      }
      continue;
    }
    ASSERT_TRUE(fields.contains(kTrackEvent));
    ASSERT_TRUE(fields.contains(kTimestamp));
    google::protobuf::UnknownFieldSet event;
    ASSERT_TRUE(event.ParseFromString(fields.at(kTrackEvent)->length_delimited()));
    std::map<int, std::uint64_t> numbers;
    for (int j = 0; j < event.field_count(); ++j)
      if (event.field(j).type() == google::protobuf::UnknownField::TYPE_VARINT)
        numbers[event.field(j).number()] = event.field(j).varint();
    EXPECT_TRUE(numbers.contains(kTrackUuid));
    if (numbers.at(kType) == kTypeCounter) {
      ++counter_events;
      EXPECT_TRUE(numbers.contains(kCounterValue));
    }
  }
  // A process, a lane, a thread and two counters; 2 + 4 counter points.
  EXPECT_EQ(descriptors, 5);
  EXPECT_EQ(processes, 1);
  EXPECT_EQ(counter_tracks, 2);
  EXPECT_EQ(counter_events, 6);
}

TEST_F(ExportTest, ChromeJsonHasCountersSlicesAndInstants) {
  std::ostringstream out;
  const analysis::ExportCounts counts = analysis::write_chrome_trace(*trace_, {}, out);
  EXPECT_EQ(counts.instants, 6u);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  EXPECT_EQ(doc["displayTimeUnit"], "ns");
  std::vector<std::pair<double, std::uint64_t>> blocks;
  std::map<std::string, nlohmann::json> by_name;
  std::map<std::int64_t, std::string> thread_names;  // by tid
  for (const nlohmann::json& e : doc["traceEvents"]) {
    EXPECT_EQ(e["pid"], 5000);
    if (e["ph"] == "C" && e["name"] == "device 0 block live bytes")
      blocks.emplace_back(e["ts"].get<double>(), e["args"]["bytes"].get<std::uint64_t>());
    if (e["ph"] != "C")
      by_name[e["name"].get<std::string>() + "/" + e["ph"].get<std::string>()] = e;
    if (e["name"] == "thread_name") thread_names[e["tid"]] = e["args"]["name"];
  }
  EXPECT_EQ(blocks,
            (std::vector<std::pair<double, std::uint64_t>>{
                {1003000.0, 0}, {1003000.0, 4 * M}, {1005000.0, 12 * M}, {1007000.0, 8 * M}}));
  EXPECT_EQ(by_name.at("process_name/M")["args"]["name"], "python3");
  EXPECT_EQ(by_name.at("step/X")["ts"], 1002000.0);
  EXPECT_EQ(by_name.at("step/X")["dur"], 7000.0);
  EXPECT_EQ(by_name.at("step/X")["tid"], 5001);
  EXPECT_EQ(by_name.at("overlap/X")["tid"], analysis::kChromeLaneTidBase + 1);
  EXPECT_EQ(thread_names,
            (std::map<std::int64_t, std::string>{
                {5001, "main"}, {analysis::kChromeLaneTidBase + 1, "ranges (lane 1)"}}));
  EXPECT_EQ(by_name.at("checkpoint/i")["s"], "t");
  const nlohmann::json& oom = by_name.at("OOM: cudaMalloc device 64.0 MiB/i");
  EXPECT_EQ(oom["s"], "p");
  EXPECT_EQ(oom["ts"], 1010000.0);
  EXPECT_EQ(oom["args"]["requested_bytes"], 64 * M);
}

// What the timeline tells a sink, kept.
struct Recorded : analysis::ExportSink {
  void process(const analysis::ExportProcess&) override {}
  void thread(const analysis::ExportThread&) override {}
  void lane(std::int64_t, int) override {}
  void counter(const analysis::ExportCounter& counter) override { counters.push_back(counter); }
  void counter_point(const analysis::ExportCounter& counter, std::int64_t ns,
                     std::uint64_t bytes) override {
    points.push_back(counter.kind + " " + std::to_string(bytes / M) + "M @" +
                     std::to_string((ns - ns_of_seq(0)) / 1'000'000));
  }
  void slice(const analysis::ExportSlice&) override {}
  void instant(const analysis::ExportInstant& instant) override {
    instants.push_back(instant.name);
  }
  std::vector<analysis::ExportCounter> counters;
  std::vector<std::string> points, instants;
};

TEST_F(ExportTest, FiltersAndLevelNarrowTheTimeline) {
  analysis::ExportOptions options;
  options.level = analysis::MemoryLevel::kSegment;
  options.allocation_instants = false;
  Recorded segment;
  analysis::export_timeline(*trace_, options, segment);
  ASSERT_EQ(segment.counters.size(), 1u);
  EXPECT_EQ(segment.counters[0].kind, "device");
  EXPECT_EQ(segment.instants,
            (std::vector<std::string>{"OOM: cudaMalloc device 64.0 MiB", "checkpoint"}));
  options = {};
  options.allocations.kind = kind::kBlock;
  Recorded blocks;
  analysis::export_timeline(*trace_, options, blocks);
  ASSERT_EQ(blocks.counters.size(), 1u);
  EXPECT_EQ(blocks.counters[0].kind, "block");
}

// A counter moves in its process's sequence order whatever order the allocations' frees come
// in: the free of seq 3's block (at seq 7) waits until after seq 5's allocation.
TEST_F(ExportTest, CounterPointsFollowTheProcesssSequence) {
  Recorded all;
  analysis::export_timeline(*trace_, {}, all);
  EXPECT_EQ(all.points, (std::vector<std::string>{"device 0M @1", "device 20M @1", "block 0M @3",
                                                  "block 4M @3", "block 12M @5", "block 8M @7"}));
}

}  // namespace
}  // namespace vramtrace
