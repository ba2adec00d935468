#include "collector/marker_tracker.h"

#include <optional>
#include <string>

#include "storage/trace_writer.h"

namespace vramtrace::collector {
namespace {

std::string_view source_of(const wire::Marker& m) {
  switch (m.source()) {
    case wire::Marker::SOURCE_API:
      return storage::kMarkerFromApi;
    case wire::Marker::SOURCE_SHIM:
      return storage::kMarkerFromShim;
    default:
      return storage::kMarkerFromNvtx;
  }
}

}  // namespace

MarkerTracker::MarkerTracker(storage::TraceWriter& writer, IngestStats& stats)
    : writer_(writer), stats_(stats) {}

void MarkerTracker::on_marker(MarkerPairing& ranges, int64_t upid, int64_t utid,
                              const ring::RecordHeader& h, const wire::Marker& m) {
  auto begin = [&](std::string type, int depth, std::optional<int64_t> parent) {
    storage::MarkerRow row;
    row.id = next_marker_id_++;
    row.upid = upid;
    row.utid = utid;
    row.type = std::move(type);
    row.source = source_of(m);
    if (!m.domain().empty()) row.domain = m.domain();
    row.name = m.name();
    row.start_seq = h.seq;
    row.start_ns = h.time_ns;
    row.depth = depth;
    row.parent_id = parent;
    if (m.color() != 0) row.color = m.color();
    if (m.category() != 0) row.category = m.category();
    writer_.add_marker(row);
    return row.id;
  };
  auto finish = [&](std::optional<int64_t> id, Stat unmatched) {
    if (!id) {
      stats_.add(unmatched);
      return;
    }
    writer_.end_marker(*id, storage::MarkerEndRow{h.seq, h.time_ns, utid});
  };
  switch (m.type()) {
    case wire::Marker::TYPE_MARK:
      begin("mark", 0, std::nullopt);
      return;
    case wire::Marker::TYPE_RANGE_PUSH: {
      // The id is known before the row exists, so the pairing can record it first.
      const int64_t id = next_marker_id_;
      const MarkerPairing::Nesting nesting = ranges.push({m.tid(), m.source(), m.domain()}, id);
      begin("range", nesting.depth, nesting.parent);
      return;
    }
    case wire::Marker::TYPE_RANGE_POP:
      finish(ranges.pop({m.tid(), m.source(), m.domain()}), Stat::kMarkerPopWithoutPush);
      return;
    case wire::Marker::TYPE_RANGE_START:
      ranges.start(m.range_id(), begin("range", 0, std::nullopt));
      return;
    case wire::Marker::TYPE_RANGE_END:
      finish(ranges.end(m.range_id()), Stat::kMarkerEndWithoutStart);
      return;
    default:
      stats_.add(Stat::kMarkerUnknownType);
      return;
  }
}

}  // namespace vramtrace::collector
