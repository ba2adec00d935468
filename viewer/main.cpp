// vramtrace-gui [FILE]: the Qt viewer (docs/viewer.md).
#include <QApplication>
#include <QCommandLineParser>

#include "viewer/widgets/main_window.h"

int main(int argc, char** argv) {
  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("vramtrace-gui"));
  QApplication::setApplicationVersion(QStringLiteral(VRAMTRACE_VERSION));

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
  parser.process(app);

  vramtrace::viewer::MainWindow window;
  window.show();
  if (!parser.positionalArguments().isEmpty())
    window.open_trace(parser.positionalArguments().front());
  return QApplication::exec();
}
