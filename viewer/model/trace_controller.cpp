#include "viewer/model/trace_controller.h"

#include <QFileInfo>
#include <QFutureWatcher>
#include <QtConcurrent/QtConcurrentRun>
#include <exception>

#include "analysis/reports/summary.h"

namespace vramtrace::viewer {

namespace {

// What opening a trace gives back to the GUI thread.
struct Opened {
  std::shared_ptr<const TraceOverview> overview;
  std::optional<storage::OpenFailure> failure;
};

// Opens `path` into *session and reads what the first picture needs. `progress(done, stage)`
// is called on the worker.
std::shared_ptr<Opened> open_with_overview(const QString& path, TraceSession* session,
                                           const std::function<void(int, QString)>& progress) {
  auto opened = std::make_shared<Opened>();
  storage::OpenFailure failure;
  *session = open_trace_session(path.toStdString(), &failure, [&] {
    progress(1, QObject::tr("Reading the time index (built on the first open)"));
  });
  if (!session->reader) {
    opened->failure = failure;
    return opened;
  }
  progress(2, QObject::tr("Drawing the timeline"));
  opened->overview =
      std::make_shared<TraceOverview>(load_overview(*session->reader, *session->index));
  return opened;
}

// The map's answer: a report, or why the moment has none.
struct FragmentationAnswer {
  std::shared_ptr<const analysis::FragmentationReport> report;
  QString problem;
};

// A worker's result, or what went wrong on the way.
template <typename Result>
struct Answer {
  std::shared_ptr<Result> value;
  QString error;
};

template <typename Result, typename Work>
Answer<Result> answer_of(const Work& work) {
  try {
    return {work(), {}};
  } catch (const std::exception& error) {
    // A trace damaged past its first pages, or removed while open (storage::TraceError).
    return {nullptr, QString::fromStdString(error.what())};
  }
}

QString signature_of(const QString& path) {
  QString signature;
  for (const QString& file : {path, path + QStringLiteral("-wal")}) {
    const QFileInfo info(file);
    signature += QStringLiteral("%1:%2:%3;")
                     .arg(info.exists())
                     .arg(info.size())
                     .arg(info.lastModified().toMSecsSinceEpoch());
  }
  return signature;
}

}  // namespace

TraceController::TraceController(QObject* parent) : QObject(parent) {
  // One thread: a trace's SQLite connections are used by one thread at a time.
  worker_.setMaxThreadCount(1);
  aside_.setMaxThreadCount(1);
  poll_.setInterval(1000);
  connect(&poll_, &QTimer::timeout, this, &TraceController::poll);
}

TraceController::~TraceController() {
  ++generation_;  // answers still queued are dropped
  worker_.waitForDone();
  aside_.waitForDone();
}

template <typename Result, typename Answer>
void TraceController::deliver(QFuture<Answer> future,
                              std::function<void(std::shared_ptr<Result>)> done,
                              std::function<void()> settled) {
  const std::uint64_t generation = generation_;
  auto* watcher = new QFutureWatcher<Answer>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation, done, settled] {
    const Answer answer = watcher->result();
    watcher->deleteLater();
    if (generation != generation_) return;
    if (answer.error.isEmpty())
      done(answer.value);
    else
      emit query_failed(answer.error);
    if (settled) settled();
  });
  watcher->setFuture(future);
}

template <typename Result>
void TraceController::run(std::function<std::shared_ptr<Result>(TraceSession&)> work,
                          std::function<void(std::shared_ptr<Result>)> done,
                          std::function<void()> settled) {
  deliver<Result>(QtConcurrent::run(&worker_,
                                    [session = session_, work] {
                                      return answer_of<Result>([&] { return work(*session); });
                                    }),
                  done, settled);
}

template <typename Result>
void TraceController::run_aside(
    std::function<std::shared_ptr<Result>(const storage::TraceReader&)> work,
    std::function<void(std::shared_ptr<Result>)> done, std::function<void()> settled) {
  deliver<Result>(QtConcurrent::run(&aside_,
                                    [path = path_.toStdString(), work] {
                                      return answer_of<Result>([&] {
                                        storage::OpenFailure failure;
                                        const auto reader =
                                            storage::TraceReader::open(path, &failure);
                                        if (!reader) throw storage::TraceError(failure.message);
                                        return work(*reader);
                                      });
                                    }),
                  done, settled);
}

void TraceController::report_progress(int done, const QString& stage) {
  emit progress(done, kStages, stage);
}

void TraceController::open(const QString& path) {
  ++generation_;
  poll_.stop();
  path_ = path;
  range_.reset();
  map_upid_.reset();
  map_device_.reset();
  tree_subject_ = TreeSubject::kLeaks;
  hover_pending_.reset();
  hover_running_ = reloading_ = summary_running_ = summary_stale_ = false;
  pending_.clear();
  overview_.reset();
  leaks_.reset();
  leaks_at_end_.reset();
  fragmentation_.reset();
  summary_.reset();
  ooms_.reset();
  live_groups_.reset();
  zoomed_.reset();
  zoom_pending_.reset();
  zoom_running_ = false;
  roles_.reset();
  roles_by_upid_.clear();
  fragmentation_moment_ = {};
  file_signature_ = signature_of(path);
  session_ = std::make_shared<TraceSession>();
  report_progress(0, tr("Opening the trace"));

  const std::uint64_t generation = generation_;
  const auto progress_from_worker = [this, generation](int done, const QString& stage) {
    QMetaObject::invokeMethod(
        this,
        [this, generation, done, stage] {
          if (generation == generation_) report_progress(done, stage);
        },
        Qt::QueuedConnection);
  };
  run<Opened>(
      [path, progress_from_worker](TraceSession& session) {
        return open_with_overview(path, &session, progress_from_worker);
      },
      [this](std::shared_ptr<Opened> opened) {
        if (opened->failure) {
          const OpenFailureText text = describe_open_failure(*opened->failure);
          report_progress(kStages, tr("Not opened"));
          emit open_failed(QString::fromStdString(text.title), QString::fromStdString(text.message),
                           QString::fromStdString(text.advice));
          return;
        }
        overview_ = opened->overview;
        map_upid_ = overview_->map_upid;
        emit overview_ready();
        load_rest();
      });
}

void TraceController::load_rest() {
  pending_ = {Stage::kLeaks, Stage::kMap, Stage::kOoms, Stage::kSummary};
  report_progress(3, tr("Finding the leaks, the map, the OOMs, the summary"));
  request_leaks([this] { finish_stage(Stage::kLeaks); });
  if (map_upid_) {
    analysis::MomentSpec peak;
    peak.kind = analysis::MomentSpec::Kind::kPeak;
    peak.text = "peak";
    map_at(peak, [this] { finish_stage(Stage::kMap); });
  } else {
    finish_stage(Stage::kMap);
  }
  request_ooms([this] { finish_stage(Stage::kOoms); });
  request_summary([this] { finish_stage(Stage::kSummary); });
}

void TraceController::request_summary(std::function<void()> settled) {
  summary_running_ = true;
  run_aside<analysis::Summary>(
      [](const storage::TraceReader& trace) {
        return std::make_shared<analysis::Summary>(analysis::build_summary(trace));
      },
      [this](std::shared_ptr<analysis::Summary> summary) {
        summary_ = std::move(summary);
        emit summary_ready();
      },
      [this, settled] {
        summary_running_ = false;
        if (settled) settled();
        if (summary_stale_) {
          summary_stale_ = false;
          request_summary({});
        }
      });
}

void TraceController::finish_stage(Stage stage) {
  if (pending_.erase(stage) == 0) return;
  // In Stage's order.
  static const char* const kStageNames[] = {QT_TR_NOOP("the leaks"), QT_TR_NOOP("the map"),
                                            QT_TR_NOOP("the OOMs (reads every allocation)"),
                                            QT_TR_NOOP("the summary (reads every event)")};
  QStringList left;
  for (const Stage still : pending_) left << tr(kStageNames[static_cast<int>(still)]);
  const int done = kStages - static_cast<int>(pending_.size());
  if (!left.isEmpty()) {
    report_progress(done, tr("Finding %1").arg(left.join(QStringLiteral(", "))));
    return;
  }
  report_progress(kStages, tr("Loaded"));
  emit loaded();
  if (!overview_->complete) poll_.start();
}

void TraceController::request_leaks(std::function<void()> settled) {
  const std::uint64_t asked = ++leaks_asked_;
  const std::optional<TimeRange> range = range_;
  const TreeSubject subject = tree_subject_;
  struct LeaksAnswer {
    analysis::LeakReport report;
    std::shared_ptr<const analysis::TimelineWindow> window;  // with a range
  };
  run<LeaksAnswer>(
      [range, subject, overview = overview_](TraceSession& session) {
        auto answer = std::make_shared<LeaksAnswer>();
        answer->report = subject == TreeSubject::kLiveAtPeak
                             ? live_at_peak(*session.reader, *session.index)
                             : leaks_in(*session.reader, *session.index, range);
        // The range's levels, exact: one bucket from its start to its end.
        if (range && range->to_ns >= range->from_ns) {
          answer->window =
              std::make_shared<analysis::TimelineWindow>(analysis::build_timeline_window(
                  *session.index, overview->timeline, {range->from_ns, range->to_ns + 1}));
        }
        return answer;
      },
      [this, asked, range, subject](std::shared_ptr<LeaksAnswer> answer) {
        if (asked != leaks_asked_) return;
        leaks_ = std::shared_ptr<const analysis::LeakReport>(answer, &answer->report);
        range_window_ = answer->window;
        if (!range && subject == TreeSubject::kLeaks) leaks_at_end_ = leaks_;
        emit leaks_ready();
      },
      settled);
}

void TraceController::request_ooms(std::function<void()> settled) {
  run_aside<std::vector<OomFlag>>(
      [](const storage::TraceReader& trace) {
        return std::make_shared<std::vector<OomFlag>>(find_oom_flags(trace));
      },
      [this](std::shared_ptr<std::vector<OomFlag>> ooms) {
        ooms_ = std::move(ooms);
        emit ooms_ready();
      },
      settled);
}

void TraceController::select_range(std::optional<TimeRange> range) {
  if (!overview_) return;
  range_ = range;
  if (range) tree_subject_ = TreeSubject::kLeaks;
  request_leaks();
  if (range) show_fragmentation_at(moment_at(range->to_ns));
}

void TraceController::set_tree_subject(TreeSubject subject) {
  if (!overview_) return;
  tree_subject_ = subject;
  request_leaks();
}

void TraceController::show_fragmentation_at(const analysis::MomentSpec& moment) {
  map_at(moment, {});
}

void TraceController::map_at(const analysis::MomentSpec& moment, std::function<void()> settled) {
  if (!overview_ || !map_upid_) {
    emit fragmentation_failed(tr("No device memory was ever in use: there is nothing to map."));
    return;
  }
  fragmentation_moment_ = moment;
  const std::uint64_t asked = ++fragmentation_asked_;
  const std::int64_t upid = *map_upid_;
  const std::optional<int> device = map_device_;
  run<FragmentationAnswer>(
      [moment, upid, device](TraceSession& session) {
        auto answer = std::make_shared<FragmentationAnswer>();
        try {
          answer->report = std::make_shared<analysis::FragmentationReport>(
              fragmentation_at(*session.reader, *session.index, moment, upid, device));
        } catch (const analysis::BadMoment& bad) {
          answer->problem = QString::fromStdString(bad.what());
        }
        return answer;
      },
      [this, asked](std::shared_ptr<FragmentationAnswer> answer) {
        if (asked != fragmentation_asked_) return;
        if (!answer->report) {
          emit fragmentation_failed(answer->problem);
          return;
        }
        fragmentation_ = answer->report;
        emit fragmentation_ready();
      },
      settled);
}

void TraceController::set_map_process(std::int64_t upid) {
  if (!overview_) return;
  map_upid_ = upid;
  map_device_.reset();
  show_fragmentation_at(fragmentation_moment_);
}

void TraceController::set_map_device(std::optional<int> device) {
  if (!overview_) return;
  map_device_ = device;
  show_fragmentation_at(fragmentation_moment_);
}

void TraceController::ask_live_at(std::int64_t ns) {
  if (!overview_) return;
  if (hover_running_) {
    hover_pending_ = ns;  // only the latest position matters
    return;
  }
  hover_running_ = true;
  run<std::vector<analysis::LeakGroup>>(
      [ns](TraceSession& session) {
        return std::make_shared<std::vector<analysis::LeakGroup>>(
            live_at(*session.reader, *session.index, ns, 5));
      },
      [this, ns](std::shared_ptr<std::vector<analysis::LeakGroup>> groups) {
        live_at_ns_ = ns;
        live_groups_ = std::move(groups);
        emit live_at_ready();
      },
      [this] {
        hover_running_ = false;
        if (!hover_pending_) return;
        const std::int64_t next = *hover_pending_;
        hover_pending_.reset();
        ask_live_at(next);
      });
}

void TraceController::ask_zoomed_timeline(std::vector<std::int64_t> edges) {
  if (!overview_ || edges.size() < 2) return;
  if (zoom_running_) {
    zoom_pending_ = std::move(edges);  // only the latest view matters
    return;
  }
  zoom_running_ = true;
  run<ZoomedTimeline>(
      [edges, overview = overview_](TraceSession& session) {
        return std::make_shared<ZoomedTimeline>(ZoomedTimeline{
            edges, analysis::build_timeline_window(*session.index, overview->timeline, edges)});
      },
      [this](std::shared_ptr<ZoomedTimeline> zoomed) {
        zoomed_ = std::move(zoomed);
        emit zoomed_timeline_ready();
      },
      [this] {
        zoom_running_ = false;
        if (!zoom_pending_) return;
        std::vector<std::int64_t> next = std::move(*zoom_pending_);
        zoom_pending_.reset();
        ask_zoomed_timeline(std::move(next));
      });
}

std::optional<std::int64_t> TraceController::role_process() const {
  if (!overview_) return std::nullopt;
  const MapProcess* first = nullptr;
  for (const MapProcess& process : overview_->processes) {
    if (!process.allocator_events) continue;
    if (process.upid == map_upid_.value_or(overview_->map_upid.value_or(-1))) return process.upid;
    if (!first) first = &process;
  }
  return first ? std::optional<std::int64_t>(first->upid) : std::nullopt;
}

void TraceController::ask_roles() {
  const std::optional<std::int64_t> upid = role_process();
  if (!upid) return;
  if (const auto known = roles_by_upid_.find(*upid); known != roles_by_upid_.end()) {
    roles_ = known->second;
    emit roles_ready();
    return;
  }
  std::uint32_t pid = 0;
  for (const MapProcess& process : overview_->processes)
    if (process.upid == *upid) pid = process.pid;
  // On the worker: a process's every block, about a second per million blocks.
  run<analysis::RoleSweep>(
      [upid = *upid, pid](TraceSession& session) {
        auto sweep = std::make_shared<analysis::RoleSweep>(
            analysis::sweep_block_roles(analysis::block_lives(*session.reader, upid)));
        sweep->upid = upid;
        sweep->pid = pid;
        return sweep;
      },
      [this](std::shared_ptr<analysis::RoleSweep> sweep) {
        roles_by_upid_[sweep->upid] = sweep;
        roles_ = std::move(sweep);
        emit roles_ready();
      });
}

void TraceController::set_poll_interval(int milliseconds) {
  poll_.setInterval(milliseconds);
}

void TraceController::poll() {
  const QString signature = signature_of(path_);
  if (signature == file_signature_ || reloading_) return;
  file_signature_ = signature;
  reload();
}

void TraceController::reload() {
  reloading_ = true;
  auto fresh = std::make_shared<TraceSession>();
  const QString path = path_;
  run<Opened>(
      [fresh, path](TraceSession&) {
        return open_with_overview(path, fresh.get(), [](int, const QString&) {});
      },
      [this, fresh](std::shared_ptr<Opened> opened) {
        if (opened->failure) {
          emit query_failed(QString::fromStdString(opened->failure->message));
          return;
        }
        session_ = fresh;
        overview_ = opened->overview;
        roles_by_upid_.clear();  // new blocks: swept again when asked
        emit overview_ready();
        request_leaks();
        if (!map_upid_) map_upid_ = overview_->map_upid;  // the trace had no memory before
        if (map_upid_) show_fragmentation_at(fragmentation_moment_);
        request_ooms();
        // One summary at a time; one that started before this reload is run again after it.
        if (summary_running_)
          summary_stale_ = true;
        else
          request_summary({});
        if (overview_->complete) poll_.stop();
      },
      [this] { reloading_ = false; });
}

}  // namespace vramtrace::viewer
