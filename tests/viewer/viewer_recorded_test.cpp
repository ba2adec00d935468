// The viewer on a trace that `vramtrace run` records (samples/torch_like on the simulated GPU:
// tensors in a caching allocator's segments, a planted leak, an out-of-memory failure), against
// what the `vramtrace` commands print for the same questions: the viewer is a face of analysis/,
// so its numbers must be the CLI's. Saves a screenshot of the window on that trace.
#include <QApplication>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>

#include "viewer/widgets/callsite_panel.h"
#include "viewer/widgets/main_window.h"

namespace vramtrace::viewer {
namespace {

// Runs `vramtrace ARGS...`; its standard output, or empty (with a failure noted) when it failed.
QByteArray run_vramtrace(const QStringList& args) {
  QProcess process;
  process.start(QStringLiteral(VRAMTRACE_BINARY), args);
  if (!process.waitForFinished(60000) || process.exitStatus() != QProcess::NormalExit ||
      process.exitCode() != 0) {
    qWarning("vramtrace %s failed: %s", qPrintable(args.join(' ')),
             process.readAllStandardError().constData());
    return {};
  }
  return process.readAllStandardOutput();
}

QJsonObject report(const QStringList& args) {
  return QJsonDocument::fromJson(run_vramtrace(args)).object();
}

}  // namespace

class RecordedTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    trace_ = dir_.filePath(QStringLiteral("torch_like.db"));
    QProcess record;
    record.start(QStringLiteral(VRAMTRACE_BINARY),
                 {QStringLiteral("run"), QStringLiteral("-o"), trace_, QStringLiteral("--"),
                  QStringLiteral(TORCH_LIKE_BIN)});
    QVERIFY(record.waitForFinished(60000));
    QVERIFY2(record.exitCode() == 0, record.readAllStandardError().constData());
  }

  void every_view_shows_the_numbers_the_cli_prints() {
    MainWindow window;
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QSignalSpy loaded(&window.controller(), &TraceController::loaded);
    window.open_trace(trace_);
    QVERIFY(loaded.wait(30000));
    TraceController& controller = window.controller();

    // The leak tree: `vramtrace leaks`.
    const QJsonObject leaks = report(
        {QStringLiteral("leaks"), trace_, QStringLiteral("--format"), QStringLiteral("json")});
    QVERIFY(leaks.contains(QStringLiteral("total_bytes")));
    QCOMPARE(controller.leaks()->total_bytes,
             static_cast<std::uint64_t>(leaks[QStringLiteral("total_bytes")].toInteger()));
    QCOMPARE(controller.leaks()->total_count,
             static_cast<std::uint64_t>(leaks[QStringLiteral("total_count")].toInteger()));
    QCOMPARE(QString::fromStdString(controller.leaks()->level),
             leaks[QStringLiteral("level")].toString());
    QVERIFY(controller.leaks()->total_count > 0);  // the sample's planted leak
    QCOMPARE(window.leaks()->model().total_bytes(), controller.leaks()->total_bytes);

    // The OOM flags: `vramtrace oom`.
    const QJsonObject ooms =
        report({QStringLiteral("oom"), trace_, QStringLiteral("--format"), QStringLiteral("json")});
    QVERIFY(!ooms[QStringLiteral("ooms")].toArray().isEmpty());
    QCOMPARE(static_cast<qsizetype>(controller.ooms()->size()),
             ooms[QStringLiteral("ooms")].toArray().size());

    // The fragmentation map at the peak, then at the first OOM: `vramtrace frag --at`.
    for (const char* moment : {"peak", "oom"}) {
      if (std::string(moment) == "oom") {
        QSignalSpy map(&controller, &TraceController::fragmentation_ready);
        controller.show_fragmentation_at(analysis::parse_moment(moment));
        QVERIFY(map.wait(10000));
      }
      const QJsonObject frag =
          report({QStringLiteral("frag"), trace_, QStringLiteral("--at"),
                  QString::fromLatin1(moment), QStringLiteral("--format"), QStringLiteral("json")});
      const analysis::FragmentationReport& shown = *controller.fragmentation();
      QCOMPARE(shown.at.seq,
               static_cast<std::uint64_t>(
                   frag[QStringLiteral("at")].toObject()[QStringLiteral("seq")].toInteger()));
      QCOMPARE(static_cast<qsizetype>(shown.layout.segments.size()),
               frag[QStringLiteral("segments")].toArray().size());
      QCOMPARE(shown.layout.total_free,
               static_cast<std::uint64_t>(frag[QStringLiteral("total_free")].toInteger()));
      QCOMPARE(shown.layout.largest_free,
               static_cast<std::uint64_t>(frag[QStringLiteral("largest_free")].toInteger()));
      QCOMPARE(shown.layout.largest_request,
               static_cast<std::uint64_t>(frag[QStringLiteral("largest_request")].toInteger()));
    }

    // The summary: `vramtrace summary`'s peaks.
    const QJsonObject summary = report(
        {QStringLiteral("summary"), trace_, QStringLiteral("--format"), QStringLiteral("json")});
    const QJsonArray peaks = summary[QStringLiteral("peaks")].toArray();
    QCOMPARE(static_cast<qsizetype>(controller.summary()->peaks.size()), peaks.size());
    QVERIFY(!peaks.isEmpty());
    QCOMPARE(
        controller.summary()->peaks.front().bytes,
        static_cast<std::uint64_t>(peaks.first().toObject()[QStringLiteral("bytes")].toInteger()));

    window.tabs()->setCurrentIndex(2);
    QDir().mkpath(QStringLiteral(VRAMTRACE_SCREENSHOT_DIR));
    QVERIFY(window.grab().save(QStringLiteral(VRAMTRACE_SCREENSHOT_DIR "/viewer_torch_like.png")));
  }

 private:
  QTemporaryDir dir_;
  QString trace_;
};

}  // namespace vramtrace::viewer

QTEST_MAIN(vramtrace::viewer::RecordedTest)
#include "viewer_recorded_test.moc"
