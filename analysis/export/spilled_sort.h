// Records put in order by a key when there are more of them than memory should hold: the
// external merge sort. Records gather in memory up to a budget; each time the budget is spent
// they are sorted and written out as one run to a temporary file (made in $TMPDIR, else /tmp,
// and unlinked at once, so that nothing is left behind whatever ends the process); reading
// merges the runs. Records of equal keys come back in the order they were added.
//
// The Perfetto export uses it: its events must be written in time order, and a trace of
// millions of allocations makes more events than a report may hold in memory.
#pragma once

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace vramtrace::analysis {

using SortKey = std::array<std::int64_t, 3>;

class SpilledSort {
 public:
  static constexpr std::size_t kDefaultBudget = 48 << 20;
  explicit SpilledSort(std::size_t memory_budget = kDefaultBudget);
  ~SpilledSort();
  SpilledSort(const SpilledSort&) = delete;
  SpilledSort& operator=(const SpilledSort&) = delete;

  // Throws std::runtime_error, naming the folder, when a run cannot be written.
  void add(const SortKey& key, std::string_view payload);

  // Every record added, in key order; then the sort is empty. Throws std::runtime_error when a
  // run cannot be read back.
  void drain(const std::function<void(std::string_view payload)>& visit);

  std::size_t records() const { return records_; }
  std::size_t runs_written() const { return runs_written_; }  // all told

 private:
  struct Entry {
    SortKey key;
    std::uint64_t arrival = 0;
    std::size_t offset = 0, size = 0;  // in bytes_
  };
  struct FileCloser {
    void operator()(std::FILE* file) const;
  };
  // A run on disk; the buffer outlives the stream that reads through it.
  struct Run {
    std::unique_ptr<char[]> buffer;
    std::unique_ptr<std::FILE, FileCloser> file;
  };

  void sort_entries();
  void spill();

  std::size_t budget_;
  std::vector<Entry> entries_;
  std::string bytes_;
  std::vector<Run> runs_;
  std::uint64_t arrivals_ = 0;
  std::size_t records_ = 0;
  std::size_t runs_written_ = 0;
};

}  // namespace vramtrace::analysis
