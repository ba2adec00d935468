#include "cli/advice_output.h"

#include <fmt/core.h>

namespace vramtrace::cli {

using Json = nlohmann::ordered_json;

Json advice_json(const analysis::Advice& advice) {
  Json evidence = Json::object();
  for (const auto& [name, value] : advice.evidence) evidence[name] = value;
  if (advice.fraction) evidence["external_fragmentation"] = *advice.fraction;
  return {{"id", advice.id}, {"text", advice.text}, {"evidence", std::move(evidence)}};
}

Json advice_json(const std::vector<analysis::Advice>& advice) {
  Json list = Json::array();
  for (const analysis::Advice& a : advice) list.push_back(advice_json(a));
  return list;
}

std::string advice_text(const std::vector<analysis::Advice>& advice, std::string_view indent) {
  std::string text;
  for (const analysis::Advice& a : advice) text += fmt::format("{}[{}] {}\n", indent, a.id, a.text);
  return text;
}

}  // namespace vramtrace::cli
