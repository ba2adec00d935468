// A callsite tree (analysis/values/live_callsite_tree.h: top-down or bottom-up) as a Qt item model:
// columns location, Python line (the node's python_frame: the user's line that led there),
// bytes, count. The model owns its nodes; setting new roots resets it.
//
// Roles beyond display: Qt::ToolTipRole gives the frame's module and offset (on the Python line,
// its file's path), kSortRole the raw number of a numeric column (for a QSortFilterProxyModel),
// and path_to() the frames from the root down to an item (the stack panel shows them with their
// source lines). A row that stands for a folded run of frames (leak_tree.h, Python-first) is
// grey and italic (Qt::ForegroundRole, Qt::FontRole), its tooltip saying how many frames it is.
#pragma once

#include <QAbstractItemModel>
#include <memory>
#include <vector>

#include "analysis/values/live_callsite_tree.h"

namespace vramtrace::viewer {

class CallsiteTreeModel : public QAbstractItemModel {
  Q_OBJECT

 public:
  enum Column { kLocation, kPythonLine, kBytes, kCount, kColumnCount };
  static constexpr int kSortRole = Qt::UserRole + 1;

  explicit CallsiteTreeModel(QObject* parent = nullptr);

  void set_roots(std::vector<analysis::CallsiteNode> roots);
  const std::vector<analysis::CallsiteNode>& roots() const { return roots_; }
  std::uint64_t total_bytes() const;

  const analysis::CallsiteNode* node(const QModelIndex& index) const;
  // The frames from the root down to `index`, outermost first in a top-down tree (innermost
  // first in a bottom-up one: the path as the tree shows it).
  std::vector<storage::StackFrame> path_to(const QModelIndex& index) const;

  QModelIndex index(int row, int column, const QModelIndex& parent = {}) const override;
  QModelIndex parent(const QModelIndex& child) const override;
  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  // Every node, flattened once, so that parent() is a lookup: the internal pointer of an index
  // is its Item.
  struct Item {
    const analysis::CallsiteNode* node = nullptr;
    const Item* parent = nullptr;
    int row = 0;
    std::vector<const Item*> children;
  };
  void add_items(const std::vector<analysis::CallsiteNode>& nodes, const Item* parent,
                 std::vector<const Item*>* siblings);
  const Item* item(const QModelIndex& index) const;

  std::vector<analysis::CallsiteNode> roots_;
  std::vector<std::unique_ptr<Item>> items_;
  std::vector<const Item*> root_items_;
};

}  // namespace vramtrace::viewer
