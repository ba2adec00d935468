#include "cli/frag_output.h"

#include <fmt/core.h>

#include <algorithm>
#include <memory>

#include "cli/csv_table.h"
#include "cli/time_query.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;

namespace {

using Json = nlohmann::ordered_json;

// Characters per segment row of the map.
constexpr std::size_t kMapWidth = 64;

// Slice i of kMapWidth equal slices of the segment: used, free or both.
std::string segment_map(const analysis::SegmentLayout& segment) {
  std::string row;
  auto block = segment.blocks.begin();
  for (std::size_t i = 0; i < kMapWidth; ++i) {
    const std::uint64_t from = segment.address + segment.size * i / kMapWidth;
    const std::uint64_t to = segment.address + segment.size * (i + 1) / kMapWidth;
    bool used = false, free = false;
    while (block != segment.blocks.end() && block->address + block->size <= from) ++block;
    for (auto b = block; b != segment.blocks.end() && b->address < std::max(to, from + 1); ++b)
      (b->used ? used : free) = true;
    row += used && free ? '+' : used ? '#' : '.';
  }
  return row;
}

}  // namespace

Json fragmentation_json(const analysis::FragmentationReport& report) {
  const analysis::Fragmentation& layout = report.layout;
  Json segments = Json::array();
  for (const analysis::SegmentLayout& segment : layout.segments) {
    Json blocks = Json::array();
    for (const analysis::SegmentBlock& block : segment.blocks) {
      blocks.push_back({{"address", block.address},
                        {"size", block.size},
                        {"requested", block.requested ? Json(*block.requested) : Json(nullptr)},
                        {"state", block.used ? "used" : "free"}});
    }
    segments.push_back({{"device", segment.device},
                        {"address", segment.address},
                        {"size", segment.size},
                        {"blocks", std::move(blocks)}});
  }
  Json free_sizes = Json::array();
  for (const analysis::FreeSizeBin& bin : layout.free_sizes)
    free_sizes.push_back(
        {{"from", bin.from}, {"to", bin.to}, {"count", bin.count}, {"bytes", bin.bytes}});
  Json raw = Json::array();
  for (const analysis::RawAllocations& device : layout.raw) {
    Json gaps = Json::array();
    for (const analysis::AddressGap& gap : device.gaps)
      gaps.push_back({{"address", gap.address}, {"size", gap.size}});
    raw.push_back({{"device", device.device},
                   {"count", device.count},
                   {"bytes", device.bytes},
                   {"gaps", std::move(gaps)}});
  }
  return {
      {"at",
       {{"seq", report.at.seq},
        {"time_ns", report.at.time_ns ? Json(*report.at.time_ns) : Json(nullptr)}}},
      {"segments", std::move(segments)},
      {"total_free", layout.total_free},
      {"largest_free", layout.largest_free},
      {"external_fragmentation", layout.external_fragmentation},
      {"internal_fragmentation", layout.internal_fragmentation},
      // After the contract: which process, and what the text form shows besides.
      {"process", {{"upid", report.at.upid}, {"pid", report.at.pid}}},
      {"allocator_events", report.allocator_events},
      {"largest_request", layout.largest_request},
      {"free_block_sizes", std::move(free_sizes)},
      {"raw", std::move(raw)},
  };
}

std::string fragmentation_text(const std::string& trace_path,
                               const analysis::FragmentationReport& report) {
  const analysis::Fragmentation& layout = report.layout;
  std::string text = fmt::format("vramtrace: fragmentation of pid {} in {} at seq {}",
                                 report.at.pid, trace_path, report.at.seq);
  text += report.at.time_ns ? fmt::format(" ({} ns)\n", *report.at.time_ns) : "\n";
  if (!report.allocator_events) {
    text += "no allocator events in this process: no segments to map\n";
  } else if (layout.segments.empty()) {
    text += "no allocator segment was live then\n";
  } else {
    std::uint64_t bytes = 0;
    for (const analysis::SegmentLayout& segment : layout.segments) bytes += segment.size;
    text += fmt::format("{} of {}: {} used, {} free (largest free block {})\n",
                        count_of(layout.segments.size(), "segment", "segments"),
                        format_bytes(bytes), format_bytes(layout.used_bytes),
                        format_bytes(layout.total_free), format_bytes(layout.largest_free));
    text += fmt::format(
        "external fragmentation {:.3f}, internal {:.3f}; largest request without a new segment: "
        "{}\n\n",
        layout.external_fragmentation, layout.internal_fragmentation,
        format_bytes(layout.largest_request));
    text += fmt::format("{:>3}  {:<16} {:>10}  map ({} slices: # used, . free, + both)\n", "dev",
                        "address", "size", kMapWidth);
    for (const analysis::SegmentLayout& segment : layout.segments) {
      text += fmt::format("{:>3}  {:<#16x} {:>10}  |{}|\n", segment.device, segment.address,
                          format_bytes(segment.size), segment_map(segment));
    }
    if (!layout.free_sizes.empty()) text += "\nfree blocks by size:\n";
    for (const analysis::FreeSizeBin& bin : layout.free_sizes) {
      text += fmt::format("  [{}, {}): {}, {}\n", format_bytes(bin.from), format_bytes(bin.to),
                          count_of(bin.count, "block", "blocks"), format_bytes(bin.bytes));
    }
  }
  if (!layout.raw.empty()) text += "\nraw allocations (outside the allocator):\n";
  for (const analysis::RawAllocations& device : layout.raw) {
    std::uint64_t largest = 0;
    for (const analysis::AddressGap& gap : device.gaps) largest = std::max(largest, gap.size);
    text += fmt::format("  device {}: {}, {}; {} between them", device.device,
                        count_of(device.count, "allocation", "allocations"),
                        format_bytes(device.bytes), count_of(device.gaps.size(), "gap", "gaps"));
    text += device.gaps.empty() ? "\n" : fmt::format(" (largest {})\n", format_bytes(largest));
  }
  return text;
}

// One row per block of each segment, in address order.
std::string fragmentation_csv(const analysis::FragmentationReport& report) {
  CsvTable table(
      {"device", "segment_address", "segment_size", "address", "size", "requested", "state"});
  for (const analysis::SegmentLayout& segment : report.layout.segments) {
    for (const analysis::SegmentBlock& block : segment.blocks) {
      table.row({csv_number(segment.device), csv_number(segment.address), csv_number(segment.size),
                 csv_number(block.address), csv_number(block.size),
                 block.requested ? csv_number(*block.requested) : std::string(),
                 block.used ? "used" : "free"});
    }
  }
  return table.text();
}

}  // namespace vramtrace::cli
