#include "collector/recording.h"

namespace vramtrace::collector {
namespace {

using Clock = std::chrono::steady_clock;

// How long a turn waits for something to happen: 1 ms while records come, 10 ms once a few
// turns found none.
constexpr int kBusyWaitMs = 1;
constexpr int kIdleWaitMs = 10;
constexpr int kIdleTurns = 8;

}  // namespace

std::unique_ptr<Recording> Recording::create(storage::TraceWriter& writer,
                                             const RecordingPolicy& policy,
                                             const std::string& runtime_dir, std::string* error) {
  std::unique_ptr<Recording> recording(new Recording(writer, policy));
  recording->server_ = CollectorServer::create(recording->ingest_, runtime_dir, error);
  if (!recording->server_) return nullptr;
  recording->socket_path_ = recording->server_->socket_path();
  return recording;
}

Recording::Recording(storage::TraceWriter& writer, const RecordingPolicy& policy)
    : writer_(writer), policy_(policy), ingest_(writer) {}

Recording::~Recording() = default;

RecordingResult Recording::run(std::uint32_t command_pid, const CommandEnd& command_end) {
  RecordingResult result;
  result.wait_status = record(command_end, &result);
  server_->close_all();

  ingest_.set_wait_status(command_pid, result.wait_status);
  ingest_.stats().set(Stat::kConnectionsRefused, static_cast<int64_t>(server_->refused()));
  ingest_.write_stats();
  server_.reset();
  result.finished = writer_.finish(&result.error, policy_.allocation_indexes);
  result.allocations = ingest_.allocations();
  result.processes = ingest_.processes();
  return result;
}

int Recording::record(const CommandEnd& command_end, RecordingResult* result) {
  std::optional<int> wait_status;
  auto last_commit = Clock::now();
  std::optional<Clock::time_point> linger_until;
  int idle_turns = 0;
  std::size_t records_since_commit = 0;
  for (;;) {
    const std::size_t got = server_->poll_once(idle_turns > kIdleTurns ? kIdleWaitMs : kBusyWaitMs);
    idle_turns = got == 0 ? idle_turns + 1 : 0;
    if (!wait_status) {
      wait_status = command_end();
      if (wait_status) linger_until = Clock::now() + policy_.linger;
    }
    const auto now = Clock::now();
    records_since_commit += got;
    if (now - last_commit > policy_.commit_interval ||
        records_since_commit >= policy_.records_per_commit) {
      writer_.flush();
      last_commit = now;
      records_since_commit = 0;
    }
    if (wait_status && server_->open_connections() == 0) {
      // One more turn takes connections still waiting in the listen queue.
      if (server_->poll_once(0) == 0 && server_->open_connections() == 0) return *wait_status;
    }
    if (linger_until && now > *linger_until) {
      result->linger_ran_out = true;
      result->still_running = server_->open_connections();
      return *wait_status;
    }
  }
}

}  // namespace vramtrace::collector
