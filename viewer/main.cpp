// vramtrace-gui [FILE]: the Qt viewer (docs/viewer.md).
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "viewer/widgets/main_window.h"
#include "viewer/widgets/timeline_widget.h"

namespace {

// --screenshot: the window as it stands, to a PNG file (none: nothing). Returns the exit status.
int save_window(vramtrace::viewer::MainWindow& window, const QString& png) {
  window.repaint();
  if (!png.isEmpty() && !window.grab().save(png)) {
    std::fprintf(stderr, "vramtrace-gui: cannot write %s\n", qPrintable(png));
    return 1;
  }
  return 0;
}

// --time-first-picture: what docs/performance.md reports. Returns the exit status.
int report_first_picture(vramtrace::viewer::MainWindow& window, const QElapsedTimer& since_start,
                         const QString& screenshot) {
  window.repaint();  // painted now, not at the next turn of the loop
  std::fprintf(stderr, "vramtrace-gui: first picture after %lld ms\n",
               static_cast<long long>(since_start.elapsed()));
  // What panning and zooming cost: a repaint of the timeline alone.
  constexpr int kRepaints = 20;
  QElapsedTimer painting;
  painting.start();
  for (int i = 0; i < kRepaints; ++i) window.timeline()->repaint();
  std::fprintf(stderr, "vramtrace-gui: a repaint of the timeline takes %.1f ms\n",
               static_cast<double>(painting.nsecsElapsed()) / 1e6 / kRepaints);
  // Where it opened (docs/viewer.md, "The timeline"), in the trace's own nanoseconds.
  const vramtrace::viewer::TimeAxis& axis = window.timeline()->axis();
  std::fprintf(stderr, "vramtrace-gui: opened at the %s level, showing %lld to %lld ns\n",
               window.timeline()->level().c_str(), static_cast<long long>(axis.visible_start_ns()),
               static_cast<long long>(axis.visible_end_ns()));
  return save_window(window, screenshot);
}

}  // namespace

int main(int argc, char** argv) {
  QCoreApplication::setApplicationName(QStringLiteral("vramtrace-gui"));
  QCoreApplication::setApplicationVersion(QStringLiteral(VRAMTRACE_VERSION));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "The vramtrace viewer: live GPU memory over time, the leaks and their stacks as a tree and "
      "a flame graph, the caching allocator's fragmentation map, and the trace's summary. A "
      "trace that `vramtrace run` is still writing is followed as it grows."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("FILE"),
                               QStringLiteral("the trace to open (vramtrace run -o FILE)"),
                               QStringLiteral("[FILE]"));
  const QCommandLineOption first_picture(
      QStringLiteral("time-first-picture"),
      QStringLiteral("open FILE, print on stderr how long the first picture of its timeline took "
                     "(from the start of the program to the timeline painted) and how long a "
                     "repaint of the timeline takes, and exit: how docs/performance.md measures "
                     "the viewer"));
  parser.addOption(first_picture);
  const QCommandLineOption screenshot(
      QStringLiteral("screenshot"),
      QStringLiteral("open FILE, save the window to PNG once every view is filled, and exit (how "
                     "docs/viewer.md's pictures are taken); with --time-first-picture, the first "
                     "picture instead"),
      QStringLiteral("PNG"));
  parser.addOption(screenshot);
  // Answered before the window system is asked for: they need no display (QApplication aborts
  // without one). The rest is parsed once QApplication has taken its own options (-platform).
  for (int i = 1; i < argc; ++i) {
    const std::string_view word = argv[i];
    if (word == "--") break;
    if (word == "-h" || word == "--help" || word == "-?") {
      std::fputs(qPrintable(parser.helpText().replace(QStringLiteral("<executable_name>"),
                                                      QStringLiteral("vramtrace-gui"))),
                 stdout);
      return 0;
    }
    if (word == "-v" || word == "--version") {
      std::printf("vramtrace-gui %s\n", VRAMTRACE_VERSION);
      return 0;
    }
  }
  QApplication app(argc, argv);
  parser.process(app);
  QElapsedTimer since_start;
  since_start.start();

  vramtrace::viewer::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty()) {
    window.open_trace(parser.positionalArguments().front());
    using vramtrace::viewer::TraceController;
    if (parser.isSet(first_picture)) {
      QObject::connect(&window.controller(), &TraceController::overview_ready, &window, [&] {
        QApplication::exit(report_first_picture(window, since_start, parser.value(screenshot)));
      });
    } else if (parser.isSet(screenshot)) {
      QObject::connect(&window.controller(), &TraceController::loaded, &window,
                       [&] { QApplication::exit(save_window(window, parser.value(screenshot))); });
    }
    if (parser.isSet(first_picture) || parser.isSet(screenshot)) {
      QObject::connect(&window.controller(), &TraceController::open_failed, &window,
                       [](const QString&, const QString& message) {
                         std::fprintf(stderr, "vramtrace-gui: %s\n", qPrintable(message));
                         QApplication::exit(1);
                       });
    }
  }
  const int status = QApplication::exec();
  // Leave without waiting for a query still running (the summary reads every allocation: 30 s
  // on ten million allocations). The viewer only reads traces; building the time index into
  // one is a single SQLite transaction, which SQLite rolls back if it is cut short.
  std::fflush(nullptr);
  std::_Exit(status);
}
