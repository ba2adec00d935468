// The viewer's geometry on hand-made values: time to x and back, zoom and pan, the timeline's
// level of detail (min/max per pixel column), the axes' round ticks, where a trace opens, the
// flame graph's boxes, and the fragmentation map's address to x.
#include <QtTest>
#include <cmath>

#include "storage/live_bytes_rollups.h"
#include "storage/time_index.h"
#include "viewer/model/axis_ticks.h"
#include "viewer/model/exact_zoom.h"
#include "viewer/model/flame_graph_layout.h"
#include "viewer/model/marker_layout.h"
#include "viewer/model/opening_view.h"
#include "viewer/model/segment_map_geometry.h"
#include "viewer/model/stacked_timeline.h"
#include "viewer/model/time_axis.h"

namespace vramtrace::viewer {
namespace {

constexpr std::uint64_t kMiB = 1 << 20;

// One series of `values` (each the min, max and last of its bucket), buckets of 10 ns from 0.
analysis::TimelineSeries series(std::int64_t upid, int device, int kind, const char* level,
                                const std::vector<std::uint64_t>& values,
                                std::int64_t bucket_ns = 10) {
  analysis::TimelineSeries s;
  s.upid = upid;
  s.device = device;
  s.kind = kind;
  s.kind_name = kind == 8 ? "block" : kind == 5 ? "vmm_reservation" : "device";
  s.level = level;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const auto start = static_cast<std::int64_t>(i) * bucket_ns;
    s.buckets.push_back({start, start + bucket_ns, values[i], values[i], values[i]});
  }
  return s;
}

analysis::CallsiteNode node(const char* function, std::uint64_t bytes,
                            std::vector<analysis::CallsiteNode> children = {}) {
  analysis::CallsiteNode n;
  n.frame.function = function;
  n.bytes = bytes;
  n.count = 1;
  n.children = std::move(children);
  return n;
}

}  // namespace

class GeometryTest : public QObject {
  Q_OBJECT

 private slots:
  void time_axis_maps_time_to_x_and_back() {
    const TimeAxis axis(1000, 2000, 100);  // 10 ns per pixel
    QCOMPARE(axis.x_of(1000), 0.0);
    QCOMPARE(axis.x_of(1500), 50.0);
    QCOMPARE(axis.x_of(2000), 100.0);
    QCOMPARE(axis.ns_at(25), std::int64_t{1250});
    QCOMPARE(axis.ns_at(-5), std::int64_t{1000});  // clamped to the trace
    QCOMPARE(axis.column_span(3), std::make_pair(std::int64_t{1030}, std::int64_t{1040}));
  }

  void zoom_keeps_the_time_under_the_mouse() {
    TimeAxis axis(0, 1'000'000, 1000);
    const std::int64_t before = axis.ns_at(250);
    axis.zoom(4, 250);
    QCOMPARE(axis.visible_end_ns() - axis.visible_start_ns(), std::int64_t{250'000});
    QCOMPARE(axis.ns_at(250), before);
    axis.zoom(0.25, 250);  // and back out
    QVERIFY(axis.shows_whole_trace());
  }

  void zoom_stops_at_a_microsecond_and_at_the_trace() {
    TimeAxis axis(0, 1'000'000, 1000);
    axis.zoom(1e9, 500);
    QCOMPARE(axis.visible_end_ns() - axis.visible_start_ns(), TimeAxis::kMinSpanNs);
    axis.zoom(1e-9, 500);
    QVERIFY(axis.shows_whole_trace());
  }

  void pan_moves_within_the_trace() {
    TimeAxis axis(0, 100'000, 100);
    axis.show(10'000, 20'000);  // 100 ns per pixel
    axis.pan(50);
    QCOMPARE(axis.visible_start_ns(), std::int64_t{15'000});
    axis.pan(-1000);
    QCOMPARE(axis.visible_start_ns(), std::int64_t{0});
    QCOMPARE(axis.visible_end_ns(), std::int64_t{10'000});
    axis.pan(5000);
    QCOMPARE(axis.visible_end_ns(), std::int64_t{100'000});
    QCOMPARE(axis.visible_start_ns(), std::int64_t{90'000});
  }

  void a_growing_trace_keeps_a_zoomed_view_and_a_whole_one_whole() {
    TimeAxis whole(0, 100'000, 100);
    whole.set_trace_range(0, 200'000);
    QVERIFY(whole.shows_whole_trace());
    TimeAxis zoomed(0, 100'000, 100);
    zoomed.show(10'000, 30'000);
    zoomed.set_trace_range(0, 200'000);
    QCOMPARE(zoomed.visible_start_ns(), std::int64_t{10'000});
    QCOMPARE(zoomed.visible_end_ns(), std::int64_t{30'000});
  }

  void zoomed_below_two_buckets_a_column_the_view_asks_for_the_exact_series() {
    // The index's buckets are 1000 ns wide on this trace.
    const std::int64_t end = 1000 * std::int64_t{storage::kLiveBytesBuckets} - 1;
    TimeAxis axis(0, end, 1000);
    QVERIFY(!wants_exact_window(axis, 1000));  // 16 buckets a column
    axis.show(0, 2000 * 1000);                 // 2 buckets a column: the buckets still do
    QVERIFY(!wants_exact_window(axis, 1000));
    axis.show(0, 1999 * 1000);
    QVERIFY(wants_exact_window(axis, 1000));
    QVERIFY(!wants_exact_window(axis, 500));  // with buckets half as wide, still 4 a column
    axis.show(5000, 6000);                    // one bucket over the whole view
    QVERIFY(wants_exact_window(axis, 1000));

    // The width comes from the finest timeline: its span over its buckets, the index's slices
    // of a power of two ns (11719 of 1024 ns over 12 ms), whatever their number.
    analysis::Timeline finest;
    finest.start_ns = 1'001'000'000;
    finest.end_ns = 1'013'000'000;
    finest.series.emplace_back().buckets.resize(11719);
    QVERIFY(std::abs(index_bucket_ns(finest) - 1024.0) < 1.0);

    const std::vector<std::int64_t> edges = column_edges(axis);
    QCOMPARE(edges.size(), std::size_t{1001});
    QCOMPARE(edges.front(), std::int64_t{5000});
    QCOMPARE(edges.back(), std::int64_t{6000});
    for (int x = 0; x < axis.width(); ++x) {
      QCOMPARE(edges[static_cast<std::size_t>(x)], axis.column_span(x).first);
      QVERIFY(edges[static_cast<std::size_t>(x)] <= edges[static_cast<std::size_t>(x) + 1]);
    }
  }

  void the_axes_are_labelled_at_round_values() {
    // 1.23 s in at most 10 steps: 200 ms ones, labelled as a person writes them.
    const std::uint64_t step = decimal_step(1'230'000'000, 10);
    QCOMPARE(step, std::uint64_t{200'000'000});
    const std::vector<std::uint64_t> times = multiples_between(0, 1'230'000'000, step);
    QCOMPARE(times.size(), std::size_t{7});
    QCOMPARE(times.back(), std::uint64_t{1'200'000'000});
    QCOMPARE(time_tick_text(1000 + 200'000'000, 1000), QStringLiteral("200 ms"));
    QCOMPARE(time_tick_text(1000 + 1'200'000'000, 1000), QStringLiteral("1.2 s"));
    QCOMPARE(time_tick_text(1000 + 50'000, 1000), QStringLiteral("50 us"));
    QCOMPARE(decimal_step(7, 10), std::uint64_t{1});
    QCOMPARE(decimal_step(25'000, 2), std::uint64_t{20'000});
    // A view that starts between ticks: the first tick is the next round value.
    QCOMPARE(multiples_between(150, 1000, 200),
             (std::vector<std::uint64_t>{200, 400, 600, 800, 1000}));
    QVERIFY(multiples_between(5, 4, 1).empty());
    // Bytes by powers of two: 422 MiB in at most 5 steps of 128 MiB, each label exact.
    QCOMPARE(power_of_two_step(422 * kMiB, 5), 128 * kMiB);
    QCOMPARE(byte_tick_text(384 * kMiB), QStringLiteral("384 MiB"));
    QCOMPARE(byte_tick_text(1536 * kMiB), QStringLiteral("1.5 GiB"));
    QCOMPARE(byte_tick_text(512), QStringLiteral("512 B"));
    QCOMPARE(power_of_two_step(0, 5), std::uint64_t{1});
  }

  void a_pytorch_trace_opens_on_its_blocks_where_they_are_busy() {
    // The start-up: the model's parameters made at once, then 890 ns of nothing (the first
    // kernels loaded, the data read); then the loop's blocks, changing each bucket.
    std::vector<std::uint64_t> device(100, kMiB), blocks(100, kMiB);
    blocks[0] = 0;
    for (std::size_t i = 90; i < 100; ++i) blocks[i] = (2 + i % 2) * kMiB;
    analysis::Timeline timeline;
    timeline.start_ns = 0;
    timeline.end_ns = 1000;
    timeline.series = {series(1, 0, 1, "segment", device), series(1, 0, 8, "block", blocks)};
    const OpeningView view = opening_view(timeline);
    QCOMPARE(view.level, std::string("block"));
    QCOMPARE(view.end_ns, std::int64_t{1000});
    QVERIFY2(view.start_ns < 900 && view.start_ns >= 880, std::to_string(view.start_ns).c_str());
    // The same with the blocks' first bytes late: the quiet spell runs from the trace's start.
    blocks[0] = blocks[1] = 0;
    std::fill(blocks.begin(), blocks.begin() + 90, 0);
    timeline.series[1] = series(1, 0, 8, "block", blocks);
    QCOMPARE(opening_view(timeline).start_ns, view.start_ns);
    // A pause in the middle of a busy trace (an evaluation on the CPU) is no start-up.
    std::vector<std::uint64_t> paused(100, kMiB);
    for (std::size_t i = 0; i < 100; ++i)
      if (i < 30 || i >= 70) paused[i] = (1 + i % 2) * kMiB;
    timeline.series[1] = series(1, 0, 8, "block", paused);
    QCOMPARE(opening_view(timeline).start_ns, std::int64_t{0});
    // A short start-up: the whole trace.
    std::vector<std::uint64_t> busy(100, 0);
    for (std::size_t i = 5; i < 100; ++i) busy[i] = (1 + i % 2) * kMiB;
    timeline.series[1] = series(1, 0, 8, "block", busy);
    QCOMPARE(opening_view(timeline).start_ns, std::int64_t{0});
    // No blocks: the segment level, the whole trace.
    timeline.series.pop_back();
    const OpeningView plain = opening_view(timeline);
    QCOMPARE(plain.level, std::string("segment"));
    QCOMPARE(plain.start_ns, std::int64_t{0});
    QCOMPARE(plain.end_ns, std::int64_t{1000});
  }

  void stacked_timeline_sums_processes_per_device_and_kind_of_one_level() {
    analysis::Timeline timeline;
    timeline.start_ns = 0;
    timeline.end_ns = 40;
    timeline.series = {
        series(1, 0, 1, "segment", {1, 2, 3, 4}), series(2, 0, 1, "segment", {10, 10, 10, 10}),
        series(1, 1, 1, "segment", {5, 5, 5, 5}), series(1, 0, 8, "block", {100, 100, 100, 100})};
    QVERIFY(StackedTimeline::levels_of(timeline) == (std::vector<std::string>{"segment", "block"}));
    const StackedTimeline segments(timeline, "segment");
    QCOMPARE(segments.layers().size(), std::size_t{2});  // device 0 (two processes), device 1
    QCOMPARE(segments.layers()[0].device, 0);
    QCOMPARE(segments.layers()[0].peak_bytes, std::uint64_t{14});
    QVERIFY(segments.bytes_at(25) == (std::vector<std::uint64_t>{13, 5}));
    const StackedTimeline blocks(timeline, "block");
    QCOMPARE(blocks.layers().size(), std::size_t{1});  // never stacked with segments
    QVERIFY(blocks.bytes_at(0) == (std::vector<std::uint64_t>{100}));
  }

  void only_kinds_that_occupy_device_memory_are_stacked() {
    analysis::Timeline timeline;
    timeline.start_ns = 0;
    timeline.end_ns = 20;
    // A 1 GiB reservation (address space) beside 3 MiB of device memory and 2 MiB of mappings.
    timeline.series = {series(1, 0, 1, "segment", {3 * kMiB, 3 * kMiB}),
                       series(1, 0, 5, "segment", {1024 * kMiB, 1024 * kMiB}),
                       series(1, 0, 7, "segment", {2 * kMiB, 2 * kMiB})};
    const StackedTimeline stacked(timeline, "segment");
    QCOMPARE(stacked.layers().size(), std::size_t{3});
    QVERIFY(stacked.layers()[0].stacked);   // device
    QVERIFY(!stacked.layers()[1].stacked);  // vmm_reservation
    QVERIFY(stacked.layers()[2].stacked);   // vmm_mapping
    const std::vector<TimelineColumn> columns = stacked.columns(TimeAxis(0, 20, 2));
    QCOMPARE(columns[0].top_bytes, 1024 * kMiB);  // the line's top, not 1029 MiB
    timeline.series.erase(timeline.series.begin() + 1);
    const std::vector<TimelineColumn> without =
        StackedTimeline(timeline, "segment").columns(TimeAxis(0, 20, 2));
    QCOMPARE(without[1].top_bytes, 5 * kMiB);  // device and mappings add up
  }

  void a_column_keeps_the_min_and_max_of_its_buckets() {
    // 16 buckets with one spike, drawn 4 pixels wide: 4 buckets a column.
    std::vector<std::uint64_t> values(16, 2 * kMiB);
    values[5] = 64 * kMiB;
    values[10] = kMiB;
    analysis::Timeline timeline;
    timeline.start_ns = 0;
    timeline.end_ns = 160;
    timeline.series = {series(1, 0, 1, "segment", values)};
    const StackedTimeline stacked(timeline, "segment");
    const std::vector<TimelineColumn> columns = stacked.columns(TimeAxis(0, 160, 4));
    QCOMPARE(columns.size(), std::size_t{4});
    QCOMPARE(columns[1].max_bytes[0], 64 * kMiB);  // the spike survives
    QCOMPARE(columns[1].min_bytes[0], 2 * kMiB);
    QCOMPARE(columns[2].min_bytes[0], kMiB);  // and so does the dip
    QCOMPARE(columns[0].top_bytes, 2 * kMiB);
    // A range's extremes: buckets 4 to 10 hold the spike and the dip.
    const std::vector<StackedTimeline::Extremes> range = stacked.extremes(45, 105);
    QCOMPARE(range.size(), std::size_t{1});
    QCOMPARE(range[0].max_bytes, 64 * kMiB);
    QCOMPARE(range[0].min_bytes, kMiB);
    QCOMPARE(stacked.extremes(0, 39)[0].max_bytes, 2 * kMiB);
    // Zoomed in past the buckets (1 us each here): a column shows the buckets it lies in.
    timeline.end_ns = 16000;
    timeline.series = {series(1, 0, 1, "segment", values, 1000)};
    const StackedTimeline microseconds(timeline, "segment");
    TimeAxis zoomed(0, 16000, 4);
    zoomed.show(5100, 6100);
    const std::vector<TimelineColumn> fine = microseconds.columns(zoomed);
    QCOMPARE(fine.size(), std::size_t{4});
    for (const TimelineColumn& column : fine) QCOMPARE(column.max_bytes[0], 64 * kMiB);
    QCOMPARE(microseconds.bucket_at(5999), std::size_t{5});
    QCOMPARE(microseconds.bucket_at(6000), std::size_t{6});
  }

  void markers_narrower_than_a_pixel_merge_into_one_band() {
    // 10,000 iterations of 10 ns each over 100 pixels (1000 ns a pixel), a range around them
    // all, and two marks on one pixel.
    std::vector<TimelineMarker> markers;
    TimelineMarker outer;
    outer.name = "epoch";
    outer.range = true;
    outer.start_ns = 0;
    outer.end_ns = 100'000;
    markers.push_back(outer);
    for (std::int64_t i = 0; i < 10'000; ++i) {
      TimelineMarker iteration;
      iteration.name = "iteration";
      iteration.range = true;
      iteration.depth = 1;
      iteration.start_ns = i * 10;
      iteration.end_ns = i * 10 + 10;
      markers.push_back(iteration);
    }
    TimelineMarker mark;
    mark.start_ns = mark.end_ns = 50'100;
    markers.push_back(mark);
    mark.start_ns = mark.end_ns = 50'200;
    markers.push_back(mark);
    std::stable_sort(markers.begin(), markers.end(),
                     [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });

    const MarkerLayout layout = lay_out_markers(markers, TimeAxis(0, 100'000, 100), 3);
    QCOMPARE(layout.bands.size(), std::size_t{2});  // the epoch, and all iterations as one
    QCOMPARE(layout.bands[0].row, 0);
    QVERIFY(!layout.bands[0].merged);
    QCOMPARE(layout.bands[0].to_x, 100.0);
    QCOMPARE(layout.bands[1].row, 1);
    QVERIFY(layout.bands[1].merged);
    QCOMPARE(layout.bands[1].from_x, 0.0);
    QCOMPARE(layout.bands[1].to_x, 100.0);
    QCOMPARE(layout.marks.size(), std::size_t{1});  // one pixel, one line
    QCOMPARE(layout.marks[0].x, 50.1);

    // Zoomed in on 100 ns: ten iterations a pixel wide each, with their own bands.
    TimeAxis zoomed(0, 100'000, 100);
    zoomed.show(1000, 2000);
    const MarkerLayout near = lay_out_markers(markers, zoomed, 3);
    std::size_t iterations = 0;
    for (const MarkerBand& band : near.bands) iterations += band.row == 1 && !band.merged;
    QCOMPARE(iterations, std::size_t{100});  // 10 ns over 10 ns a pixel: 100 visible
    QVERIFY(lay_out_markers(markers, zoomed, 1).bands.size() == 1);  // depth 1 left out
  }

  void flame_graph_boxes_are_shares_of_the_bytes() {
    const std::vector<analysis::CallsiteNode> roots{
        node("main", 300, {node("big", 200), node("small", 100)}), node("other", 100)};
    const std::vector<FlameBox> boxes = lay_out_flame_graph(roots);
    QCOMPARE(boxes.size(), std::size_t{4});
    QCOMPARE(boxes[0].width, 0.75);  // main
    QCOMPARE(boxes[1].depth, 1);     // big, under main, from its left edge
    QCOMPARE(boxes[1].x, 0.0);
    QCOMPARE(boxes[1].width, 0.5);
    QCOMPARE(boxes[2].x, 0.5);  // small, beside big
    QCOMPARE(boxes[3].x, 0.75);
    QCOMPARE(flame_graph_depth(boxes), 2);
    QCOMPARE(*flame_box_at(boxes, 0.6, 1)->node->frame.function, std::string("small"));
    QCOMPARE(flame_box_at(boxes, 0.9, 1), nullptr);  // nothing under `other`
    QVERIFY(lay_out_flame_graph({}).empty());
  }

  void segment_map_puts_every_segment_on_one_scale() {
    analysis::Fragmentation layout;
    analysis::SegmentLayout in_use;
    in_use.address = 0x10000000;
    in_use.size = 2 * kMiB;
    in_use.blocks = {{0x10000000, kMiB / 2, kMiB / 4, true},
                     {0x10080000, kMiB, std::nullopt, false},
                     {0x10180000, kMiB / 2, std::nullopt, true}};
    analysis::SegmentLayout idle;
    idle.address = 0x20000000;
    idle.size = kMiB;
    idle.blocks = {{0x20000000, kMiB, std::nullopt, false}};
    layout.segments = {in_use, idle};

    const SegmentMapGeometry map(layout, 200, 20, 5);
    QCOMPARE(map.bars().size(), std::size_t{2});
    QCOMPARE(map.bars()[0].width(), 200.0);  // the largest spans the width
    QCOMPARE(map.bars()[1].width(), 100.0);  // half as large, half as wide
    QCOMPARE(map.bars()[1].top(), 25.0);
    QCOMPARE(map.height(), 45.0);
    QCOMPARE(map.x_of(0, 0x10080000), 50.0);
    QCOMPARE(map.blocks().size(), std::size_t{4});
    QVERIFY(map.blocks()[0].state == BlockState::kUsed);
    QCOMPARE(*map.blocks()[0].requested_width, 25.0);  // requested a quarter of a MiB
    QVERIFY(map.blocks()[1].state == BlockState::kFree);
    QCOMPARE(map.blocks()[1].rect, QRectF(50, 0, 100, 20));
    QVERIFY(!map.blocks()[2].requested_width);
    QVERIFY(map.blocks()[3].state == BlockState::kCached);  // no live block in its segment
    QCOMPARE(map.block_at(QPointF(160, 10))->block, std::size_t{2});
    QCOMPARE(map.block_at(QPointF(150, 30)), nullptr);  // past the smaller segment's end

    // A 512-byte tensor in a 1 GiB segment: far narrower than a pixel, yet found under the
    // mouse before the free space around it.
    analysis::Fragmentation huge;
    analysis::SegmentLayout segment;
    segment.address = 0;
    segment.size = 1024 * kMiB;
    segment.blocks = {{0, 512 * kMiB, std::nullopt, false},
                      {512 * kMiB, 512, 512, true},
                      {512 * kMiB + 512, 512 * kMiB - 512, std::nullopt, false}};
    huge.segments = {segment};
    const SegmentMapGeometry wide(huge, 200, 20, 5);
    QVERIFY(wide.blocks()[1].rect.width() < 0.01);
    QCOMPARE(wide.block_at(QPointF(100.5, 10))->block, std::size_t{1});
    QCOMPARE(wide.block_at(QPointF(103, 10))->block, std::size_t{2});
  }
};

}  // namespace vramtrace::viewer

QTEST_GUILESS_MAIN(vramtrace::viewer::GeometryTest)
#include "viewer_geometry_test.moc"
