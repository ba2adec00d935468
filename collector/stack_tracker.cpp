#include "collector/stack_tracker.h"

#include <bit>

#include "collector/python_splice.h"
#include "storage/trace_writer.h"

namespace vramtrace::collector {
namespace {

// An event's Python frames; none when there are more than the shim ever sends (the event keeps
// its native stack, and count_python_stack() has no say: the stat below does).
constexpr int kMaxPythonDepth = 128;

template <class Message>
std::span<const uint64_t> python_codes_of(const Message& m) {
  if (m.python_code_size() > kMaxPythonDepth) return {};
  return {m.python_code().data(), static_cast<size_t>(m.python_code_size())};
}

template <class Message>
std::span<const uint32_t> python_lines_of(const Message& m) {
  if (m.python_line_size() > kMaxPythonDepth) return {};
  return {m.python_line().data(), static_cast<size_t>(m.python_line_size())};
}

}  // namespace

size_t StackTracker::StackHash::operator()(std::span<const uint64_t> ips) const {
  // Four independent lanes, in registers: one chain of dependent multiplies over a deep stack
  // was the ingest's largest cost of its own (13% at depth 64). The final mix folds every bit
  // down.
  constexpr uint64_t kMultiplier = 0x9fb21c651e98df25ull;
  auto step = [](uint64_t lane, uint64_t ip) { return std::rotl((lane ^ ip) * kMultiplier, 29); };
  uint64_t a = ips.size(), b = 0x243f6a8885a308d3ull, c = 0x13198a2e03707344ull,
           d = 0xa4093822299f31d0ull;
  size_t i = 0;
  for (; i + 4 <= ips.size(); i += 4) {
    a = step(a, ips[i]);
    b = step(b, ips[i + 1]);
    c = step(c, ips[i + 2]);
    d = step(d, ips[i + 3]);
  }
  for (; i < ips.size(); ++i) a = step(a, ips[i]);
  uint64_t h = a ^ std::rotl(b, 16) ^ std::rotl(c, 32) ^ std::rotl(d, 48);
  h ^= h >> 33;  // murmur3's finalizer
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<size_t>(h);
}

StackTracker::StackTracker(storage::TraceWriter& writer, ModuleTracker& modules, IngestStats& stats)
    : modules_(modules), stats_(stats) {
  callsites_.on_new = [&writer](int64_t id, std::optional<int64_t> parent, int64_t frame_id,
                                int depth) { writer.add_callsite(id, parent, frame_id, depth); };
}

template <class Message>
std::optional<int64_t> StackTracker::callsite(ProcessStacks& p,
                                              const ModuleTracker::ProcessModules& modules,
                                              const Message& m) {
  count_python_stack(m.python_stack());
  if (m.same_stack_as() != 0) {
    // The frames were sent before, under this name, and interned then.
    const NamedStack* named = name_slot(p, m.same_stack_as());
    if (named != nullptr && named->named()) {
      stats_.add(Stat::kStacksByName);
      return named->callsite();
    }
    stats_.add(Stat::kStackNameUnknown);
    return std::nullopt;
  }
  const std::optional<int64_t> callsite =
      intern(p, modules, {m.stack().data(), static_cast<size_t>(m.stack_size())},
             python_codes_of(m), python_lines_of(m));
  if (m.stack_name() != 0) {
    if (NamedStack* named = name_slot(p, m.stack_name()); named != nullptr) named->define(callsite);
  }
  return callsite;
}

template std::optional<int64_t> StackTracker::callsite(ProcessStacks&,
                                                       const ModuleTracker::ProcessModules&,
                                                       const wire::Alloc&);
template std::optional<int64_t> StackTracker::callsite(ProcessStacks&,
                                                       const ModuleTracker::ProcessModules&,
                                                       const wire::Free&);
template std::optional<int64_t> StackTracker::callsite(ProcessStacks&,
                                                       const ModuleTracker::ProcessModules&,
                                                       const wire::FreeFailed&);

StackTracker::NamedStack* StackTracker::name_slot(ProcessStacks& p, uint32_t name) {
  if (name == 0) return nullptr;
  // Up to 1024 threads' tables of the shim's at once (4096 names each) in the vector.
  constexpr uint32_t kDenseNames = 1u << 22;
  if (name < kDenseNames) {
    if (name >= p.names.size()) {
      size_t grown = std::max<size_t>(p.names.size() * 2, 4096);
      p.names.resize(std::min<size_t>(std::max<size_t>(grown, name + 1), kDenseNames));
    }
    return &p.names[name];
  }
  // Only a broken ring names so far out; it may not grow the map without end.
  if (p.far_names.size() >= kDenseNames && !p.far_names.contains(name)) return nullptr;
  return &p.far_names[name];
}

void StackTracker::count_python_stack(wire::PythonStackStatus status) {
  switch (status) {
    case wire::PYTHON_STACK_WITHOUT_GIL:
      stats_.add(Stat::kPythonStackWithoutGil);
      return;
    case wire::PYTHON_STACK_UNAVAILABLE:
      stats_.add(Stat::kPythonStackUnavailable);
      return;
    case wire::PYTHON_STACK_CAPTURED_WITHOUT_GIL:
      stats_.add(Stat::kPythonStackReadWithoutGil);
      return;
    case wire::PYTHON_STACK_TRUNCATED:
      stats_.add(Stat::kPythonStackTruncated);
      return;
    default:
      return;
  }
}

std::optional<int64_t> StackTracker::intern(ProcessStacks& p,
                                            const ModuleTracker::ProcessModules& modules,
                                            std::span<const uint64_t> ips,
                                            std::span<const uint64_t> python_code,
                                            std::span<const uint32_t> python_line) {
  const size_t python_depth = std::min(python_code.size(), python_line.size());
  if (python_code.size() != python_line.size()) stats_.add(Stat::kPythonStackMismatched);
  if (ips.empty() && python_depth == 0) return std::nullopt;
  // The cache key: the native addresses, then, when there are Python frames, a separator that
  // no return address can be, and the (code, line) pairs.
  std::span<const uint64_t> key = ips;
  if (python_depth != 0) {
    key_.assign(ips.begin(), ips.end());
    key_.push_back(~0ull);
    for (size_t i = 0; i < python_depth; ++i) {
      key_.push_back(python_code[i]);
      key_.push_back(python_line[i]);
    }
    key = key_;
  }
  // Looked up as a span: a hit, the common case, copies nothing.
  if (auto hit = p.cache.find(key); hit != p.cache.end()) return hit->second;

  // Each return address is moved back by one byte so it points into its call instruction (and
  // to the call's line, not the next one's). Callers refuse deeper stacks (fits()).
  auto pc_of = [&](size_t i) { return ips[i] > 0 ? ips[i] - 1 : 0; };
  bool interpreter[kMaxStackDepth] = {};
  PythonSplice splice{ips.size(), ips.size()};
  if (python_depth != 0) {
    for (size_t i = 0; i < ips.size(); ++i)
      interpreter[i] = ModuleTracker::in_interpreter(modules, pc_of(i));
    splice = find_python_splice({interpreter, ips.size()});
  }
  // From the outermost frame in: the native frames outside the splice, then the Python
  // frames in its place, then the native frames inside it.
  std::optional<int64_t> leaf;
  auto intern_native = [&](size_t i) {
    const std::vector<int64_t>& frames = modules_.frames_for_pc(modules, pc_of(i));
    for (size_t j = frames.size(); j-- > 0;) leaf = callsites_.intern(leaf, frames[j]);
  };
  for (size_t i = ips.size(); i-- > splice.end;) intern_native(i);
  for (size_t i = python_depth; i-- > 0;)
    leaf =
        callsites_.intern(leaf, modules_.python_frame_id(modules, python_code[i], python_line[i]));
  for (size_t i = splice.begin; i-- > 0;) intern_native(i);
  p.cache.emplace(std::vector<uint64_t>(key.begin(), key.end()), leaf);
  return leaf;
}

std::vector<storage::StackFrame> StackTracker::stack_of(std::optional<int64_t> callsite) const {
  std::vector<storage::StackFrame> stack;
  for (const int64_t frame_id : callsites_.frames_of(callsite))
    if (std::optional<storage::StackFrame> frame = modules_.stack_frame(frame_id))
      stack.push_back(std::move(*frame));
  return stack;
}

}  // namespace vramtrace::collector
