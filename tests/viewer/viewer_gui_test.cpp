// The viewer's window, headless (QT_QPA_PLATFORM=offscreen), driven as a person drives it: open
// the sample trace, zoom with the wheel, pan by dragging, Shift+drag a range, and check that the
// leak tree, the flame graph and the fragmentation map follow with analysis/'s numbers. Each
// test saves a screenshot of the window under the build directory (VRAMTRACE_SCREENSHOT_DIR);
// docs/viewer.md shows them.
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QFont>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QSignalSpy>
#include <QSlider>
#include <QTabWidget>
#include <QTreeView>
#include <QtTest>
#include <fstream>

#include "allocator_trace.h"
#include "burst_trace.h"
#include "python_trace.h"
#include "role_trace.h"
#include "shell_trace.h"
#include "synthetic_trace.h"
#include "temp_dir.h"
#include "viewer/model/marker_layout.h"
#include "viewer/widgets/callsite_panel.h"
#include "viewer/widgets/flame_graph_widget.h"
#include "viewer/widgets/fragmentation_view.h"
#include "viewer/widgets/main_window.h"
#include "viewer/widgets/segment_map_widget.h"
#include "viewer/widgets/timeline_widget.h"

namespace vramtrace::viewer {
namespace {

constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::int64_t kMs = 1'000'000;

std::int64_t at_seq(std::uint64_t seq) {
  return testing::kAllocatorTraceStartNs + static_cast<std::int64_t>(seq) * kMs;
}

// Where `ns` is drawn on the timeline, in its widget's coordinates.
QPoint point_of(const TimelineWidget& timeline, std::int64_t ns) {
  const QRect plot = timeline.plot_rect();
  return {plot.left() + static_cast<int>(std::lround(timeline.axis().x_of(ns))), plot.center().y()};
}

void send_mouse(QWidget* widget, QEvent::Type type, QPoint at, Qt::MouseButton button,
                Qt::MouseButtons buttons, Qt::KeyboardModifiers modifiers = Qt::NoModifier) {
  QMouseEvent event(type, QPointF(at), QPointF(widget->mapToGlobal(at)), button, buttons,
                    modifiers);
  QApplication::sendEvent(widget, &event);
}

void drag(QWidget* widget, QPoint from, QPoint to, Qt::KeyboardModifiers modifiers) {
  send_mouse(widget, QEvent::MouseButtonPress, from, Qt::LeftButton, Qt::LeftButton, modifiers);
  send_mouse(widget, QEvent::MouseMove, (from + to) / 2, Qt::NoButton, Qt::LeftButton, modifiers);
  send_mouse(widget, QEvent::MouseMove, to, Qt::NoButton, Qt::LeftButton, modifiers);
  send_mouse(widget, QEvent::MouseButtonRelease, to, Qt::LeftButton, Qt::NoButton, modifiers);
}

bool save_screenshot(QWidget* widget, const QString& name) {
  QDir().mkpath(QStringLiteral(VRAMTRACE_SCREENSHOT_DIR));
  // Written aside and renamed, so that a reader never sees half a picture.
  QSaveFile file(QStringLiteral(VRAMTRACE_SCREENSHOT_DIR "/%1.png").arg(name));
  return file.open(QIODevice::WriteOnly) && widget->grab().save(&file, "PNG") && file.commit();
}

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase() {
    allocator_ = dir_ / "allocator.db";
    QCOMPARE(QString::fromStdString(testing::write_allocator_trace(allocator_)), QString());
  }

  void init() {
    window_ = std::make_unique<MainWindow>();
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
  }

  void cleanup() { window_.reset(); }

  void zoom_pan_and_a_range_drive_every_view() {
    open(allocator_);
    TimelineWidget* timeline = window_->timeline();
    QVERIFY(!timeline->stacked().empty());
    const std::int64_t whole =
        timeline->axis().visible_end_ns() - timeline->axis().visible_start_ns();

    // Wheel: zoom in at the plot's centre.
    const QPoint centre = timeline->plot_rect().center();
    QWheelEvent wheel(QPointF(centre), QPointF(timeline->mapToGlobal(centre)), QPoint(),
                      QPoint(0, 480), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
    QApplication::sendEvent(timeline, &wheel);
    const std::int64_t zoomed =
        timeline->axis().visible_end_ns() - timeline->axis().visible_start_ns();
    QVERIFY2(zoomed * 1.5 < whole, "the wheel did not zoom in");
    // Drag: pan to later times (the view moves left under the mouse).
    const std::int64_t start = timeline->axis().visible_start_ns();
    drag(timeline, centre, centre - QPoint(100, 0), Qt::NoModifier);
    QVERIFY(timeline->axis().visible_start_ns() > start);
    QVERIFY(!timeline->selection());  // a plain drag never selects
    // Double click: the whole trace again.
    QTest::mouseDClick(timeline, Qt::LeftButton, Qt::NoModifier, centre);
    QVERIFY(timeline->axis().shows_whole_trace());

    // Shift+drag from between events 1 and 2 to between events 5 and 6 of upid 1.
    QSignalSpy leaks(&window_->controller(), &TraceController::leaks_ready);
    QSignalSpy map(&window_->controller(), &TraceController::fragmentation_ready);
    drag(timeline, point_of(*timeline, at_seq(1) + kMs / 2),
         point_of(*timeline, at_seq(5) + kMs / 2), Qt::ShiftModifier);
    QVERIFY(timeline->selection());
    QVERIFY(leaks.wait(10000));
    QTRY_VERIFY_WITH_TIMEOUT(map.count() > 0, 10000);

    // The leak tree: allocated in the range and live at its end (B1, B2, B3), as
    // `vramtrace leaks --between` says.
    const CallsiteTreeModel& tree = window_->leaks()->model();
    QCOMPARE(tree.total_bytes(), kMiB / 2 + kMiB + kMiB / 4);
    QCOMPARE(tree.total_bytes(), window_->controller().leaks()->total_bytes);
    // The flame graph shows the same selection.
    QVERIFY(!window_->flame_graph()->boxes().empty());
    std::uint64_t flame_bytes = 0;
    for (const FlameBox& box : window_->flame_graph()->boxes())
      if (box.depth == 0) flame_bytes += box.node->bytes;
    QCOMPARE(flame_bytes, tree.total_bytes());
    // The fragmentation map moved to the range's end: after event 5, S1 alone, three blocks used.
    const auto report = window_->fragmentation()->report();
    QCOMPARE(report->at.seq, std::uint64_t{5});
    QCOMPARE(window_->fragmentation()->map().geometry().bars().size(), std::size_t{1});
    QCOMPARE(report->layout.used_bytes, kMiB / 2 + kMiB + kMiB / 4);

    // The stack panel: the tree opens bottom-up, so its first leaf is backward > train_step >
    // main (B2, 1 MiB, the range's largest site), whose stack reads innermost first.
    QCOMPARE(tree.data(tree.index(0, 0)).toString(), QStringLiteral("backward (train.py:8)"));
    // Its frames are native (named like Python's, but not Python frames): no Python line column.
    QVERIFY(window_->leaks()->tree()->isColumnHidden(CallsiteTreeModel::kPythonLine));
    const auto first_leaf = [&tree] {
      QModelIndex leaf = tree.index(0, 0);
      while (tree.rowCount(leaf) > 0) leaf = tree.index(0, 0, leaf);
      return leaf;
    };
    window_->leaks()->tree()->setCurrentIndex(first_leaf());
    QVERIFY(window_->leaks()->stack_text().startsWith(QStringLiteral("#0 backward (train.py:8)")));
    QVERIFY(window_->leaks()->stack_text().contains(QStringLiteral("#2 main (train.py:1)")));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_range_leaks")));
    // Top-down (the direction box), the first leaf is main > train_step > backward: the same
    // stack, still read innermost first.
    window_->leaks()->findChildren<QComboBox*>().back()->setCurrentIndex(0);
    QCOMPARE(window_->leaks()->direction(), analysis::TreeDirection::kTopDown);
    QCOMPARE(tree.data(tree.index(0, 0)).toString(), QStringLiteral("main (train.py:1)"));
    window_->leaks()->tree()->setCurrentIndex(first_leaf());
    QVERIFY(window_->leaks()->stack_text().startsWith(QStringLiteral("#0 backward (train.py:8)")));
    QVERIFY(window_->leaks()->stack_text().contains(QStringLiteral("#2 main (train.py:1)")));

    window_->tabs()->setCurrentIndex(1);
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_flame_graph")));
    window_->tabs()->setCurrentIndex(2);
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_fragmentation")));

    // A click without a drag clears the range: the whole trace's leaks again.
    send_mouse(timeline, QEvent::MouseButtonPress, centre, Qt::LeftButton, Qt::LeftButton,
               Qt::ShiftModifier);
    send_mouse(timeline, QEvent::MouseButtonRelease, centre, Qt::LeftButton, Qt::NoButton,
               Qt::ShiftModifier);
    QVERIFY(!timeline->selection());
    QVERIFY(leaks.wait(10000));
    QCOMPARE(window_->leaks()->model().total_bytes(),
             window_->controller().leaks_at_end()->total_bytes);
  }

  void the_slider_and_the_peak_button_move_the_map_and_the_timeline_cursor() {
    open(allocator_);
    window_->tabs()->setCurrentIndex(2);
    FragmentationView* view = window_->fragmentation();
    QCOMPARE(view->report()->at.seq, std::uint64_t{8});  // the peak (B4 in S2), first
    QSignalSpy map(&window_->controller(), &TraceController::fragmentation_ready);
    // To the time of event 12 (R1 outside the allocator; S2 freed at 11): S1 alone.
    const auto& timeline = window_->controller().overview()->timeline;
    const int value =
        static_cast<int>((at_seq(12) + kMs / 2 - timeline.start_ns) *
                         FragmentationView::kSliderSteps / (timeline.end_ns - timeline.start_ns));
    view->slider()->setValue(value);
    QVERIFY(map.wait(10000));
    QCOMPARE(view->report()->at.seq, std::uint64_t{12});
    QCOMPARE(view->map().geometry().bars().size(), std::size_t{1});
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_fragmentation_slider")));

    QTest::mouseClick(view->findChildren<QPushButton*>().front(), Qt::LeftButton);  // Peak
    QVERIFY(map.wait(10000));
    QCOMPARE(view->report()->at.seq, std::uint64_t{8});
    QCOMPARE(view->map().geometry().bars().size(), std::size_t{2});
  }

  // The level box's "role" stacks role_trace.h's process by role: a legend line per role, and
  // the hover gives each role's bytes then.
  void the_timeline_stacks_a_process_by_role() {
    const auto path = dir_ / "roles.db";
    QCOMPARE(QString::fromStdString(testing::write_role_trace(path)), QString());
    open(path);
    QComboBox* levels = window_->level_box();
    QVERIFY(levels->findText(QStringLiteral("role")) >= 0);
    TimelineWidget* timeline = window_->timeline();
    QSignalSpy roles(&window_->controller(), &TraceController::roles_ready);
    levels->setCurrentText(QStringLiteral("role"));
    QVERIFY(roles.wait(10000));
    QVERIFY(timeline->by_role());
    const QStringList legend = timeline->legend_text();
    QCOMPARE(legend, (QStringList{QStringLiteral("pid 4000 device 0 parameter, peak 1.0 MiB"),
                                  QStringLiteral("pid 4000 device 0 gradient, peak 1.0 MiB"),
                                  QStringLiteral("pid 4000 device 0 optimizer_state, peak 2.0 MiB"),
                                  QStringLiteral("pid 4000 device 0 activation, peak 8.0 MiB"),
                                  QStringLiteral("pid 4000 device 0 temporary, peak 4.0 MiB")}));
    send_mouse(timeline, QEvent::MouseMove, point_of(*timeline, testing::ns_of_seq(8) + kMs / 2),
               Qt::NoButton, Qt::NoButton);
    const QStringList box = timeline->hover_text();
    for (const char* line :
         {"device 0 parameter: 1.0 MiB", "device 0 activation: 8.0 MiB",
          "device 0 gradient: 1.0 MiB", "device 0 optimizer_state: 0 B", "total: 12.0 MiB"})
      QVERIFY2(box.contains(QString::fromLatin1(line)), qPrintable(box.join('|')));
    // In forward, left of the legend for the picture: the forward's temporary is live.
    send_mouse(timeline, QEvent::MouseMove, point_of(*timeline, testing::ns_of_seq(4) + kMs / 2),
               Qt::NoButton, Qt::NoButton);
    QVERIFY2(timeline->hover_text().contains(QStringLiteral("device 0 temporary: 4.0 MiB")),
             qPrintable(timeline->hover_text().join('|')));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_roles")));
    // Back to the block level: the kinds' legend again.
    levels->setCurrentText(QStringLiteral("block"));
    QVERIFY(!timeline->by_role());
    QVERIFY(!timeline->legend_text().join('|').contains(QStringLiteral("parameter")));
  }

  void hovering_the_timeline_shows_the_callsites_live_then() {
    open(allocator_);
    TimelineWidget* timeline = window_->timeline();
    // A trace with a caching allocator opens on its blocks; the segments are a choice away.
    QCOMPARE(window_->level_box()->currentText(), QStringLiteral("block"));
    QCOMPARE(timeline->level(), std::string("block"));
    window_->level_box()->setCurrentText(QStringLiteral("segment"));
    QCOMPARE(timeline->level(), std::string("segment"));
    QSignalSpy live(&window_->controller(), &TraceController::live_at_ready);
    send_mouse(timeline, QEvent::MouseMove, point_of(*timeline, at_seq(8) + kMs / 2), Qt::NoButton,
               Qt::NoButton);
    QVERIFY(live.wait(10000));
    QVERIFY(!window_->controller().live_groups()->empty());
    window_->tabs()->setCurrentIndex(3);  // the layout may move; the box stays on its time
    const QStringList box = timeline->hover_text();
    QVERIFY2(box.contains(QStringLiteral("live then, largest callsites:")),
             qPrintable(box.join('|')));
    // After event 8 (upid 1) and R3 of upid 2: init_workspace's 8 MiB first.
    QVERIFY2(box.contains(QStringLiteral("  8.0 MiB  init_workspace (lib.cu:3)")),
             qPrintable(box.join('|')));
    QVERIFY2(box.contains(QStringLiteral("total: 14.0 MiB")), qPrintable(box.join('|')));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_summary_and_hover")));
  }

  void zoomed_past_one_bucket_the_timeline_shows_the_events() {
    // The burst trace's index bucket 5 holds a 2 MiB spike from 5200 to 5600 ns after its
    // start: zoomed to that bucket, the columns inside the spike must differ from those after.
    const auto path = dir_ / "burst.db";
    QCOMPARE(QString::fromStdString(testing::write_burst_trace(path)), QString());
    open(path);
    TimelineWidget* timeline = window_->timeline();
    const std::int64_t bucket_start =
        testing::kBurstTraceStartNs + 5 * testing::kBurstTraceBucketNs;
    const std::int64_t in_spike = bucket_start + 400, after_spike = bucket_start + 800;
    QSignalSpy zoomed(&window_->controller(), &TraceController::zoomed_timeline_ready);
    // Wheel in at the bucket's middle until the view is as narrow as it gets (a microsecond).
    for (int i = 0; i < 20; ++i) {
      const QPoint at = point_of(*timeline, bucket_start + 500);
      QWheelEvent wheel(QPointF(at), QPointF(timeline->mapToGlobal(at)), QPoint(), QPoint(0, 480),
                        Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase, false);
      QApplication::sendEvent(timeline, &wheel);
    }
    // The mouse's time stays under it: drag the bucket's middle to the plot's middle.
    drag(timeline, point_of(*timeline, bucket_start + 500), timeline->plot_rect().center(),
         Qt::NoModifier);
    QVERIFY(timeline->axis().visible_start_ns() <= in_spike);
    QVERIFY(timeline->axis().visible_end_ns() > after_spike);
    QTRY_VERIFY_WITH_TIMEOUT(timeline->drawn_exact(), 10000);
    QVERIFY(zoomed.count() > 0);

    const std::vector<TimelineColumn> exact = timeline->drawn().columns(timeline->axis());
    const std::vector<TimelineColumn> bucketed = timeline->stacked().columns(timeline->axis());
    const auto column_of = [&](std::int64_t ns) {
      return static_cast<std::size_t>(timeline->axis().x_of(ns));
    };
    // The index's bucket: one value over the whole view, its min and max.
    QCOMPARE(bucketed[column_of(in_spike)].max_bytes, bucketed[column_of(after_spike)].max_bytes);
    QCOMPARE(bucketed[column_of(in_spike)].min_bytes, bucketed[column_of(after_spike)].min_bytes);
    // The events: 7 MiB during the spike, 5 MiB after it.
    QCOMPARE(exact[column_of(in_spike)].max_bytes.front(), 7 * kMiB);
    QCOMPARE(exact[column_of(in_spike)].min_bytes.front(), 7 * kMiB);
    QCOMPARE(exact[column_of(after_spike)].max_bytes.front(), 5 * kMiB);
    send_mouse(timeline, QEvent::MouseMove, point_of(*timeline, after_spike), Qt::NoButton,
               Qt::NoButton);
    const QStringList box = timeline->hover_text();
    QVERIFY2(box.contains(QStringLiteral("total: 5.0 MiB")), qPrintable(box.join('|')));
    QVERIFY2(box.last().startsWith(QStringLiteral("exact: from the ")), qPrintable(box.join('|')));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_zoomed_exact")));

    // Zoomed out again: the buckets.
    QTest::mouseDClick(timeline, Qt::LeftButton, Qt::NoModifier, timeline->plot_rect().center());
    QVERIFY(!timeline->drawn_exact());
  }

  // heaptrack's order: the allocation site first, with the user's Python line beside it, its
  // callers below; the flame graph stays top-down.
  void the_leak_tree_opens_bottom_up_at_the_allocation_site_with_its_python_line() {
    const auto path = dir_ / "python.db";
    QCOMPARE(QString::fromStdString(testing::write_python_trace(path)), QString());
    open(path);
    CallsitePanel* panel = window_->leaks();
    const CallsiteTreeModel& tree = panel->model();
    QCOMPARE(panel->direction(), analysis::TreeDirection::kBottomUp);
    QCOMPARE(panel->findChildren<QComboBox*>().back()->currentIndex(), 1);  // "Bottom-up"
    // The first row: libc10's malloc, where 72 of the 80 MiB leaked came from, with the Python
    // line of its largest stack (48 MiB through forward; 24 through the optimizer's step).
    QCOMPARE(tree.rowCount(), 2);
    const QModelIndex site = tree.index(0, CallsiteTreeModel::kLocation);
    QCOMPARE(
        tree.data(site).toString(),
        QStringLiteral("c10::cuda::CUDACachingAllocator::malloc (CUDACachingAllocator.cpp:1203)"));
    QCOMPARE(tree.data(tree.index(0, CallsiteTreeModel::kPythonLine)).toString(),
             QStringLiteral("model.py:27 in forward"));
    QCOMPARE(tree.data(tree.index(0, CallsiteTreeModel::kPythonLine), Qt::ToolTipRole).toString(),
             QStringLiteral("/home/user/project/model.py"));
    QCOMPARE(tree.data(tree.index(0, CallsiteTreeModel::kBytes)).toString(),
             QStringLiteral("72.0 MiB"));
    QCOMPARE(tree.headerData(CallsiteTreeModel::kPythonLine, Qt::Horizontal).toString(),
             QStringLiteral("Python line"));
    QVERIFY(!panel->tree()->isColumnHidden(CallsiteTreeModel::kPythonLine));
    // The extension's workspace has no Python frame: nothing to name.
    QCOMPARE(tree.data(tree.index(1, CallsiteTreeModel::kLocation)).toString(),
             QStringLiteral("fused_ops::init_workspace (workspace.cpp:88)"));
    QCOMPARE(tree.data(tree.index(1, CallsiteTreeModel::kPythonLine)).toString(), QString());
    // Python-first: the native frames between the allocation site and the user's Python lines
    // are one grey, italic row, as the CLI folds them. The path is open down to the Python
    // line, through torch's own Python (relu, torch/nn/functional.py), each the largest caller,
    // all shown without a click.
    QVERIFY(!panel->native_box()->isChecked());
    QCOMPARE(panel->stack_view(), text::StackView::kPythonFirst);
    const QString folded_run = QStringLiteral(
        "[aten::empty: 3 frames in libtorch_cuda.so, libtorch_cpu.so, libtorch_python.so]");
    QModelIndex at = site;
    for (const QString& caller :
         {folded_run,
          QStringLiteral("relu (/venv/lib/python3.11/site-packages/torch/nn/functional.py:1500)"),
          QStringLiteral("forward (/home/user/project/model.py:27)")}) {
      QVERIFY2(panel->tree()->isExpanded(at), qPrintable(caller));
      at = tree.index(0, 0, at);
      QCOMPARE(tree.data(at).toString(), caller);
    }
    const QModelIndex run = tree.index(0, 0, site);
    QVERIFY(tree.data(run, Qt::FontRole).value<QFont>().italic());
    QVERIFY(tree.data(run, Qt::ForegroundRole).isValid());
    QVERIFY(!tree.data(site, Qt::FontRole).isValid());  // a frame of its own: as any
    QVERIFY(!tree.data(at, Qt::FontRole).isValid());
    QVERIFY2(tree.data(run, Qt::ToolTipRole).toString().startsWith(QStringLiteral("3 ")),
             qPrintable(tree.data(run, Qt::ToolTipRole).toString()));
    QVERIFY(!panel->tree()->isExpanded(at));  // forward's callers stay closed
    // That row is chosen: beside the tree, its stack from the allocation site out, the folded
    // run on one line with the numbers of its frames, as `vramtrace leaks` prints it.
    QCOMPARE(panel->tree()->currentIndex(), at);
    const QStringList stack = panel->stack_text().split('\n');
    QVERIFY2(stack.size() >= 4, qPrintable(panel->stack_text()));
    QVERIFY2(stack[0].startsWith(QStringLiteral("#0 c10::cuda::CUDACachingAllocator::malloc")),
             qPrintable(panel->stack_text()));
    QCOMPARE(stack[1], QStringLiteral("#1-3 ") + folded_run);
    QVERIFY2(stack[2].startsWith(QStringLiteral("#4 relu (")), qPrintable(panel->stack_text()));
    QVERIFY(panel->stack_text().contains(
        QStringLiteral("#5 forward (/home/user/project/model.py:27)")));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_leaks")));

    // The flame graph is top-down, of the same folded stacks: its roots are the outermost
    // frames, the interpreter's start-up folded where the stack has Python frames.
    const auto flame_roots = [this] {
      QStringList roots;
      for (const FlameBox& box : window_->flame_graph()->boxes())
        if (box.depth == 0) roots << QString::fromStdString(box.node->frame.function.value_or(""));
      return roots;
    };
    QCOMPARE(flame_roots(), (QStringList{QStringLiteral("[3 frames in python3.11, libc.so.6]"),
                                         QStringLiteral("__libc_start_main")}));

    // "All native frames" shows every frame, in the tree, the stack and the flame graph.
    panel->native_box()->setChecked(true);
    QCOMPARE(panel->stack_view(), text::StackView::kNative);
    at = tree.index(0, 0);
    for (const char* caller :
         {"at::native::empty_cuda (EmptyTensor.cpp:48)",
          "at::_ops::empty_memory_format::call (Operators_0.cpp:3061)",
          "torch::autograd::THPVariable_empty (python_torch_functions.cpp:412)",
          "relu (/venv/lib/python3.11/site-packages/torch/nn/functional.py:1500)",
          "forward (/home/user/project/model.py:27)"}) {
      QVERIFY2(panel->tree()->isExpanded(at), caller);
      at = tree.index(0, 0, at);
      QCOMPARE(tree.data(at).toString(), QString::fromUtf8(caller));
      QVERIFY(!tree.data(at, Qt::FontRole).isValid());
    }
    QCOMPARE(panel->tree()->currentIndex(), at);
    QVERIFY(panel->stack_text().contains(QStringLiteral("\n#1 at::native::empty_cuda")));
    QVERIFY(panel->stack_text().contains(
        QStringLiteral("#5 forward (/home/user/project/model.py:27)")));
    QCOMPARE(tree.data(tree.index(0, CallsiteTreeModel::kPythonLine)).toString(),
             QStringLiteral("model.py:27 in forward"));
    QCOMPARE(flame_roots(), (QStringList{QStringLiteral("__libc_start_main")}));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_leaks_native")));
    panel->native_box()->setChecked(false);
    QCOMPARE(tree.data(tree.index(0, 0, tree.index(0, 0))).toString(), folded_run);

    // Top-down is one choice away, and its rows name the Python line too.
    panel->findChildren<QComboBox*>().back()->setCurrentIndex(0);
    QCOMPARE(panel->direction(), analysis::TreeDirection::kTopDown);
    QCOMPARE(tree.data(tree.index(0, 0)).toString(),
             QStringLiteral("[3 frames in python3.11, libc.so.6]"));
    QCOMPARE(tree.data(tree.index(0, CallsiteTreeModel::kPythonLine)).toString(),
             QStringLiteral("model.py:27 in forward"));
  }

  // The map's process box lists the processes that recorded GPU memory, and says how many
  // others the job ran.
  void the_process_box_lists_only_processes_that_recorded_gpu_memory() {
    const auto path = dir_ / "shell.db";
    QCOMPARE(QString::fromStdString(testing::write_shell_trace(path)), QString());
    open(path);
    window_->tabs()->setCurrentIndex(2);
    FragmentationView* view = window_->fragmentation();
    QCOMPARE(view->process_box()->count(), 1);
    QCOMPARE(view->process_box()->itemText(0),
             QStringLiteral("pid 8000 python3.11 (no allocator)"));
    QCOMPARE(view->process_box()->currentIndex(), 0);
    QVERIFY(view->others_label()->isVisible());
    QCOMPARE(view->others_label()->text(),
             QStringLiteral("3 other processes recorded no GPU memory"));
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_process_box")));
    // Every process of the allocator trace recorded GPU memory: nothing to say.
    open(allocator_);
    QCOMPARE(view->process_box()->count(), 2);
    QVERIFY(!view->others_label()->isVisible());
  }

  // A band names its range where the whole name fits, elided where only part of it does, and
  // not at all where not even a letter does or the band stands for many ranges.
  void band_labels_fit_their_bands() {
    const QFontMetricsF metrics(window_->timeline()->font());
    const QString name = QStringLiteral("optimizer");
    const double full = metrics.horizontalAdvance(name);
    const auto band = [](double width, bool merged = false) {
      MarkerBand b;
      b.from_x = 10;
      b.to_x = 10 + width;
      b.merged = merged;
      return b;
    };
    QCOMPARE(band_label(band(full + 2 * kBandLabelMargin + 1), name, metrics), name);
    const QString elided = band_label(band(full * 0.6 + 2 * kBandLabelMargin), name, metrics);
    QVERIFY2(elided.size() >= 2 && elided.endsWith(QChar(0x2026)), qPrintable(elided));
    QVERIFY(elided.startsWith(QLatin1Char('o')));
    QVERIFY(metrics.horizontalAdvance(elided) <= full * 0.6);
    QCOMPARE(band_label(band(2 * kBandLabelMargin + 1), name, metrics), QString());
    QCOMPARE(band_label(band(full * 3, true), name, metrics), QString());
  }

  void the_stack_panel_shows_source_lines_of_files_on_this_disk() {
    const auto source = dir_ / "model.py";
    std::ofstream(source) << "import torch\n\ndef forward(x):\n    return x.new_empty(1 << 20)\n";
    storage::StackFrame on_disk;
    on_disk.function = "forward";
    on_disk.file = source.string();
    on_disk.line = 4;
    on_disk.module = "/usr/bin/python3";
    storage::StackFrame elsewhere = on_disk;
    elsewhere.function = "main";
    elsewhere.file = "/nonexistent/train.py";
    elsewhere.line = 1;
    auto report = std::make_shared<analysis::LeakReport>();
    analysis::LeakGroup group;
    group.stack = {on_disk, elsewhere};
    group.bytes = kMiB;
    group.count = 1;
    report->groups = {group};
    report->total_bytes = kMiB;
    report->total_count = 1;
    report->level = "segment";

    CallsitePanel panel;
    panel.set_report(report, TreeSubject::kLeaks, QStringLiteral("test"));
    QCOMPARE(panel.direction(), analysis::TreeDirection::kBottomUp);  // as it opens
    panel.tree()->setCurrentIndex(panel.model().index(0, 0, panel.model().index(0, 0)));
    const QString text = panel.stack_text();
    // Bottom-up, the path to `main` is forward then main: innermost first already.
    QVERIFY2(text.startsWith(QStringLiteral("#0 forward (")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral(">     4| ") +
                           QStringLiteral("    return x.new_empty(1 << 20)")),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("      2| ")), qPrintable(text));  // context above
    QVERIFY2(text.contains(QStringLiteral("#1 main (")), qPrintable(text));
    QVERIFY2(!text.contains(QStringLiteral(">     1| ")), qPrintable(text));  // no such file
    panel.resize(900, 300);
    QVERIFY(save_screenshot(&panel, QStringLiteral("viewer_stack_panel")));
  }

  void an_oom_is_a_flag_and_the_maps_jump_target() {
    const auto path = dir_ / "synthetic.db";
    QCOMPARE(QString::fromStdString(testing::write_synthetic_trace(path)), QString());
    open(path);
    QTRY_VERIFY_WITH_TIMEOUT(window_->controller().ooms() != nullptr, 10000);
    QCOMPARE(window_->controller().ooms()->size(), std::size_t{1});  // a5, 64 GiB, pid 4242
    window_->tabs()->setCurrentIndex(2);
    FragmentationView* view = window_->fragmentation();
    QPushButton* first_oom = view->findChildren<QPushButton*>().back();
    QCOMPARE(first_oom->text(), QStringLiteral("First OOM"));
    QVERIFY(first_oom->isEnabled());  // the mapped process (pid 4242, the highest peak) had it
    QSignalSpy map(&window_->controller(), &TraceController::fragmentation_ready);
    QTest::mouseClick(first_oom, Qt::LeftButton);
    QVERIFY(map.wait(10000));
    QCOMPARE(view->report()->at.seq, std::uint64_t{6});
    QCOMPARE(view->report()->at.pid, 4242u);
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_oom")));
  }

  void ranges_are_bands_over_the_timeline() {
    const auto path = dir_ / "node.db";
    QCOMPARE(QString::fromStdString(testing::write_node_trace(path, {})), QString());
    open(path);
    // Per process: 'epoch 0' and 'forward' (nested), the 'checkpoint' mark, 'data_load' (never
    // ended: drawn to the trace's end).
    const auto& markers = window_->controller().overview()->markers;
    QCOMPARE(markers.size(), std::size_t{8});
    const auto data_load =
        std::find_if(markers.begin(), markers.end(),
                     [](const TimelineMarker& m) { return m.name == "data_load"; });
    QVERIFY(data_load != markers.end());
    QCOMPARE(data_load->end_ns, window_->controller().overview()->timeline.end_ns);
    QVERIFY(save_screenshot(window_.get(), QStringLiteral("viewer_ranges")));
  }

  void a_file_that_is_not_a_trace_gets_a_dialog() {
    const auto text = dir_ / "notes.txt";
    std::ofstream(text) << "not a trace\n";
    window_->open_trace(QString::fromStdString(text.string()));
    QTRY_VERIFY_WITH_TIMEOUT(window_->findChild<QMessageBox*>() != nullptr, 10000);
    QMessageBox* box = window_->findChild<QMessageBox*>();
    QCOMPARE(box->windowTitle(), QStringLiteral("Not a vramtrace trace"));
    QVERIFY(box->text().contains(QString::fromStdString(text.string())));
    QVERIFY(save_screenshot(box, QStringLiteral("viewer_not_a_trace")));
  }

 private:
  void open(const std::filesystem::path& path) {
    QSignalSpy loaded(&window_->controller(), &TraceController::loaded);
    window_->open_trace(QString::fromStdString(path.string()));
    QVERIFY(loaded.wait(30000));
    QCOMPARE(window_->progress_bar()->value(), TraceController::kStages);
  }

  testing::TempDir dir_;
  std::filesystem::path allocator_;
  std::unique_ptr<MainWindow> window_;
};

}  // namespace vramtrace::viewer

QTEST_MAIN(vramtrace::viewer::GuiTest)
#include "viewer_gui_test.moc"
