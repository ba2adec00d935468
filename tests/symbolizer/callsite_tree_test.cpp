#include "collector/callsite_tree.h"

#include <map>
#include <optional>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace vramtrace::collector {
namespace {

struct Row {
  std::optional<int64_t> parent;
  int64_t frame_id;
  int depth;
};

// A tree whose on_new writes rows as storage would, failing the test on a repeated id.
class RecordingTree {
 public:
  RecordingTree() {
    tree.on_new = [this](int64_t id, std::optional<int64_t> parent, int64_t frame_id, int depth) {
      EXPECT_FALSE(rows.contains(id)) << "on_new called twice for " << id;
      if (parent) {
        EXPECT_TRUE(rows.contains(*parent)) << "child reported before its parent";
      }
      rows[id] = {parent, frame_id, depth};
    };
  }
  CallsiteTree tree;
  std::map<int64_t, Row> rows;
};

std::optional<int64_t> intern(CallsiteTree& tree, std::vector<int64_t> stack) {
  return tree.intern_stack(stack);
}

TEST(CallsiteTree, SameStackTwiceGivesSameLeaf) {
  RecordingTree t;
  const auto first = intern(t.tree, {10, 20, 30});
  const auto second = intern(t.tree, {10, 20, 30});
  ASSERT_TRUE(first);
  EXPECT_EQ(first, second);
  EXPECT_EQ(t.tree.size(), 3u);
  EXPECT_EQ(t.rows.size(), 3u);
}

TEST(CallsiteTree, SharedPrefixesShareNodes) {
  RecordingTree t;
  const int64_t a = *intern(t.tree, {1, 2, 3});
  const int64_t b = *intern(t.tree, {1, 2, 4});
  const int64_t c = *intern(t.tree, {1, 5});
  const int64_t d = *intern(t.tree, {2, 2, 3});  // same frames, different root
  EXPECT_EQ(t.tree.size(), 8u);                  // 1,2,3 + 4 + 5 + 2',2',3'

  // a and b share the node for (1, 2); c shares only the root.
  ASSERT_EQ(t.rows.size(), 8u);
  EXPECT_EQ(t.rows[a].parent, t.rows[b].parent);
  EXPECT_NE(a, b);
  const int64_t shared_mid = *t.rows[a].parent;
  EXPECT_EQ(t.rows[shared_mid].parent, t.rows[c].parent);
  EXPECT_NE(a, d);
  EXPECT_NE(t.rows[a].parent, t.rows[d].parent);
}

TEST(CallsiteTree, ParentsFramesAndDepthsDescribeTheStack) {
  RecordingTree t;
  const std::vector<int64_t> stack = {7, 8, 9, 8};
  std::optional<int64_t> node = t.tree.intern_stack(stack);
  ASSERT_TRUE(node);
  // Walking up from the leaf must give the stack back, innermost first, at falling depths.
  for (int depth = 3; depth >= 0; --depth) {
    ASSERT_TRUE(node);
    const Row& row = t.rows.at(*node);
    EXPECT_EQ(row.depth, depth);
    EXPECT_EQ(row.frame_id, stack[static_cast<size_t>(depth)]);
    node = row.parent;
  }
  EXPECT_FALSE(node) << "the root must have no parent";
}

TEST(CallsiteTree, FramesOfALeafAreItsStackInnermostFirst) {
  RecordingTree t;
  const std::vector<int64_t> stack = {7, 8, 9, 8};  // outermost first
  const std::optional<int64_t> leaf = t.tree.intern_stack(stack);
  ASSERT_TRUE(leaf);
  EXPECT_EQ(t.tree.frames_of(leaf), (std::vector<int64_t>{8, 9, 8, 7}));
  EXPECT_TRUE(t.tree.frames_of(std::nullopt).empty());
  EXPECT_TRUE(t.tree.frames_of(int64_t{99}).empty());  // not an id of this tree
}

TEST(CallsiteTree, IdsAreDenseFromZeroInCreationOrder) {
  RecordingTree t;
  intern(t.tree, {1, 2});
  intern(t.tree, {1, 3});
  intern(t.tree, {4});
  std::vector<int64_t> ids;
  for (const auto& [id, row] : t.rows) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(t.rows[0].frame_id, 1);
  EXPECT_EQ(t.rows[1].frame_id, 2);
  EXPECT_EQ(t.rows[2].frame_id, 3);
  EXPECT_EQ(t.rows[3].frame_id, 4);
}

TEST(CallsiteTree, InternSingleNodes) {
  RecordingTree t;
  const int64_t root = t.tree.intern(std::nullopt, 42);
  EXPECT_EQ(t.tree.intern(std::nullopt, 42), root);
  const int64_t child = t.tree.intern(root, 42);  // same frame below itself: recursion
  EXPECT_NE(child, root);
  EXPECT_EQ(t.rows.at(child).parent, root);
  EXPECT_EQ(t.rows.at(child).depth, 1);
  EXPECT_EQ(t.rows.at(root).depth, 0);
  EXPECT_EQ(t.tree.intern(root, 42), child);
  EXPECT_EQ(t.rows.size(), 2u);
}

TEST(CallsiteTree, EmptyStackHasNoLeaf) {
  RecordingTree t;
  EXPECT_EQ(intern(t.tree, {}), std::nullopt);
  EXPECT_EQ(t.tree.size(), 0u);
  EXPECT_TRUE(t.rows.empty());
}

TEST(CallsiteTree, UnknownParentIsRejected) {
  RecordingTree t;
  EXPECT_THROW(t.tree.intern(0, 1), std::out_of_range);
  const int64_t root = t.tree.intern(std::nullopt, 1);
  EXPECT_THROW(t.tree.intern(root + 1, 1), std::out_of_range);
  EXPECT_THROW(t.tree.intern(-1, 1), std::out_of_range);
  EXPECT_EQ(t.tree.size(), 1u);
}

TEST(CallsiteTree, WorksWithoutACallback) {
  CallsiteTree tree;
  const std::vector<int64_t> stack = {1, 2, 3};
  EXPECT_EQ(tree.intern_stack(stack), tree.intern_stack(stack));
  EXPECT_EQ(tree.size(), 3u);
}

TEST(CallsiteTree, ManyStacksStayDeduplicated) {
  RecordingTree t;
  // 50 roots x 50 children x 2 leaves: every stack interned twice.
  for (int pass = 0; pass < 2; ++pass) {
    for (int64_t a = 0; a < 50; ++a) {
      for (int64_t b = 0; b < 50; ++b) {
        intern(t.tree, {a, b, 0});
        intern(t.tree, {a, b, 1});
      }
    }
  }
  EXPECT_EQ(t.tree.size(), 50u + 50u * 50u + 50u * 50u * 2u);
  EXPECT_EQ(t.rows.size(), t.tree.size());
}

}  // namespace
}  // namespace vramtrace::collector
