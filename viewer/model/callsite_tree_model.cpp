#include "viewer/model/callsite_tree_model.h"

#include <QBrush>
#include <QColor>
#include <QFont>

#include "viewer/model/frame_text.h"
#include "viewer/model/leak_tree.h"

namespace vramtrace::viewer {

CallsiteTreeModel::CallsiteTreeModel(QObject* parent) : QAbstractItemModel(parent) {}

void CallsiteTreeModel::set_roots(std::vector<analysis::CallsiteNode> roots) {
  beginResetModel();
  roots_ = std::move(roots);
  items_.clear();
  root_items_.clear();
  add_items(roots_, nullptr, &root_items_);
  endResetModel();
}

void CallsiteTreeModel::add_items(const std::vector<analysis::CallsiteNode>& nodes,
                                  const Item* parent, std::vector<const Item*>* siblings) {
  for (const analysis::CallsiteNode& node : nodes) {
    auto item = std::make_unique<Item>();
    item->node = &node;
    item->parent = parent;
    item->row = static_cast<int>(siblings->size());
    Item* added = item.get();
    items_.push_back(std::move(item));
    siblings->push_back(added);
    add_items(node.children, added, &added->children);
  }
}

std::uint64_t CallsiteTreeModel::total_bytes() const {
  std::uint64_t total = 0;
  for (const analysis::CallsiteNode& root : roots_) total += root.bytes;
  return total;
}

const CallsiteTreeModel::Item* CallsiteTreeModel::item(const QModelIndex& index) const {
  return index.isValid() ? static_cast<const Item*>(index.internalPointer()) : nullptr;
}

const analysis::CallsiteNode* CallsiteTreeModel::node(const QModelIndex& index) const {
  const Item* found = item(index);
  return found != nullptr ? found->node : nullptr;
}

std::vector<storage::StackFrame> CallsiteTreeModel::path_to(const QModelIndex& index) const {
  std::vector<storage::StackFrame> path;
  for (const Item* at = item(index); at != nullptr; at = at->parent)
    path.insert(path.begin(), at->node->frame);
  return path;
}

QModelIndex CallsiteTreeModel::index(int row, int column, const QModelIndex& parent) const {
  if (row < 0 || column < 0 || column >= kColumnCount) return {};
  const Item* parent_item = item(parent);
  if (parent.isValid() && parent.column() != 0) return {};
  const std::vector<const Item*>& children =
      parent_item != nullptr ? parent_item->children : root_items_;
  if (static_cast<std::size_t>(row) >= children.size()) return {};
  return createIndex(row, column, const_cast<Item*>(children[static_cast<std::size_t>(row)]));
}

QModelIndex CallsiteTreeModel::parent(const QModelIndex& child) const {
  const Item* child_item = item(child);
  if (child_item == nullptr || child_item->parent == nullptr) return {};
  return createIndex(child_item->parent->row, 0, const_cast<Item*>(child_item->parent));
}

int CallsiteTreeModel::rowCount(const QModelIndex& parent) const {
  if (!parent.isValid()) return static_cast<int>(root_items_.size());
  if (parent.column() != 0) return 0;
  return static_cast<int>(item(parent)->children.size());
}

int CallsiteTreeModel::columnCount(const QModelIndex&) const {
  return kColumnCount;
}

QVariant CallsiteTreeModel::data(const QModelIndex& index, int role) const {
  const analysis::CallsiteNode* at = node(index);
  if (at == nullptr) return {};
  switch (role) {
    case Qt::DisplayRole:
      switch (index.column()) {
        case kLocation:
          return frame_label(at->frame);
        case kPythonLine:
          return at->python_frame ? python_line_label(*at->python_frame) : QString();
        case kBytes:
          return byte_text(at->bytes);
        case kCount:
          return QString::number(at->count);
      }
      break;
    case kSortRole:
      switch (index.column()) {
        case kLocation:
          return frame_label(at->frame);
        case kPythonLine:
          return at->python_frame ? python_line_label(*at->python_frame) : QString();
        case kBytes:
          return QVariant::fromValue<qulonglong>(at->bytes);
        case kCount:
          return QVariant::fromValue<qulonglong>(at->count);
      }
      break;
    case Qt::ToolTipRole:
      if (index.column() == kPythonLine) {
        if (!at->python_frame || !at->python_frame->file) return {};
        return QString::fromStdString(*at->python_frame->file);
      }
      if (const std::size_t run = folded_run_length(at->frame); run != 0)
        return (run == 1 ? tr("1 interpreter, binding or framework frame in one row")
                         : tr("%1 interpreter, binding or framework frames in one row").arg(run)) +
               tr("; \"All native frames\" shows each");
      if (at->frame.module.empty()) return {};
      return QStringLiteral("%1+0x%2")
          .arg(QString::fromStdString(at->frame.module))
          .arg(at->frame.rel_pc, 0, 16);
    case Qt::FontRole:
      if (index.column() == kLocation && folded_run_length(at->frame) != 0) {
        QFont font;
        font.setItalic(true);
        return font;
      }
      break;
    case Qt::ForegroundRole:
      // Not a frame of its own: read past it, as past the folded lines of the CLI's stacks.
      if (index.column() == kLocation && folded_run_length(at->frame) != 0)
        return QBrush(QColor(0x80, 0x80, 0x80));
      break;
    case Qt::TextAlignmentRole:
      // The numbers right-aligned; the two texts read from the left.
      if (index.column() == kBytes || index.column() == kCount)
        return QVariant(Qt::AlignRight | Qt::AlignVCenter);
      break;
  }
  return {};
}

QVariant CallsiteTreeModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kLocation:
      return tr("Location");
    case kPythonLine:
      return tr("Python line");
    case kBytes:
      return tr("Bytes");
    case kCount:
      return tr("Allocations");
  }
  return {};
}

}  // namespace vramtrace::viewer
