// Where the timeline's axes put their labels: at round values, so that a person reads "200 ms"
// and "128 MiB", not "172.687 ms" and "42.5 MiB". Times step by 1, 2 or 5 times a power of ten
// of nanoseconds, as plotting tools do; bytes by a power of two, as memory comes, so that every
// label is exact in the binary units byte_text() writes.
#pragma once

#include <QString>
#include <cstdint>
#include <vector>

namespace vramtrace::viewer {

// The smallest step of 1, 2 or 5 times a power of ten that cuts `span` into at most
// `most_steps` steps.
std::uint64_t decimal_step(std::uint64_t span, int most_steps);
// The smallest power of two that does the same.
std::uint64_t power_of_two_step(std::uint64_t span, int most_steps);

// The multiples of `step` (not 0) in [from, to], in order.
std::vector<std::uint64_t> multiples_between(std::uint64_t from, std::uint64_t to,
                                             std::uint64_t step);

// A tick's label: a time from `origin_ns` or a size, as time_text() and byte_text() write them
// but without the zeros a round value leaves after its point ("200 ms", "1.5 s", "100 MiB").
QString time_tick_text(std::int64_t ns, std::int64_t origin_ns);
QString byte_tick_text(std::uint64_t bytes);

}  // namespace vramtrace::viewer
