// vramtrace_timeline_window_times TRACE [COLUMNS]: what the viewer's exact zoomed timeline
// (analysis::build_timeline_window) costs on a large trace. For windows in the trace's middle
// 1, 16, 256 and 2 * COLUMNS of the time index's buckets wide (the last is where the viewer
// switches to exact series, exact_zoom.h), over COLUMNS pixel columns (1000 unless given),
// prints the events read and the seconds taken (docs/performance.md).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "analysis/time/moment.h"
#include "analysis/time/report_time_index.h"
#include "analysis/time/timeline_window.h"
#include "storage/live_bytes_rollups.h"

int main(int argc, char** argv) {
  using namespace vramtrace;
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: vramtrace_timeline_window_times TRACE [COLUMNS]\n");
    return 2;
  }
  const std::int64_t columns = argc == 3 ? std::atoll(argv[2]) : 1000;
  storage::OpenFailure failure;
  const auto trace = storage::TraceReader::open(argv[1], &failure);
  if (!trace) {
    std::fprintf(stderr, "%s\n", failure.message.c_str());
    return 1;
  }
  const auto index = analysis::open_time_index(*trace);
  const analysis::Timeline whole =
      analysis::build_timeline(*trace, *index, analysis::kMaxTimelineBuckets, std::nullopt);
  const std::int64_t span = whole.end_ns - whole.start_ns + 1;
  const std::int64_t middle = whole.start_ns + span / 2;
  std::printf("%10s %12s %6s %9s\n", "buckets", "events", "exact", "seconds");
  for (const std::int64_t buckets :
       {std::int64_t{1}, std::int64_t{16}, std::int64_t{256}, 2 * columns}) {
    const std::int64_t width = span * buckets / storage::kLiveBytesBuckets;
    std::vector<std::int64_t> edges;
    for (std::int64_t c = 0; c <= columns; ++c) edges.push_back(middle + width * c / columns);
    const auto started = std::chrono::steady_clock::now();
    const analysis::TimelineWindow window = analysis::build_timeline_window(*index, whole, edges);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::printf("%10lld %12llu %6s %9.3f\n", static_cast<long long>(buckets),
                static_cast<unsigned long long>(window.events), window.exact ? "yes" : "no",
                seconds);
  }
  return 0;
}
