#include "storage/repeat_folder.h"

#include <algorithm>
#include <functional>
#include <map>
#include <unordered_map>
#include <utility>

namespace vramtrace::storage {
namespace {

// What a bin must share with the bin it repeats, per allocation: all but its first number, first
// id and times.
// A block's details count: its segment and the allocator's totals, with which of them are set.
constexpr std::size_t kShapeFields = 14;

std::int64_t or_zero(std::optional<std::uint64_t> value) {
  return static_cast<std::int64_t>(value.value_or(0));
}

// The bin's shape and the hash it is found by; false when its times cannot be repeated (a clock
// that went back, or a bin longer than repeat_time() can scale).
bool shape_of(const std::vector<PackedAllocation>& bin, std::vector<std::int64_t>* shape,
              std::uint64_t* hash, std::int64_t* span_ns) {
  const PackedAllocation& first = bin.front();
  shape->clear();
  shape->reserve(bin.size() * kShapeFields);
  std::uint64_t h = 0xcbf29ce484222325ULL;
  std::int64_t span = 0;
  for (const PackedAllocation& a : bin) {
    const std::int64_t relative_alloc_ns = a.alloc_ns - first.alloc_ns;
    if (relative_alloc_ns < 0 || a.free_ns_delta < 0) return false;
    span = std::max(span, relative_alloc_ns + a.free_ns_delta);
    const std::int64_t details_set =
        (a.segment_id ? 1 : 0) | (a.allocator_allocated ? 2 : 0) | (a.allocator_reserved ? 4 : 0) |
        (a.free_allocator_allocated ? 8 : 0) | (a.free_allocator_reserved ? 16 : 0);
    for (const std::int64_t field :
         {a.id - first.id, a.site_id, static_cast<std::int64_t>(a.address),
          static_cast<std::int64_t>(a.size), a.size_minus_requested,
          static_cast<std::int64_t>(a.alloc_seq - first.alloc_seq), a.free_site_id,
          a.free_seq_delta, details_set, a.segment_id.value_or(0), or_zero(a.allocator_allocated),
          or_zero(a.allocator_reserved), or_zero(a.free_allocator_allocated),
          or_zero(a.free_allocator_reserved)}) {
      shape->push_back(field);
      h = (h ^ static_cast<std::uint64_t>(field)) * 0x100000001b3ULL;
      h ^= h >> 29;
    }
  }
  if (span >= kRepeatTimeLimitNs) return false;
  *hash = h;
  *span_ns = span;
  return true;
}

}  // namespace

struct RepeatFolder::State {
  // A bin stored in full that later bins may repeat: what a run needs of it, and its shape while
  // the budget holds it (else it is read back through the loader).
  struct Source {
    std::int64_t upid = 0;
    std::uint64_t first_alloc_seq = 0;
    std::int64_t first_id = 0, first_alloc_ns = 0, span_ns = 0;
    std::size_t count = 0;
    std::vector<std::int64_t> shape;  // empty: not held
    std::uint64_t last_used = 0;
    std::size_t shape_bytes() const { return shape.size() * sizeof(std::int64_t); }
  };
  struct OpenRun {
    ChunkRepeatRun run;
    std::uint64_t source_hash = 0;   // as sources are found by
    std::int64_t last_start_ns = 0;  // the last instance's first alloc_ns
  };

  State(std::size_t source_bytes, SourceLoader source_loader)
      : budget(source_bytes), loader(std::move(source_loader)) {}

  std::size_t budget, used = 0;
  SourceLoader loader;
  std::uint64_t clock = 0;
  // By the shape's hash, mixed with the process: a bin repeats only its own process's.
  std::unordered_multimap<std::uint64_t, Source> sources;
  // By process and source: a loop whose bins take turns among a few shapes has a run for each.
  std::map<std::pair<std::int64_t, std::uint64_t>, OpenRun> open_runs;
  std::vector<std::int64_t> shape;  // the bin at hand's, reused
  std::vector<PackedAllocation> loaded;
  std::vector<std::int64_t> loaded_shape;

  static std::uint64_t key(std::int64_t upid, std::uint64_t hash) {
    return hash ^ (static_cast<std::uint64_t>(upid) * 0x9e3779b97f4a7c15ULL);
  }

  // The shapes held within the budget, those used least recently given up first.
  void hold(Source& source, std::vector<std::int64_t> source_shape) {
    const std::size_t bytes = source_shape.size() * sizeof(std::int64_t);
    if (bytes > budget) return;
    while (used + bytes > budget) {
      Source* oldest = nullptr;
      for (auto& [hash, other] : sources)
        if (!other.shape.empty() && (oldest == nullptr || other.last_used < oldest->last_used))
          oldest = &other;
      if (oldest == nullptr) return;
      used -= oldest->shape_bytes();
      // Given back, not only emptied: `shape = {}` would keep the capacity.
      std::vector<std::int64_t>().swap(oldest->shape);
    }
    used += bytes;
    source.shape = std::move(source_shape);
  }

  // The source's shape: held, or read back (and held); null when it cannot be.
  const std::vector<std::int64_t>* shape_of_source(Source& source) {
    if (!source.shape.empty()) return &source.shape;
    if (!loader) return nullptr;
    loaded.clear();
    std::uint64_t ignored_hash = 0;
    std::int64_t ignored_span = 0;
    if (!loader(source.upid, source.first_alloc_seq, &loaded) || loaded.empty() ||
        !shape_of(loaded, &loaded_shape, &ignored_hash, &ignored_span))
      return nullptr;
    hold(source, loaded_shape);
    return source.shape.empty() ? &loaded_shape : &source.shape;
  }

  Source* find(std::int64_t upid, std::uint64_t hash) {
    auto [it, end] = sources.equal_range(key(upid, hash));
    for (; it != end; ++it) {
      Source& source = it->second;
      if (source.upid != upid || source.count * kShapeFields != shape.size()) continue;
      const std::vector<std::int64_t>* source_shape = shape_of_source(source);
      if (source_shape != nullptr && *source_shape == shape) return &source;
    }
    return nullptr;
  }

  void remember(std::int64_t upid, std::uint64_t hash, const PackedAllocation& first,
                std::size_t count, std::int64_t span_ns) {
    // Bins stored are remembered by a few words each, so many that this bound is for a program
    // that never repeats: then the least recently used go.
    constexpr std::size_t kMostSources = std::size_t{1} << 16;
    if (sources.size() >= kMostSources) {
      auto oldest = std::min_element(
          sources.begin(), sources.end(),
          [](const auto& x, const auto& y) { return x.second.last_used < y.second.last_used; });
      used -= oldest->second.shape_bytes();
      sources.erase(oldest);
    }
    Source source;
    source.upid = upid;
    source.first_alloc_seq = first.alloc_seq;
    source.first_id = first.id;
    source.first_alloc_ns = first.alloc_ns;
    source.span_ns = span_ns;
    source.count = count;
    source.last_used = ++clock;
    Source& added = sources.emplace(key(upid, hash), std::move(source))->second;
    hold(added, shape);
  }

  // The run as written: instances evenly spread from the first's start to the last's; one
  // alone keeps the source's times as they were.
  static ChunkRepeatRun as_written(const OpenRun& open) {
    ChunkRepeatRun run = open.run;
    run.instance_ns = run.repeats > 1
                          ? (open.last_start_ns - run.first_alloc_ns) / (run.repeats - 1)
                          : run.source_span_ns;
    return run;
  }

  // The source of one of the process's open runs whose first `count` allocations have the
  // shape at hand, if any.
  const Source* whole_of(std::int64_t upid, std::size_t count) {
    for (auto it = open_runs.lower_bound(std::pair(upid, std::uint64_t{0}));
         it != open_runs.end() && it->first.first == upid; ++it) {
      const auto [begin, end] = sources.equal_range(it->second.source_hash);
      for (auto source = begin; source != end; ++source) {
        Source& whole = source->second;
        if (whole.upid != upid || whole.first_alloc_seq != it->first.second || whole.count <= count)
          continue;
        const std::vector<std::int64_t>* whole_shape = shape_of_source(whole);
        if (whole_shape != nullptr && std::equal(shape.begin(), shape.end(), whole_shape->begin()))
          return &whole;
      }
    }
    return nullptr;
  }

  // A run of one instance, `bin`, of `source`.
  static ChunkRepeatRun first_instance(std::int64_t upid, const Source& source,
                                       const std::vector<PackedAllocation>& bin,
                                       std::uint64_t last_seq, std::int64_t last_id) {
    ChunkRepeatRun run;
    run.upid = upid;
    run.source_first_alloc_seq = source.first_alloc_seq;
    run.source_first_id = source.first_id;
    run.source_first_alloc_ns = source.first_alloc_ns;
    run.source_span_ns = source.span_ns;
    run.first_alloc_seq = bin.front().alloc_seq;
    run.first_id = bin.front().id;
    run.first_alloc_ns = bin.front().alloc_ns;
    run.repeats = 1;
    run.count = static_cast<std::int64_t>(bin.size());
    run.last_seq = last_seq;
    run.last_id = last_id;
    return run;
  }

  // Ends an open run into `ended`.
  void end_run(std::map<std::pair<std::int64_t, std::uint64_t>, OpenRun>::iterator it,
               std::vector<ChunkRepeatRun>* ended) {
    ended->push_back(as_written(it->second));
    open_runs.erase(it);
  }
};

RepeatFolder::RepeatFolder(SourceLoader loader, std::size_t source_bytes)
    : state_(std::make_unique<State>(source_bytes, std::move(loader))) {}
RepeatFolder::~RepeatFolder() = default;

RepeatFolder::Outcome RepeatFolder::add_bin(std::int64_t upid,
                                            const std::vector<PackedAllocation>& bin) {
  State& s = *state_;
  Outcome outcome;
  std::uint64_t hash = 0;
  std::int64_t span_ns = 0;
  if (bin.empty() || !shape_of(bin, &s.shape, &hash, &span_ns)) return outcome;
  const PackedAllocation& first = bin.front();
  std::uint64_t last_seq = 0;
  std::int64_t last_id = first.id;
  for (const PackedAllocation& a : bin) {
    last_seq = std::max(last_seq, a.free_seq());
    last_id = std::max(last_id, a.id);
  }
  State::Source* source = s.find(upid, hash);
  if (source == nullptr) {
    // A loop's bin cut short (the program ended, or paused past a commit) is the start of the
    // bin its open run repeats: a run of its own, of that many allocations.
    if (const State::Source* whole = s.whole_of(upid, bin.size())) {
      ChunkRepeatRun run = State::first_instance(upid, *whole, bin, last_seq, last_id);
      // Its own span: one instance keeps the source's times as they were.
      run.source_span_ns = run.instance_ns = span_ns;
      outcome.repeat = true;
      outcome.ended.push_back(run);
      ++folded_bins_;
      folded_allocations_ += static_cast<std::int64_t>(bin.size());
      return outcome;
    }
    s.remember(upid, hash, first, bin.size(), span_ns);
    return outcome;
  }
  source->last_used = ++s.clock;
  outcome.repeat = true;
  ++folded_bins_;
  folded_allocations_ += static_cast<std::int64_t>(bin.size());

  const std::pair run_key(upid, source->first_alloc_seq);
  if (const auto it = s.open_runs.find(run_key); it != s.open_runs.end()) {
    State::OpenRun& open = it->second;
    ChunkRepeatRun& run = open.run;
    const std::uint64_t seq_step = first.alloc_seq - run.instance_first_alloc_seq(run.repeats - 1);
    const std::int64_t id_step = first.id - run.instance_first_id(run.repeats - 1);
    const std::int64_t start_step = first.alloc_ns - open.last_start_ns;
    const bool same_steps =
        run.repeats == 1 || (seq_step == run.seq_step && id_step == run.id_step);
    if (same_steps && start_step >= 0 && start_step < kRepeatTimeLimitNs &&
        first.alloc_ns - run.first_alloc_ns < kRunSpanLimitNs &&
        last_seq - run.first_alloc_seq <= kRepeatRunSpanNumbers) {
      run.seq_step = seq_step;
      run.id_step = id_step;
      ++run.repeats;
      run.last_seq = last_seq;
      run.last_id = last_id;
      open.last_start_ns = first.alloc_ns;
      return outcome;
    }
    s.end_run(it, &outcome.ended);
  }
  State::OpenRun& open = s.open_runs[run_key];
  open.source_hash = State::key(upid, hash);
  open.run = State::first_instance(upid, *source, bin, last_seq, last_id);
  open.last_start_ns = first.alloc_ns;
  return outcome;
}

std::size_t RepeatFolder::held_shape_bytes() const {
  std::size_t bytes = 0;
  for (const auto& [hash, source] : state_->sources)
    bytes += source.shape.capacity() * sizeof(std::int64_t);
  return bytes;
}

std::vector<ChunkRepeatRun> RepeatFolder::open_runs() const {
  std::vector<ChunkRepeatRun> runs;
  for (const auto& [key, open] : state_->open_runs) runs.push_back(State::as_written(open));
  return runs;
}

std::vector<ChunkRepeatRun> RepeatFolder::end_runs() {
  std::vector<ChunkRepeatRun> ended;
  while (!state_->open_runs.empty()) state_->end_run(state_->open_runs.begin(), &ended);
  return ended;
}

}  // namespace vramtrace::storage
