// Runs the built `vramtrace` binary (VRAMTRACE_BINARY) with arguments and captures what it
// says and how it exits.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

namespace vramtrace::testing {

struct CommandResult {
  int exit_status = -1;  // -1: did not exit normally (a crash)
  std::string out, err;
};

inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Output goes through files in `scratch` rather than pipes, so a large report cannot block.
// `extra_env`: "NAME=value" entries added to (or replacing in) this process's environment.
inline CommandResult run_vramtrace(const std::vector<std::string>& args,
                                   const std::filesystem::path& scratch,
                                   const std::vector<std::string>& extra_env = {}) {
  const auto out_path = scratch / "stdout.txt";
  const auto err_path = scratch / "stderr.txt";
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(),
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> argv_strings{VRAMTRACE_BINARY};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& extra : extra_env)
      replaced =
          replaced || entry.substr(0, entry.find('=') + 1) == extra.substr(0, extra.find('=') + 1);
    if (!replaced) env_strings.emplace_back(entry);
  }
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  CommandResult result;
  pid_t pid = 0;
  if (posix_spawn(&pid, VRAMTRACE_BINARY, &actions, nullptr, argv.data(), envp.data()) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
    if (WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  }
  posix_spawn_file_actions_destroy(&actions);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

// Limits set on `vramtrace` alone, for tests of what it does when it meets them.
struct ProcessLimits {
  unsigned alarm_seconds = 0;  // SIGALRM ends it after this long (a hang fails, not waits); 0: none
  rlim_t file_size_bytes = RLIM_INFINITY;  // ulimit -f
};

// As run_vramtrace(), in the current environment, under `limits`. A vramtrace ended by a signal
// has exit_status -1.
inline CommandResult run_vramtrace_limited(const std::vector<std::string>& args,
                                           const std::filesystem::path& scratch,
                                           const ProcessLimits& limits) {
  const auto out_path = scratch / "stdout.txt";
  const auto err_path = scratch / "stderr.txt";
  std::vector<std::string> strings{VRAMTRACE_BINARY};
  strings.insert(strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  CommandResult result;
  const pid_t pid = fork();
  if (pid == 0) {
    const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    const rlimit file_size{limits.file_size_bytes, limits.file_size_bytes};
    setrlimit(RLIMIT_FSIZE, &file_size);
    if (limits.alarm_seconds != 0) alarm(limits.alarm_seconds);
    execv(VRAMTRACE_BINARY, argv.data());
    _exit(127);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  if (pid > 0 && WIFEXITED(status)) result.exit_status = WEXITSTATUS(status);
  result.out = slurp(out_path);
  result.err = slurp(err_path);
  return result;
}

inline std::size_t line_count(const std::string& text) {
  std::size_t lines = 0;
  for (const char c : text) lines += c == '\n' ? 1 : 0;
  if (!text.empty() && text.back() != '\n') ++lines;
  return lines;
}

}  // namespace vramtrace::testing
