#include "analysis/export/chrome_export.h"

#include <map>
#include <nlohmann/json.hpp>

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

// Each event is written as it comes: the format wants no order (its viewers sort).
class ChromeSink : public ExportSink {
 public:
  explicit ChromeSink(std::ostream& out) : stream_(out) {}

  void process(const ExportProcess& process) override {
    pids_[process.upid] = process.shown_pid;
    stream_.write({{"ph", "M"},
                   {"name", "process_name"},
                   {"pid", process.shown_pid},
                   {"tid", 0},
                   {"args", {{"name", process.name}}}});
  }

  void thread(const ExportThread& thread) override {
    tids_[thread.utid] = thread.tid;
    if (thread.name.empty()) return;
    stream_.write({{"ph", "M"},
                   {"name", "thread_name"},
                   {"pid", pids_.at(thread.upid)},
                   {"tid", thread.tid},
                   {"args", {{"name", thread.name}}}});
  }

  void lane(std::int64_t upid, int lane) override {
    stream_.write({{"ph", "M"},
                   {"name", "thread_name"},
                   {"pid", pids_.at(upid)},
                   {"tid", kChromeLaneTidBase + lane},
                   {"args", {{"name", "ranges (lane " + std::to_string(lane) + ")"}}}});
  }

  void counter(const ExportCounter&) override {}

  void counter_point(const ExportCounter& counter, std::int64_t ns, std::uint64_t bytes) override {
    stream_.write({{"ph", "C"},
                   {"name", counter.name},
                   {"pid", pids_.at(counter.upid)},
                   {"tid", 0},
                   {"ts", microseconds(ns)},
                   {"args", {{"bytes", bytes}}}});
  }

  void slice(const ExportSlice& s) override {
    stream_.write({{"ph", "X"},
                   {"name", s.name},
                   {"cat", s.category},
                   {"pid", pids_.at(s.place.upid)},
                   {"tid", tid_of(s.place)},
                   {"ts", microseconds(s.start_ns)},
                   {"dur", microseconds(s.end_ns - s.start_ns)},
                   {"args", args_json(s.args)}});
  }

  void instant(const ExportInstant& i) override {
    stream_.write({{"ph", "i"},
                   {"name", i.name},
                   {"cat", i.category},
                   {"s", i.place.utid ? "t" : "p"},
                   {"pid", pids_.at(i.place.upid)},
                   {"tid", tid_of(i.place)},
                   {"ts", microseconds(i.ns)},
                   {"args", args_json(i.args)}});
  }

 private:
  std::int64_t tid_of(const ExportPlace& where) const {
    if (where.utid) return tids_.at(*where.utid);
    if (where.lane > 0) return kChromeLaneTidBase + where.lane;
    return 0;
  }

  EventStream stream_;
  std::map<std::int64_t, std::uint32_t> pids_, tids_;
};

}  // namespace

ExportCounts write_chrome_trace(const storage::TraceReader& trace, const ExportOptions& options,
                                std::ostream& out) {
  ChromeSink sink(out);
  return export_timeline(trace, options, sink);
}

}  // namespace vramtrace::analysis
