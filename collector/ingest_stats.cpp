#include "collector/ingest_stats.h"

#include "storage/trace_writer.h"

namespace vramtrace::collector {

void IngestStats::add_notice(const std::string& name, storage::Severity severity,
                             const std::string& description, int64_t by) {
  auto [it, inserted] = notices_.try_emplace(name, Notice{severity, description, 0});
  it->second.value += by;
}

void IngestStats::write(storage::TraceWriter& writer) const {
  for (const StatInfo& info : kStatInfo) {
    const int64_t value = values_[static_cast<std::size_t>(info.stat)];
    if (value != 0 || info.written == StatWritten::kAlways)
      writer.set_stat(info.name, info.severity, value, info.description);
  }
  for (const auto& [name, notice] : notices_)
    writer.set_stat(name, notice.severity, notice.value, notice.description);
}

}  // namespace vramtrace::collector
