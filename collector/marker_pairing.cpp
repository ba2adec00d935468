#include "collector/marker_pairing.h"

#include <functional>

namespace vramtrace::collector {

size_t MarkerPairing::StackHash::operator()(const Stack& s) const {
  return std::hash<std::string>()(s.domain) ^ (size_t{s.tid} * 0x9e3779b97f4a7c15ull) ^
         (static_cast<size_t>(s.source) << 1);
}

MarkerPairing::Nesting MarkerPairing::push(const Stack& stack, int64_t marker_id) {
  std::vector<int64_t>& open = open_[stack];
  Nesting nesting{static_cast<int>(open.size()), std::nullopt};
  if (!open.empty()) nesting.parent = open.back();
  open.push_back(marker_id);
  return nesting;
}

std::optional<int64_t> MarkerPairing::pop(const Stack& stack) {
  auto it = open_.find(stack);
  if (it == open_.end() || it->second.empty()) return std::nullopt;
  const int64_t id = it->second.back();
  it->second.pop_back();
  return id;
}

void MarkerPairing::start(uint64_t range_id, int64_t marker_id) {
  started_[range_id] = marker_id;
}

std::optional<int64_t> MarkerPairing::end(uint64_t range_id) {
  auto it = started_.find(range_id);
  if (it == started_.end()) return std::nullopt;
  const int64_t id = it->second;
  started_.erase(it);
  return id;
}

void MarkerPairing::clear() {
  open_.clear();
  started_.clear();
}

}  // namespace vramtrace::collector
