#include "viewer/widgets/fragmentation_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollArea>
#include <QSlider>
#include <QSplitter>
#include <QTimer>
#include <QTreeView>
#include <QVBoxLayout>

#include "viewer/model/frame_text.h"
#include "viewer/model/report_models.h"
#include "viewer/widgets/segment_map_widget.h"
#include "viewer/widgets/view_colors.h"

namespace vramtrace::viewer {
namespace {

QString legend_html() {
  const auto swatch = [](const QColor& color, const QString& name) {
    return QStringLiteral(
               "<span style='background:%1'>&nbsp;&nbsp;&nbsp;&nbsp;</span> %2&nbsp;&nbsp;")
        .arg(color.name(), name);
  };
  return swatch(block_color(BlockState::kUsed), QObject::tr("used (rounded size)")) +
         swatch(requested_color(), QObject::tr("requested")) +
         swatch(block_color(BlockState::kFree), QObject::tr("free between live blocks")) +
         swatch(block_color(BlockState::kCached),
                QObject::tr("cached (segment with no live block)"));
}

}  // namespace

FragmentationView::FragmentationView(QWidget* parent)
    : QWidget(parent),
      process_box_(new QComboBox(this)),
      device_box_(new QComboBox(this)),
      others_label_(new QLabel(this)),
      slider_(new QSlider(Qt::Horizontal, this)),
      slider_settle_(new QTimer(this)),
      peak_button_(new QPushButton(tr("Peak"), this)),
      oom_button_(new QPushButton(tr("First OOM"), this)),
      moment_label_(new QLabel(this)),
      map_(new SegmentMapWidget),
      numbers_view_(new QTreeView(this)) {
  // Their items come with each trace, after the first show: sized to them every time.
  process_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  device_box_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  connect(process_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index >= 0) emit process_chosen(process_box_->itemData(index).toLongLong());
  });
  connect(device_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    if (index < 0) return;
    const QVariant device = device_box_->itemData(index);
    emit device_chosen(device.isValid() ? std::optional<int>(device.toInt()) : std::nullopt);
  });
  slider_->setRange(0, kSliderSteps);
  slider_->setEnabled(false);
  // Ask for the map once the slider rests, not for every step it passes while dragged.
  slider_settle_->setSingleShot(true);
  slider_settle_->setInterval(120);
  connect(slider_, &QSlider::valueChanged, slider_settle_, qOverload<>(&QTimer::start));
  connect(slider_settle_, &QTimer::timeout, this,
          [this] { emit moment_requested(moment_at(slider_time(slider_->value()))); });
  connect(peak_button_, &QPushButton::clicked, this, [this] {
    analysis::MomentSpec peak;
    peak.kind = analysis::MomentSpec::Kind::kPeak;
    peak.text = "peak";
    emit moment_requested(peak);
  });
  connect(oom_button_, &QPushButton::clicked, this, [this] {
    analysis::MomentSpec oom;
    oom.kind = analysis::MomentSpec::Kind::kOom;
    oom.text = "oom";
    emit moment_requested(oom);
  });
  peak_button_->setEnabled(false);
  oom_button_->setEnabled(false);

  numbers_view_->setModel(&numbers_);
  numbers_view_->setRootIsDecorated(false);
  numbers_view_->header()->setSectionResizeMode(QHeaderView::ResizeToContents);

  auto* scroll = new QScrollArea(this);
  scroll->setWidget(map_);
  scroll->setWidgetResizable(true);
  auto* legend = new QLabel(legend_html(), this);

  auto* controls = new QHBoxLayout;
  controls->addWidget(process_box_);
  controls->addWidget(device_box_);
  controls->addWidget(others_label_);
  controls->addWidget(new QLabel(tr("Time:"), this));
  controls->addWidget(slider_, 1);
  controls->addWidget(peak_button_);
  controls->addWidget(oom_button_);
  auto* left = new QWidget(this);
  auto* left_layout = new QVBoxLayout(left);
  left_layout->setContentsMargins(0, 0, 0, 0);
  left_layout->addWidget(moment_label_);
  left_layout->addWidget(scroll, 1);
  left_layout->addWidget(legend);
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->addWidget(left);
  splitter->addWidget(numbers_view_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 1);
  splitter->setSizes({800, 380});  // the numbers' names are long: show them whole
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(controls);
  layout->addWidget(splitter, 1);
}

void FragmentationView::set_overview(std::shared_ptr<const TraceOverview> overview) {
  overview_ = std::move(overview);
  const bool mapped = overview_ && overview_->map_upid;
  slider_->setEnabled(mapped);
  peak_button_->setEnabled(mapped);
  {
    const QSignalBlocker quiet(process_box_);
    process_box_->clear();
    if (overview_) {
      for (const MapProcess& process : overview_->processes) {
        const QString name =
            process.name.empty()
                ? tr("pid %1").arg(process.pid)
                : tr("pid %1 %2").arg(process.pid).arg(QString::fromStdString(process.name));
        process_box_->addItem(process.allocator_events ? name : tr("%1 (no allocator)").arg(name),
                              QVariant::fromValue<qlonglong>(process.upid));
      }
    }
  }
  const std::size_t others = overview_ ? overview_->other_processes : 0;
  others_label_->setText(others == 0 ? QString()
                         : others == 1
                             ? tr("1 other process recorded no GPU memory")
                             : tr("%1 other processes recorded no GPU memory").arg(others));
  others_label_->setVisible(others != 0);
  set_process(mapped ? overview_->map_upid : std::nullopt);
  if (!mapped) set_problem(tr("No device memory was ever in use: there is nothing to map."));
}

void FragmentationView::set_ooms(const std::vector<OomFlag>& ooms) {
  ooms_ = ooms;
  set_process(upid_);
}

void FragmentationView::set_process(std::optional<std::int64_t> upid) {
  upid_ = upid;
  {
    const QSignalBlocker quiet(process_box_);
    process_box_->setCurrentIndex(
        upid ? process_box_->findData(QVariant::fromValue<qlonglong>(*upid)) : -1);
  }
  bool oom_in_process = false;
  for (const OomFlag& oom : ooms_) oom_in_process |= upid && oom.upid == *upid;
  oom_button_->setEnabled(oom_in_process);
  const QSignalBlocker quiet(device_box_);
  device_box_->clear();
  device_box_->addItem(tr("all devices"));
  if (overview_ && upid)
    for (const MapProcess& process : overview_->processes)
      if (process.upid == *upid)
        for (const int device : process.devices)
          device_box_->addItem(tr("device %1").arg(device), device);
}

std::int64_t FragmentationView::slider_time(int value) const {
  if (!overview_) return 0;
  const analysis::Timeline& timeline = overview_->timeline;
  return timeline.start_ns + (timeline.end_ns - timeline.start_ns) * value / kSliderSteps;
}

int FragmentationView::slider_value(std::int64_t ns) const {
  if (!overview_) return 0;
  const analysis::Timeline& timeline = overview_->timeline;
  const std::int64_t span = std::max<std::int64_t>(1, timeline.end_ns - timeline.start_ns);
  return static_cast<int>(
      std::clamp<std::int64_t>((ns - timeline.start_ns) * kSliderSteps / span, 0, kSliderSteps));
}

void FragmentationView::set_report(std::shared_ptr<const analysis::FragmentationReport> report) {
  report_ = std::move(report);
  map_->set_report(report_);
  fill_fragmentation_numbers(*report_, &numbers_);
  numbers_view_->expandAll();
  const std::int64_t origin = overview_ ? overview_->timeline.start_ns : 0;
  moment_label_->setText(report_->at.time_ns
                             ? tr("pid %1 at %2 (event %3)")
                                   .arg(report_->at.pid)
                                   .arg(time_text(*report_->at.time_ns, origin))
                                   .arg(report_->at.seq)
                             : tr("pid %1 before its first event").arg(report_->at.pid));
  if (report_->at.time_ns) {
    // The slider follows without asking again for the moment it already shows.
    const QSignalBlocker quiet(slider_);
    slider_->setValue(slider_value(*report_->at.time_ns));
    emit time_shown(*report_->at.time_ns);
  }
}

void FragmentationView::set_problem(const QString& message) {
  moment_label_->setText(message);
}

}  // namespace vramtrace::viewer
