#include "viewer/model/report_models.h"

#include "viewer/model/frame_text.h"

namespace vramtrace::viewer {
namespace {

QString text(const std::string& value) {
  return QString::fromStdString(value);
}

QString percent(double fraction) {
  return QStringLiteral("%1 %").arg(fraction * 100, 0, 'f', 1);
}

// A row under `parent` (the model's root when null): an item and its value. `first`: before the
// other top-level rows.
QStandardItem* add_row(QStandardItemModel* model, QStandardItem* parent, const QString& name,
                       const QString& value = {}, bool first = false) {
  QList<QStandardItem*> row{new QStandardItem(name), new QStandardItem(value)};
  for (QStandardItem* cell : row) cell->setEditable(false);
  if (parent != nullptr)
    parent->appendRow(row);
  else if (first)
    model->insertRow(0, row);
  else
    model->appendRow(row);
  return row.front();
}

void start(QStandardItemModel* model) {
  model->clear();
  model->setColumnCount(2);
  model->setHorizontalHeaderLabels({QObject::tr("Item"), QObject::tr("Value")});
}

void add_peaks(QStandardItemModel* model, const QString& title,
               const std::vector<analysis::DevicePeak>& peaks, std::int64_t origin_ns) {
  QStandardItem* section = add_row(model, nullptr, title);
  for (const analysis::DevicePeak& peak : peaks)
    add_row(
        model, section, QStringLiteral("pid %1, device %2").arg(peak.pid).arg(peak.device),
        QObject::tr("%1 at %2").arg(byte_text(peak.bytes)).arg(time_text(peak.at_ns, origin_ns)));
}

}  // namespace

void fill_summary_model(const std::string& trace_path, const analysis::Summary& summary,
                        const analysis::LeakReport& leaks, std::int64_t origin_ns,
                        QStandardItemModel* model) {
  start(model);
  QStandardItem* trace = add_row(model, nullptr, QObject::tr("Trace"), text(trace_path));
  add_row(model, trace, QObject::tr("Complete"),
          summary.trace_complete ? QObject::tr("yes")
                                 : QObject::tr("no: still being written, "
                                               "or the collector stopped"));
  add_row(model, trace, QObject::tr("Duration"), time_text(summary.duration_ns, 0));
  QStringList command;
  for (const std::string& arg : summary.command) command << text(arg);
  if (!command.isEmpty()) add_row(model, trace, QObject::tr("Command"), command.join(' '));
  if (summary.vramtrace_version)
    add_row(model, trace, QObject::tr("Recorded by vramtrace"), text(*summary.vramtrace_version));

  // The processes that recorded GPU memory (one row per exec chain, named by its image that did,
  // ended as its last image did), as `vramtrace summary` lists them; every process when none did.
  const analysis::GpuProcesses gpu = analysis::gpu_processes(summary.chains);
  const auto add_process = [&](QStandardItem* parent, const storage::ProcessRecord& named,
                               const storage::ProcessRecord& last) {
    QString how = last.end.signal        ? QObject::tr("killed by signal %1").arg(*last.end.signal)
                  : last.end.exit_status ? QObject::tr("exited %1").arg(*last.end.exit_status)
                                         : QObject::tr("no exit recorded");
    if (named.start.rank) how += QObject::tr(", rank %1").arg(*named.start.rank);
    add_row(model, parent,
            QStringLiteral("pid %1 %2").arg(named.start.pid).arg(text(named.start.exe)), how);
  };
  if (gpu.gpu.empty()) {
    QStandardItem* processes = add_row(model, nullptr, QObject::tr("Processes"),
                                       QString::number(summary.processes.size()));
    for (const storage::ProcessRecord& process : summary.processes)
      add_process(processes, process, process);
  } else {
    QStandardItem* processes =
        add_row(model, nullptr, QObject::tr("Processes"), QString::number(gpu.gpu.size()));
    for (const analysis::ProcessChain* chain : gpu.gpu)
      add_process(processes, chain->process(), chain->images.back());
    if (gpu.others != 0)
      add_row(model, processes,
              gpu.others == 1 ? QObject::tr("1 other process")
                              : QObject::tr("%1 other processes").arg(gpu.others),
              QObject::tr("recorded no GPU memory"));
  }

  QStandardItem* kinds = add_row(model, nullptr, QObject::tr("Memory by kind"));
  for (const analysis::KindTotals& kind : summary.kinds) {
    QStandardItem* row = add_row(model, kinds, text(kind.name),
                                 bytes_in_allocations(kind.bytes_allocated, kind.allocations));
    add_row(model, row, QObject::tr("Freed"),
            QObject::tr("%1 in %2 frees").arg(byte_text(kind.bytes_freed)).arg(kind.frees));
    add_row(model, row, QObject::tr("Live at the end"),
            bytes_in_allocations(kind.live_bytes, kind.live_count));
    if (kind.failed_allocations != 0)
      add_row(model, row, QObject::tr("Failed"), QString::number(kind.failed_allocations));
  }

  add_peaks(model, QObject::tr("Peaks of device memory"), summary.peaks, origin_ns);
  if (!summary.block_peaks.empty())
    add_peaks(model, QObject::tr("Peaks of tensors (blocks)"), summary.block_peaks, origin_ns);
  for (const analysis::AllocatorTotals& allocator : summary.allocator) {
    if (!allocator.allocator_events) continue;
    QStandardItem* row =
        add_row(model, nullptr, QObject::tr("Allocator of pid %1").arg(allocator.pid));
    add_row(model, row, QObject::tr("Live tensors at the end"),
            QObject::tr("%1 in %2 blocks")
                .arg(byte_text(allocator.live_block_bytes))
                .arg(allocator.live_block_count));
    add_row(model, row, QObject::tr("Segments at the end"),
            QObject::tr("%1 in %2 segments")
                .arg(byte_text(allocator.segment_bytes))
                .arg(allocator.segment_count));
    add_row(model, row, QObject::tr("Cached (not leaks)"), byte_text(allocator.cached_bytes));
  }

  QStandardItem* leaked =
      add_row(model, nullptr, QObject::tr("Leaks (%1 level)").arg(text(leaks.level)),
              bytes_in_allocations(leaks.total_bytes, leaks.total_count));
  for (const analysis::LeakGroup& group : leaks.groups) {
    const QString where = stack_label(group.stack);
    add_row(model, leaked, QStringLiteral("%1 (%2)").arg(where).arg(text(group.kind_name)),
            QObject::tr("%1 in %2").arg(byte_text(group.bytes)).arg(group.count));
  }

  QStandardItem* advice = add_row(model, nullptr, QObject::tr("Advice"),
                                  summary.advice.empty() ? QObject::tr("none: no rule fired")
                                                         : QString::number(summary.advice.size()));
  for (const analysis::Advice& item : summary.advice) {
    // The numbers the rule fired on, as `summary --format json` lists them.
    QStandardItem* rule = add_row(model, advice, text(item.id), text(item.text));
    for (const auto& [name, value] : item.evidence)
      add_row(model, rule, text(name), QString::number(value));
    if (item.fraction)
      add_row(model, rule, QObject::tr("fraction"), QString::number(*item.fraction));
  }

  std::vector<QString> problems;
  for (const std::string& warning : summary.warnings) problems.push_back(text(warning));
  for (const analysis::BadFreeCount& bad : summary.bad_frees)
    problems.push_back(QObject::tr("bad free (%1): %2").arg(text(bad.reason)).arg(bad.count));
  for (const storage::StatRecord& stat : summary.stats)
    if (stat.severity != storage::Severity::kInfo)
      problems.push_back(QStringLiteral("%1 = %2: %3")
                             .arg(text(stat.name))
                             .arg(stat.value)
                             .arg(text(stat.description)));
  if (!problems.empty()) {
    QStandardItem* row =
        add_row(model, nullptr, QObject::tr("Problems"), QString::number(problems.size()));
    for (const QString& problem : problems) add_row(model, row, problem);
  }
}

void add_range_section(const TimeRange& range, const StackedTimeline& timeline,
                       const analysis::TimelineWindow* window, std::string_view level,
                       const analysis::LeakReport& range_leaks, QStandardItemModel* model) {
  const QString title = QObject::tr("Selected range");
  const QList<QStandardItem*> earlier = model->findItems(title);
  if (!earlier.isEmpty()) model->removeRow(earlier.front()->row());
  const std::int64_t origin = timeline.start_ns();
  QStandardItem* section = add_row(model, nullptr, title,
                                   QObject::tr("%1 to %2")
                                       .arg(time_text(range.from_ns, origin))
                                       .arg(time_text(range.to_ns, origin)),
                                   true);
  const bool exact = window != nullptr && window->exact;
  const StackedTimeline in_range = exact ? StackedTimeline(window->timeline, level) : timeline;
  const std::vector<StackedTimeline::Extremes> extremes =
      in_range.extremes(range.from_ns, range.to_ns);
  if (!exact) {
    const QString why =
        window == nullptr ? QString()
        : window->why_not == analysis::TimelineWindow::WhyNot::kTooManyEvents
            ? QObject::tr(": over %1 events in the range").arg(analysis::kMaxWindowEvents)
            : QObject::tr(": the trace lacks its sequence indexes");
    add_row(model, section, QObject::tr("Levels"),
            QObject::tr("over the timeline's buckets the range touches%1").arg(why));
  }
  for (std::size_t l = 0; l < extremes.size(); ++l) {
    const TimelineLayer& layer = in_range.layers()[l];
    add_row(model, section,
            QObject::tr("device %1 %2").arg(layer.device).arg(text(layer.kind_name)),
            QObject::tr("%1 to %2 live")
                .arg(byte_text(extremes[l].min_bytes))
                .arg(byte_text(extremes[l].max_bytes)));
  }
  add_row(model, section, QObject::tr("Allocated in it, live at its end"),
          bytes_in_allocations(range_leaks.total_bytes, range_leaks.total_count));
}

void fill_fragmentation_numbers(const analysis::FragmentationReport& report,
                                QStandardItemModel* model) {
  start(model);
  const analysis::Fragmentation& layout = report.layout;
  add_row(model, nullptr, QObject::tr("Process"), QStringLiteral("pid %1").arg(report.at.pid));
  add_row(model, nullptr, QObject::tr("Event"), QStringLiteral("seq %1").arg(report.at.seq));
  add_row(model, nullptr, QObject::tr("Segments"), QString::number(layout.segments.size()));
  add_row(model, nullptr, QObject::tr("Used (live blocks)"), byte_text(layout.used_bytes));
  add_row(model, nullptr, QObject::tr("Free in segments"), byte_text(layout.total_free));
  add_row(model, nullptr, QObject::tr("Largest free block"), byte_text(layout.largest_free));
  add_row(model, nullptr, QObject::tr("External fragmentation"),
          percent(layout.external_fragmentation));
  add_row(model, nullptr, QObject::tr("Internal fragmentation"),
          percent(layout.internal_fragmentation));
  add_row(model, nullptr, QObject::tr("Largest request without a new segment"),
          byte_text(layout.largest_request));
  for (const analysis::RawAllocations& raw : layout.raw)
    add_row(model, nullptr, QObject::tr("Outside the allocator, device %1").arg(raw.device),
            bytes_in_allocations(raw.bytes, raw.count));
}

}  // namespace vramtrace::viewer
