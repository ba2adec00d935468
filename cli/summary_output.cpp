#include "cli/summary_output.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "analysis/values/cuda_errors.h"
#include "cli/advice_output.h"
#include "cli/backend_report.h"
#include "cli/csv_table.h"
#include "cli/exit_status.h"
#include "cli/output_format.h"
#include "cli/trace_command.h"
#include "text/text_style.h"

namespace vramtrace::cli {

using text::count_of;
using text::format_bytes;
using text::format_bytes_exact;
using text::format_seconds;

// Keys come out in the order written, the order docs/cli.md lists them.
using Json = nlohmann::ordered_json;

namespace {

template <typename T>
Json optional_json(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

std::string join(const std::vector<std::string>& words) {
  std::string joined;
  for (const std::string& word : words) {
    if (!joined.empty()) joined += ' ';
    joined += word;
  }
  return joined;
}

std::string error_label(int result) {
  const auto name = analysis::cuda_error_name(result);
  return name ? fmt::format("{} ({})", *name, result) : fmt::format("error {}", result);
}

std::string how_it_ended(const storage::ProcessRecord& process) {
  std::string ending;
  if (process.end.signal) {
    const char* abbreviation = sigabbrev_np(*process.end.signal);
    ending = abbreviation != nullptr
                 ? fmt::format("killed by signal {} (SIG{})", *process.end.signal, abbreviation)
                 : fmt::format("killed by signal {}", *process.end.signal);
  } else if (process.end.exit_status) {
    ending = fmt::format("exited with status {}", *process.end.exit_status);
  } else {
    ending = "end not recorded";
  }
  if (!process.end.complete) ending += "; not recorded to its end";
  return ending;
}

// "pid 4242 on node1, rank 3 of 8": enough to tell apart the processes of a job merged from
// several hosts, where pids repeat.
std::string process_label(const storage::ProcessRecord& process) {
  std::string label = fmt::format("pid {}", process.start.pid);
  if (!process.start.host.empty()) label += fmt::format(" on {}", process.start.host);
  if (process.start.rank) {
    label += fmt::format(", rank {}", *process.start.rank);
    if (process.start.world_size) label += fmt::format(" of {}", *process.start.world_size);
  }
  // `run --backend both` records each process twice: say which record this is.
  if (process.start.backend != storage::kBackendPreload)
    label += fmt::format(" ({})", process.start.backend);
  return label;
}

// The summary's processes by upid, for the lines that name one (a job can have 100,000).
using ProcessesByUpid = std::unordered_map<std::int64_t, const storage::ProcessRecord*>;
ProcessesByUpid processes_by_upid(const analysis::Summary& summary) {
  ProcessesByUpid by_upid;
  for (const storage::ProcessRecord& process : summary.processes)
    by_upid[process.start.upid] = &process;
  return by_upid;
}

std::string process_label(const ProcessesByUpid& processes, std::int64_t upid, std::uint32_t pid) {
  const auto named = processes.find(upid);
  return named == processes.end() ? fmt::format("pid {}", pid) : process_label(*named->second);
}

// "1.0 GiB in 2 reservations, 512.0 MiB live at the end"
std::string virtual_memory_line(const analysis::KindTotals& totals, std::string_view singular,
                                std::string_view plural) {
  return fmt::format("{} in {}, {} live at the end", format_bytes(totals.bytes_allocated),
                     count_of(totals.allocations, singular, plural),
                     format_bytes(totals.live_bytes));
}

// On one line: an argument's newlines (a `python -c` script's) written as \x0a.
std::string command_line(const storage::ProcessRecord& process) {
  return text::printable(process.start.argv.empty() ? process.start.exe : join(process.start.argv));
}

// The images that recorded GPU events, of every chain.
std::unordered_set<std::int64_t> gpu_images(const analysis::Summary& summary) {
  std::unordered_set<std::int64_t> upids;
  for (const analysis::ProcessChain& chain : summary.chains)
    upids.insert(chain.gpu_images.begin(), chain.gpu_images.end());
  return upids;
}

// One line per process (an exec chain), named by the image that used the GPU and ended as its
// last image did. Only those that recorded GPU events unless `all`: a job started through a
// shell or a launcher runs dozens of short processes that never touch the GPU.
std::string processes_text(const analysis::Summary& summary, bool all) {
  const analysis::GpuProcesses gpu = analysis::gpu_processes(summary.chains);
  std::string text = all ? fmt::format("\nprocesses ({}; {} recorded GPU memory):\n",
                                       summary.chains.size(), gpu.gpu.size())
                         : fmt::format("\nprocesses that recorded GPU memory ({} of {}):\n",
                                       gpu.gpu.size(), summary.chains.size());
  for (const analysis::ProcessChain& chain : summary.chains) {
    if (!all && !chain.gpu) continue;
    const storage::ProcessRecord& named = chain.process();
    std::string label = process_label(named);
    if (named.start.local_rank) label += fmt::format(" (local rank {})", *named.start.local_rank);
    std::string line =
        fmt::format("  {}: {}: {}", label, command_line(named), how_it_ended(chain.images.back()));
    if (all && !chain.gpu) line += "; no GPU memory";
    if (!all && chain.images.size() > 1) {
      std::vector<std::string> names;
      for (const storage::ProcessRecord& image : chain.images) {
        if (&image != &named) names.push_back(analysis::image_name(image));
      }
      line += fmt::format(" (the same pid also ran {})", fmt::join(names, ", "));
    }
    text += line + "\n";
    if (!all) continue;
    for (std::size_t i = 0; i < chain.images.size(); ++i) {
      if (i == chain.named) continue;
      text += fmt::format("    {} image: {}\n", i < chain.named ? "earlier" : "later",
                          command_line(chain.images[i]));
    }
  }
  if (!all && gpu.others != 0) {
    text += fmt::format("  {} recorded no GPU memory; --all-processes lists {}\n",
                        count_of(gpu.others, "other process", "other processes"),
                        gpu.others == 1 ? "it" : "them");
  }
  return text;
}

Json process_json(const storage::ProcessRecord& process) {
  return {
      {"upid", process.start.upid},
      {"pid", process.start.pid},
      {"ppid", process.start.ppid},
      {"uid", process.start.uid},
      {"host", process.start.host},
      {"exe", process.start.exe},
      {"argv", process.start.argv},
      {"start_ns", process.start.start_ns},
      {"start_realtime_ns", process.start.start_realtime_ns},
      {"end_ns", optional_json(process.end.end_ns)},
      {"exit_status", optional_json(process.end.exit_status)},
      {"signal", optional_json(process.end.signal)},
      {"complete", process.end.complete},
      {"unwinder", process.start.unwinder},
      {"rank", optional_json(process.start.rank)},
      {"local_rank", optional_json(process.start.local_rank)},
      {"world_size", optional_json(process.start.world_size)},
      {"backend", process.start.backend},
  };
}

Json kind_json(const analysis::KindTotals& kind) {
  Json failures = Json::array();
  for (const analysis::FailureCount& failure : kind.failures) {
    const auto name = analysis::cuda_error_name(failure.result);
    failures.push_back({{"result", failure.result},
                        {"error", name ? Json(std::string(*name)) : Json()},
                        {"count", failure.count}});
  }
  return {
      {"kind", kind.name},
      {"kind_id", kind.kind},
      {"allocations", kind.allocations},
      {"bytes_allocated", kind.bytes_allocated},
      {"frees", kind.frees},
      {"bytes_freed", kind.bytes_freed},
      {"failed_allocations", kind.failed_allocations},
      {"failures", std::move(failures)},
      {"live_count", kind.live_count},
      {"live_bytes", kind.live_bytes},
  };
}

const std::optional<analysis::RoleTotals>& block_peak_roles(const analysis::Summary& summary,
                                                            std::size_t i) {
  static const std::optional<analysis::RoleTotals> kNone;
  return i < summary.block_peak_roles.size() ? summary.block_peak_roles[i] : kNone;
}

Json role_bytes_json(const analysis::RoleTotals& roles) {
  Json out = Json::object();
  for (std::size_t r = 0; r < analysis::kBlockRoles; ++r)
    out[std::string(analysis::block_role_name(static_cast<analysis::BlockRole>(r)))] =
        roles.bytes[r];
  return out;
}

// "    by role: activation 16.0 MiB, temporary 40.0 MiB, parameter 2.0 MiB": largest first,
// the roles with no bytes left out; empty when every role is. The roles are the process's live
// blocks on every device at that moment: where it used several, the line says so, since its
// bytes are then more than the device's peak above it.
std::string roles_line(const analysis::RoleTotals& roles, bool several_devices) {
  std::vector<std::size_t> order;
  for (std::size_t r = 0; r < analysis::kBlockRoles; ++r)
    if (roles.bytes[r] != 0) order.push_back(r);
  if (order.empty()) return "";
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return roles.bytes[a] > roles.bytes[b]; });
  std::vector<std::string> parts;
  for (const std::size_t r : order)
    parts.push_back(fmt::format("{} {}",
                                analysis::block_role_name(static_cast<analysis::BlockRole>(r)),
                                format_bytes(roles.bytes[r])));
  return fmt::format("    by role{}: {}\n", several_devices ? ", all devices at that moment" : "",
                     fmt::join(parts, ", "));
}

}  // namespace

void write_summary_json(const std::string& trace_path, const analysis::Summary& summary,
                        JsonObjectWriter& writer) {
  // Each image's place in its exec chain (process_chains.h): the image it replaced, and whether
  // it recorded GPU events itself. Found once, by upid: a job can have 100,000 processes.
  struct ChainPlace {
    std::optional<std::int64_t> exec_from;
    bool gpu_events = false;
  };
  std::unordered_map<std::int64_t, ChainPlace> places;
  for (const analysis::ProcessChain& chain : summary.chains) {
    for (std::size_t i = 0; i < chain.images.size(); ++i) {
      ChainPlace& place = places[chain.images[i].start.upid];
      if (i != 0) place.exec_from = chain.images[i - 1].start.upid;
      place.gpu_events = chain.gpu && i == chain.named;
    }
  }
  writer.members({{"trace", trace_path},
                  {"incomplete", !summary.trace_complete},
                  {"warnings", summary.warnings},
                  {"vramtrace_version", optional_json(summary.vramtrace_version)},
                  {"command", summary.command},
                  {"start_ns", summary.start_ns},
                  {"time_origin_ns", summary.time_origin_ns},
                  {"end_ns", summary.end_ns},
                  {"duration_ns", summary.duration_ns}});
  // One entry per process, written as it is made.
  writer.array_member("processes", [&](const auto& write) {
    for (const auto& process : summary.processes) {
      Json entry = process_json(process);
      const auto place = places.find(process.start.upid);
      entry["exec_from"] =
          optional_json(place == places.end() ? std::nullopt : place->second.exec_from);
      entry["gpu_process"] = place != places.end() && place->second.gpu_events;
      write(entry);
    }
  });
  Json kinds = Json::array();
  for (const auto& kind : summary.kinds) kinds.push_back(kind_json(kind));
  Json peaks = Json::array();
  for (const analysis::DevicePeak& peak : summary.peaks) {
    peaks.push_back({{"upid", peak.upid},
                     {"pid", peak.pid},
                     {"device", peak.device},
                     {"bytes", peak.bytes},
                     {"at_ns", peak.at_ns},
                     {"at_seq", peak.at_seq}});
  }
  Json block_peaks = Json::array();
  for (std::size_t i = 0; i < summary.block_peaks.size(); ++i) {
    const analysis::DevicePeak& peak = summary.block_peaks[i];
    const std::optional<analysis::RoleTotals>& roles = block_peak_roles(summary, i);
    block_peaks.push_back({{"upid", peak.upid},
                           {"pid", peak.pid},
                           {"device", peak.device},
                           {"bytes", peak.bytes},
                           {"at_ns", peak.at_ns},
                           {"at_seq", peak.at_seq},
                           {"roles", roles ? role_bytes_json(*roles) : Json(nullptr)}});
  }
  Json allocator = Json::array();
  for (const analysis::AllocatorTotals& a : summary.allocator) {
    allocator.push_back({{"upid", a.upid},
                         {"pid", a.pid},
                         {"level", a.allocator_events ? "block" : "segment"},
                         {"blocks", a.blocks},
                         {"live_block_count", a.live_block_count},
                         {"live_block_bytes", a.live_block_bytes},
                         {"segment_count", a.segment_count},
                         {"segment_bytes", a.segment_bytes},
                         {"cached_bytes", a.cached_bytes},
                         {"blocks_without_segment", a.blocks_without_segment},
                         {"out_of_memory", a.out_of_memory},
                         {"allocator_allocated", optional_json(a.allocator_allocated)},
                         {"allocator_reserved", optional_json(a.allocator_reserved)}});
  }
  Json bad_frees = Json::array();
  for (const auto& bad_free : summary.bad_frees) {
    bad_frees.push_back({{"reason", bad_free.reason}, {"count", bad_free.count}});
  }
  Json stats = Json::array();
  for (const storage::StatRecord& stat : summary.stats) {
    stats.push_back({{"name", stat.name},
                     {"severity", storage::severity_name(stat.severity)},
                     {"value", stat.value},
                     {"description", stat.description}});
  }
  writer.members({
      {"kinds", std::move(kinds)},
      {"ended_at_python_finalizing", summary.ended_at_python_finalizing},
      {"peaks", std::move(peaks)},
      {"bad_frees", std::move(bad_frees)},
      {"stats", std::move(stats)},
      {"virtual_memory",
       {{"reserved", kind_json(summary.virtual_memory.reserved)},
        {"created", kind_json(summary.virtual_memory.created)},
        {"mapped", kind_json(summary.virtual_memory.mapped)}}},
      {"allocator", std::move(allocator)},
      {"block_peaks", std::move(block_peaks)},
      {"advice", advice_json(summary.advice)},
      {"backends", backend_comparison_json(summary.backends)},
  });
}

std::string summary_text(const std::string& trace_path, const analysis::Summary& summary,
                         const std::string& scope, bool all_processes) {
  std::string text = fmt::format("trace: {}", trace_path);
  if (summary.vramtrace_version) {
    text += fmt::format(" (written by vramtrace {})", *summary.vramtrace_version);
  }
  text += '\n';
  if (!summary.command.empty()) text += fmt::format("command: {}\n", join(summary.command));
  text += fmt::format("duration: {}\n", format_seconds(summary.duration_ns));
  if (!scope.empty()) text += scope + "\n";
  for (const std::string& warning : summary.warnings) text += fmt::format("warning: {}\n", warning);

  text += processes_text(summary, all_processes || !scope.empty());
  text += "\nmemory by kind:\n";
  if (summary.kinds.empty()) text += "  no allocations recorded\n";
  if (!summary.kinds.empty()) {
    text +=
        fmt::format("  {:<15} {:>11} {:>12} {:>8} {:>12} {:>8} {:>12} {:>7}\n", "kind",
                    "allocations", "allocated", "frees", "freed", "live", "live bytes", "failed");
  }
  for (const analysis::KindTotals& kind : summary.kinds) {
    text += fmt::format("  {:<15} {:>11} {:>12} {:>8} {:>12} {:>8} {:>12} {:>7}\n", kind.name,
                        kind.allocations, format_bytes(kind.bytes_allocated), kind.frees,
                        format_bytes(kind.bytes_freed), kind.live_count,
                        format_bytes(kind.live_bytes), kind.failed_allocations);
  }
  if (!summary.ended_at_python_finalizing.empty()) {
    text += fmt::format(
        "  live: what was held when the Python interpreter began to finalize ({}); the frees "
        "include its teardown's\n",
        count_of(summary.ended_at_python_finalizing.size(), "process", "processes"));
  }
  for (const analysis::KindTotals& kind : summary.kinds) {
    for (const analysis::FailureCount& failure : kind.failures) {
      text += fmt::format("  failed {}: {} returned {}\n", kind.name,
                          count_of(failure.count, "allocation", "allocations"),
                          error_label(failure.result));
    }
  }

  if (summary.virtual_memory.any()) {
    const analysis::VirtualMemoryTotals& vmm = summary.virtual_memory;
    text += "\nvirtual memory (cuMem*):\n";
    text += fmt::format("  address space reserved:  {}\n",
                        virtual_memory_line(vmm.reserved, "reservation", "reservations"));
    text += fmt::format("  physical memory created: {}\n",
                        virtual_memory_line(vmm.created, "handle", "handles"));
    text += fmt::format("  mapped:                  {}\n",
                        virtual_memory_line(vmm.mapped, "mapping", "mappings"));
  }

  text +=
      "\npeak live device memory (device, managed, async and mapped virtual memory, per "
      "process):\n";
  if (summary.peaks.empty()) text += "  none\n";
  const ProcessesByUpid by_upid = processes_by_upid(summary);
  for (const analysis::DevicePeak& peak : summary.peaks) {
    text += fmt::format("  {}, device {}: {} at +{}\n", process_label(by_upid, peak.upid, peak.pid),
                        peak.device, format_bytes_exact(peak.bytes),
                        format_seconds(peak.at_ns - summary.time_origin_ns));
  }
  // What nvidia-smi shows can be more: a stream-ordered pool holds whole granules and keeps
  // what is freed, and no call the trace sees says how much (docs/measurements/).
  const bool async = std::any_of(
      summary.kinds.begin(), summary.kinds.end(),
      [](const analysis::KindTotals& k) { return k.name == "async" && k.allocations > 0; });
  if (async && !summary.peaks.empty()) {
    text +=
        "  async counts the allocations' own bytes; the driver's pool behind them holds more\n"
        "    (whole granules, and what was freed until it is trimmed: "
        "torch.cuda.memory_reserved()\n"
        "    under backend:cudaMallocAsync)\n";
  }

  text += "\nallocator level (blocks: tensors of a caching allocator; segments: its memory):\n";
  if (summary.level == analysis::MemoryLevel::kSegment)
    text += "  not looked at (--level segment)\n";
  else if (summary.allocator.empty())
    text += "  no processes\n";
  const std::unordered_set<std::int64_t> used_gpu = gpu_images(summary);
  std::unordered_map<std::int64_t, std::vector<std::size_t>> block_peaks_of;  // indexes, by upid
  for (std::size_t i = 0; i < summary.block_peaks.size(); ++i)
    block_peaks_of[summary.block_peaks[i].upid].push_back(i);
  for (const analysis::AllocatorTotals& a : summary.allocator) {
    if (!all_processes && scope.empty() && !used_gpu.contains(a.upid)) continue;
    const std::string label = process_label(by_upid, a.upid, a.pid);
    if (!a.allocator_events) {
      text += fmt::format("  {}: no allocator events (segment level only)\n", label);
      continue;
    }
    text += fmt::format(
        "  {}: at the end, {} live in {}; segments {} in {}; cached {}\n", label,
        format_bytes_exact(a.live_block_bytes), count_of(a.live_block_count, "block", "blocks"),
        format_bytes_exact(a.segment_bytes), count_of(a.segment_count, "segment", "segments"),
        format_bytes_exact(a.cached_bytes));
    if (a.out_of_memory != 0)
      text += fmt::format("    {} reported by the allocator\n",
                          count_of(a.out_of_memory, "failed request (out of memory)",
                                   "failed requests (out of memory)"));
    if (a.blocks_without_segment != 0)
      text += fmt::format("    {} with no recorded segment\n",
                          count_of(a.blocks_without_segment, "block", "blocks"));
    const std::vector<std::size_t>& peaks = block_peaks_of[a.upid];
    const bool several_devices = peaks.size() > 1;
    for (const std::size_t i : peaks) {
      const analysis::DevicePeak& peak = summary.block_peaks[i];
      text += fmt::format("    peak live blocks, device {}: {} at +{}\n", peak.device,
                          format_bytes_exact(peak.bytes),
                          format_seconds(peak.at_ns - summary.time_origin_ns));
      if (const std::optional<analysis::RoleTotals>& roles = block_peak_roles(summary, i))
        text += roles_line(*roles, several_devices);
    }
  }

  if (!summary.bad_frees.empty()) {
    text += "\nbad frees:\n";
    for (const analysis::BadFreeCount& bad_free : summary.bad_frees) {
      text += fmt::format("  {}: {}\n", bad_free.reason, bad_free.count);
    }
  }
  // Stats that stayed at zero say nothing here; --format json lists them all.
  std::string stats;
  for (const storage::StatRecord& stat : summary.stats) {
    if (stat.value == 0) continue;
    stats += fmt::format("  {:<9} {} = {}: {}\n", storage::severity_name(stat.severity), stat.name,
                         stat.value, stat.description);
  }
  if (!stats.empty()) text += "\nimport stats:\n" + stats;
  if (!summary.advice.empty()) text += "\nadvice:\n" + advice_text(summary.advice, "  ");
  text += backend_comparison_text(summary.backends);
  return text;
}

std::string summary_csv(const analysis::Summary& summary) {
  CsvTable table({"kind", "allocations", "bytes_allocated", "frees", "bytes_freed", "live_count",
                  "live_bytes", "failed_allocations"});
  for (const analysis::KindTotals& kind : summary.kinds) {
    table.row({kind.name, csv_number(kind.allocations), csv_number(kind.bytes_allocated),
               csv_number(kind.frees), csv_number(kind.bytes_freed), csv_number(kind.live_count),
               csv_number(kind.live_bytes), csv_number(kind.failed_allocations)});
  }
  return table.text();
}

}  // namespace vramtrace::cli
