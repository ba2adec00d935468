#include "viewer/model/axis_ticks.h"

#include <algorithm>

#include "viewer/model/frame_text.h"

namespace vramtrace::viewer {
namespace {

// "200.000 ms" -> "200 ms", "1.500 s" -> "1.5 s": the number's trailing zeros, and its point.
QString without_trailing_zeros(const QString& text) {
  const qsizetype space = text.indexOf(QLatin1Char(' '));
  QString number = space < 0 ? text : text.left(space);
  if (!number.contains(QLatin1Char('.'))) return text;
  while (number.endsWith(QLatin1Char('0'))) number.chop(1);
  if (number.endsWith(QLatin1Char('.'))) number.chop(1);
  return space < 0 ? number : number + text.mid(space);
}

// Whether `span` in steps of `step` takes at most `steps` of them: ceil(span / step) <= steps.
bool fits(std::uint64_t span, std::uint64_t step, std::uint64_t steps) {
  return span / step + (span % step != 0 ? 1 : 0) <= steps;
}

}  // namespace

std::uint64_t decimal_step(std::uint64_t span, int most_steps) {
  const auto steps = static_cast<std::uint64_t>(std::max(1, most_steps));
  std::uint64_t power = 1;
  for (; power <= UINT64_MAX / 10; power *= 10) {
    for (const std::uint64_t multiple : {1, 2, 5})
      if (fits(span, power * multiple, steps)) return power * multiple;
  }
  return power;
}

std::uint64_t power_of_two_step(std::uint64_t span, int most_steps) {
  const auto steps = static_cast<std::uint64_t>(std::max(1, most_steps));
  std::uint64_t step = 1;
  while (!fits(span, step, steps) && step <= UINT64_MAX / 2) step *= 2;
  return step;
}

std::vector<std::uint64_t> multiples_between(std::uint64_t from, std::uint64_t to,
                                             std::uint64_t step) {
  std::vector<std::uint64_t> values;
  if (step == 0 || from > to) return values;
  std::uint64_t value = from / step * step + (from % step != 0 ? step : 0);
  for (; value <= to && value >= from; value += step) {
    values.push_back(value);
    if (value > UINT64_MAX - step) break;
  }
  return values;
}

QString time_tick_text(std::int64_t ns, std::int64_t origin_ns) {
  return without_trailing_zeros(time_text(ns, origin_ns));
}

QString byte_tick_text(std::uint64_t bytes) {
  return without_trailing_zeros(byte_text(bytes));
}

}  // namespace vramtrace::viewer
