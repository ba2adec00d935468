#include "viewer/widgets/main_window.h"

#include <QComboBox>
#include <QFileDialog>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QProgressBar>
#include <QScrollArea>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTreeView>
#include <QVBoxLayout>

#include "viewer/model/frame_text.h"
#include "viewer/model/leak_tree.h"
#include "viewer/model/report_models.h"
#include "viewer/widgets/callsite_panel.h"
#include "viewer/widgets/flame_graph_widget.h"
#include "viewer/widgets/fragmentation_view.h"
#include "viewer/widgets/timeline_widget.h"

namespace vramtrace::viewer {

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      timeline_(new TimelineWidget),
      level_box_(new QComboBox),
      leaks_(new CallsitePanel),
      flame_graph_(new FlameGraphWidget),
      fragmentation_(new FragmentationView),
      summary_view_(new QTreeView),
      tabs_(new QTabWidget),
      progress_(new QProgressBar),
      status_(new QLabel),
      live_(new QLabel) {
  setWindowTitle(tr("vramtrace"));
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open..."), QKeySequence::Open, this, &MainWindow::choose_trace);
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);

  level_box_->setToolTip(
      tr("segment: memory as the driver sees it; block: a caching "
         "allocator's tensors (never stacked together: blocks lie in segments); role: one "
         "PyTorch process's blocks by role (parameter, gradient, optimizer state, activation, "
         "temporary, unknown)"));
  connect(level_box_, &QComboBox::currentTextChanged, this,
          [this](const QString& level) { timeline_->set_level(level.toStdString()); });
  auto* timeline_bar = new QHBoxLayout;
  timeline_bar->addWidget(new QLabel(tr("Live bytes, level:")));
  timeline_bar->addWidget(level_box_);
  timeline_bar->addStretch(1);
  timeline_bar->addWidget(
      new QLabel(tr("wheel: zoom, drag: pan, Shift+drag: select a range, "
                    "double click: whole trace")));
  auto* top = new QWidget;
  auto* top_layout = new QVBoxLayout(top);
  top_layout->setContentsMargins(4, 4, 4, 0);
  top_layout->addLayout(timeline_bar);
  top_layout->addWidget(timeline_, 1);

  auto* flame_scroll = new QScrollArea;
  flame_scroll->setWidget(flame_graph_);
  flame_scroll->setWidgetResizable(true);
  summary_view_->setModel(&summary_);
  summary_view_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
  tabs_->addTab(leaks_, tr("Leaks"));
  tabs_->addTab(flame_scroll, tr("Flame graph"));
  tabs_->addTab(fragmentation_, tr("Fragmentation"));
  tabs_->addTab(summary_view_, tr("Summary"));

  auto* splitter = new QSplitter(Qt::Vertical);
  splitter->addWidget(top);
  splitter->addWidget(tabs_);
  splitter->setStretchFactor(0, 2);
  splitter->setStretchFactor(1, 3);
  setCentralWidget(splitter);

  progress_->setRange(0, TraceController::kStages);
  progress_->setMaximumWidth(220);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(live_);
  statusBar()->addPermanentWidget(progress_);

  connect(&controller_, &TraceController::progress, this,
          [this](int done, int total, const QString& stage) {
            progress_->setRange(0, total);
            progress_->setValue(done);
            status_->setText(stage);
          });
  connect(&controller_, &TraceController::open_failed, this, &MainWindow::show_open_failure);
  connect(&controller_, &TraceController::overview_ready, this, [this] {
    const auto overview = controller_.overview();
    setWindowTitle(tr("vramtrace - %1").arg(QString::fromStdString(overview->path)));
    const QSignalBlocker quiet(level_box_);
    level_box_->clear();
    for (const std::string& level : StackedTimeline::levels_of(overview->timeline))
      level_box_->addItem(QString::fromStdString(level));
    if (controller_.role_process()) level_box_->addItem(QStringLiteral("role"));
    timeline_->set_overview(overview);
    if (timeline_->by_role()) {
      level_box_->setCurrentText(QStringLiteral("role"));
      controller_.ask_roles();  // live mode: the blocks grew
    } else {
      level_box_->setCurrentText(QString::fromStdString(
          timeline_->stacked().empty() ? std::string()
                                       : timeline_->stacked().layers().front().level));
    }
    fragmentation_->set_overview(overview);
    live_->setText(overview->complete ? QString() : tr("LIVE: following a trace being written"));
    live_->setMinimumWidth(live_->sizeHint().width());  // the stage's text must not squeeze it
  });
  connect(&controller_, &TraceController::leaks_ready, this, &MainWindow::show_leaks);
  connect(&controller_, &TraceController::fragmentation_ready, this,
          [this] { fragmentation_->set_report(controller_.fragmentation()); });
  connect(&controller_, &TraceController::ooms_ready, this, [this] {
    timeline_->set_ooms(controller_.ooms());
    fragmentation_->set_ooms(*controller_.ooms());
  });
  connect(&controller_, &TraceController::fragmentation_failed, fragmentation_,
          &FragmentationView::set_problem);
  connect(&controller_, &TraceController::summary_ready, this, &MainWindow::show_summary);
  connect(&controller_, &TraceController::live_at_ready, this, [this] {
    timeline_->set_live_groups(controller_.live_at_ns(), controller_.live_groups());
  });
  connect(&controller_, &TraceController::query_failed, this,
          [this](const QString& message) { status_->setText(message); });

  connect(timeline_, &TimelineWidget::selection_changed, this,
          [this](std::optional<TimeRange> range) { controller_.select_range(range); });
  connect(leaks_, &CallsitePanel::stack_view_changed, this, [this] { show_flame_graph(); });
  connect(leaks_, &CallsitePanel::subject_chosen, this,
          [this](TreeSubject subject) { controller_.set_tree_subject(subject); });
  connect(timeline_, &TimelineWidget::hovered, this,
          [this](qint64 ns) { controller_.ask_live_at(ns); });
  connect(
      timeline_, &TimelineWidget::window_wanted, this,
      [this](const std::vector<std::int64_t>& edges) { controller_.ask_zoomed_timeline(edges); });
  connect(timeline_, &TimelineWidget::roles_wanted, &controller_, &TraceController::ask_roles);
  connect(&controller_, &TraceController::roles_ready, this,
          [this] { timeline_->set_roles(controller_.roles()); });
  connect(&controller_, &TraceController::zoomed_timeline_ready, this,
          [this] { timeline_->set_zoomed_timeline(controller_.zoomed_timeline()); });
  connect(
      fragmentation_, &FragmentationView::moment_requested, this,
      [this](const analysis::MomentSpec& moment) { controller_.show_fragmentation_at(moment); });
  connect(fragmentation_, &FragmentationView::process_chosen, this, [this](qint64 upid) {
    controller_.set_map_process(upid);
    fragmentation_->set_process(upid);
    if (timeline_->by_role()) controller_.ask_roles();  // the roles follow the map's process
  });
  connect(fragmentation_, &FragmentationView::device_chosen, this,
          [this](std::optional<int> device) { controller_.set_map_device(device); });
  connect(fragmentation_, &FragmentationView::time_shown, this,
          [this](qint64 ns) { timeline_->set_cursor(ns); });
  resize(1200, 820);
}

void MainWindow::open_trace(const QString& path) {
  controller_.open(path);
}

void MainWindow::choose_trace() {
  const QString path = QFileDialog::getOpenFileName(this, tr("Open a vramtrace trace"), {},
                                                    tr("Traces (*.db);;All files (*)"));
  if (!path.isEmpty()) open_trace(path);
}

void MainWindow::show_summary() {
  if (!controller_.summary() || !controller_.leaks_at_end()) return;
  fill_summary_model(controller_.path().toStdString(), *controller_.summary(),
                     *controller_.leaks_at_end(), controller_.overview()->timeline.start_ns,
                     &summary_);
  const auto range = controller_.range();
  if (range && controller_.tree_subject() == TreeSubject::kLeaks && controller_.leaks())
    add_range_section(*range, timeline_->stacked(), controller_.range_window().get(),
                      timeline_->level(), *controller_.leaks(), &summary_);
  summary_view_->expandToDepth(0);
}

void MainWindow::show_leaks() {
  const auto report = controller_.leaks();
  const auto range = controller_.range();
  const std::int64_t origin =
      controller_.overview() ? controller_.overview()->timeline.start_ns : 0;
  const TreeSubject subject = controller_.tree_subject();
  const QString what = subject == TreeSubject::kLiveAtPeak
                           ? tr("Live at each process's device memory peak")
                       : range ? tr("Allocated from %1 to %2 and live at its end")
                                     .arg(time_text(range->from_ns, origin))
                                     .arg(time_text(range->to_ns, origin))
                               : tr("Leaks at the end of the trace");
  leaks_->set_report(report, subject, what);
  show_summary();  // its range section follows the range
  show_flame_graph();
}

void MainWindow::show_flame_graph() {
  // The same stacks as the leak tree: Python-first unless it shows every frame.
  const auto report = controller_.leaks();
  if (!report) return;
  flame_graph_->set_roots(
      leak_tree(report->groups, analysis::TreeDirection::kTopDown, leaks_->stack_view()));
}

void MainWindow::show_open_failure(const QString& title, const QString& message,
                                   const QString& advice) {
  status_->setText(title);
  // Not modal-blocking (open(), not exec()): the window stays usable, and a test can read it.
  auto* box = new QMessageBox(QMessageBox::Warning, title, message, QMessageBox::Ok, this);
  if (!advice.isEmpty()) box->setInformativeText(advice);
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

}  // namespace vramtrace::viewer
