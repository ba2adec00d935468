#include "analysis/export/chrome_export.h"

#include <map>
#include <nlohmann/json.hpp>

#include "analysis/export/perfetto_export.h"

namespace vramtrace::analysis {
namespace {

using Json = nlohmann::ordered_json;

double microseconds(std::int64_t ns) {
  return static_cast<double>(ns) / 1000.0;
}

Json args_json(const std::vector<ExportArg>& args) {
  Json object = Json::object();
  for (const ExportArg& arg : args) {
    if (const auto* number = std::get_if<std::int64_t>(&arg.value))
      object[arg.name] = *number;
    else
      object[arg.name] = std::get<std::string>(arg.value);
  }
  return object;
}

// Writes the events one by one, comma-separated, inside the traceEvents array.
class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {
    out_ << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  }
  ~EventStream() { out_ << "\n]}\n"; }
  EventStream(const EventStream&) = delete;
  EventStream& operator=(const EventStream&) = delete;
  void write(const Json& event) {
    out_ << (first_ ? "\n" : ",\n") << event.dump(-1, ' ', false, Json::error_handler_t::replace);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

}  // namespace

void write_chrome_trace(const ExportTimeline& timeline, std::ostream& out) {
  EventStream stream(out);
  std::map<std::int64_t, std::uint32_t> pids;
  std::map<std::int64_t, std::uint32_t> tids;
  for (const ExportProcess& process : timeline.processes) {
    const std::uint32_t pid = pids[process.upid] = export_pid(timeline, process);
    stream.write({{"ph", "M"},
                  {"name", "process_name"},
                  {"pid", pid},
                  {"tid", 0},
                  {"args", {{"name", process.name}}}});
    for (int lane = 1; lane <= process.lanes; ++lane) {
      stream.write({{"ph", "M"},
                    {"name", "thread_name"},
                    {"pid", pid},
                    {"tid", kChromeLaneTidBase + lane},
                    {"args", {{"name", "ranges (lane " + std::to_string(lane) + ")"}}}});
    }
  }
  for (const ExportThread& thread : timeline.threads) {
    tids[thread.utid] = thread.tid;
    if (thread.name.empty()) continue;
    stream.write({{"ph", "M"},
                  {"name", "thread_name"},
                  {"pid", pids.at(thread.upid)},
                  {"tid", thread.tid},
                  {"args", {{"name", thread.name}}}});
  }
  const auto tid_of = [&](const ExportPlace& where) -> std::int64_t {
    if (where.utid) return tids.at(*where.utid);
    if (where.lane > 0) return kChromeLaneTidBase + where.lane;
    return 0;
  };
  for (const ExportCounter& counter : timeline.counters) {
    for (const CounterPoint& point : counter.points) {
      stream.write({{"ph", "C"},
                    {"name", counter.name},
                    {"pid", pids.at(counter.upid)},
                    {"tid", 0},
                    {"ts", microseconds(point.ns)},
                    {"args", {{"bytes", point.bytes}}}});
    }
  }
  for (const ExportSlice& s : timeline.slices) {
    stream.write({{"ph", "X"},
                  {"name", s.name},
                  {"cat", s.category},
                  {"pid", pids.at(s.place.upid)},
                  {"tid", tid_of(s.place)},
                  {"ts", microseconds(s.start_ns)},
                  {"dur", microseconds(s.end_ns - s.start_ns)},
                  {"args", args_json(s.args)}});
  }
  for (const ExportInstant& i : timeline.instants) {
    stream.write({{"ph", "i"},
                  {"name", i.name},
                  {"cat", i.category},
                  {"s", i.place.utid ? "t" : "p"},
                  {"pid", pids.at(i.place.upid)},
                  {"tid", tid_of(i.place)},
                  {"ts", microseconds(i.ns)},
                  {"args", args_json(i.args)}});
  }
}

}  // namespace vramtrace::analysis
