#include "cli/json_object_writer.h"

#include <utility>

namespace vramtrace::cli {
namespace {

using Json = nlohmann::ordered_json;

// `value` as dump(2) writes it `depth` levels down: each line after its first indented by
// 2 * depth more. Paths and argv need not be UTF-8: what JSON cannot carry is replaced.
void append_at_depth(std::string* out, const Json& value, int depth) {
  const std::string text = value.dump(2, ' ', false, Json::error_handler_t::replace);
  const std::string indent(static_cast<std::size_t>(2 * depth), ' ');
  for (const char c : text) {
    *out += c;
    if (c == '\n') *out += indent;
  }
}

}  // namespace

constexpr std::size_t kFlushBytes = 1 << 20;

JsonObjectWriter::JsonObjectWriter(std::function<void(std::string_view)> sink)
    : sink_(std::move(sink)) {
  buffer_ += '{';
}

void JsonObjectWriter::flush_if_full() {
  if (buffer_.size() < kFlushBytes) return;
  sink_(buffer_);
  buffer_.clear();
}

void JsonObjectWriter::key(std::string_view name) {
  buffer_ += first_ ? "\n  " : ",\n  ";
  first_ = false;
  buffer_ += Json(name).dump();
  buffer_ += ": ";
}

void JsonObjectWriter::member(std::string_view name, const Json& value) {
  key(name);
  append_at_depth(&buffer_, value, 1);
  flush_if_full();
}

void JsonObjectWriter::array_member(
    std::string_view name,
    const std::function<void(const std::function<void(const Json&)>&)>& elements) {
  key(name);
  bool empty = true;
  elements([&](const Json& element) {
    buffer_ += empty ? "[\n    " : ",\n    ";
    empty = false;
    append_at_depth(&buffer_, element, 2);
    flush_if_full();
  });
  buffer_ += empty ? "[]" : "\n  ]";
}

void JsonObjectWriter::members(const Json& object) {
  for (const auto& [name, value] : object.items()) member(name, value);
}

void JsonObjectWriter::finish() {
  buffer_ += first_ ? "}\n" : "\n}\n";
  sink_(buffer_);
  buffer_.clear();
}

}  // namespace vramtrace::cli
