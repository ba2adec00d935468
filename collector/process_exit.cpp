#include "collector/process_exit.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace vramtrace::collector {

std::optional<int> zombie_wait_status(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return std::nullopt;
  // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so fields are counted
  // from the last ')'. The state is field 3; exit_code (Linux 3.5+) is field 52.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string field;
  for (int number = 3; fields >> field; ++number) {
    if (number == 3 && field != "Z") return std::nullopt;
    if (number == 52) {
      try {
        return std::stoi(field);
      } catch (...) {
        return std::nullopt;
      }
    }
  }
  return std::nullopt;
}

}  // namespace vramtrace::collector
