// JsonObjectWriter: a document written a member at a time reads, to the byte, as nlohmann's
// dump(2) of the whole document, whatever the members hold.
#include "cli/json_object_writer.h"

#include <gtest/gtest.h>

#include <string>

namespace vramtrace::cli {
namespace {

using Json = nlohmann::ordered_json;

std::string dumped(const Json& document) {
  return document.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

TEST(JsonObjectWriter, WritesWhatDumpWritesOfTheWholeDocument) {
  const Json nested = {{"a", 1},
                       {"list", Json::array({1, "two", Json::object(), Json::array()})},
                       {"empty_object", Json::object()},
                       {"empty_list", Json::array()},
                       {"deep", {{"x", {{"y", Json::array({Json::object({{"z", nullptr}})})}}}}},
                       {"text", "line\nbreak \"quoted\" \xff not UTF-8"}};
  std::vector<Json> elements = {nested, Json::array(), 3.5, "s", Json::object({{"k", nested}})};

  Json whole = Json::object();
  whole["first"] = nested;
  whole["elements"] = elements;
  whole["none"] = Json::array();
  whole["last"] = true;

  std::string written;
  std::size_t pieces = 0;
  JsonObjectWriter writer([&](std::string_view text) {
    written += text;
    ++pieces;
  });
  writer.member("first", nested);
  writer.array_member("elements", [&](const auto& write) {
    for (const Json& element : elements) write(element);
  });
  writer.array_member("none", [](const auto&) {});
  writer.members({{"last", true}});
  writer.finish();
  EXPECT_EQ(written, dumped(whole));
  EXPECT_GE(pieces, 1u);
}

TEST(JsonObjectWriter, AnEmptyDocumentIsAnEmptyObject) {
  std::string written;
  JsonObjectWriter writer([&](std::string_view text) { written += text; });
  writer.finish();
  EXPECT_EQ(written, dumped(Json::object()));
}

// Large documents reach the sink as they are written, a megabyte or so at a time, not at the end.
TEST(JsonObjectWriter, ALargeArrayIsHandedOnAsItIsWritten) {
  std::size_t pieces_before_finish = 0, total = 0;
  bool finished = false;
  JsonObjectWriter writer([&](std::string_view text) {
    if (!finished) ++pieces_before_finish;
    total += text.size();
  });
  writer.array_member("processes", [](const auto& write) {
    for (int i = 0; i < 100000; ++i) write(Json{{"upid", i}, {"exe", std::string(40, 'x')}});
  });
  finished = true;
  writer.finish();
  EXPECT_GT(total, 5u << 20);
  EXPECT_GE(pieces_before_finish, 5u);
}

}  // namespace
}  // namespace vramtrace::cli
