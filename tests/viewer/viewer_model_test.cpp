// The viewer's models on the sample traces (tests/unit: allocator_trace.h, synthetic_trace.h):
// every item model under QAbstractItemModelTester, and the TraceController, whose numbers must
// be analysis/'s (the CLI's) for the whole trace, for a range, at a moment; live mode; and the
// files that are not traces.
#include <sqlite3.h>
#include <QAbstractItemModelTester>
#include <QFont>
#include <QSignalSpy>
#include <QtTest>

#include <algorithm>
#include <fstream>

#include "allocator_trace.h"
#include "analysis/time/moment.h"
#include "analysis/time/report_time_index.h"
#include "python_trace.h"
#include "role_trace.h"
#include "shell_trace.h"
#include "storage/schema.h"
#include "storage/trace_writer.h"
#include "synthetic_trace.h"
#include "temp_dir.h"
#include "trace_builder.h"
#include "viewer/model/callsite_tree_model.h"
#include "viewer/model/frame_text.h"
#include "viewer/model/leak_tree.h"
#include "viewer/model/report_models.h"
#include "viewer/model/source_excerpt.h"
#include "viewer/model/stacked_timeline.h"
#include "viewer/model/trace_controller.h"

namespace vramtrace::viewer {
namespace {

constexpr std::uint64_t kKiB = 1024, kMiB = 1024 * 1024;
constexpr std::int64_t kMs = 1'000'000;

// The time of event `seq` in the allocator trace (both processes).
std::int64_t at_seq(std::uint64_t seq) {
  return testing::kAllocatorTraceStartNs + static_cast<std::int64_t>(seq) * kMs;
}

// Opens `path` in a fresh reader and index, as the CLI would.
struct Reference {
  std::unique_ptr<storage::TraceReader> reader;
  std::unique_ptr<storage::TimeIndex> index;
  explicit Reference(const std::filesystem::path& path) {
    storage::OpenFailure failure;
    reader = storage::TraceReader::open(path, &failure);
    if (reader) index = analysis::open_time_index(*reader);
  }
};

bool wait_loaded(TraceController& controller) {
  QSignalSpy loaded(&controller, &TraceController::loaded);
  return loaded.wait(30000);
}

// The value column of the row named `name` among the model's top-level rows.
QString value_of(const QStandardItemModel& model, const QString& name) {
  for (int row = 0; row < model.rowCount(); ++row)
    if (model.item(row, 0)->text() == name) return model.item(row, 1)->text();
  return QStringLiteral("<no row %1>").arg(name);
}

}  // namespace

class ModelTest : public QObject {
  Q_OBJECT

 private slots:
  // Counts read as the CLI writes them: "1 allocation", never "1 allocations".
  void byte_counts_agree_in_number() {
    QCOMPARE(bytes_in_allocations(1024, 1), QStringLiteral("1.0 KiB in 1 allocation"));
    QCOMPARE(bytes_in_allocations(512, 3), QStringLiteral("512 B in 3 allocations"));
    QCOMPARE(bytes_in_allocations(0, 0), QStringLiteral("0 B in 0 allocations"));
  }

  void initTestCase() {
    QVERIFY(dir_.path().has_filename() || !dir_.path().empty());
    allocator_ = dir_ / "allocator.db";
    QCOMPARE(QString::fromStdString(testing::write_allocator_trace(allocator_)), QString());
    synthetic_ = dir_ / "synthetic.db";
    QCOMPARE(QString::fromStdString(testing::write_synthetic_trace(synthetic_)), QString());
  }

  void callsite_tree_model_passes_the_tester_through_resets() {
    Reference trace(allocator_);
    const analysis::LeakReport leaks = analysis::build_leak_report(*trace.reader);
    CallsiteTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    for (const auto direction :
         {analysis::TreeDirection::kTopDown, analysis::TreeDirection::kBottomUp}) {
      model.set_roots(analysis::build_leak_tree(leaks.groups, direction));
      QCOMPARE(model.total_bytes(), leaks.total_bytes);
      QCOMPARE(model.columnCount(), int{CallsiteTreeModel::kColumnCount});
    }
    model.set_roots({});
    QCOMPARE(model.rowCount(), 0);
  }

  void callsite_tree_model_shows_the_leaks_callsites() {
    Reference trace(allocator_);
    CallsiteTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.set_roots(analysis::build_leak_tree(analysis::build_leak_report(*trace.reader).groups,
                                              analysis::TreeDirection::kBottomUp));
    // Leaks at the end: R3 8 MiB and R1, R2 1 MiB each at init_workspace; B2 1 MiB at backward;
    // B3 256 KiB at forward. S1 is the allocator's cache, not a leak.
    QCOMPARE(model.total_bytes(), 11 * kMiB + 256 * kKiB);
    const QModelIndex first = model.index(0, CallsiteTreeModel::kLocation);
    QCOMPARE(model.data(first).toString(), QStringLiteral("init_workspace (lib.cu:3)"));
    QCOMPARE(model.data(model.index(0, CallsiteTreeModel::kBytes)).toString(),
             QStringLiteral("10.0 MiB"));
    QCOMPARE(model.data(model.index(0, CallsiteTreeModel::kCount)).toString(), QStringLiteral("3"));
    QCOMPARE(model.data(model.index(0, CallsiteTreeModel::kBytes), CallsiteTreeModel::kSortRole)
                 .toULongLong(),
             10 * kMiB);
    const QModelIndex caller = model.index(0, 0, first);
    QCOMPARE(model.data(caller).toString(), QStringLiteral("main (train.py:1)"));
    const std::vector<storage::StackFrame> path = model.path_to(caller);
    QCOMPARE(path.size(), std::size_t{2});
    QCOMPARE(*path[0].function, std::string("init_workspace"));
    QCOMPARE(model.parent(caller), first);
  }

  // The Python line column: the user's line (past torch's own relu) of each node's largest
  // Python-driven stack, empty where no stack through the node has one.
  void callsite_tree_model_names_the_python_line_of_each_node() {
    const auto path = dir_ / "python.db";
    QCOMPARE(QString::fromStdString(testing::write_python_trace(path)), QString());
    Reference trace(path);
    QVERIFY(trace.reader);
    CallsiteTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.set_roots(analysis::build_leak_tree(analysis::build_leak_report(*trace.reader).groups,
                                              analysis::TreeDirection::kBottomUp));
    QCOMPARE(model.total_bytes(), 80 * kMiB);
    const auto python_line = [&model](const QModelIndex& index) {
      return model.data(index.siblingAtColumn(CallsiteTreeModel::kPythonLine)).toString();
    };
    const QModelIndex site = model.index(0, 0);  // libc10's malloc, 72 MiB
    QCOMPARE(python_line(site), QStringLiteral("model.py:27 in forward"));
    QCOMPARE(model
                 .data(site.siblingAtColumn(CallsiteTreeModel::kPythonLine),
                       CallsiteTreeModel::kSortRole)
                 .toString(),
             QStringLiteral("model.py:27 in forward"));
    // Below empty_cuda the two stacks part: zeros_like's only caller is the optimizer's step.
    const QModelIndex empty_cuda = model.index(0, 0, site);
    QCOMPARE(model.rowCount(empty_cuda), 2);
    const QModelIndex zeros_like = model.index(1, 0, empty_cuda);
    QCOMPARE(model.data(zeros_like).toString(),
             QStringLiteral("at::native::zeros_like (TensorFactories.cpp:1745)"));
    QCOMPARE(python_line(zeros_like), QStringLiteral("train.py:47 in step"));
    QCOMPARE(python_line(model.index(1, 0)), QString());  // the extension's workspace: native only
  }

  // Python-first by default: the runs of torch's native frames folded into one frame each, as
  // the CLI's text shows them; kNative keeps every frame. The sums are the report's either way.
  void the_leak_tree_folds_framework_frames_unless_asked_for_every_frame() {
    const auto path = dir_ / "python_folded.db";
    QCOMPARE(QString::fromStdString(testing::write_python_trace(path)), QString());
    Reference trace(path);
    QVERIFY(trace.reader);
    const analysis::LeakReport leaks = analysis::build_leak_report(*trace.reader);
    CallsiteTreeModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    model.set_roots(
        leak_tree(leaks.groups, analysis::TreeDirection::kBottomUp, text::StackView::kPythonFirst));
    QCOMPARE(model.total_bytes(), leaks.total_bytes);
    const QModelIndex site = model.index(0, 0);
    QCOMPARE(
        model.data(site).toString(),
        QStringLiteral("c10::cuda::CUDACachingAllocator::malloc (CUDACachingAllocator.cpp:1203)"));
    // Forward's and the optimizer's runs differ (their operators do): two folded callers.
    QCOMPARE(model.rowCount(site), 2);
    const QModelIndex run = model.index(0, 0, site);
    QCOMPARE(model.data(run).toString(),
             QStringLiteral("[aten::empty: 3 frames in libtorch_cuda.so, libtorch_cpu.so, "
                            "libtorch_python.so]"));
    QCOMPARE(folded_run_length(model.node(run)->frame), std::size_t{3});
    QVERIFY(model.data(run, Qt::FontRole).value<QFont>().italic());
    QCOMPARE(model.data(model.index(1, 0, site)).toString(),
             QStringLiteral("[2 frames in libtorch_cuda.so, libtorch_cpu.so]"));
    QCOMPARE(folded_run_length(model.node(site)->frame), std::size_t{0});
    QVERIFY(!model.data(site, Qt::FontRole).isValid());
    // The user's Python line survives the folding.
    QCOMPARE(model.data(site.siblingAtColumn(CallsiteTreeModel::kPythonLine)).toString(),
             QStringLiteral("model.py:27 in forward"));
    // The extension's workspace has no Python frame: shown whole, as the CLI shows it.
    QCOMPARE(model.data(model.index(0, 0, model.index(1, 0))).toString(),
             QStringLiteral("fused_ops::Runner::run (runner.cpp:210)"));

    model.set_roots(
        leak_tree(leaks.groups, analysis::TreeDirection::kBottomUp, text::StackView::kNative));
    QCOMPARE(model.total_bytes(), leaks.total_bytes);
    QCOMPARE(model.data(model.index(0, 0, model.index(0, 0))).toString(),
             QStringLiteral("at::native::empty_cuda (EmptyTensor.cpp:48)"));
  }

  // A job started through a shell: the map's process box and the summary list the one process
  // that recorded GPU memory (named by its python3.11 image, not the bash it exec'd from), and
  // The timeline by role (role_trace.h's blocks): the controller sweeps the process's blocks
  // once, and the stacked series over any columns give each role's bytes live then; the band
  // of a column is its max, the hover's value the bytes at its end, as the kind stacking's.
  void the_role_timeline_gives_each_roles_bytes_at_known_times() {
    TraceController controller;
    QSignalSpy ready(&controller, &TraceController::roles_ready);
    const auto path = dir_ / "roles.db";
    QCOMPARE(QString::fromStdString(testing::write_role_trace(path)), QString());
    controller.open(QString::fromStdString(path.string()));
    QVERIFY(wait_loaded(controller));
    QCOMPARE(controller.role_process(), std::optional<std::int64_t>(1));
    controller.ask_roles();
    QVERIFY(ready.wait(10000));
    const std::shared_ptr<const analysis::RoleSweep> sweep = controller.roles();
    QVERIFY(sweep);
    QCOMPARE(sweep->pid, 4000u);
    // One column per seq from seq 1 to seq 16, so a column's end is just before the next seq.
    std::vector<std::int64_t> edges;
    for (std::uint64_t seq = 1; seq <= 17; ++seq) edges.push_back(testing::ns_of_seq(seq));
    const StackedTimeline stacked(analysis::role_timeline(*sweep, edges), "role");
    const auto bytes_of = [&](std::uint64_t seq) {
      std::map<std::string, std::uint64_t> by_role;
      const std::vector<std::uint64_t> bytes = stacked.bytes_at(testing::ns_of_seq(seq));
      for (std::size_t l = 0; l < bytes.size(); ++l) {
        if (!stacked.layers()[l].stacked) by_role["(not stacked)"] = bytes[l];
        if (bytes[l]) by_role[stacked.layers()[l].kind_name] = bytes[l];
      }
      return by_role;
    };
    using Roles = std::map<std::string, std::uint64_t>;
    QCOMPARE(bytes_of(4),
             (Roles{{"parameter", kMiB}, {"activation", 8 * kMiB}, {"temporary", 4 * kMiB}}));
    QCOMPARE(bytes_of(8), (Roles{{"parameter", kMiB},
                                 {"activation", 8 * kMiB},
                                 {"gradient", kMiB},
                                 {"temporary", 2 * kMiB + 512}}));
    QCOMPARE(bytes_of(14), (Roles{{"parameter", kMiB},
                                  {"gradient", kMiB},
                                  {"optimizer_state", 2 * kMiB},
                                  {"temporary", kMiB}}));
    // Asked again: the kept sweep, not a second read.
    controller.ask_roles();
    QCOMPARE(ready.count(), 2);
    QCOMPARE(controller.roles(), sweep);
  }

  // count the three that recorded nothing.
  void process_lists_leave_out_processes_that_recorded_no_gpu_memory() {
    const auto path = dir_ / "shell.db";
    QCOMPARE(QString::fromStdString(testing::write_shell_trace(path)), QString());
    TraceController controller;
    controller.open(QString::fromStdString(path.string()));
    QVERIFY(wait_loaded(controller));
    const TraceOverview& overview = *controller.overview();
    QCOMPARE(overview.processes.size(), std::size_t{1});
    QCOMPARE(overview.processes[0].upid, testing::kShellTraceGpuUpid);
    QCOMPARE(overview.processes[0].pid, testing::kShellTracePid);
    QCOMPARE(overview.processes[0].name, std::string("python3.11"));
    QCOMPARE(overview.other_processes, std::size_t{3});
    QCOMPARE(*overview.map_upid, testing::kShellTraceGpuUpid);

    QStandardItemModel summary;
    fill_summary_model(path.string(), *controller.summary(), *controller.leaks_at_end(),
                       overview.timeline.start_ns, &summary);
    QCOMPARE(value_of(summary, QStringLiteral("Processes")), QStringLiteral("1"));
    const QStandardItem* processes = summary.findItems(QStringLiteral("Processes")).front();
    QCOMPARE(processes->rowCount(), 2);
    QCOMPARE(processes->child(0, 0)->text(), QStringLiteral("pid 8000 /usr/bin/python3.11"));
    QCOMPARE(processes->child(0, 1)->text(), QStringLiteral("exited 0"));
    QCOMPARE(processes->child(1, 0)->text(), QStringLiteral("3 other processes"));
    QCOMPARE(processes->child(1, 1)->text(), QStringLiteral("recorded no GPU memory"));

    // Where every process recorded GPU memory, every one is listed and none is left out.
    TraceController every;
    every.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(every));
    QCOMPARE(every.overview()->processes.size(), std::size_t{2});
    QCOMPARE(every.overview()->other_processes, std::size_t{0});
  }

  void summary_and_fragmentation_models_pass_the_tester() {
    Reference trace(allocator_);
    QStandardItemModel summary;
    QAbstractItemModelTester summary_tester(&summary,
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
    const analysis::LeakReport leaks = analysis::build_leak_report(*trace.reader);
    fill_summary_model(allocator_.string(), analysis::build_summary(*trace.reader), leaks,
                       at_seq(1), &summary);
    QCOMPARE(value_of(summary, QStringLiteral("Processes")), QStringLiteral("2"));
    // Peaks read on the timeline's axis: upid 1's device peak at event 7, 6 ms after event 1.
    const QStandardItem* peaks =
        summary.findItems(QStringLiteral("Peaks of device memory")).front();
    QCOMPARE(peaks->child(0, 0)->text(), QStringLiteral("pid 5000, device 0"));
    // Reached at S2 (6 ms), taken with its block B4 in it (7 ms).
    QCOMPARE(peaks->child(0, 1)->text(), QStringLiteral("6.0 MiB at 7.000 ms"));
    QCOMPARE(value_of(summary, QStringLiteral("Leaks (block level)")),
             QStringLiteral("11.2 MiB in 5 allocations"));

    QStandardItemModel numbers;
    QAbstractItemModelTester numbers_tester(&numbers,
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
    analysis::MomentSpec peak;
    peak.kind = analysis::MomentSpec::Kind::kPeak;
    const analysis::FragmentationReport report =
        analysis::build_fragmentation_report(*trace.reader, *trace.index, peak, std::nullopt);
    fill_fragmentation_numbers(report, &numbers);
    // At upid 1's device peak, reached at S2 (seq 7) and taken with its block in it (seq 8): S1
    // with B2, B3, S2 with B4 (4.25 MiB used); the largest free block is S2's last 1 MiB.
    QCOMPARE(value_of(numbers, QStringLiteral("Segments")), QStringLiteral("2"));
    QCOMPARE(value_of(numbers, QStringLiteral("Used (live blocks)")), QStringLiteral("4.2 MiB"));
    QCOMPARE(value_of(numbers, QStringLiteral("Largest free block")), QStringLiteral("1.0 MiB"));
    fill_fragmentation_numbers(report, &numbers);  // refilled: the tester checks the reset
  }

  void controller_loads_in_stages_with_analysis_numbers() {
    TraceController controller;
    QSignalSpy progress(&controller, &TraceController::progress);
    QSignalSpy overview(&controller, &TraceController::overview_ready);
    controller.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(controller));
    QCOMPARE(overview.count(), 1);
    QVERIFY(progress.count() >= TraceController::kStages);
    QCOMPARE(progress.last().at(0).toInt(), TraceController::kStages);

    Reference trace(allocator_);
    const analysis::Timeline timeline = analysis::build_timeline(
        *trace.reader, *trace.index, analysis::kMaxTimelineBuckets, std::nullopt);
    QCOMPARE(controller.overview()->timeline.series.size(), timeline.series.size());
    QCOMPARE(controller.overview()->timeline.series[0].peak_bytes, timeline.series[0].peak_bytes);
    QCOMPARE(controller.overview()->markers.size(), std::size_t{3});  // three 'iter' marks
    QVERIFY(controller.ooms()->empty());
    QCOMPARE(controller.overview()->map_pid, testing::kAllocatorPid);
    QCOMPARE(controller.leaks()->total_bytes,
             analysis::build_leak_report(*trace.reader).total_bytes);
    QCOMPARE(controller.fragmentation()->at.seq, std::uint64_t{8});  // the peak, B4 in S2
    QCOMPARE(controller.summary()->processes.size(), std::size_t{2});
    QVERIFY(!controller.live());
  }

  void a_range_filters_the_leaks_and_moves_the_map() {
    TraceController controller;
    controller.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(controller));
    QSignalSpy leaks(&controller, &TraceController::leaks_ready);
    QSignalSpy map(&controller, &TraceController::fragmentation_ready);
    const TimeRange range{at_seq(1) + kMs / 2, at_seq(5) + kMs / 2};
    controller.select_range(range);
    QVERIFY(leaks.wait(10000));
    if (map.count() == 0) QVERIFY(map.wait(10000));

    // Allocated after seq 1 and live after seq 5: B1, B2, B3 of upid 1.
    QCOMPARE(controller.leaks()->total_bytes, kMiB / 2 + kMiB + kMiB / 4);
    QCOMPARE(controller.leaks()->total_count, std::uint64_t{3});
    Reference trace(allocator_);
    const analysis::LeakReport between = analysis::build_leak_report_at(
        *trace.reader, *trace.index, moment_at(range.to_ns), moment_at(range.from_ns));
    QCOMPARE(controller.leaks()->total_bytes, between.total_bytes);
    QCOMPARE(controller.fragmentation()->at.seq, std::uint64_t{5});
    QCOMPARE(controller.fragmentation()->layout.used_bytes, kMiB / 2 + kMiB + kMiB / 4);
    // The range's own levels, exact, came with its leaks: one bucket, the overview's series.
    QVERIFY(controller.range_window());
    QVERIFY(controller.range_window()->exact);
    QCOMPARE(controller.range_window()->timeline.series.size(),
             controller.overview()->timeline.series.size());
    QCOMPARE(controller.range_window()->timeline.start_ns, range.from_ns);

    controller.select_range(std::nullopt);
    QVERIFY(leaks.wait(10000));
    QCOMPARE(controller.leaks()->total_bytes, 11 * kMiB + 256 * kKiB);
    QVERIFY(!controller.range_window());
  }

  void the_tree_can_show_what_was_live_at_the_peak() {
    TraceController controller;
    controller.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(controller));
    QSignalSpy leaks(&controller, &TraceController::leaks_ready);
    controller.set_tree_subject(TreeSubject::kLiveAtPeak);
    QVERIFY(leaks.wait(10000));
    // upid 1's device peak is after seq 8 (reached at S2, taken with its block B4 in it): B2 1
    // MiB, B3 256 KiB, B4 3 MiB (S1, S2 hold them); upid 2's is R3 8 MiB. `vramtrace leaks --at
    // peak`.
    QCOMPARE(controller.leaks()->total_bytes, 12 * kMiB + 256 * kKiB);
    QCOMPARE(controller.leaks_at_end()->total_bytes, 11 * kMiB + 256 * kKiB);  // kept apart
    // A range brings the leaks back.
    controller.select_range(TimeRange{at_seq(1) + kMs / 2, at_seq(5) + kMs / 2});
    QVERIFY(leaks.wait(10000));
    QVERIFY(controller.tree_subject() == TreeSubject::kLeaks);
    QCOMPARE(controller.leaks()->total_count, std::uint64_t{3});
  }

  void the_map_can_show_another_process() {
    TraceController controller;
    controller.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(controller));
    QCOMPARE(controller.overview()->processes.size(), std::size_t{2});
    QVERIFY(controller.overview()->processes[0].allocator_events);
    QVERIFY(!controller.overview()->processes[1].allocator_events);
    QSignalSpy map(&controller, &TraceController::fragmentation_ready);
    controller.set_map_process(2);  // pid 5001: R3 outside any allocator
    QVERIFY(map.wait(10000));
    QCOMPARE(controller.fragmentation()->at.pid, testing::kRawPid);
    QVERIFY(controller.fragmentation()->layout.segments.empty());
    QCOMPARE(controller.fragmentation()->layout.raw.size(), std::size_t{1});
    QCOMPARE(controller.fragmentation()->layout.raw[0].bytes, 8 * kMiB);
    // The moment stays the map's (the peak, asked at load), now resolved in this process.
    controller.select_range(TimeRange{at_seq(1) + kMs / 2, at_seq(5) + kMs / 2});
    QVERIFY(map.wait(10000));
    QCOMPARE(controller.fragmentation()->at.pid, testing::kRawPid);
    QCOMPARE(*controller.map_process(), std::int64_t{2});
    QVERIFY(controller.overview()->processes[1].devices == std::vector<int>{1});

    // One device: `frag --device`. Upid 1 has device 0 only; device 1 of it maps nothing.
    controller.set_map_process(1);
    QVERIFY(map.wait(10000));
    QCOMPARE(controller.fragmentation()->layout.segments.size(), std::size_t{1});  // S1
    controller.set_map_device(1);
    QVERIFY(map.wait(10000));
    QVERIFY(controller.fragmentation()->layout.segments.empty());
    controller.set_map_device(0);
    QVERIFY(map.wait(10000));
    QCOMPARE(controller.fragmentation()->layout.segments.size(), std::size_t{1});
  }

  void hovering_asks_what_was_live_then() {
    TraceController controller;
    controller.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(controller));
    QSignalSpy live(&controller, &TraceController::live_at_ready);
    controller.ask_live_at(at_seq(8) + kMs / 2);
    QVERIFY(live.wait(10000));
    // After seq 8: B2 1 MiB, B3 256 KiB, B4 3 MiB (blocks; segments are cache), and R3 8 MiB
    // of upid 2 (its only event, seq 1, was before).
    std::uint64_t total = 0;
    for (const analysis::LeakGroup& group : *controller.live_groups()) total += group.bytes;
    QCOMPARE(total, 12 * kMiB + 256 * kKiB);
    QCOMPARE(controller.live_groups()->front().bytes, 8 * kMiB);
  }

  void a_zoomed_window_is_analysis_own_exact_series_and_the_newest_wins() {
    TraceController controller;
    controller.open(QString::fromStdString(allocator_.string()));
    QVERIFY(wait_loaded(controller));
    // Events 2 to 9 of upid 1 over 7 columns, then (asked while the first runs) 3 to 6 over 3.
    const std::vector<std::int64_t> first{at_seq(2), at_seq(3), at_seq(4), at_seq(5),
                                          at_seq(6), at_seq(7), at_seq(8), at_seq(9)};
    const std::vector<std::int64_t> second{at_seq(3), at_seq(4), at_seq(5), at_seq(6)};
    controller.ask_zoomed_timeline(first);
    controller.ask_zoomed_timeline({at_seq(1), at_seq(2)});  // replaced before it runs
    controller.ask_zoomed_timeline(second);
    QTRY_VERIFY_WITH_TIMEOUT(
        controller.zoomed_timeline() && controller.zoomed_timeline()->edges == second, 10000);
    const Reference reference(allocator_);
    const analysis::TimelineWindow expected =
        analysis::build_timeline_window(*reference.index, controller.overview()->timeline, second);
    const analysis::TimelineWindow& got = controller.zoomed_timeline()->window;
    QVERIFY(got.exact);
    QCOMPARE(got.events, expected.events);
    QCOMPARE(got.timeline.series.size(), expected.timeline.series.size());
    for (std::size_t s = 0; s < got.timeline.series.size(); ++s) {
      for (std::size_t b = 0; b < 3; ++b) {
        QCOMPARE(got.timeline.series[s].buckets[b].min_bytes,
                 expected.timeline.series[s].buckets[b].min_bytes);
        QCOMPARE(got.timeline.series[s].buckets[b].max_bytes,
                 expected.timeline.series[s].buckets[b].max_bytes);
      }
    }
    // upid 1's device memory over [event 3, event 4): 2 MiB (S1; S2 comes at event 7).
    const auto device = std::find_if(
        got.timeline.series.begin(), got.timeline.series.end(), [](const auto& series) {
          return series.upid == 1 && series.kind == storage::allocation_kind::kDevice;
        });
    QVERIFY(device != got.timeline.series.end());
    QCOMPARE(device->buckets[0].max_bytes, 2 * kMiB);
  }

  void ooms_are_flags_and_a_jump_target() {
    TraceController controller;
    controller.open(QString::fromStdString(synthetic_.string()));
    QVERIFY(wait_loaded(controller));
    QCOMPARE(controller.ooms()->size(), std::size_t{1});
    QCOMPARE(controller.ooms()->front().requested_bytes, 64 * 1024 * kMiB);
    QCOMPARE(controller.ooms()->front().pid, 4242u);
    QSignalSpy map(&controller, &TraceController::fragmentation_ready);
    QSignalSpy failed(&controller, &TraceController::fragmentation_failed);
    analysis::MomentSpec oom;
    oom.kind = analysis::MomentSpec::Kind::kOom;
    controller.show_fragmentation_at(oom);
    QTRY_VERIFY_WITH_TIMEOUT(map.count() + failed.count() > 0, 10000);
    QCOMPARE(failed.count(), 0);
    QCOMPARE(controller.fragmentation()->at.seq, std::uint64_t{6});  // a5's failure
  }

  void files_that_are_not_traces_get_their_dialog_text() {
    const auto failure_title = [](const std::filesystem::path& path) {
      TraceController controller;
      QSignalSpy failed(&controller, &TraceController::open_failed);
      controller.open(QString::fromStdString(path.string()));
      if (!failed.wait(10000)) return QStringLiteral("<no failure>");
      const QString message = failed.first().at(1).toString();
      if (!message.contains(QString::fromStdString(path.string())))
        return QStringLiteral("<message without the path: %1>").arg(message);
      return failed.first().at(0).toString();
    };
    const auto text = dir_ / "notes.txt";
    std::ofstream(text) << "not a trace\n";
    QCOMPARE(failure_title(text), QStringLiteral("Not a vramtrace trace"));

    const auto newer = dir_ / "newer.db";
    QCOMPARE(QString::fromStdString(testing::write_synthetic_trace(newer)), QString());
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(newer.c_str(), &db), SQLITE_OK);
    QCOMPARE(sqlite3_exec(db, "PRAGMA user_version = 99;", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
    QCOMPARE(failure_title(newer), QStringLiteral("A trace from a newer vramtrace"));

    const auto cut = dir_ / "cut.db";
    std::filesystem::copy_file(synthetic_, cut);
    std::filesystem::resize_file(cut, std::filesystem::file_size(synthetic_) / 2);
    QCOMPARE(failure_title(cut), QStringLiteral("A truncated or damaged trace"));
    QCOMPARE(failure_title(dir_ / "missing.db"), QStringLiteral("No such file"));
  }

  void live_mode_follows_a_trace_being_written() {
    const auto path = dir_ / "live.db";
    std::string error;
    const std::unique_ptr<storage::TraceWriter> writer = storage::TraceWriter::create(path, &error);
    QVERIFY2(writer, error.c_str());
    testing::add_train_stacks(*writer);
    const testing::ProcessWriter process = testing::start_process(*writer, 1, 7000);
    namespace kind = storage::allocation_kind;
    namespace api = storage::api;
    process.add(process.row(1, kind::kDevice, api::kCudaMalloc, 0x1000000, kMiB, 1, 1));
    writer->flush();

    TraceController controller;
    controller.set_poll_interval(50);
    controller.open(QString::fromStdString(path.string()));
    QVERIFY(wait_loaded(controller));
    QVERIFY(!controller.overview()->complete);
    QVERIFY(controller.live());
    QCOMPARE(controller.leaks()->total_bytes, kMiB);

    QSignalSpy grown(&controller, &TraceController::overview_ready);
    QSignalSpy leaks(&controller, &TraceController::leaks_ready);
    process.add(process.row(2, kind::kDevice, api::kCudaMalloc, 0x2000000, 2 * kMiB, 2, 2));
    writer->flush();
    QVERIFY(grown.wait(10000));
    QVERIFY(leaks.wait(10000));
    QCOMPARE(controller.leaks()->total_bytes, 3 * kMiB);
    QCOMPARE(controller.overview()->timeline.end_ns, testing::ns_of_seq(2));

    QSignalSpy summary(&controller, &TraceController::summary_ready);
    QVERIFY(writer->finish(&error));
    QTRY_VERIFY_WITH_TIMEOUT(!controller.live(), 10000);  // complete: polling stops
    QVERIFY(controller.overview()->complete);
    QTRY_VERIFY_WITH_TIMEOUT(controller.summary()->trace_complete, 10000);  // it follows too
    QVERIFY(summary.count() >= 1);
  }

  void a_trace_without_allocations_loads_with_nothing_to_map() {
    const auto path = dir_ / "empty.db";
    std::string error;
    const std::unique_ptr<storage::TraceWriter> writer = storage::TraceWriter::create(path, &error);
    QVERIFY2(writer, error.c_str());
    testing::start_process(*writer, 1, 7100);
    QVERIFY(writer->finish(&error));

    TraceController controller;
    QSignalSpy unmapped(&controller, &TraceController::fragmentation_failed);
    controller.open(QString::fromStdString(path.string()));
    QVERIFY(wait_loaded(controller));
    QVERIFY(controller.overview()->timeline.series.empty());
    QVERIFY(!controller.overview()->map_upid);
    QCOMPARE(controller.leaks()->total_bytes, std::uint64_t{0});
    QVERIFY(controller.ooms()->empty());
    controller.show_fragmentation_at(moment_at(0));
    QCOMPARE(unmapped.count(), 1);  // said at once, nothing asked of the trace
    controller.select_range(TimeRange{0, 10});
    QSignalSpy leaks(&controller, &TraceController::leaks_ready);
    QVERIFY(leaks.wait(10000));
    QCOMPARE(controller.leaks()->total_count, std::uint64_t{0});
  }

  void summary_gains_a_section_for_the_selected_range() {
    Reference trace(allocator_);
    QStandardItemModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    fill_summary_model(allocator_.string(), analysis::build_summary(*trace.reader),
                       analysis::build_leak_report(*trace.reader), at_seq(1), &model);
    const int sections = model.rowCount();
    const StackedTimeline timeline(
        analysis::build_timeline(*trace.reader, *trace.index, analysis::kMaxTimelineBuckets,
                                 std::nullopt),
        "segment");
    const TimeRange range{at_seq(1) + kMs / 2, at_seq(5) + kMs / 2};
    const analysis::LeakReport leaks = leaks_in(*trace.reader, *trace.index, range);
    add_range_section(range, timeline, nullptr, "segment", leaks, &model);
    add_range_section(range, timeline, nullptr, "segment", leaks, &model);  // replaces
    QCOMPARE(model.rowCount(), sections + 1);
    QStandardItem* section = model.item(0, 0);
    QCOMPARE(section->text(), QStringLiteral("Selected range"));
    // Device 0 held S1 (2 MiB) all through; device 1 R3 (8 MiB); then the range's leaks.
    QCOMPARE(section->rowCount(), 4);
    QCOMPARE(section->child(0, 1)->text(),
             QStringLiteral("over the timeline's buckets the range touches"));
    QCOMPARE(section->child(1, 1)->text(), QStringLiteral("2.0 MiB to 2.0 MiB live"));
    QCOMPARE(section->child(2, 1)->text(), QStringLiteral("8.0 MiB to 8.0 MiB live"));
    QCOMPARE(section->child(3, 1)->text(), QStringLiteral("1.8 MiB in 3 allocations"));
  }

  // Over a coarse timeline a range inside one bucket would show the whole bucket's least and
  // most; its exact window shows its own.
  void the_selected_ranges_levels_are_its_own_not_its_buckets() {
    Reference trace(allocator_);
    // Two buckets: the first holds events 1 to 7.
    const analysis::Timeline coarse =
        analysis::build_timeline(*trace.reader, *trace.index, 2, std::nullopt);
    const StackedTimeline timeline(coarse, "block");
    // Blocks of device 0: 1.75 MiB after event 5, 1.25 MiB after event 6.
    const TimeRange range{at_seq(5) + kMs / 2, at_seq(6) + kMs / 2};
    const analysis::TimelineWindow window =
        analysis::build_timeline_window(*trace.index, coarse, {range.from_ns, range.to_ns + 1});
    QVERIFY(window.exact);
    const analysis::LeakReport leaks = leaks_in(*trace.reader, *trace.index, range);
    QStandardItemModel model;
    add_range_section(range, timeline, &window, "block", leaks, &model);
    QStandardItem* section = model.item(0, 0);
    QCOMPARE(section->rowCount(), 2);
    QCOMPARE(section->child(0, 0)->text(), QStringLiteral("device 0 block"));
    QCOMPARE(section->child(0, 1)->text(), QStringLiteral("1.2 MiB to 1.8 MiB live"));
    QStandardItemModel by_buckets;
    add_range_section(range, timeline, nullptr, "block", leaks, &by_buckets);
    QCOMPARE(by_buckets.item(0, 0)->child(1, 1)->text(), QStringLiteral("0 B to 1.8 MiB live"));
  }

  void summary_lists_each_advice_with_its_evidence() {
    analysis::Summary summary;
    analysis::Advice advice;
    advice.id = analysis::kAdvicePinnedMemory;
    advice.text = "pin less";
    advice.evidence = {{"pid", 5000}, {"pinned_bytes", 2ull << 30}};
    summary.advice = {advice};
    QStandardItemModel model;
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    fill_summary_model("t.db", summary, analysis::LeakReport{}, 0, &model);
    const QList<QStandardItem*> found = model.findItems(QStringLiteral("Advice"));
    QCOMPARE(found.size(), 1);
    QStandardItem* rule = found.front()->child(0, 0);
    QCOMPARE(rule->text(), QStringLiteral("pinned_memory"));
    QCOMPARE(found.front()->child(0, 1)->text(), QStringLiteral("pin less"));
    QCOMPARE(rule->rowCount(), 2);
    QCOMPARE(rule->child(1, 0)->text(), QStringLiteral("pinned_bytes"));
    QCOMPARE(rule->child(1, 1)->text(), QStringLiteral("2147483648"));
  }

  // A PyTorch leak's row names the user's line, not the allocator's frame innermost in its
  // stack; a stack all of frameworks names the innermost.
  void summary_names_each_leak_by_the_users_line() {
    storage::StackFrame allocator;
    allocator.function = "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc";
    allocator.module = "/venv/lib/python3.11/site-packages/torch/lib/libc10_cuda.so";
    storage::StackFrame torch_python;
    torch_python.function = "Module._apply";
    torch_python.file = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py";
    torch_python.line = 933;
    torch_python.language = storage::FrameLanguage::kPython;
    storage::StackFrame user = torch_python;
    user.function = "<module>";
    user.file = "/work/train.py";
    user.line = 12;
    analysis::LeakReport leaks;
    leaks.level = "block";
    analysis::LeakGroup from_user;
    from_user.kind_name = "block";
    from_user.bytes = 4 << 20;
    from_user.count = 2;
    from_user.stack = {allocator, torch_python, user};
    analysis::LeakGroup from_library = from_user;
    from_library.stack = {allocator};
    leaks.groups = {from_user, from_library};
    QStandardItemModel model;
    fill_summary_model("t.db", analysis::Summary{}, leaks, 0, &model);
    const QList<QStandardItem*> found = model.findItems(QStringLiteral("Leaks (block level)"));
    QCOMPARE(found.size(), 1);
    QCOMPARE(found.front()->child(0, 0)->text(),
             QStringLiteral("<module> (/work/train.py:12) (block)"));
    QVERIFY(found.front()->child(1, 0)->text().startsWith(QStringLiteral("c10::cuda::")));
  }

  void source_excerpt_reads_the_lines_around_a_frame() {
    const auto source = dir_ / "model.py";
    std::ofstream(source) << "a\nb\nc\nd\ne\n";
    const std::optional<SourceExcerpt> excerpt = read_source_excerpt(source.string(), 2, 2);
    QVERIFY(excerpt);
    QCOMPARE(excerpt->first_line, 1);
    QCOMPARE(excerpt->lines.size(), std::size_t{4});  // lines 1-4
    QCOMPARE(excerpt->lines[1], std::string("b"));
    QVERIFY(!read_source_excerpt(source.string(), 9, 2));  // past the end
    QVERIFY(!read_source_excerpt((dir_ / "gone.py").string(), 1, 2));
  }

 private:
  testing::TempDir dir_;
  std::filesystem::path allocator_, synthetic_;
};

}  // namespace vramtrace::viewer

QTEST_GUILESS_MAIN(vramtrace::viewer::ModelTest)
#include "viewer_model_test.moc"
