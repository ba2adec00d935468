// A JSON document written a member at a time, in the very text `dump(2)` gives the whole
// document: a report whose JSON holds one entry per process (100,000 in a large job) builds
// each entry, writes it and drops it, rather than hold a tree of them all (nlohmann's tree of a
// 100 MB document took 700 MB).
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace vramtrace::cli {

class JsonObjectWriter {
 public:
  using Json = nlohmann::ordered_json;

  // Hands the text to `sink` a piece at a time (every megabyte or so, and at finish()): "{" first,
  // "}" and a newline last.
  explicit JsonObjectWriter(std::function<void(std::string_view)> sink);

  void member(std::string_view key, const Json& value);
  // An array whose elements `elements` hands to its argument one at a time.
  void array_member(std::string_view key,
                    const std::function<void(const std::function<void(const Json&)>&)>& elements);
  // Every member of `object`, in its order.
  void members(const Json& object);
  void finish();

 private:
  void key(std::string_view name);
  void flush_if_full();

  std::function<void(std::string_view)> sink_;
  std::string buffer_;
  bool first_ = true;
};

}  // namespace vramtrace::cli
