#include "process_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>

extern char** environ;

namespace vramtrace::test {

bool ProcessResult::exited() const {
  return WIFEXITED(wait_status);
}
int ProcessResult::exit_code() const {
  return exited() ? WEXITSTATUS(wait_status) : -1;
}
int ProcessResult::signal() const {
  return WIFSIGNALED(wait_status) ? WTERMSIG(wait_status) : 0;
}

ProcessResult run_process(const ProcessOptions& options) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string var(*e);
    std::string name = var.substr(0, var.find('='));
    bool drop = false;
    for (const auto& u : options.unset_env) drop |= name == u;
    for (const auto& x : options.extra_env) drop |= name == x.substr(0, x.find('='));
    if (!drop) env.push_back(var);
  }
  for (const auto& x : options.extra_env) env.push_back(x);

  std::vector<char*> argv, envp;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0)
    throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    execvpe(argv[0], argv.data(), envp.data());
    std::fprintf(stderr, "cannot exec %s: %s\n", argv[0], std::strerror(errno));
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);

  ProcessResult result;
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  const auto deadline = std::chrono::steady_clock::now() + options.deadline;
  while (open_fds > 0) {
    int timeout_ms = -1;
    if (options.deadline.count() > 0 && !result.timed_out) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        result.timed_out = true;
        kill(pid, options.deadline_signal);
      } else {
        timeout_ms = static_cast<int>(left.count());
      }
    }
    const int ready = poll(fds, 2, timeout_ms);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n <= 0) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      std::string chunk(buf, static_cast<size_t>(n));
      if (i == 0) {
        result.out += chunk;
        if (options.on_stdout) options.on_stdout(chunk, pid);
      } else {
        result.err += chunk;
      }
    }
  }
  while (waitpid(pid, &result.wait_status, 0) < 0 && errno == EINTR) {
  }
  return result;
}

}  // namespace vramtrace::test
