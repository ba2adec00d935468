// TraceController: the viewer's one way to a trace. It opens a trace off the GUI thread in
// stages (reader, time index and timeline: the first picture; then the leaks, the
// fragmentation map at the peak, the OOM flags, and the summary, which sweeps every event),
// reports progress, and
// answers the views' questions (a range's leaks, the map at a moment, what was live under the
// mouse) on one worker thread, since a trace's SQLite connections serve one thread at a time.
// The two stages that read every allocation (the OOM flags, the summary: half a minute on ten
// million allocations) run aside, on a second thread with a reader of their own, so that the
// views' questions never wait behind them. Results are immutable values behind shared pointers; a
// signal says one is ready. An answer to a question that a newer one replaced is dropped.
//
// Live mode: a trace that is not complete (`vramtrace run` still writes it) is polled; when the
// file or its WAL changes, the session is opened again and the timeline, the leaks, the map and
// the OOM flags follow, and the summary when the last one is done. Polling stops when the trace
// is complete.
#pragma once

#include <QFuture>
#include <QObject>
#include <QString>
#include <QThreadPool>
#include <QTimer>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "analysis/roles/role_timeline.h"
#include "viewer/model/exact_zoom.h"
#include "viewer/model/trace_queries.h"
#include "viewer/model/trace_session.h"

namespace vramtrace::viewer {

class TraceController : public QObject {
  Q_OBJECT

 public:
  // Opening, the time index, the timeline (the first picture), then the leaks, the map at the
  // peak, the OOM flags and the summary, which end in any order.
  static constexpr int kStages = 7;

  explicit TraceController(QObject* parent = nullptr);
  ~TraceController() override;

  void open(const QString& path);
  // Filters the leak tree and the flame graph to a range (unset: the whole trace), and moves
  // the fragmentation map to the range's end. A range shows the leak tree's leaks, not the peak.
  void select_range(std::optional<TimeRange> range);
  void set_tree_subject(TreeSubject subject);
  void show_fragmentation_at(const analysis::MomentSpec& moment);
  // Maps another process (at the moment the map shows, all its devices); kept when live mode
  // reloads.
  void set_map_process(std::int64_t upid);
  std::optional<std::int64_t> map_process() const { return map_upid_; }
  // Maps one device of the process (unset: all).
  void set_map_device(std::optional<int> device);
  std::optional<int> map_device() const { return map_device_; }
  void ask_live_at(std::int64_t ns);
  // The timeline's exact series over these column edges (exact_zoom.h), from the events in
  // them; a newer question replaces one still waiting.
  void ask_zoomed_timeline(std::vector<std::int64_t> edges);
  // The role timeline's process: the map's process if it has allocator events, else the first
  // that has them; unset when none has.
  std::optional<std::int64_t> role_process() const;
  // Its blocks' roles swept over time (analysis/roles/role_timeline.h), read once per process and
  // kept until the trace is opened or reloaded: roles_ready when they are there.
  void ask_roles();
  void set_poll_interval(int milliseconds);

  QString path() const { return path_; }
  bool live() const { return poll_.isActive(); }
  std::optional<TimeRange> range() const { return range_; }
  TreeSubject tree_subject() const { return tree_subject_; }
  std::shared_ptr<const TraceOverview> overview() const { return overview_; }
  std::shared_ptr<const analysis::LeakReport> leaks() const { return leaks_; }
  // With a range: its one-bucket exact timeline (timeline_window.h), read with its leaks.
  std::shared_ptr<const analysis::TimelineWindow> range_window() const { return range_window_; }
  std::shared_ptr<const analysis::FragmentationReport> fragmentation() const {
    return fragmentation_;
  }
  std::shared_ptr<const std::vector<OomFlag>> ooms() const { return ooms_; }
  std::shared_ptr<const analysis::Summary> summary() const { return summary_; }
  std::shared_ptr<const analysis::LeakReport> leaks_at_end() const { return leaks_at_end_; }
  std::int64_t live_at_ns() const { return live_at_ns_; }
  std::shared_ptr<const std::vector<analysis::LeakGroup>> live_groups() const {
    return live_groups_;
  }
  std::shared_ptr<const ZoomedTimeline> zoomed_timeline() const { return zoomed_; }
  std::shared_ptr<const analysis::RoleSweep> roles() const { return roles_; }

 signals:
  void progress(int done, int total, const QString& stage);
  void open_failed(const QString& title, const QString& message, const QString& advice);
  void overview_ready();
  void leaks_ready();
  void fragmentation_ready();
  void fragmentation_failed(const QString& message);
  void ooms_ready();
  void summary_ready();
  void live_at_ready();
  void zoomed_timeline_ready();
  void roles_ready();
  void loaded();  // every stage of open() is done (or failed: query_failed says so)
  void query_failed(const QString& message);

 private:
  // Runs `work(session)` on the worker and `done(result)` back on this thread, unless the
  // trace was opened again meanwhile. `work` returns a shared_ptr, or throws.
  // `settled` is called after `done`, or after query_failed when `work` threw.
  template <typename Result>
  void run(std::function<std::shared_ptr<Result>(TraceSession&)> work,
           std::function<void(std::shared_ptr<Result>)> done, std::function<void()> settled = {});
  // The same on the second thread, with a reader of the trace opened for `work` alone.
  template <typename Result>
  void run_aside(std::function<std::shared_ptr<Result>(const storage::TraceReader&)> work,
                 std::function<void(std::shared_ptr<Result>)> done,
                 std::function<void()> settled = {});
  // Calls done(result) here when `future` ends, unless the trace was opened again meanwhile.
  template <typename Result, typename Answer>
  void deliver(QFuture<Answer> future, std::function<void(std::shared_ptr<Result>)> done,
               std::function<void()> settled);
  enum class Stage { kLeaks, kMap, kOoms, kSummary };  // the stages after the first picture
  void finish_stage(Stage stage);
  void report_progress(int done, const QString& stage);
  void request_leaks(std::function<void()> settled = {});
  void request_ooms(std::function<void()> settled = {});
  void request_summary(std::function<void()> settled);
  void map_at(const analysis::MomentSpec& moment, std::function<void()> settled);
  void load_rest();
  void poll();
  void reload();

  QThreadPool worker_, aside_;
  QTimer poll_;
  QString path_;
  std::shared_ptr<TraceSession> session_;
  std::uint64_t generation_ = 0;  // of the session: bumped by open()
  std::uint64_t leaks_asked_ = 0, fragmentation_asked_ = 0;
  std::optional<TimeRange> range_;
  std::optional<std::int64_t> map_upid_;
  std::optional<int> map_device_;
  TreeSubject tree_subject_ = TreeSubject::kLeaks;
  std::optional<std::int64_t> hover_pending_;
  std::optional<std::vector<std::int64_t>> zoom_pending_;
  bool zoom_running_ = false;
  bool hover_running_ = false, reloading_ = false, summary_running_ = false, summary_stale_ = false;
  std::set<Stage> pending_;
  QString file_signature_;

  std::shared_ptr<const TraceOverview> overview_;
  std::shared_ptr<const analysis::LeakReport> leaks_, leaks_at_end_;
  std::shared_ptr<const analysis::TimelineWindow> range_window_;
  std::shared_ptr<const analysis::FragmentationReport> fragmentation_;
  analysis::MomentSpec fragmentation_moment_;
  std::shared_ptr<const std::vector<OomFlag>> ooms_;
  std::shared_ptr<const analysis::Summary> summary_;
  std::int64_t live_at_ns_ = 0;
  std::shared_ptr<const std::vector<analysis::LeakGroup>> live_groups_;
  std::shared_ptr<const ZoomedTimeline> zoomed_;
  std::shared_ptr<const analysis::RoleSweep> roles_;
  std::map<std::int64_t, std::shared_ptr<const analysis::RoleSweep>> roles_by_upid_;
};

}  // namespace vramtrace::viewer
