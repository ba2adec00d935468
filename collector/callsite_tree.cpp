#include "callsite_tree.h"

#include <stdexcept>
#include <string>

namespace vramtrace::collector {

size_t CallsiteTree::KeyHash::operator()(const Key& key) const {
  // Parents and frame ids are both small dense integers, so a plain combination such as
  // parent ^ frame_id would send many keys to the same bucket (and libstdc++'s std::hash for
  // integers is the identity, so it cannot repair that). Mix the pair through the splitmix64
  // finalizer instead.
  uint64_t x = static_cast<uint64_t>(key.parent) * 0x9e3779b97f4a7c15ULL ^
               static_cast<uint64_t>(key.frame_id);
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return static_cast<size_t>(x);
}

int64_t CallsiteTree::intern(std::optional<int64_t> parent, int64_t frame_id) {
  if (parent && (*parent < 0 || *parent >= static_cast<int64_t>(nodes_.size()))) {
    throw std::out_of_range("CallsiteTree: unknown parent callsite " + std::to_string(*parent));
  }
  const Key key{parent.value_or(kNoParent), frame_id};
  if (const auto it = children_.find(key); it != children_.end()) return it->second;

  // Grow nodes_ first and undo it if the map insert throws, so that the map and nodes_
  // never disagree about which ids exist.
  const auto id = static_cast<int64_t>(nodes_.size());
  const int depth = parent ? nodes_[static_cast<size_t>(*parent)].depth + 1 : 0;
  nodes_.push_back({parent.value_or(kNoParent), frame_id, depth});
  try {
    children_.emplace(key, id);
  } catch (...) {
    nodes_.pop_back();
    throw;
  }
  if (on_new) on_new(id, parent, frame_id, depth);
  return id;
}

std::optional<int64_t> CallsiteTree::intern_stack(
    std::span<const int64_t> frame_ids_outermost_first) {
  std::optional<int64_t> node;
  for (const int64_t frame_id : frame_ids_outermost_first) node = intern(node, frame_id);
  return node;
}

std::vector<int64_t> CallsiteTree::frames_of(std::optional<int64_t> leaf) const {
  std::vector<int64_t> frames;
  if (!leaf || *leaf < 0 || *leaf >= static_cast<int64_t>(nodes_.size())) return frames;
  for (int64_t id = *leaf; id != kNoParent; id = nodes_[static_cast<size_t>(id)].parent)
    frames.push_back(nodes_[static_cast<size_t>(id)].frame_id);
  return frames;
}

}  // namespace vramtrace::collector
