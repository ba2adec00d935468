#include "viewer/model/frame_text.h"

#include <QObject>

#include <cmath>
#include <filesystem>

#include "analysis/values/advice.h"
#include "analysis/values/live_callsite_tree.h"

namespace vramtrace::viewer {

QString frame_label(const storage::StackFrame& frame) {
  if (frame.function) return QString::fromStdString(analysis::advice_callsite({frame}));
  // build_callsite_tree() gives allocations without a stack a root with no function or module.
  if (frame.module.empty()) return QStringLiteral("(no stack)");
  return QStringLiteral("?? (%1+0x%2)")
      .arg(QString::fromStdString(std::filesystem::path(frame.module).filename().string()))
      .arg(frame.rel_pc, 0, 16);
}

QString stack_label(const std::vector<storage::StackFrame>& stack) {
  const storage::StackFrame* line = analysis::first_line_of(stack);
  return line ? frame_label(*line) : QObject::tr("(no stack)");
}

QString python_line_label(const storage::StackFrame& frame) {
  QString text = QString::fromStdString(
      frame.file ? std::filesystem::path(*frame.file).filename().string() : std::string("??"));
  if (frame.line) text += QStringLiteral(":%1").arg(*frame.line);
  if (frame.function) text += QStringLiteral(" in %1").arg(QString::fromStdString(*frame.function));
  return text;
}

QString byte_text(std::uint64_t bytes) {
  return QString::fromStdString(analysis::advice_bytes(bytes));
}

QString bytes_in_allocations(std::uint64_t bytes, std::uint64_t count) {
  return count == 1 ? QObject::tr("%1 in 1 allocation").arg(byte_text(bytes))
                    : QObject::tr("%1 in %2 allocations").arg(byte_text(bytes)).arg(count);
}

QString time_text(std::int64_t ns, std::int64_t origin_ns) {
  if (ns == origin_ns) return QStringLiteral("0");
  const double seconds = static_cast<double>(ns - origin_ns) / 1e9;
  const double magnitude = std::abs(seconds);
  if (magnitude >= 1) return QStringLiteral("%1 s").arg(seconds, 0, 'f', 3);
  if (magnitude >= 1e-3) return QStringLiteral("%1 ms").arg(seconds * 1e3, 0, 'f', 3);
  return QStringLiteral("%1 us").arg(seconds * 1e6, 0, 'f', 3);
}

}  // namespace vramtrace::viewer
