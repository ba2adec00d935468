// Stream capture and graphs. While a stream captures, the work put in it is not done: it becomes
// a node of the capture's graph, done each time an instantiated graph is launched. Kernels run
// no code here, so their nodes do nothing; copies, memsets and host functions are done again at
// each launch.
//
// As with the real driver:
// - a capture begins on a created stream (not the legacy stream) and ends on the stream it
//   began on; other streams join it by waiting on an event recorded in it (a fork), and must be
//   joined back into the origin stream before it ends (CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
// - the thread's capture mode (cuThreadExchangeStreamCaptureMode) and the capture's decide
//   which "potentially unsafe" calls (allocation, synchronous copies, synchronization) fail
//   with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED while a capture is going on: in relaxed mode
//   none; in thread-local mode those of a thread with a capture of its own not begun relaxed;
//   in global mode those too, and any thread's while some thread has a global capture;
// - synchronizing or querying a capturing stream fails the same way; either failure
//   invalidates the capture, whose further work fails with CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
//   and whose end gives no graph.
// Waiting in a capture on an event recorded outside it is taken as no dependency (the real
// driver refuses it with CUDA_ERROR_STREAM_CAPTURE_ISOLATION).
#pragma once

#include <pthread.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cuda.h"

struct CUgraphNode_st {
  CUgraph graph;
  CUgraphNodeType type;
};

// What a node does at each launch; kernels' do nothing.
using GraphWork = std::function<CUresult()>;

struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> nodes;
  std::vector<GraphWork> work;  // one per node, in the order captured
};

struct CUgraphExec_st {
  std::vector<GraphWork> work;
};

namespace simcuda::driver {

class Captures {
 public:
  static Captures& get();

  CUresult begin(CUstream stream, CUstreamCaptureMode mode);
  CUresult end(CUstream stream, CUgraph* graph);
  // The capture `stream` takes part in: its status, and for an active one its id and graph.
  CUstreamCaptureStatus status(CUstream stream, cuuint64_t* id = nullptr, CUgraph* graph = nullptr);

  // Work put in `stream`: if the stream is capturing, it becomes a node (`work` is kept for
  // the launches) and the result is what the caller returns; nullopt: not capturing, do it.
  std::optional<CUresult> capture(CUstream stream, CUgraphNodeType type, GraphWork work);
  // An event recorded in a capturing stream belongs to that capture until recorded again.
  std::optional<CUresult> record_event(CUevent event, CUstream stream);
  std::optional<CUresult> wait_event(CUstream stream, CUevent event);

  // CUDA_SUCCESS, or CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED for a potentially unsafe call the
  // captures going on forbid the calling thread (the captures are then invalidated).
  CUresult check_unsafe_call();
  // The same for synchronizing or querying `stream`: forbidden while it captures.
  CUresult check_stream_sync(CUstream stream);

  CUstreamCaptureMode exchange_mode(CUstreamCaptureMode mode);

  CUresult instantiate(CUgraph graph, CUgraphExec* exec);
  CUresult launch(CUgraphExec exec, CUstream stream);
  CUresult destroy_graph(CUgraph graph);
  CUresult destroy_exec(CUgraphExec exec);
  CUresult graph_nodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count);
  CUresult node_type(CUgraphNode node, CUgraphNodeType* type);
  // Forgets the streams' captures when a stream is destroyed.
  void forget_stream(CUstream stream);

 private:
  struct Capture {
    std::uint64_t id;
    CUgraph graph;
    CUstreamCaptureMode mode;
    pthread_t thread;
    CUstream origin;
    bool invalidated = false;
  };
  // A stream's part in a capture: how much work it put in, and how much of it the origin has
  // joined back (waited on).
  struct Member {
    std::shared_ptr<Capture> capture;
    std::uint64_t work = 0;
    std::uint64_t joined = 0;
  };
  // An event recorded in a capture: which stream, after how much of its work.
  struct CapturedEvent {
    std::shared_ptr<Capture> capture;
    CUstream stream;
    std::uint64_t work;
  };

  CUresult add_node_locked(Member& member, CUgraphNodeType type, GraphWork work);
  void invalidate_locked(Capture& capture);

  std::mutex mutex_;
  std::uint64_t next_id_ = 1;
  std::unordered_map<CUstream, Member> members_;
  std::unordered_map<CUevent, CapturedEvent> events_;
  std::unordered_map<CUgraph, std::unique_ptr<CUgraph_st>> graphs_;
  std::unordered_map<CUgraphExec, std::unique_ptr<CUgraphExec_st>> execs_;
};

}  // namespace simcuda::driver
