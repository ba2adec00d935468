// A small unpickler for the tests: the opcodes PickleWriter writes (analysis/export/
// pickle_writer.h), decoded into a tree of values, so that a test can look into a pickle
// without Python. Anything else (another opcode, a truncated stream, a broken mark) throws.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace vramtrace::testing {

struct PickleValue;
using PickleList = std::vector<std::shared_ptr<PickleValue>>;
using PickleDict = std::map<std::string, std::shared_ptr<PickleValue>>;  // string keys only
struct PickleTuple {
  PickleList items;
};
// Integers: the magnitude past int64 is not needed (addresses fit).
struct PickleValue {
  std::variant<std::monostate, bool, std::int64_t, std::uint64_t, double, std::string, PickleList,
               PickleDict, PickleTuple>
      value;

  bool is_none() const { return std::holds_alternative<std::monostate>(value); }
  const PickleList& list() const { return std::get<PickleList>(value); }
  const PickleDict& dict() const { return std::get<PickleDict>(value); }
  const std::string& str() const { return std::get<std::string>(value); }
  // An integer that fits in 64 bits, either sign.
  std::int64_t integer() const {
    if (const auto* u = std::get_if<std::uint64_t>(&value)) return static_cast<std::int64_t>(*u);
    return std::get<std::int64_t>(value);
  }
  std::uint64_t unsigned_integer() const {
    if (const auto* u = std::get_if<std::uint64_t>(&value)) return *u;
    return static_cast<std::uint64_t>(std::get<std::int64_t>(value));
  }
  const PickleValue& at(const std::string& key) const {
    const auto found = dict().find(key);
    if (found == dict().end()) throw std::out_of_range("no key " + key);
    return *found->second;
  }
  bool has(const std::string& key) const { return dict().contains(key); }
};

inline std::shared_ptr<PickleValue> unpickle(std::string_view data) {
  using Ptr = std::shared_ptr<PickleValue>;
  std::vector<Ptr> stack;
  std::vector<std::size_t> marks;
  std::map<std::uint32_t, Ptr> memo;
  std::size_t at = 0;
  const auto need = [&](std::size_t n) {
    if (at + n > data.size()) throw std::runtime_error("truncated pickle");
  };
  const auto byte = [&]() -> std::uint8_t {
    need(1);
    return static_cast<std::uint8_t>(data[at++]);
  };
  const auto le = [&](std::size_t n) {
    need(n);
    std::uint64_t v = 0;
    for (std::size_t k = 0; k < n; ++k)
      v |= std::uint64_t{static_cast<std::uint8_t>(data[at + k])} << (8 * k);
    at += n;
    return v;
  };
  const auto push = [&](auto v) {
    auto value = std::make_shared<PickleValue>();
    value->value = std::move(v);
    stack.push_back(value);
  };
  const auto pop_mark = [&]() {
    if (marks.empty() || marks.back() > stack.size()) throw std::runtime_error("no mark");
    const std::size_t mark = marks.back();
    marks.pop_back();
    std::vector<Ptr> items(stack.begin() + static_cast<std::ptrdiff_t>(mark), stack.end());
    stack.resize(mark);
    return items;
  };
  const auto top = [&]() -> PickleValue& {
    if (stack.empty()) throw std::runtime_error("empty stack");
    return *stack.back();
  };
  if (byte() != 0x80 || byte() != 2) throw std::runtime_error("not protocol 2");
  while (true) {
    const std::uint8_t op = byte();
    switch (op) {
      case '.':
        if (stack.size() != 1 || !marks.empty()) throw std::runtime_error("unbalanced at STOP");
        if (at != data.size()) throw std::runtime_error("bytes after STOP");
        return stack.back();
      case 'N':
        push(std::monostate{});
        break;
      case 0x88:
        push(true);
        break;
      case 0x89:
        push(false);
        break;
      case 'K':
        push(static_cast<std::int64_t>(le(1)));
        break;
      case 'M':
        push(static_cast<std::int64_t>(le(2)));
        break;
      case 'J':
        push(static_cast<std::int64_t>(static_cast<std::int32_t>(le(4))));
        break;
      case 0x8a: {
        const std::size_t n = byte();
        if (n == 0 || n > 9) throw std::runtime_error("LONG1 of unexpected length");
        need(n);
        const bool negative = (static_cast<std::uint8_t>(data[at + n - 1]) & 0x80) != 0;
        const std::uint64_t low = le(std::min<std::size_t>(n, 8));
        if (n == 9) {
          at += 1;  // the sign byte of a value past int64
          push(low);
        } else if (negative) {
          const std::uint64_t fill = n == 8 ? 0 : ~std::uint64_t{0} << (8 * n);
          push(static_cast<std::int64_t>(low | fill));
        } else {
          push(static_cast<std::int64_t>(low));
        }
        break;
      }
      case 'G': {
        need(8);
        std::uint64_t bits = 0;
        for (int k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<std::uint8_t>(data[at++]);
        double d = 0;
        static_assert(sizeof d == sizeof bits);
        std::memcpy(&d, &bits, sizeof d);
        push(d);
        break;
      }
      case 'X': {
        const std::size_t n = le(4);
        need(n);
        push(std::string(data.substr(at, n)));
        at += n;
        break;
      }
      case ']':
        push(PickleList{});
        break;
      case '}':
        push(PickleDict{});
        break;
      case '(':
        marks.push_back(stack.size());
        break;
      case 'e': {
        auto items = pop_mark();
        auto& list = std::get<PickleList>(top().value);
        list.insert(list.end(), items.begin(), items.end());
        break;
      }
      case 'u': {
        auto items = pop_mark();
        if (items.size() % 2) throw std::runtime_error("SETITEMS of an odd count");
        auto& dict = std::get<PickleDict>(top().value);
        for (std::size_t k = 0; k < items.size(); k += 2) dict[items[k]->str()] = items[k + 1];
        break;
      }
      case 't':
        push(PickleTuple{pop_mark()});
        break;
      case 'q':
        memo[static_cast<std::uint32_t>(le(1))] = stack.at(stack.size() - 1);
        break;
      case 'r':
        memo[static_cast<std::uint32_t>(le(4))] = stack.at(stack.size() - 1);
        break;
      case 'h':
        stack.push_back(memo.at(static_cast<std::uint32_t>(le(1))));
        break;
      case 'j':
        stack.push_back(memo.at(static_cast<std::uint32_t>(le(4))));
        break;
      default:
        throw std::runtime_error("unexpected opcode " + std::to_string(op));
    }
  }
}

}  // namespace vramtrace::testing
