#include "viewer/widgets/callsite_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>
#include <algorithm>

#include "viewer/model/frame_text.h"
#include "viewer/model/leak_tree.h"
#include "viewer/model/source_excerpt.h"

namespace vramtrace::viewer {

CallsitePanel::CallsitePanel(QWidget* parent)
    : QWidget(parent),
      model_(new CallsiteTreeModel(this)),
      heading_(new QLabel(this)),
      subject_box_(new QComboBox(this)),
      direction_box_(new QComboBox(this)),
      native_box_(new QCheckBox(tr("All native frames"), this)),
      tree_(new QTreeView(this)),
      stack_(new QPlainTextEdit(this)) {
  subject_box_->addItem(tr("Leaks (of the selected range, if any)"));
  subject_box_->addItem(tr("Live at the peak"));
  connect(subject_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    emit subject_chosen(index == 0 ? TreeSubject::kLeaks : TreeSubject::kLiveAtPeak);
  });
  direction_box_->addItem(tr("Top-down (callers first)"));
  direction_box_->addItem(tr("Bottom-up (allocating functions first)"));
  direction_box_->setCurrentIndex(direction_ == analysis::TreeDirection::kTopDown ? 0 : 1);
  connect(direction_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    set_direction(index == 0 ? analysis::TreeDirection::kTopDown
                             : analysis::TreeDirection::kBottomUp);
  });
  native_box_->setToolTip(
      tr("Show every frame of the interpreter, the bindings and the framework (libtorch, libc10, "
         "...) instead of one grey row for each run of them, as vramtrace's --native does"));
  connect(native_box_, &QCheckBox::toggled, this, [this](bool native) {
    set_stack_view(native ? text::StackView::kNative : text::StackView::kPythonFirst);
  });
  tree_->setModel(model_);
  tree_->setUniformRowHeights(true);
  // A PyTorch stack is 20 and more frames deep, and the first row's path is opened to its Python
  // line: a narrower step leaves the frames room.
  tree_->setIndentation(12);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(CallsiteTreeModel::kLocation, QHeaderView::Stretch);
  // The frame's text has what the other columns leave.
  for (const int column :
       {CallsiteTreeModel::kPythonLine, CallsiteTreeModel::kBytes, CallsiteTreeModel::kCount})
    tree_->header()->setSectionResizeMode(column, QHeaderView::ResizeToContents);
  connect(tree_->selectionModel(), &QItemSelectionModel::currentChanged, this,
          [this](const QModelIndex& current) { show_stack(current); });
  stack_->setReadOnly(true);
  stack_->setLineWrapMode(QPlainTextEdit::NoWrap);
  stack_->setPlaceholderText(tr("Choose a callsite to see its stack and source lines."));
  QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
  stack_->setFont(mono);

  auto* top = new QHBoxLayout;
  top->addWidget(subject_box_);
  top->addWidget(heading_, 1);
  top->addWidget(native_box_);
  top->addWidget(direction_box_);
  auto* splitter = new QSplitter(Qt::Horizontal, this);
  splitter->addWidget(tree_);
  splitter->addWidget(stack_);
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  layout->addLayout(top);
  layout->addWidget(splitter, 1);
}

void CallsitePanel::set_report(std::shared_ptr<const analysis::LeakReport> report,
                               TreeSubject subject, const QString& what) {
  report_ = std::move(report);
  {
    const QSignalBlocker quiet(subject_box_);
    subject_box_->setCurrentIndex(subject == TreeSubject::kLeaks ? 0 : 1);
  }
  if (report_) {
    heading_->setText(tr("%1: %2 (%3 level)%4")
                          .arg(what)
                          .arg(bytes_in_allocations(report_->total_bytes, report_->total_count))
                          .arg(QString::fromStdString(report_->level))
                          .arg(report_->cached.count != 0
                                   ? tr("; cached by the allocator, not leaks: %1")
                                         .arg(byte_text(report_->cached.bytes))
                                   : QString()));
  }
  rebuild();
}

void CallsitePanel::set_direction(analysis::TreeDirection direction) {
  direction_ = direction;
  direction_box_->setCurrentIndex(direction == analysis::TreeDirection::kTopDown ? 0 : 1);
  rebuild();
}

void CallsitePanel::set_stack_view(text::StackView view) {
  if (view == view_) return;
  view_ = view;
  {
    const QSignalBlocker quiet(native_box_);
    native_box_->setChecked(view == text::StackView::kNative);
  }
  rebuild();
  emit stack_view_changed(view);
}

void CallsitePanel::rebuild() {
  model_->set_roots(report_ ? leak_tree(report_->groups, direction_, view_)
                            : std::vector<analysis::CallsiteNode>{});
  // Every stack passes through a root, so a root without a Python line means no stack under it
  // has one; a trace without any Python frame has no column for them.
  const std::vector<analysis::CallsiteNode>& roots = model_->roots();
  tree_->setColumnHidden(
      CallsiteTreeModel::kPythonLine,
      std::none_of(roots.begin(), roots.end(), [](const analysis::CallsiteNode& root) {
        return root.python_frame.has_value();
      }));
  tree_->expandToDepth(1);
  stack_->clear();
  open_first_path();
}

namespace {

bool same_line(const storage::StackFrame& a, const storage::StackFrame& b) {
  return a.language == b.language && a.function == b.function && a.file == b.file &&
         a.line == b.line;
}

}  // namespace

void CallsitePanel::open_first_path() {
  const QModelIndex first = model_->index(0, 0);
  if (!first.isValid()) return;
  // Down the path of the first row's largest Python-driven stack (the child that keeps the same
  // Python line), until the row of that line itself; bounded, as a stack is.
  constexpr int kMostOpened = 256;
  QModelIndex at = first;
  for (int depth = 0; depth < kMostOpened; ++depth) {
    const analysis::CallsiteNode* node = model_->node(at);
    if (!node->python_frame || same_line(node->frame, *node->python_frame)) break;
    QModelIndex next;
    for (int row = 0; row < model_->rowCount(at) && !next.isValid(); ++row) {
      const QModelIndex child = model_->index(row, 0, at);
      const analysis::CallsiteNode* candidate = model_->node(child);
      if (candidate->python_frame && same_line(*candidate->python_frame, *node->python_frame))
        next = child;
    }
    if (!next.isValid()) break;
    tree_->expand(at);
    at = next;
  }
  // The row reached (that Python line's, where there is one) is chosen: beside the tree, the
  // stack from the first row to it, innermost first, with its source lines.
  tree_->setCurrentIndex(at);
}

QString CallsitePanel::stack_text() const {
  return stack_->toPlainText();
}

void CallsitePanel::show_stack(const QModelIndex& index) {
  std::vector<storage::StackFrame> path = model_->path_to(index);
  // Innermost first, as the CLI prints a stack.
  if (direction_ == analysis::TreeDirection::kTopDown) std::reverse(path.begin(), path.end());
  // Numbered by the frames as recorded, so that a line reads as in the --native view: a folded
  // row keeps the numbers of the frames it stands for ("#1-21 [aten::add: 21 frames in ...]"),
  // as the CLI's Python-first stacks print it (text/stack_text.h).
  QString text;
  std::size_t number = 0;
  for (const storage::StackFrame& frame : path) {
    if (const std::size_t run = folded_run_length(frame); run != 0) {
      text += run == 1 ? QStringLiteral("#%1 %2\n").arg(number).arg(frame_label(frame))
                       : QStringLiteral("#%1-%2 %3\n")
                             .arg(number)
                             .arg(number + run - 1)
                             .arg(frame_label(frame));
      number += run;
      continue;
    }
    text += QStringLiteral("#%1 %2").arg(number++).arg(frame_label(frame));
    if (!frame.module.empty())
      text += QStringLiteral("  [%1]").arg(QString::fromStdString(frame.module));
    text += '\n';
    if (!frame.file || !frame.line) continue;
    const std::optional<SourceExcerpt> excerpt = read_source_excerpt(*frame.file, *frame.line, 2);
    if (!excerpt) continue;
    for (std::size_t l = 0; l < excerpt->lines.size(); ++l) {
      const int source_line = excerpt->first_line + static_cast<int>(l);
      text += QStringLiteral("   %1 %2| %3\n")
                  .arg(source_line == *frame.line ? QStringLiteral(">") : QStringLiteral(" "))
                  .arg(source_line, 5)
                  .arg(QString::fromStdString(excerpt->lines[l]));
    }
  }
  stack_->setPlainText(text);
}

}  // namespace vramtrace::viewer
