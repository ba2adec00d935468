#include "capture.h"

#include <algorithm>
#include <set>
#include <utility>

namespace simcuda::driver {
namespace {

// The calling thread's capture mode (cuThreadExchangeStreamCaptureMode).
thread_local CUstreamCaptureMode thread_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;

bool implicit_stream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD;
}

bool valid_mode(CUstreamCaptureMode mode) {
  return mode == CU_STREAM_CAPTURE_MODE_GLOBAL || mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL ||
         mode == CU_STREAM_CAPTURE_MODE_RELAXED;
}

}  // namespace

Captures& Captures::get() {
  static Captures* const instance = new Captures;  // never destroyed, as Driver
  return *instance;
}

CUresult Captures::begin(CUstream stream, CUstreamCaptureMode mode) {
  if (!valid_mode(mode)) return CUDA_ERROR_INVALID_VALUE;
  // The legacy stream synchronizes with every other: it cannot be captured.
  if (implicit_stream(stream)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  std::lock_guard lock(mutex_);
  if (members_.contains(stream)) return CUDA_ERROR_ILLEGAL_STATE;
  auto graph = std::make_unique<CUgraph_st>();
  auto capture = std::make_shared<Capture>(
      Capture{next_id_++, graph.get(), mode, pthread_self(), stream, false});
  graphs_.emplace(graph.get(), std::move(graph));
  members_.emplace(stream, Member{std::move(capture)});
  return CUDA_SUCCESS;
}

CUresult Captures::end(CUstream stream, CUgraph* graph) {
  std::lock_guard lock(mutex_);
  const auto found = members_.find(stream);
  if (found == members_.end()) return CUDA_ERROR_ILLEGAL_STATE;  // not capturing
  const std::shared_ptr<Capture> capture = found->second.capture;
  if (capture->origin != stream) {
    invalidate_locked(*capture);
    return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  }
  if (capture->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      !pthread_equal(capture->thread, pthread_self())) {
    return CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD;
  }
  bool unjoined = false;
  for (auto member = members_.begin(); member != members_.end();) {
    if (member->second.capture != capture) {
      ++member;
      continue;
    }
    if (member->first != stream && member->second.work > member->second.joined) unjoined = true;
    member = members_.erase(member);
  }
  std::erase_if(events_, [&](const auto& event) { return event.second.capture == capture; });
  if (capture->invalidated || unjoined) {
    graphs_.erase(capture->graph);
    *graph = nullptr;
    return unjoined && !capture->invalidated ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                                             : CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  *graph = capture->graph;
  return CUDA_SUCCESS;
}

CUstreamCaptureStatus Captures::status(CUstream stream, cuuint64_t* id, CUgraph* graph) {
  std::lock_guard lock(mutex_);
  const auto found = members_.find(stream);
  if (found == members_.end()) return CU_STREAM_CAPTURE_STATUS_NONE;
  const Capture& capture = *found->second.capture;
  if (capture.invalidated) return CU_STREAM_CAPTURE_STATUS_INVALIDATED;
  if (id != nullptr) *id = capture.id;
  if (graph != nullptr) *graph = capture.graph;
  return CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

std::optional<CUresult> Captures::capture(CUstream stream, CUgraphNodeType type, GraphWork work) {
  std::lock_guard lock(mutex_);
  const auto found = members_.find(stream);
  if (found == members_.end()) return std::nullopt;
  return add_node_locked(found->second, type, std::move(work));
}

std::optional<CUresult> Captures::record_event(CUevent event, CUstream stream) {
  std::lock_guard lock(mutex_);
  const auto found = members_.find(stream);
  if (found == members_.end()) {
    events_.erase(event);  // recorded outside any capture now
    return std::nullopt;
  }
  const Member& member = found->second;
  if (member.capture->invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  events_.insert_or_assign(event, CapturedEvent{member.capture, stream, member.work});
  return CUDA_SUCCESS;
}

std::optional<CUresult> Captures::wait_event(CUstream stream, CUevent event) {
  std::lock_guard lock(mutex_);
  const auto member = members_.find(stream);
  const auto recorded = events_.find(event);
  if (recorded == events_.end()) {
    // An event of uncaptured work: nothing to wait for, in a capture or out of one.
    if (member == members_.end()) return std::nullopt;
    return member->second.capture->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                                               : CUDA_SUCCESS;
  }
  const std::shared_ptr<Capture> capture = recorded->second.capture;
  if (member == members_.end()) {
    // A fork: the stream joins the capture the event was recorded in.
    if (implicit_stream(stream)) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
    members_.emplace(stream, Member{capture});
    return CUDA_SUCCESS;
  }
  if (member->second.capture != capture) {
    invalidate_locked(*member->second.capture);
    invalidate_locked(*capture);
    return CUDA_ERROR_STREAM_CAPTURE_MERGE;
  }
  // A join: the recording stream's work up to the event is waited on.
  if (const auto source = members_.find(recorded->second.stream); source != members_.end()) {
    source->second.joined = std::max(source->second.joined, recorded->second.work);
  }
  return capture->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

CUresult Captures::check_unsafe_call() {
  const CUstreamCaptureMode mode = thread_mode;
  if (mode == CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_SUCCESS;
  std::lock_guard lock(mutex_);
  const pthread_t self = pthread_self();
  bool forbidden = false;
  for (auto& [stream, member] : members_) {
    Capture& capture = *member.capture;
    if (capture.origin != stream) continue;  // each capture once
    const bool own = pthread_equal(capture.thread, self) != 0;
    const bool forbids = (own && capture.mode != CU_STREAM_CAPTURE_MODE_RELAXED) ||
                         (!own && mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                          capture.mode == CU_STREAM_CAPTURE_MODE_GLOBAL);
    if (forbids) {
      invalidate_locked(capture);
      forbidden = true;
    }
  }
  return forbidden ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

CUresult Captures::check_stream_sync(CUstream stream) {
  std::lock_guard lock(mutex_);
  const auto found = members_.find(stream);
  if (found == members_.end()) return CUDA_SUCCESS;
  invalidate_locked(*found->second.capture);
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

CUstreamCaptureMode Captures::exchange_mode(CUstreamCaptureMode mode) {
  const CUstreamCaptureMode previous = thread_mode;
  thread_mode = mode;
  return previous;
}

CUresult Captures::instantiate(CUgraph graph, CUgraphExec* exec) {
  std::lock_guard lock(mutex_);
  const auto found = graphs_.find(graph);
  if (found == graphs_.end()) return CUDA_ERROR_INVALID_VALUE;
  auto made = std::make_unique<CUgraphExec_st>(CUgraphExec_st{found->second->work});
  *exec = made.get();
  execs_.emplace(made.get(), std::move(made));
  return CUDA_SUCCESS;
}

CUresult Captures::launch(CUgraphExec exec, CUstream stream) {
  std::vector<GraphWork> work;
  {
    std::lock_guard lock(mutex_);
    const auto found = execs_.find(exec);
    if (found == execs_.end()) return CUDA_ERROR_INVALID_VALUE;
    work = found->second->work;
    // Launched inside a capture, the whole graph becomes one node of it.
    if (const auto member = members_.find(stream); member != members_.end()) {
      return add_node_locked(member->second, CU_GRAPH_NODE_TYPE_GRAPH, [work] {
        for (const GraphWork& node : work) {
          if (const CUresult result = node(); result != CUDA_SUCCESS) return result;
        }
        return CUDA_SUCCESS;
      });
    }
  }
  // Outside the lock: a host function node may call the driver.
  for (const GraphWork& node : work) {
    if (const CUresult result = node(); result != CUDA_SUCCESS) return result;
  }
  return CUDA_SUCCESS;
}

CUresult Captures::destroy_graph(CUgraph graph) {
  std::lock_guard lock(mutex_);
  // A graph being captured into is not the program's to destroy.
  for (const auto& [stream, member] : members_) {
    if (member.capture->graph == graph) return CUDA_ERROR_INVALID_VALUE;
  }
  return graphs_.erase(graph) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult Captures::destroy_exec(CUgraphExec exec) {
  std::lock_guard lock(mutex_);
  return execs_.erase(exec) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult Captures::graph_nodes(CUgraph graph, CUgraphNode* nodes, std::size_t* count) {
  std::lock_guard lock(mutex_);
  const auto found = graphs_.find(graph);
  if (found == graphs_.end() || count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const auto& all = found->second->nodes;
  if (nodes == nullptr) {
    *count = all.size();
    return CUDA_SUCCESS;
  }
  *count = std::min(*count, all.size());
  for (std::size_t i = 0; i < *count; ++i) nodes[i] = all[i].get();
  return CUDA_SUCCESS;
}

CUresult Captures::node_type(CUgraphNode node, CUgraphNodeType* type) {
  std::lock_guard lock(mutex_);
  if (type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const auto& [handle, graph] : graphs_) {
    for (const auto& owned : graph->nodes) {
      if (owned.get() == node) {
        *type = node->type;
        return CUDA_SUCCESS;
      }
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

void Captures::forget_stream(CUstream stream) {
  std::lock_guard lock(mutex_);
  const auto found = members_.find(stream);
  if (found == members_.end()) return;
  invalidate_locked(*found->second.capture);
  members_.erase(found);
}

CUresult Captures::add_node_locked(Member& member, CUgraphNodeType type, GraphWork work) {
  Capture& capture = *member.capture;
  if (capture.invalidated) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  CUgraph graph = capture.graph;
  graph->nodes.push_back(std::make_unique<CUgraphNode_st>(CUgraphNode_st{graph, type}));
  graph->work.push_back(std::move(work));
  ++member.work;
  return CUDA_SUCCESS;
}

void Captures::invalidate_locked(Capture& capture) {
  capture.invalidated = true;
}

}  // namespace simcuda::driver
