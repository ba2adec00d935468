// vramtrace_viewer_stage_times TRACE: when each of the viewer's answers arrives, driving its
// TraceController as the window does: open the trace; at the first picture, select 2% of the
// trace in its middle and hover at a third of it; then wait for every stage. Prints the time of
// each answer since the open (docs/performance.md, "The viewer's first picture").
#include <QCoreApplication>
#include <QElapsedTimer>
#include <cstdio>

#include "viewer/model/trace_controller.h"

int main(int argc, char** argv) {
  QCoreApplication app(argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: vramtrace_viewer_stage_times TRACE\n");
    return 2;
  }
  using vramtrace::viewer::TimeRange;
  using vramtrace::viewer::TraceController;
  TraceController controller;
  QElapsedTimer since_open;
  const auto print = [&](const char* what) {
    std::printf("%-14s %8.3f s\n", what, static_cast<double>(since_open.elapsed()) / 1e3);
    std::fflush(stdout);
  };
  bool asked = false;
  QObject::connect(&controller, &TraceController::overview_ready, [&] {
    print("first picture");
    if (asked) return;
    asked = true;
    const auto& timeline = controller.overview()->timeline;
    const std::int64_t span = timeline.end_ns - timeline.start_ns;
    const std::int64_t middle = timeline.start_ns + span / 2;
    controller.select_range(TimeRange{middle, middle + span / 50});
    controller.ask_live_at(timeline.start_ns + span / 3);
  });
  QObject::connect(&controller, &TraceController::live_at_ready, [&] { print("hover"); });
  QObject::connect(&controller, &TraceController::leaks_ready, [&] {
    if (controller.range()) print("range's leaks");
  });
  QObject::connect(&controller, &TraceController::fragmentation_ready, [&] { print("map"); });
  QObject::connect(&controller, &TraceController::ooms_ready, [&] { print("OOM flags"); });
  QObject::connect(&controller, &TraceController::summary_ready, [&] { print("summary"); });
  QObject::connect(&controller, &TraceController::loaded, [&] { QCoreApplication::exit(0); });
  QObject::connect(&controller, &TraceController::open_failed,
                   [&](const QString&, const QString& message) {
                     std::fprintf(stderr, "%s\n", qPrintable(message));
                     QCoreApplication::exit(1);
                   });
  since_open.start();
  controller.open(QString::fromLocal8Bit(argv[1]));
  return QCoreApplication::exec();
}
