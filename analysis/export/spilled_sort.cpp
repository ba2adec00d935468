#include "analysis/export/spilled_sort.h"

#include <fmt/core.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <queue>
#include <stdexcept>
#include <tuple>

namespace vramtrace::analysis {
namespace {

// Each run's reading buffer: a few large reads per run rather than one per record.
constexpr std::size_t kRunBuffer = 256 << 10;

std::string temporary_folder() {
  const char* folder = std::getenv("TMPDIR");
  return folder && *folder ? folder : "/tmp";
}

[[noreturn]] void fail(std::string_view doing, int error) {
  throw std::runtime_error(
      fmt::format("cannot {} a temporary file in {} (the export sorts its "
                  "events there; set TMPDIR to a folder with room): {}",
                  doing, temporary_folder(), std::strerror(error)));
}

// A record on disk: the key, the arrival, the payload's size, the payload.
struct RecordHead {
  SortKey key;
  std::uint64_t arrival = 0, size = 0;
};

bool before(const SortKey& a, std::uint64_t a_arrival, const SortKey& b, std::uint64_t b_arrival) {
  return std::tie(a, a_arrival) < std::tie(b, b_arrival);
}

}  // namespace

void SpilledSort::FileCloser::operator()(std::FILE* file) const {
  std::fclose(file);
}

SpilledSort::SpilledSort(std::size_t memory_budget) : budget_(memory_budget) {}

SpilledSort::~SpilledSort() = default;

void SpilledSort::add(const SortKey& key, std::string_view payload) {
  entries_.push_back({key, arrivals_++, bytes_.size(), payload.size()});
  bytes_.append(payload);
  ++records_;
  if (bytes_.size() + entries_.size() * sizeof(Entry) >= budget_) spill();
}

void SpilledSort::sort_entries() {
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    return before(a.key, a.arrival, b.key, b.arrival);
  });
}

void SpilledSort::spill() {
  sort_entries();
  std::string path = temporary_folder() + "/vramtrace-export-XXXXXX";
  const int fd = ::mkstemp(path.data());
  if (fd < 0) fail("make", errno);
  ::unlink(path.c_str());
  Run run{std::make_unique<char[]>(kRunBuffer), nullptr};
  run.file.reset(::fdopen(fd, "w+b"));
  if (!run.file) {
    const int error = errno;
    ::close(fd);
    fail("open", error);
  }
  std::FILE* file = run.file.get();
  std::setvbuf(file, run.buffer.get(), _IOFBF, kRunBuffer);
  for (const Entry& entry : entries_) {
    const RecordHead head{entry.key, entry.arrival, entry.size};
    if (std::fwrite(&head, sizeof head, 1, file) != 1 ||
        std::fwrite(bytes_.data() + entry.offset, 1, entry.size, file) != entry.size)
      fail("write", errno);
  }
  if (std::fflush(file) != 0) fail("write", errno);
  std::rewind(file);
  runs_.push_back(std::move(run));
  ++runs_written_;
  entries_.clear();  // keeps its capacity for the next run
  bytes_.clear();
}

void SpilledSort::drain(const std::function<void(std::string_view payload)>& visit) {
  sort_entries();
  // The runs on disk and the records still in memory, merged: each source's next record.
  struct Source {
    RecordHead head;
    std::string payload;
    std::size_t next_entry = 0;  // the memory source's place
  };
  std::vector<Source> sources(runs_.size() + 1);
  const std::size_t memory = runs_.size();
  const auto advance = [&](std::size_t s) {
    Source& source = sources[s];
    if (s == memory) {
      if (source.next_entry == entries_.size()) return false;
      const Entry& entry = entries_[source.next_entry++];
      source.head = {entry.key, entry.arrival, entry.size};
      source.payload.assign(bytes_, entry.offset, entry.size);
      return true;
    }
    std::FILE* file = runs_[s].file.get();
    if (std::fread(&source.head, sizeof source.head, 1, file) != 1) {
      if (std::ferror(file)) fail("read", errno);
      return false;
    }
    source.payload.resize(source.head.size);
    if (std::fread(source.payload.data(), 1, source.head.size, file) != source.head.size)
      fail("read", std::ferror(file) ? errno : EIO);
    return true;
  };
  const auto later = [&](std::size_t a, std::size_t b) {
    return before(sources[b].head.key, sources[b].head.arrival, sources[a].head.key,
                  sources[a].head.arrival);
  };
  std::priority_queue<std::size_t, std::vector<std::size_t>, decltype(later)> next(later);
  for (std::size_t s = 0; s < sources.size(); ++s)
    if (advance(s)) next.push(s);
  while (!next.empty()) {
    const std::size_t s = next.top();
    next.pop();
    visit(sources[s].payload);
    if (advance(s)) next.push(s);
  }
  runs_.clear();
  entries_.clear();
  bytes_.clear();
  records_ = 0;
}

}  // namespace vramtrace::analysis
