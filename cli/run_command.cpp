// `vramtrace run`: starts the command with the shim preloaded (or the CUPTI library injected,
// or both: --backend), collects every traced process's events into a trace, and exits with the
// command's own status.
#include "run_command.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/gate/gate_spec.h"
#include "analysis/reports/run_digest.h"
#include "analysis/time/report_time_index.h"
#include "cli/gate_command.h"
#include "collector/recording.h"
#include "install_layout.h"
#include "progress_line.h"
#include "ring_size.h"
#include "run_digest_text.h"
#include "storage/trace_reader.h"
#include "storage/trace_writer.h"
#include "text/text_style.h"
#include "trace_output_lock.h"

namespace vramtrace::cli {
namespace {

namespace fs = std::filesystem;

constexpr int kUsageError = 2;

struct RunOptions {
  std::string output;
  std::string written;  // the trace's path, once chosen
  std::optional<analysis::GateLimits> gate;
  bool accept_data_loss = false;  // --gate judges a recording with gaps
  bool force = false;
  bool index = true;                     // build the time index once the trace is finished
  std::string keep = "folded";           // "all": repeated bins stored in full too
  bool free_stacks = false;              // a stack for every free (VRAMTRACE_FREE_STACKS)
  std::optional<std::string> ring_size;  // unset: VRAMTRACE_RING_BYTES, else the default
  std::string backend = "preload";       // "preload", "cupti" or "both"
  std::vector<std::string> command;
};

// The libraries a backend puts into the traced processes; empty: not loaded.
struct BackendLibraries {
  std::string shim;   // LD_PRELOAD (and NVTX_INJECTION64_PATH)
  std::string cupti;  // CUDA_INJECTION64_PATH
};

volatile sig_atomic_t g_child_pid = 0;
// Signals that came before the command's pid was known, one bit each: the command can run (and
// say it is ready) before the fork returns in `run`, and a signal may land on any of `run`'s
// threads. Lock-free, so the handler may touch it.
std::atomic<std::uint32_t> g_held_signals{0};
static_assert(std::atomic<std::uint32_t>::is_always_lock_free);

// Completes the finished trace's time index (storage/time_index.h) now, while the machine is
// the recording's, so that the first report over time, and the viewer's first picture, do not
// wait for it: what the writer kept up as rows arrived is read (all of it, unless a process's
// times fell: then the rollups are built, about 0.3 us per allocation). Then says what the trace
// holds, from that index. A
// trace that cannot be indexed is still whole: the first report that needs the index tries
// again.
void index_and_digest(const std::string& path, std::int64_t allocations) {
  try {
    storage::OpenFailure failure;
    const auto trace = storage::TraceReader::open(path, &failure);
    if (!trace) throw std::runtime_error(failure.message);
    std::unique_ptr<storage::TimeIndex> index;
    {
      ProgressLine progress("vramtrace: indexing " + path + " by time");
      index = analysis::open_time_index(*trace);
    }
    std::fprintf(stderr, "%s",
                 text::printable_text(
                     run_digest_text(path, allocations, analysis::digest_run(*trace, *index)))
                     .c_str());
  } catch (const std::exception& error) {
    std::fprintf(stderr, "vramtrace: recorded %lld allocation(s) in %s\n",
                 static_cast<long long>(allocations), path.c_str());
    std::fprintf(stderr, "vramtrace: note: %s was not indexed by time (%s); reports will do it\n",
                 path.c_str(), error.what());
  }
}

// A signal sent to `run` is the command's: passed on, while `run` records to the command's end.
// Not one the terminal sent (^C, ^\, a hang-up, a resize): the kernel sends those to the whole
// foreground process group, and the command has it already.
void forward_signal(int sig, siginfo_t* info, void*) {
  if (info != nullptr && info->si_code == SI_KERNEL) return;
  // Held first, then passed on by whichever of this handler and pass_on_held_signals() takes
  // the bit: never lost, never sent twice.
  const std::uint32_t bit = 1u << sig;
  g_held_signals.fetch_or(bit);
  const pid_t child = g_child_pid;
  if (child > 0 && (g_held_signals.fetch_and(~bit) & bit) != 0) kill(child, sig);
}

// Once the command's pid is known: the signals that came before it.
void pass_on_held_signals(pid_t child) {
  const std::uint32_t held = g_held_signals.exchange(0);
  for (int sig = 1; sig < 32; ++sig)
    if ((held & (1u << sig)) != 0) kill(child, sig);
}

// Each signal a user can send to end or interrupt a program, or to ask it something.
constexpr int kForwardedSignals[] = {SIGINT,  SIGQUIT, SIGTERM,  SIGHUP,  SIGUSR1,
                                     SIGUSR2, SIGALRM, SIGWINCH, SIGCONT, SIGVTALRM};

// vramtrace.<program>.<pid>.db in the current directory, with a counter added if taken:
// the default name never replaces an existing trace.
std::string default_output(const std::string& program) {
  std::string base = fs::path(program).filename().string();
  if (base.empty()) base = "trace";
  std::string stem = "vramtrace." + base + "." + std::to_string(getpid());
  std::string name = stem + ".db";
  for (int n = 1; fs::exists(name); ++n) name = stem + "." + std::to_string(n) + ".db";
  return name;
}

// Whether a preload is a sanitizer's runtime (libasan.so.8, libclang_rt.asan-x86_64.so, ...),
// which must stay the first library of its process.
bool is_sanitizer_runtime(std::string_view path) {
  const std::string_view name = path.substr(path.find_last_of('/') + 1);
  for (const std::string_view runtime : {"libasan.", "libhwasan.", "libtsan.", "libclang_rt.asan",
                                         "libclang_rt.hwasan", "libclang_rt.tsan"})
    if (name.starts_with(runtime)) return true;
  return false;
}

// The user's LD_PRELOAD with the shim put in: after the sanitizer runtimes, before the rest,
// so that our hooks win over the user's other preloads and a sanitizer still comes first.
std::string preload_with_shim(const std::string& shim, std::string_view user) {
  std::string sanitizers, others;
  while (!user.empty()) {
    const std::size_t end = user.find_first_of(": ");
    const std::string_view entry = user.substr(0, end);
    user = end == std::string_view::npos ? std::string_view() : user.substr(end + 1);
    if (entry.empty()) continue;
    std::string& list = is_sanitizer_runtime(entry) ? sanitizers : others;
    list += (list.empty() ? "" : ":") + std::string(entry);
  }
  std::string preload = sanitizers;
  preload += (preload.empty() ? "" : ":") + shim;
  if (!others.empty()) preload += ":" + others;
  return preload;
}

// ASan checks that its runtime is the first library of the process, and aborts a program built
// with it ("ASan runtime does not come first in initial library list") when the shim is
// preloaded before it. The shim defines nothing ASan intercepts, so the order does not matter
// to it: the check is turned off, in every process of the job (a program built with ASan may be
// started by a shell or a launcher), unless the user set it.
std::string asan_options_with_link_order_off(std::string_view user) {
  if (user.find("verify_asan_link_order") != std::string_view::npos) return std::string(user);
  return std::string(user) + (user.empty() ? "" : ":") + "verify_asan_link_order=0";
}

std::vector<std::string> child_environment(const BackendLibraries& libraries,
                                           const std::string& socket, const std::string& ring_bytes,
                                           bool free_stacks) {
  const std::string& shim = libraries.shim;
  std::vector<std::string> env;
  std::string preload = shim;
  std::optional<std::string> asan_options;
  bool nvtx_taken = false;
  bool cuda_injection_taken = false;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string_view var(*e);
    if (!libraries.cupti.empty() && var.starts_with("CUDA_INJECTION64_PATH=")) {
      // CUDA loads one injection library: another tool's keeps its place, and CUPTI is its.
      std::fprintf(stderr,
                   "vramtrace run: CUDA_INJECTION64_PATH is set already; the CUPTI backend is not "
                   "loaded\n");
      cuda_injection_taken = true;
    }
    if (!shim.empty() && var.starts_with("LD_PRELOAD=")) {
      preload = preload_with_shim(shim, var.substr(11));
      continue;
    }
    if (var.starts_with("ASAN_OPTIONS=")) {
      asan_options = std::string(var.substr(13));
      continue;
    }
    if (var.starts_with("VRAMTRACE_SOCKET=") || var.starts_with("VRAMTRACE_RING_BYTES=")) continue;
    // Set by the user, it passes through (the shim reads it); --free-stacks overrides it.
    if (free_stacks && var.starts_with("VRAMTRACE_FREE_STACKS=")) continue;
    if (var.starts_with("NVTX_INJECTION64_PATH=")) {
      // Another tool's NVTX injection (Nsight Systems, say) keeps its place: NVTX loads one.
      std::fprintf(stderr,
                   "vramtrace run: NVTX_INJECTION64_PATH is set already; NVTX ranges go to it "
                   "and are not recorded\n");
      nvtx_taken = true;
    }
    env.emplace_back(var);
  }
  if (!shim.empty()) {
    env.push_back("LD_PRELOAD=" + preload);
    env.push_back("ASAN_OPTIONS=" + asan_options_with_link_order_off(asan_options.value_or("")));
    // NVTX 3 is header-only: a program's first NVTX call loads the library this names and
    // hands it the calls. The shim is that library.
    if (!nvtx_taken) env.push_back("NVTX_INJECTION64_PATH=" + shim);
  }
  if (shim.empty() && asan_options) env.push_back("ASAN_OPTIONS=" + *asan_options);
  // CUDA loads this library when the process initialises the driver, and calls its
  // InitializeInjection (cupti/injection.cpp).
  if (!libraries.cupti.empty() && !cuda_injection_taken)
    env.push_back("CUDA_INJECTION64_PATH=" + libraries.cupti);
  env.push_back("VRAMTRACE_SOCKET=" + socket);
  if (!ring_bytes.empty()) env.push_back("VRAMTRACE_RING_BYTES=" + ring_bytes);
  if (free_stacks) env.push_back("VRAMTRACE_FREE_STACKS=1");
  return env;
}

std::vector<char*> as_argv(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// SQLite keeps these next to a trace in WAL mode, and its journal when it finishes.
struct SideFile {
  const char* suffix;
  const char* what;
};
constexpr SideFile kSideFiles[] = {
    {"-wal", "write-ahead log"}, {"-shm", "shared-memory index"}, {"-journal", "rollback journal"}};

// What a file that is neither a regular file nor missing is, for a message; nullptr for a
// regular file, a missing one, or one that cannot be looked at (its own error says why).
const char* other_file_kind(fs::file_type type) {
  switch (type) {
    case fs::file_type::directory:
      return "a directory";
    case fs::file_type::symlink:
      return "a symbolic link";
    case fs::file_type::fifo:
      return "a FIFO";
    case fs::file_type::socket:
      return "a socket";
    case fs::file_type::block:
    case fs::file_type::character:
      return "a device";
    default:
      return nullptr;
  }
}

// Why `output` cannot be a trace's name, or nullopt if nothing is in the way. --force
// replaces a regular file (a trace, with its side files), never a directory or anything else;
// and a side file that is not a regular file (a link planted where SQLite would follow it)
// is never removed on the user's behalf: SQLite refuses to open it, with no word of which.
std::optional<std::string> output_in_the_way(const std::string& output) {
  std::error_code ec;
  // Followed: a link to a directory is a directory here.
  const fs::file_type type = fs::status(output, ec).type();
  if (type == fs::file_type::directory)
    return output + " is a directory (--force replaces only a file); name a file for the " +
           "trace: -o " + output + "/NAME.db";
  if (const char* kind = other_file_kind(type))
    return output + " is " + kind + ", not a trace (--force replaces only a file); choose " +
           "another name";
  for (const SideFile& side : kSideFiles) {
    const std::string name = output + side.suffix;
    if (const char* kind = other_file_kind(fs::symlink_status(name, ec).type()))
      return name + " is in the way: it is " + kind + " where SQLite keeps the trace's " +
             side.what + "; remove it or choose another name";
  }
  return std::nullopt;
}

// Removes a trace and the side files SQLite may have left next to it (regular files only:
// output_in_the_way() refused anything else).
void remove_trace_files(const std::string& output) {
  std::error_code ec;
  fs::remove(output, ec);
  for (const SideFile& side : kSideFiles) fs::remove(output + side.suffix, ec);
}

// The errno of a failed exec, as the child wrote it to the close-on-exec pipe; 0 when the
// exec closed the pipe (the command started). Read once the child has ended.
int exec_error(int fd) {
  int err = 0;
  ssize_t got = 0;
  do got = read(fd, &err, sizeof err);
  while (got < 0 && errno == EINTR);
  return got == static_cast<ssize_t>(sizeof err) ? err : 0;
}

// The exit status vramtrace reports for the command, as a shell would.
int status_of(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

int run(RunOptions& options) {
  if (options.command.empty()) {
    std::fprintf(
        stderr,
        "vramtrace run: no command given (usage: vramtrace run [-o FILE] -- CMD ARGS...)\n");
    return kUsageError;
  }
  // Checked here, before anything is created, with the shim's own parser: a value the shim
  // would not take is refused, never replaced by another size.
  std::string ring_bytes;
  {
    const bool from_option = options.ring_size.has_value();
    const char* text =
        from_option ? options.ring_size->c_str() : std::getenv("VRAMTRACE_RING_BYTES");
    if (text != nullptr) {
      const ring::RingSize size = ring::parse_ring_size(text);
      if (size.problem != ring::RingSizeProblem::kNone) {
        std::fprintf(stderr, "vramtrace run: %s '%s' is %s\n",
                     from_option ? "--ring-size" : "VRAMTRACE_RING_BYTES", text,
                     ring::ring_size_problem_text(size.problem));
        return kUsageError;
      }
      ring_bytes = std::to_string(size.bytes);
    }
  }
  BackendLibraries libraries;
  if (options.backend != "cupti") {
    const std::optional<std::string> shim = find_preload_library();
    if (!shim) {
      std::fprintf(stderr,
                   "vramtrace run: cannot find %s next to the vramtrace executable; reinstall "
                   "vramtrace\n",
                   kPreloadLibraryName);
      return kUsageError;
    }
    if (shim->find_first_of(": ") != std::string::npos) {
      std::fprintf(stderr,
                   "vramtrace run: the shim's path '%s' contains a space or a colon, which "
                   "LD_PRELOAD cannot carry; install vramtrace elsewhere\n",
                   shim->c_str());
      return kUsageError;
    }
    libraries.shim = *shim;
  }
  if (options.backend != "preload") {
    const std::optional<std::string> cupti = find_vramtrace_library(kCuptiLibraryName);
    if (!cupti) {
      std::fprintf(stderr,
                   "vramtrace run: cannot find %s next to the vramtrace executable: this "
                   "vramtrace was built without CUPTI; use --backend preload\n",
                   kCuptiLibraryName);
      return kUsageError;
    }
    libraries.cupti = *cupti;
  }

  const bool chosen = !options.output.empty();
  const std::string output = chosen ? options.output : default_output(options.command[0]);
  options.written = output;
  if (const std::optional<std::string> in_the_way = output_in_the_way(output)) {
    std::fprintf(stderr, "vramtrace run: %s\n", in_the_way->c_str());
    options.written.clear();
    return kUsageError;
  }
  std::string error;
  if (chosen && options.force && !TraceOutputLock::remove_unless_held(output, &error)) {
    std::fprintf(stderr, "vramtrace run: %s\n", error.c_str());
    options.written.clear();
    return kUsageError;
  }
  // main() ignores SIGXFSZ: a file-size limit (ulimit -f) reached while writing the trace fails
  // the write with EFBIG, and SQLite says the disk is full. The command gets the default back.
  // The reports' indexes and the time index's rollups kept up as rows arrive, so that the end
  // of the run has little left to do, and short lives packed many to a row (an allocation
  // storm's rows were most of its cost), bins that repeat one stored before folded into runs
  // (unless --keep all); --no-index records the rows alone. SQLite writes on
  // the writer's own thread while the collector decodes the next records.
  using storage::TraceWriter;
  // Declared before the writer, so that it is given back after SQLite has closed the file:
  // closing another descriptor of the file would drop SQLite's own locks on it.
  TraceOutputLock output_lock;
  std::unique_ptr<TraceWriter> writer =
      options.index
          ? TraceWriter::create(
                output, &error, TraceWriter::TimeIndexUpkeep::kAsRowsArrive,
                TraceWriter::RollupUpkeep::kAsRowsArrive, TraceWriter::Threading::kOwnThread,
                options.keep == "all" ? TraceWriter::AllocationPacking::kPackShortLives
                                      : TraceWriter::AllocationPacking::kPackAndFoldRepeats)
          : TraceWriter::create(output, &error, TraceWriter::TimeIndexUpkeep::kNone,
                                TraceWriter::RollupUpkeep::kAtBuild,
                                TraceWriter::Threading::kOwnThread);
  if (!writer) {
    std::fprintf(stderr, "vramtrace run: %s%s\n", error.c_str(),
                 chosen && fs::exists(output) ? " (use --force to replace it)" : "");
    return kUsageError;
  }
  if (!output_lock.hold(output, &error)) {
    std::fprintf(stderr, "vramtrace run: %s\n", error.c_str());
    options.written.clear();
    return kUsageError;
  }
  writer->set_command(options.command);

  std::unique_ptr<collector::Recording> recording =
      collector::Recording::create(*writer, collector::RecordingPolicy{}, "", &error);
  if (!recording) {
    std::fprintf(stderr, "vramtrace run: %s\n", error.c_str());
    return kUsageError;
  }

  std::vector<std::string> env =
      child_environment(libraries, recording->socket_path(), ring_bytes, options.free_stacks);
  std::vector<char*> envp = as_argv(env);
  std::vector<char*> argv = as_argv(options.command);

  // The terminal sends ^C and ^\ to the whole process group: the command decides what they
  // do, and vramtrace stays to save what was recorded. Signals sent to vramtrace itself are
  // passed on to the command (forward_signal). A closed stderr or stdout must not end the
  // recording: SIGPIPE is ignored, and the write fails.
  struct sigaction forward {};
  forward.sa_sigaction = &forward_signal;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  struct sigaction old_actions[std::size(kForwardedSignals)]{};
  for (std::size_t i = 0; i < std::size(kForwardedSignals); ++i)
    sigaction(kForwardedSignals[i], &forward, &old_actions[i]);
  struct sigaction ignore {
  }, old_pipe{};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &old_pipe);
  const pid_t parent = getpid();

  // A failed exec writes its errno here; a successful one closes the pipe. So vramtrace
  // tells a command that never started from one that exited 126 or 127 by itself.
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    std::fprintf(stderr, "vramtrace run: cannot make a pipe: %s\n", std::strerror(errno));
    return kUsageError;
  }
  const pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "vramtrace run: fork failed: %s\n", std::strerror(errno));
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return kUsageError;
  }
  if (child == 0) {
    for (std::size_t i = 0; i < std::size(kForwardedSignals); ++i)
      sigaction(kForwardedSignals[i], &old_actions[i], nullptr);
    sigaction(SIGPIPE, &old_pipe, nullptr);
    signal(SIGXFSZ, SIG_DFL);
    // Killed with `run` (SIGKILL, which cannot be forwarded), never left running untraced.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(128 + SIGKILL);
    execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    if (write(exec_pipe[1], &err, sizeof err) != static_cast<ssize_t>(sizeof err))
      std::fprintf(stderr, "vramtrace run: cannot run '%s': %s\n", argv[0], std::strerror(err));
    _exit(err == ENOENT ? 127 : 126);
  }
  close(exec_pipe[1]);
  g_child_pid = child;
  pass_on_held_signals(child);

  const collector::RecordingResult recorded =
      recording->run(static_cast<uint32_t>(child), [child]() -> std::optional<int> {
        int status = 0;
        if (waitpid(child, &status, WNOHANG) != child) return std::nullopt;
        g_child_pid = 0;
        return status;
      });
  if (recorded.linger_ran_out)
    std::fprintf(stderr,
                 "vramtrace: %zu process(es) started by the command still run; their events "
                 "so far are kept\n",
                 recorded.still_running);
  const int status = recorded.wait_status;
  const int not_started = exec_error(exec_pipe[0]);
  close(exec_pipe[0]);
  if (!output_lock.still_there()) {
    // Someone removed or replaced the file (the lock is advisory): say so rather than report
    // what is no longer there, and leave alone whatever is there now.
    recording.reset();
    writer.reset();
    options.written.clear();
    std::fprintf(stderr,
                 "vramtrace run: the trace %s was removed or replaced while it was recorded; "
                 "what was recorded is lost\n",
                 output.c_str());
    return status_of(status) != 0 ? status_of(status) : kUsageError;
  }
  if (not_started != 0 && recorded.processes == 0) {
    // Nothing ran, so nothing was recorded: as heaptrack and memray do, leave no trace
    // behind. The file is the one this run created (TraceWriter::create claims a new name).
    recording.reset();
    writer.reset();
    remove_trace_files(output);
    options.written.clear();
    std::fprintf(stderr, "vramtrace run: cannot run '%s': %s; no trace was written\n",
                 options.command[0].c_str(), std::strerror(not_started));
    return status_of(status);
  }
  if (!recorded.finished) {
    std::fprintf(stderr, "vramtrace run: the trace %s is incomplete: %s\n", output.c_str(),
                 recorded.error.c_str());
    // The command's status still wins: it is what a wrapper must pass through.
    return status_of(status) != 0 ? status_of(status) : kUsageError;
  }
  if (options.index) {
    index_and_digest(output, recorded.allocations);
  } else {
    std::fprintf(stderr,
                 "vramtrace: recorded %lld allocation(s) from %lld process(es) in %s (--no-index: "
                 "the first report indexes it)\n",
                 static_cast<long long>(recorded.allocations),
                 static_cast<long long>(recorded.processes), output.c_str());
  }
  return status_of(status);
}

}  // namespace

void register_run_command(CLI::App& app, int* exit_status) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run =
      app.add_subcommand("run", "Run a command and record its GPU allocations into a trace");
  run->add_option("-o,--output", options->output,
                  "Trace file to write (default: vramtrace.<program>.<pid>.db; never replaced "
                  "unless --force)");
  run->add_flag("-f,--force", options->force, "Replace the output file if it exists");
  run->add_flag("!--no-index", options->index,
                "Leave the time index (which reports over time and the viewer read), and the "
                "allocation table's indexes, to the first report that needs them, instead of "
                "keeping them up as the rows arrive");
  run->add_option("--keep", options->keep,
                  "What of a steady loop the trace keeps: 'folded' (the default: a bin of 4,096 "
                  "events whose short-lived allocations repeat an earlier bin's is stored as a "
                  "reference to it, so the trace grows with what changes, not with how long the "
                  "loop runs; exact but for times within such a bin) or 'all' (every bin in "
                  "full)")
      ->check(CLI::IsMember({"folded", "all"}));
  run->add_flag("--free-stacks", options->free_stacks,
                "Record the stack of every free too (allocation.free_callsite_id), not only of "
                "frees that fail: each free then costs as much as an allocation");
  run->add_option("--ring-size", options->ring_size,
                  "Shared-memory ring per process, in bytes: K, M and G suffixes, from 64K to 1G, "
                  "rounded up to a power of two (default 32M; also VRAMTRACE_RING_BYTES)");
  run->add_option("--backend", options->backend,
                  "What records: preload (the LD_PRELOAD shim, the default), cupti (CUPTI's "
                  "callbacks and activity records), or both, to check one against the other")
      ->check(CLI::IsMember({"preload", "cupti", "both"}));
  run->add_option_function<std::string>(
         "--gate",
         [options](const std::string& spec) {
           analysis::GateLimits limits;
           std::string error;
           if (!analysis::parse_gate_spec(spec, &limits, &error))
             throw CLI::ValidationError("--gate", error);
           options->gate = limits;
         },
         "After the run, judge the trace as 'vramtrace gate' does: limits such as "
         "'leaked_bytes=0,leaked_count<=10,peak<=2GiB,growth<=1MiB,role.activation<=4GiB' "
         "(growth: per 'iteration'; role.ROLE: at each process's blocks' peak; sizes take B, "
         "KiB, MiB, GiB, KB, MB, GB)")
      ->type_name("SPEC");
  run->add_flag("--accept-data-loss", options->accept_data_loss,
                "With --gate: judge what was recorded even where the recording has gaps (as "
                "'vramtrace gate --accept-data-loss')");
  run->add_option("command", options->command, "The command to run, after --")
      ->required()
      ->take_all();
  run->footer(
      "Example: vramtrace run -o train.db -- python train.py\n\n"
      "Environment, passed on to the command and read by the shim: VRAMTRACE_FREE_STACKS=1 (as "
      "--free-stacks), VRAMTRACE_RING_BYTES (as --ring-size, which overrides it), "
      "VRAMTRACE_UNWINDER=libunwind "
      "(every native stack walked by libunwind rather than by the shim's own walk, which "
      "leaves to libunwind only the stacks it cannot follow), VRAMTRACE_STACK_NAMES=0 (every "
      "stack sent whole, rather than once per thread and then by name), "
      "VRAMTRACE_CLOCK=monotonic (records stamped by clock_gettime rather than by the CPU's "
      "time-stamp counter, which is used where the kernel keeps time by it), "
      "VRAMTRACE_STALL_SECONDS (default 10: how long a process waits on a full ring whose "
      "collector does not read before it says so and runs on untraced).\n\n"
      "Exit status: the command's own (128+N if it was killed by signal N; 127 if it could "
      "not be found, 126 if it could not be run, and then no trace is left); 2 if vramtrace "
      "could not record (a bad option, an output file that exists, a directory or a link in "
      "the way, no shim), or if the trace could not be written and the command exited 0. "
      "With --gate, the command's own failure still wins; when it exits 0, "
      "the status is the gate's: 0 when every limit holds, 1 when one is broken, 2 when the "
      "trace cannot be judged, 3 when the limits hold but the recording has gaps (a process "
      "stopped recording or was not recorded to its end) and --accept-data-loss was not "
      "given.");
  run->callback([options, exit_status] {
    const int status = vramtrace::cli::run(*options);
    *exit_status = status;
    if (!options->gate || options->written.empty() || !fs::exists(options->written)) return;
    analysis::GateOptions gate;
    gate.limits = *options->gate;
    gate.accept_gaps = options->accept_data_loss;
    // On stderr, where vramtrace's own lines go: stdout is the command's.
    const int verdict = judge_trace("run --gate", options->written, gate, "", {}, false, stderr);
    if (status == 0) *exit_status = verdict;
  });
}

}  // namespace vramtrace::cli
