#include "viewer/widgets/callsite_panel.h"

#include <QComboBox>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QSplitter>
#include <QTreeView>
#include <QVBoxLayout>

#include "viewer/model/frame_text.h"
#include "viewer/model/source_excerpt.h"

namespace vramtrace::viewer {

CallsitePanel::CallsitePanel(QWidget* parent)
    : QWidget(parent),
      model_(new CallsiteTreeModel(this)),
      heading_(new QLabel(this)),
      subject_box_(new QComboBox(this)),
      direction_box_(new QComboBox(this)),
      tree_(new QTreeView(this)),
      stack_(new QPlainTextEdit(this)) {
  subject_box_->addItem(tr("Leaks (of the selected range, if any)"));
  subject_box_->addItem(tr("Live at the peak"));
  connect(subject_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    emit subject_chosen(index == 0 ? TreeSubject::kLeaks : TreeSubject::kLiveAtPeak);
  });
  direction_box_->addItem(tr("Top-down (callers first)"));
  direction_box_->addItem(tr("Bottom-up (allocating functions first)"));
  connect(direction_box_, &QComboBox::currentIndexChanged, this, [this](int index) {
    set_direction(index == 0 ? analysis::TreeDirection::kTopDown
                             : analysis::TreeDirection::kBottomUp);
  });
  tree_->setModel(model_);
  tree_->setUniformRowHeights(true);
  tree_->header()->setStretchLastSection(false);
  tree_->header()->setSectionResizeMode(CallsiteTreeModel::kLocation, QHeaderView::Stretch);
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

void CallsitePanel::rebuild() {
  model_->set_roots(report_ ? analysis::build_leak_tree(report_->groups, direction_)
                            : std::vector<analysis::CallsiteNode>{});
  tree_->expandToDepth(1);
  stack_->clear();
}

QString CallsitePanel::stack_text() const {
  return stack_->toPlainText();
}

void CallsitePanel::show_stack(const QModelIndex& index) {
  std::vector<storage::StackFrame> path = model_->path_to(index);
  // Innermost first, as the CLI prints a stack.
  if (direction_ == analysis::TreeDirection::kTopDown) std::reverse(path.begin(), path.end());
  QString text;
  for (std::size_t i = 0; i < path.size(); ++i) {
    const storage::StackFrame& frame = path[i];
    text += QStringLiteral("#%1 %2").arg(i).arg(frame_label(frame));
    if (!frame.module.empty())
      text += QStringLiteral("  [%1]").arg(QString::fromStdString(frame.module));
    text += '\n';
    if (!frame.file || !frame.line) continue;
    const std::optional<SourceExcerpt> excerpt = read_source_excerpt(*frame.file, *frame.line, 2);
    if (!excerpt) continue;
    for (std::size_t l = 0; l < excerpt->lines.size(); ++l) {
      const int number = excerpt->first_line + static_cast<int>(l);
      text += QStringLiteral("   %1 %2| %3\n")
                  .arg(number == *frame.line ? QStringLiteral(">") : QStringLiteral(" "))
                  .arg(number, 5)
                  .arg(QString::fromStdString(excerpt->lines[l]));
    }
  }
  stack_->setPlainText(text);
}

}  // namespace vramtrace::viewer
