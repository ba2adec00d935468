// The leak tree: a callsite tree of a leak report (the whole trace's leaks, a range's, or what
// was live at the peak), and beside it the stack of the chosen node with the source lines of each
// frame whose file is on this disk. It opens bottom-up, as heaptrack's does: the allocation site
// first, with the Python line that led there beside it, then its callers; the first row's path
// is opened down to that Python line's row, which is chosen (its stack shown). Top-down is the
// direction box's other choice. Where no stack has a Python frame the Python line column is
// hidden.
#pragma once

#include <QWidget>
#include <memory>

#include "analysis/reports/leak_report.h"
#include "text/stack_text.h"
#include "viewer/model/callsite_tree_model.h"
#include "viewer/model/trace_queries.h"

class QCheckBox;
class QComboBox;
class QLabel;
class QPlainTextEdit;
class QTreeView;

namespace vramtrace::viewer {

class CallsitePanel : public QWidget {
  Q_OBJECT

 public:
  explicit CallsitePanel(QWidget* parent = nullptr);

  // `what`: the heading, saying which leaks these are; `subject`: what the report is of.
  void set_report(std::shared_ptr<const analysis::LeakReport> report, TreeSubject subject,
                  const QString& what);
  void set_direction(analysis::TreeDirection direction);
  analysis::TreeDirection direction() const { return direction_; }
  // The flame graph follows it (stack_view_changed).
  void set_stack_view(text::StackView view);
  text::StackView stack_view() const { return view_; }
  QCheckBox* native_box() const { return native_box_; }

  const CallsiteTreeModel& model() const { return *model_; }
  QTreeView* tree() const { return tree_; }
  QString stack_text() const;

 signals:
  void subject_chosen(vramtrace::viewer::TreeSubject subject);
  void stack_view_changed(vramtrace::text::StackView view);

 private:
  void rebuild();
  void open_first_path();
  void show_stack(const QModelIndex& index);

  std::shared_ptr<const analysis::LeakReport> report_;
  analysis::TreeDirection direction_ = analysis::TreeDirection::kBottomUp;
  text::StackView view_ = text::StackView::kPythonFirst;
  CallsiteTreeModel* model_;
  QLabel* heading_;
  QComboBox* subject_box_;
  QComboBox* direction_box_;
  QCheckBox* native_box_;
  QTreeView* tree_;
  QPlainTextEdit* stack_;
};

}  // namespace vramtrace::viewer
