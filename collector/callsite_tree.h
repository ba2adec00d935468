// CallsiteTree: deduplicates stacks as a tree of callsites, perfetto-style. A stack is stored
// as the id of its leaf; each node is (id, parent, frame_id, depth), so identical stacks share
// one leaf and stacks with a common outer part share that part's nodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace vramtrace::collector {

class CallsiteTree {
 public:
  // Interns the child of `parent` (nullopt for a root) with `frame_id`; returns its id. Ids are
  // dense from 0 in creation order and never change, so they can be written to storage as
  // they are made: on_new(id, parent, frame_id, depth) runs once per new node, after the node
  // exists and always after its parent's call; depth is 0 for roots. on_new should not throw:
  // if it does, the exception propagates and the node stays in the tree unreported. Throws
  // std::out_of_range if `parent` is not an id this tree returned.
  int64_t intern(std::optional<int64_t> parent, int64_t frame_id);

  // Interns a whole stack given outermost first; returns the leaf id (nullopt for an empty
  // stack).
  std::optional<int64_t> intern_stack(std::span<const int64_t> frame_ids_outermost_first);

  std::function<void(int64_t id, std::optional<int64_t> parent, int64_t frame_id, int depth)>
      on_new;

  size_t size() const { return nodes_.size(); }

  // The frame ids of the stack ending at `leaf`, innermost first (empty for nullopt or an id
  // this tree did not return).
  std::vector<int64_t> frames_of(std::optional<int64_t> leaf) const;

 private:
  struct Key {
    int64_t parent;  // kNoParent for a root
    int64_t frame_id;
    friend bool operator==(const Key&, const Key&) = default;
  };
  struct KeyHash {
    size_t operator()(const Key& key) const;
  };
  static constexpr int64_t kNoParent = -1;

  // One lookup per frame of each stack. A node-based unordered_map costs a pointer chase per
  // lookup, but the collector does that once per frame of each distinct event stack, a few
  // million lookups a second at most, far below what it sustains; the tree itself grows only
  // with distinct callsites (thousands to a few million nodes). An open-addressing map would
  // be faster but is not needed yet.
  std::unordered_map<Key, int64_t, KeyHash> children_;
  struct Node {
    int64_t parent;  // kNoParent for a root
    int64_t frame_id;
    int depth;
  };
  std::vector<Node> nodes_;  // by id
};

}  // namespace vramtrace::collector
