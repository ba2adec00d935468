// The viewer's window: the timeline on top; below it the leak tree, the flame graph, the
// fragmentation map and the summary, each following the timeline's range selection; a status
// bar with the loading stages' progress and the live-mode indicator. Every number comes from
// the TraceController, that is from analysis/.
#pragma once

#include <QMainWindow>
#include <QStandardItemModel>

#include "viewer/model/trace_controller.h"

class QComboBox;
class QLabel;
class QProgressBar;
class QTabWidget;
class QTreeView;

namespace vramtrace::viewer {

class CallsitePanel;
class FlameGraphWidget;
class FragmentationView;
class TimelineWidget;

class MainWindow : public QMainWindow {
  Q_OBJECT

 public:
  explicit MainWindow(QWidget* parent = nullptr);

  void open_trace(const QString& path);

  TraceController& controller() { return controller_; }
  TimelineWidget* timeline() const { return timeline_; }
  QComboBox* level_box() const { return level_box_; }  // segment, block, role
  CallsitePanel* leaks() const { return leaks_; }
  FlameGraphWidget* flame_graph() const { return flame_graph_; }
  FragmentationView* fragmentation() const { return fragmentation_; }
  QTabWidget* tabs() const { return tabs_; }
  const QStandardItemModel& summary_model() const { return summary_; }
  QProgressBar* progress_bar() const { return progress_; }

 private:
  void choose_trace();
  void show_leaks();
  void show_flame_graph();
  void show_summary();
  void show_open_failure(const QString& title, const QString& message, const QString& advice);

  TraceController controller_;
  TimelineWidget* timeline_;
  QComboBox* level_box_;
  CallsitePanel* leaks_;
  FlameGraphWidget* flame_graph_;
  FragmentationView* fragmentation_;
  QStandardItemModel summary_;
  QTreeView* summary_view_;
  QTabWidget* tabs_;
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* live_;
};

}  // namespace vramtrace::viewer
