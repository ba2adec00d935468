// The fragmentation page: the segment map of one process at one moment, a time slider tied to
// the timeline (moving it moves the timeline's cursor; a range selected on the timeline moves
// it to the range's end), the peak and the first OOM as jump targets, and `vramtrace frag`'s
// numbers beside the map, for one process at a time (a box chooses it, of the processes that
// recorded GPU memory; a line beside it says how many others there were).
#pragma once

#include <QStandardItemModel>
#include <QWidget>
#include <memory>

#include "analysis/time/moment.h"
#include "viewer/model/trace_queries.h"

class QComboBox;
class QLabel;
class QPushButton;
class QSlider;
class QTimer;
class QTreeView;

namespace vramtrace::viewer {

class SegmentMapWidget;

class FragmentationView : public QWidget {
  Q_OBJECT

 public:
  static constexpr int kSliderSteps = 1000;

  explicit FragmentationView(QWidget* parent = nullptr);

  void set_overview(std::shared_ptr<const TraceOverview> overview);
  // The first OOM becomes a jump target when the mapped process has one.
  void set_ooms(const std::vector<OomFlag>& ooms);
  // The process mapped now (its OOMs make the OOM button, its devices the device box).
  void set_process(std::optional<std::int64_t> upid);
  void set_report(std::shared_ptr<const analysis::FragmentationReport> report);
  void set_problem(const QString& message);

  QSlider* slider() const { return slider_; }
  const SegmentMapWidget& map() const { return *map_; }
  const QStandardItemModel& numbers() const { return numbers_; }
  QComboBox* process_box() const { return process_box_; }
  QLabel* others_label() const { return others_label_; }
  std::shared_ptr<const analysis::FragmentationReport> report() const { return report_; }

 signals:
  void moment_requested(const vramtrace::analysis::MomentSpec& moment);
  void process_chosen(qint64 upid);
  void device_chosen(std::optional<int> device);
  void time_shown(qint64 ns);  // the moment now mapped, for the timeline's cursor

 private:
  std::int64_t slider_time(int value) const;
  int slider_value(std::int64_t ns) const;

  std::shared_ptr<const TraceOverview> overview_;
  std::shared_ptr<const analysis::FragmentationReport> report_;
  std::vector<OomFlag> ooms_;
  std::optional<std::int64_t> upid_;
  QComboBox* process_box_;
  QComboBox* device_box_;
  QLabel* others_label_;  // how many processes the process box leaves out
  QSlider* slider_;
  QTimer* slider_settle_;
  QPushButton* peak_button_;
  QPushButton* oom_button_;
  QLabel* moment_label_;
  SegmentMapWidget* map_;
  QStandardItemModel numbers_;
  QTreeView* numbers_view_;
};

}  // namespace vramtrace::viewer
