// IngestStats: the ingest's counters of what went wrong or was unusual, written to the trace's
// stats table at the end.
//
// The stats the collector counts are the collector's rows of storage's registry
// (VRAMTRACE_COLLECTOR_STATS in storage/trace_stats.h), which gives each its name, severity,
// when it is written and what it counts; Stat numbers them for an array of counters, cheap
// enough for the hot path. The shim's Notices carry names only known at run time; they are
// kept apart, by name.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "storage/trace_rows.h"
#include "storage/trace_stats.h"

namespace vramtrace::storage {
class TraceWriter;
}

namespace vramtrace::collector {

enum class Stat {
#define VRAMTRACE_STAT_ENUM(id, name, severity, written, description) id,
  VRAMTRACE_COLLECTOR_STATS(VRAMTRACE_STAT_ENUM)
#undef VRAMTRACE_STAT_ENUM
      kCount
};

using storage::StatWritten;

// One Stat and its row of the registry, as the trace's stats table shows it.
struct StatInfo {
  Stat stat;
  std::string_view name;
  storage::Severity severity;
  StatWritten written;
  std::string_view description;
};

constexpr StatInfo stat_info(Stat stat, storage::TraceStatId id) {
  const storage::TraceStat& row = storage::trace_stat(id);
  return {stat, row.name, row.severity, row.written, row.description};
}

// A Stat and its registry row share their enumerator's name.
inline constexpr std::array<StatInfo, static_cast<std::size_t>(Stat::kCount)> kStatInfo = {{
#define VRAMTRACE_STAT_ROW(id, name, severity, written, description) \
  stat_info(Stat::id, storage::TraceStatId::id),
    VRAMTRACE_COLLECTOR_STATS(VRAMTRACE_STAT_ROW)
#undef VRAMTRACE_STAT_ROW
}};

constexpr bool stat_rows_in_enum_order() {
  for (std::size_t i = 0; i < kStatInfo.size(); ++i)
    if (static_cast<std::size_t>(kStatInfo[i].stat) != i) return false;
  return true;
}
static_assert(stat_rows_in_enum_order(), "kStatInfo[i] must describe Stat value i");

class IngestStats {
 public:
  void add(Stat stat, int64_t by = 1) { values_[static_cast<std::size_t>(stat)] += by; }
  void set(Stat stat, int64_t value) { values_[static_cast<std::size_t>(stat)] = value; }
  int64_t value(Stat stat) const { return values_[static_cast<std::size_t>(stat)]; }

  // A stat the shim named in a Notice. The first description given for a name is kept.
  void add_notice(const std::string& name, storage::Severity severity,
                  const std::string& description, int64_t by);

  // Every stat that happened, and those always written, to the trace's stats table.
  void write(storage::TraceWriter& writer) const;

 private:
  std::array<int64_t, static_cast<std::size_t>(Stat::kCount)> values_{};
  struct Notice {
    storage::Severity severity;
    std::string description;
    int64_t value = 0;
  };
  std::map<std::string, Notice, std::less<>> notices_;
};

}  // namespace vramtrace::collector
