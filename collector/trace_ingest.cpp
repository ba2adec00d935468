#include "collector/trace_ingest.h"

#include "collector/python_splice.h"
#include "collector/thread_name.h"
#include "storage/schema.h"

#include <sys/wait.h>

#include <algorithm>
#include <bit>

namespace vramtrace::collector {
namespace {

// Frees kept for a possible FreeFailed. The shim sends FreeFailed right after the real free
// returns, so only the records that other threads wrote in between can separate the two.
constexpr size_t kRecentFreesKept = 4096;
// A stack deeper than the wire allows cannot come from our shim.
constexpr int kMaxStackDepth = 256;

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

// An event's Python frames; none when there are more than the shim ever sends (the event keeps
// its native stack, and count_python_stack() has no say: the stat below does).
constexpr int kMaxPythonDepth = 128;

template <class Message>
std::span<const uint64_t> python_codes_of(const Message& m) {
  if (m.python_code_size() > kMaxPythonDepth) return {};
  return {m.python_code().data(), static_cast<size_t>(m.python_code_size())};
}

template <class Message>
std::span<const uint32_t> python_lines_of(const Message& m) {
  if (m.python_line_size() > kMaxPythonDepth) return {};
  return {m.python_line().data(), static_cast<size_t>(m.python_line_size())};
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

}  // namespace

size_t TraceIngest::StackHash::operator()(std::span<const uint64_t> ips) const {
  // Four independent lanes, in registers: one chain of dependent multiplies over a deep stack
  // was the ingest's largest cost of its own (13% at depth 64). The final mix folds every bit
  // down.
  constexpr uint64_t kMultiplier = 0x9fb21c651e98df25ull;
  auto step = [](uint64_t lane, uint64_t ip) { return std::rotl((lane ^ ip) * kMultiplier, 29); };
  uint64_t a = ips.size(), b = 0x243f6a8885a308d3ull, c = 0x13198a2e03707344ull,
           d = 0xa4093822299f31d0ull;
  size_t i = 0;
  for (; i + 4 <= ips.size(); i += 4) {
    a = step(a, ips[i]);
    b = step(b, ips[i + 1]);
    c = step(c, ips[i + 2]);
    d = step(d, ips[i + 3]);
  }
  for (; i < ips.size(); ++i) a = step(a, ips[i]);
  uint64_t h = a ^ std::rotl(b, 16) ^ std::rotl(c, 32) ^ std::rotl(d, 48);
  h ^= h >> 33;  // murmur3's finalizer
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<size_t>(h);
}

size_t TraceIngest::PcKeyHash::operator()(const PcKey& k) const {
  return static_cast<size_t>(
      mix(static_cast<uint64_t>(k.module_id), k.rel_pc * 0xc4ceb9fe1a85ec53ull));
}

TraceIngest::TraceIngest(storage::TraceWriter& writer) : writer_(writer) {
  callsites_.on_new = [this](int64_t id, std::optional<int64_t> parent, int64_t frame_id,
                             int depth) { writer_.add_callsite(id, parent, frame_id, depth); };
  // Module 0 stands for addresses outside every module the process reported.
  writer_.add_module(0, "[unknown]", "");
}

TraceIngest::~TraceIngest() = default;

int64_t TraceIngest::open_ring(uint32_t pid) {
  const int64_t upid = next_upid_++;
  Process& p = processes_[upid];
  p.upid = upid;
  p.pid = pid;
  return upid;
}

TraceIngest::Process* TraceIngest::process_for(int64_t ring_id) {
  auto it = processes_.find(ring_id);
  return it == processes_.end() ? nullptr : &it->second;
}

wire::Envelope::BodyCase TraceIngest::parse_hot_record(const unsigned char* payload,
                                                       uint32_t bytes) {
  // The Envelope's one field: a one-byte key (field number < 16, length-delimited), then the
  // length, which must reach exactly to the end. Anything else takes the general path.
  if (bytes < 2) return wire::Envelope::BODY_NOT_SET;
  const unsigned key = payload[0];
  if ((key & 0x80) != 0 || (key & 7) != 2) return wire::Envelope::BODY_NOT_SET;
  uint64_t length = 0;
  uint32_t at = 1;
  for (int shift = 0; at < bytes && shift < 35; shift += 7) {
    const unsigned char byte = payload[at++];
    length |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      if (length != bytes - at) return wire::Envelope::BODY_NOT_SET;
      const int size = static_cast<int>(length);
      if (key >> 3 == wire::Envelope::kAllocFieldNumber &&
          alloc_.ParseFromArray(payload + at, size))
        return wire::Envelope::kAlloc;
      if (key >> 3 == wire::Envelope::kFreeFieldNumber && free_.ParseFromArray(payload + at, size))
        return wire::Envelope::kFree;
      return wire::Envelope::BODY_NOT_SET;
    }
  }
  return wire::Envelope::BODY_NOT_SET;
}

void TraceIngest::on_record(int64_t ring_id, const ring::RecordHeader& header,
                            const unsigned char* payload) {
  Process* p = process_for(ring_id);
  if (p == nullptr) return;
  wire::Envelope::BodyCase body = parse_hot_record(payload, header.payload_bytes);
  const bool hot = body != wire::Envelope::BODY_NOT_SET;
  if (!hot) {
    envelope_.Clear();
    if (!envelope_.ParseFromArray(payload, static_cast<int>(header.payload_bytes))) {
      count("record_undecodable", storage::Severity::kDataLoss,
            "ring records that did not decode as a vramtrace.wire.Envelope");
      return;
    }
    body = envelope_.body_case();
  }
  p->last_ns = std::max(p->last_ns, header.time_ns);
  if (!p->started && body != wire::Envelope::kProcessStart) {
    // The shim always starts with ProcessStart; make the row anyway so nothing is dropped.
    wire::ProcessStart unknown;
    unknown.set_pid(p->pid);
    on_process_start(*p, header, unknown);
    count("process_start_missing", storage::Severity::kDataLoss,
          "rings whose first record was not the process's start");
  }
  switch (body) {
    case wire::Envelope::kProcessStart:
      if (p->started) {
        count("process_start_repeated", storage::Severity::kError,
              "rings that announced their process twice");
        return;
      }
      on_process_start(*p, header, envelope_.process_start());
      return;
    case wire::Envelope::kModule:
      on_module(*p, envelope_.module());
      return;
    case wire::Envelope::kAlloc:
      on_alloc(*p, header, hot ? alloc_ : envelope_.alloc());
      return;
    case wire::Envelope::kFree:
      on_free(*p, header, hot ? free_ : envelope_.free());
      return;
    case wire::Envelope::kFreeFailed:
      on_free_failed(*p, envelope_.free_failed());
      return;
    case wire::Envelope::kNotice:
      on_notice(*p, envelope_.notice());
      return;
    case wire::Envelope::kMarker:
      on_marker(*p, header, envelope_.marker());
      return;
    case wire::Envelope::kPythonCode:
      on_python_code(*p, envelope_.python_code());
      return;
    case wire::Envelope::kMemoryActivity:
      on_memory_activity(*p, envelope_.memory_activity());
      return;
    case wire::Envelope::kPythonInterpreter:
      p->python_interpreter_address = envelope_.python_interpreter().api_address();
      return;
    case wire::Envelope::kChildExit:
      set_wait_status(envelope_.child_exit().pid(), envelope_.child_exit().wait_status());
      return;
    case wire::Envelope::kLiveCheckpoint: {
      const uint64_t dropped = p->queries.dropped_checkpoints();
      p->queries.open_checkpoint(header.seq);
      if (p->queries.dropped_checkpoints() != dropped)
        count("live_checkpoints_dropped", storage::Severity::kInfo,
              "live checkpoints dropped unanswered, the oldest of too many open at once");
      return;
    }
    case wire::Envelope::kLiveQuery:
      on_live_query(*p, envelope_.live_query());
      return;
    case wire::Envelope::kProcessExit:
      p->said_exit = true;
      p->exit_status = envelope_.process_exit().exit_status();
      return;
    case wire::Envelope::BODY_NOT_SET:
      count("record_unknown_message", storage::Severity::kInfo,
            "records of a message type this collector does not know (a newer shim)");
      return;
  }
}

void TraceIngest::on_process_start(Process& p, const ring::RecordHeader& h,
                                   const wire::ProcessStart& m) {
  p.started = true;
  storage::ProcessRow row;
  row.upid = p.upid;
  row.pid = p.pid;  // from the socket handshake; the message's own pid must agree
  if (m.pid() != 0 && m.pid() != p.pid)
    count("process_pid_mismatch", storage::Severity::kError,
          "rings whose process named another pid than the one that handed the ring over");
  row.ppid = m.ppid();
  row.uid = m.uid();
  row.host = m.hostname();
  row.exe = m.exe();
  row.argv.assign(m.argv().begin(), m.argv().end());
  row.start_ns = h.time_ns;
  row.start_realtime_ns = static_cast<int64_t>(m.start_realtime_ns());
  row.unwinder = m.unwinder();
  if (m.has_rank()) row.rank = m.rank();
  if (m.has_local_rank()) row.local_rank = m.local_rank();
  if (m.has_world_size()) row.world_size = m.world_size();
  if (m.backend() == wire::BACKEND_CUPTI) row.backend = storage::kBackendCupti;
  writer_.add_process(row);
  if (m.unwinder() == "none")
    count("process_without_unwinder", storage::Severity::kDataLoss,
          "processes whose shim found no stack unwinder: their events have no stacks");
}

int64_t TraceIngest::module_id_for(const std::string& path, const std::string& build_id) {
  std::string key = path;
  key.push_back('\0');
  key += build_id;
  auto [it, inserted] = module_ids_.try_emplace(std::move(key), 0);
  if (inserted) {
    it->second = static_cast<int64_t>(modules_.size()) + 1;
    modules_.push_back({it->second, path, build_id});
    writer_.add_module(it->second, path, hex(build_id));
  }
  return it->second;
}

void TraceIngest::on_module(Process& p, const wire::Module& m) {
  if (m.end() <= m.start() || m.path().empty()) {
    count("module_invalid", storage::Severity::kInfo, "module records with an empty range or path");
    return;
  }
  const int64_t module_id = module_id_for(m.path(), m.build_id());
  writer_.add_mapping(next_mapping_id_++, p.upid, module_id, m.start(), m.end(), m.load_bias());
  // A new object can take the place of an unloaded one: drop mappings it overlaps.
  std::erase_if(p.mappings,
                [&](const Mapping& old) { return old.start < m.end() && m.start() < old.end; });
  Mapping mapping{m.start(), m.end(), m.load_bias(), module_id};
  p.mappings.insert(
      std::upper_bound(p.mappings.begin(), p.mappings.end(), mapping,
                       [](const Mapping& a, const Mapping& b) { return a.start < b.start; }),
      mapping);
  // Stacks cached before this module arrived may have resolved into [unknown].
  p.stack_cache.clear();
}

int64_t TraceIngest::utid_for(Process& p, uint32_t tid) {
  // Runs of events come from one thread: the last answer saves a lookup per event.
  if (p.last_utid != 0 && tid == p.last_tid) return p.last_utid;
  auto [it, inserted] = p.threads.try_emplace(tid, 0);
  if (inserted) {
    it->second = next_utid_++;
    writer_.add_thread(it->second, p.upid, tid);
    if (const std::optional<std::string> name = read_thread_name(p.pid, tid)) {
      writer_.set_thread_name(it->second, *name);
    }
  }
  p.last_tid = tid;
  p.last_utid = it->second;
  return it->second;
}

const std::vector<int64_t>& TraceIngest::frames_for_pc(const Process& p, uint64_t pc) {
  // Find the module holding pc: the last mapping starting at or below it.
  auto it = std::upper_bound(p.mappings.begin(), p.mappings.end(), pc,
                             [](uint64_t v, const Mapping& m) { return v < m.start; });
  const Mapping* mapping = nullptr;
  if (it != p.mappings.begin() && pc < std::prev(it)->end) mapping = &*std::prev(it);

  const PcKey key = mapping ? PcKey{mapping->module_id, pc - mapping->load_bias} : PcKey{0, pc};
  auto [slot, inserted] = frames_by_pc_.try_emplace(key);
  if (!inserted) return slot->second;

  if (mapping == nullptr) {
    count("frame_outside_modules", storage::Severity::kInfo,
          "distinct stack addresses outside every module the process reported (JIT code?)");
    storage::FrameRow row;
    row.id = next_frame_id_++;
    row.module_id = 0;
    row.rel_pc = pc;
    add_frame(row);
    slot->second.push_back(row.id);
    return slot->second;
  }
  const ModuleInfo& module = modules_[static_cast<size_t>(mapping->module_id) - 1];
  for (const SymbolizedFrame& f : symbolizer_.symbolize(module.path, module.build_id, key.rel_pc)) {
    storage::FrameRow row;
    row.id = next_frame_id_++;
    row.module_id = mapping->module_id;
    row.rel_pc = key.rel_pc;
    if (!f.function.empty()) row.function = f.function;
    if (!f.file.empty()) row.file = f.file;
    if (f.line > 0) row.line = f.line;
    row.inlined = f.inlined;
    add_frame(row);
    slot->second.push_back(row.id);
  }
  return slot->second;
}

void TraceIngest::add_frame(const storage::FrameRow& row) {
  writer_.add_frame(row);
  if (frame_rows_.size() < static_cast<size_t>(row.id)) frame_rows_.resize(row.id);
  frame_rows_[static_cast<size_t>(row.id) - 1] = row;
}

std::vector<storage::StackFrame> TraceIngest::stack_of(std::optional<int64_t> callsite) const {
  std::vector<storage::StackFrame> stack;
  for (const int64_t frame_id : callsites_.frames_of(callsite)) {
    if (frame_id < 1 || static_cast<size_t>(frame_id) > frame_rows_.size()) continue;
    const storage::FrameRow& row = frame_rows_[static_cast<size_t>(frame_id) - 1];
    storage::StackFrame frame;
    frame.frame_id = frame_id;
    frame.function = row.function;
    frame.file = row.file;
    frame.line = row.line;
    frame.rel_pc = row.rel_pc;
    frame.inlined = row.inlined;
    frame.language = row.language;
    if (row.module_id >= 1 && static_cast<size_t>(row.module_id) <= modules_.size())
      frame.module = modules_[static_cast<size_t>(row.module_id) - 1].path;
    stack.push_back(std::move(frame));
  }
  return stack;
}

void TraceIngest::on_live_query(Process& p, const wire::LiveQuery& m) {
  const LiveQueries::Reply reply = p.queries.answer(
      m.query_id(), m.checkpoint_seq(),
      [this](std::optional<int64_t> callsite) { return stack_of(callsite); },
      [](int kind) {
        for (const storage::NamedId& row : storage::allocation_kind_rows())
          if (row.id == kind) return std::string(row.name);
        return "kind_" + std::to_string(kind);
      });
  if (reply.header.status == wire::kLiveReplyUnknownCheckpoint)
    count("live_query_unknown_checkpoint", storage::Severity::kInfo,
          "live queries on a checkpoint never made, already answered or dropped");
  if (!reply_sink_) {
    count("live_query_unanswered", storage::Severity::kInfo,
          "live queries read with no way to answer them");
    return;
  }
  reply_sink_(p.upid, reply);
}

bool TraceIngest::in_interpreter(const Process& p, uint64_t pc) const {
  if (!p.python_interpreter_address) return false;
  const uint64_t anchor = *p.python_interpreter_address;
  for (const Mapping& m : p.mappings) {
    if (anchor >= m.start && anchor < m.end) return pc >= m.start && pc < m.end;
  }
  return false;
}

void TraceIngest::on_python_code(Process& p, const wire::PythonCode& m) {
  if (m.id() == 0) {
    count("python_code_invalid", storage::Severity::kInfo, "Python code records without an id");
    return;
  }
  // A .py file is the module of its frames, as an ELF object is of native ones. "<string>" and
  // other pseudo-files are kept as Python names them.
  const std::string& filename = m.filename().empty() ? std::string("<unknown>") : m.filename();
  p.python_codes[m.id()] = {module_id_for(filename, ""), m.name(), filename};
}

template <class Message>
std::optional<int64_t> TraceIngest::event_callsite(Process& p, const Message& m) {
  count_python_stack(m.python_stack());
  if (m.same_stack_as() != 0) {
    // The frames were sent before, under this name, and interned then.
    const NamedStack* named = stack_name_slot(p, m.same_stack_as());
    if (named != nullptr && named->named()) {
      ++stacks_by_name_;  // a plain counter: count()'s lookup would cost as much as the name saves
      return named->callsite();
    }
    count("stack_name_unknown", storage::Severity::kDataLoss,
          "events whose stack was sent as a name the process never defined: no stack");
    return std::nullopt;
  }
  const std::optional<int64_t> callsite =
      intern_stack(p, {m.stack().data(), static_cast<size_t>(m.stack_size())}, python_codes_of(m),
                   python_lines_of(m));
  if (m.stack_name() != 0) {
    if (NamedStack* named = stack_name_slot(p, m.stack_name()); named != nullptr)
      named->define(callsite);
  }
  return callsite;
}

TraceIngest::NamedStack* TraceIngest::stack_name_slot(Process& p, uint32_t name) {
  if (name == 0) return nullptr;
  // Up to 1024 threads' tables of the shim's at once (4096 names each) in the vector.
  constexpr uint32_t kDenseNames = 1u << 22;
  if (name < kDenseNames) {
    if (name >= p.stack_names.size()) {
      size_t grown = std::max<size_t>(p.stack_names.size() * 2, 4096);
      p.stack_names.resize(std::min<size_t>(std::max<size_t>(grown, name + 1), kDenseNames));
    }
    return &p.stack_names[name];
  }
  // Only a broken ring names so far out; it may not grow the map without end.
  if (p.far_stack_names.size() >= kDenseNames && !p.far_stack_names.contains(name)) return nullptr;
  return &p.far_stack_names[name];
}

template <class Message>
bool TraceIngest::stack_fits(const Message& m) {
  if (m.stack_size() <= kMaxStackDepth) return true;
  count("stack_too_deep", storage::Severity::kError,
        "events whose stack was deeper than the wire allows");
  return false;
}

void TraceIngest::count_python_stack(wire::PythonStackStatus status) {
  switch (status) {
    case wire::PYTHON_STACK_WITHOUT_GIL:
      count("python_stack_without_gil", storage::Severity::kInfo,
            "events on Python threads that had released the GIL: native stack only (the shim "
            "never takes the GIL inside a hook)");
      return;
    case wire::PYTHON_STACK_UNAVAILABLE:
      count("python_stack_unavailable", storage::Severity::kInfo,
            "events whose Python frames could not be read (interpreter finalizing, or the "
            "shim's table of code objects full): native stack only");
      return;
    case wire::PYTHON_STACK_CAPTURED_WITHOUT_GIL:
      count("python_stack_read_without_gil", storage::Severity::kInfo,
            "events on Python threads without the GIL whose Python frames the shim read "
            "directly, by the interpreter's layout (python_layout.h)");
      return;
    case wire::PYTHON_STACK_TRUNCATED:
      count("python_stack_truncated", storage::Severity::kInfo,
            "events whose Python stack was cut at the wire's depth limit (128 frames)");
      return;
    default:
      return;
  }
}

int64_t TraceIngest::python_frame_id(const Process& p, uint64_t code, uint32_t line) {
  auto known = p.python_codes.find(code);
  if (known == p.python_codes.end()) {
    count("python_code_unknown", storage::Severity::kDataLoss,
          "Python frames whose code object was never announced (module 0, no name)");
  }
  const int64_t module_id = known == p.python_codes.end() ? 0 : known->second.module_id;
  std::string key = std::to_string(module_id);
  key.push_back('\0');
  if (known != p.python_codes.end()) key += known->second.name;
  key.push_back('\0');
  key += std::to_string(line);
  auto [slot, inserted] = python_frames_.try_emplace(std::move(key), 0);
  if (!inserted) return slot->second;
  storage::FrameRow row;
  row.id = next_frame_id_++;
  row.module_id = module_id;
  row.rel_pc = line;
  row.language = storage::FrameLanguage::kPython;
  if (known != p.python_codes.end()) {
    if (!known->second.name.empty()) row.function = known->second.name;
    row.file = known->second.filename;
  }
  if (line > 0) row.line = static_cast<int>(line);
  add_frame(row);
  slot->second = row.id;
  return row.id;
}

std::optional<int64_t> TraceIngest::intern_stack(Process& p, std::span<const uint64_t> ips,
                                                 std::span<const uint64_t> python_code,
                                                 std::span<const uint32_t> python_line) {
  const size_t python_depth = std::min(python_code.size(), python_line.size());
  if (python_code.size() != python_line.size())
    count("python_stack_mismatched", storage::Severity::kInfo,
          "events whose Python code and line lists differ in length (the shorter is used)");
  if (ips.empty() && python_depth == 0) return std::nullopt;
  // The cache key: the native addresses, then, when there are Python frames, a separator that
  // no return address can be, and the (code, line) pairs.
  std::span<const uint64_t> key = ips;
  if (python_depth != 0) {
    stack_key_.assign(ips.begin(), ips.end());
    stack_key_.push_back(~0ull);
    for (size_t i = 0; i < python_depth; ++i) {
      stack_key_.push_back(python_code[i]);
      stack_key_.push_back(python_line[i]);
    }
    key = stack_key_;
  }
  // Looked up as a span: a hit, the common case, copies nothing.
  if (auto hit = p.stack_cache.find(key); hit != p.stack_cache.end()) return hit->second;

  // Each return address is moved back by one byte so it points into its call instruction (and
  // to the call's line, not the next one's). on_alloc/on_free refuse deeper stacks.
  auto pc_of = [&](size_t i) { return ips[i] > 0 ? ips[i] - 1 : 0; };
  bool interpreter[kMaxStackDepth] = {};
  PythonSplice splice{ips.size(), ips.size()};
  if (python_depth != 0) {
    for (size_t i = 0; i < ips.size(); ++i) interpreter[i] = in_interpreter(p, pc_of(i));
    splice = find_python_splice({interpreter, ips.size()});
  }
  // From the outermost frame in: the native frames outside the splice, then the Python
  // frames in its place, then the native frames inside it.
  std::optional<int64_t> leaf;
  auto intern_native = [&](size_t i) {
    const std::vector<int64_t>& frames = frames_for_pc(p, pc_of(i));
    for (size_t j = frames.size(); j-- > 0;) leaf = callsites_.intern(leaf, frames[j]);
  };
  for (size_t i = ips.size(); i-- > splice.end;) intern_native(i);
  for (size_t i = python_depth; i-- > 0;)
    leaf = callsites_.intern(leaf, python_frame_id(p, python_code[i], python_line[i]));
  for (size_t i = splice.begin; i-- > 0;) intern_native(i);
  p.stack_cache.emplace(std::vector<uint64_t>(key.begin(), key.end()), leaf);
  return leaf;
}

void TraceIngest::on_alloc(Process& p, const ring::RecordHeader& h, const wire::Alloc& m) {
  if (!stack_fits(m)) return;
  if (m.stack_truncated())
    count("stack_truncated", storage::Severity::kInfo,
          "events whose stack was cut at the wire's depth limit (256 frames)");
  storage::AllocationRow row;
  row.id = next_allocation_id_++;
  row.upid = p.upid;
  row.kind = m.kind();
  row.api = m.api();
  row.device = m.device();
  row.stream = m.stream();
  row.address = m.address();
  row.size = m.size();
  row.requested_size = m.requested_size();
  row.flags = m.flags();
  if (m.pool() != 0) row.pool = m.pool();
  row.result = m.result();
  row.alloc_seq = h.seq;
  row.alloc_ns = h.time_ns;
  row.alloc_utid = utid_for(p, m.tid());
  row.alloc_callsite_id = event_callsite(p, m);
  if (m.kind() == wire::KIND_VMM_MAPPING) {
    row.vmm_handle = m.handle();
    row.vmm_offset = m.offset();
  }
  if (m.kind() == wire::KIND_BLOCK) {
    if (m.has_allocator_allocated()) row.allocator_allocated = m.allocator_allocated();
    if (m.has_allocator_reserved()) row.allocator_reserved = m.allocator_reserved();
    if (m.result() == 0) {
      if (auto segment = p.live.segment_containing(m.address(), m.size())) {
        row.segment_id = segment->id;
        p.queries.on_block_in_segment(segment->id);
      } else {
        count("block_without_segment", storage::Severity::kInfo,
              "allocator blocks with no live recorded segment (cudaMalloc or VMM mapping) "
              "holding them");
      }
    }
  }
  if (m.correlation_id() != 0) row.correlation_id = m.correlation_id();
  writer_.add_allocation(row);
  p.correlations.on_alloc(m.correlation_id(), m.address(), row.id);

  if (m.result() != 0) return;  // a failed allocation holds nothing
  p.queries.on_alloc(row.id, h.seq, row.kind, row.size, row.alloc_callsite_id);
  if (p.live.add(m.address(), {row.id, row.kind, row.size})) {
    // The address is live already: its free was not seen (made by a path the shim does not
    // hook). The older allocation stays live in the trace; the new one takes the address.
    count("alloc_over_live_address", storage::Severity::kDataLoss,
          "allocations at an address still live in the trace (its free was not recorded)");
  }
}

void TraceIngest::on_free(Process& p, const ring::RecordHeader& h, const wire::Free& m) {
  if (!stack_fits(m)) return;
  if (p.recent_frees.size() < kRecentFreesKept) p.recent_frees.emplace_back();
  RecentFree& recent = p.recent_frees[p.recent_free_next];
  p.recent_free_next = (p.recent_free_next + 1) % kRecentFreesKept;
  recent.seq = h.seq;
  recent.address = m.address();
  recent.ns = h.time_ns;
  recent.utid = utid_for(p, m.tid());
  recent.api = m.api();
  recent.callsite_id = event_callsite(p, m);
  recent.bad_free_id.reset();
  recent.ended.clear();
  p.live.remove_for_free(m.api(), m.address(), m.size(), &recent.ended);
  if (!recent.ended.empty()) {
    storage::FreeRow row;
    row.free_seq = h.seq;
    row.free_ns = h.time_ns;
    row.free_utid = recent.utid;
    row.free_callsite_id = recent.callsite_id;
    row.free_api = m.api();
    if (m.has_allocator_allocated()) row.allocator_allocated = m.allocator_allocated();
    if (m.has_allocator_reserved()) row.allocator_reserved = m.allocator_reserved();
    for (const auto& [address, entry] : recent.ended) {
      writer_.set_free(entry.id, row);
      p.queries.on_free(entry.id);
    }
    p.correlations.on_free(m.correlation_id(), m.address(), recent.ended.front().second.id);
  } else {
    storage::BadFreeRow row;
    row.id = next_bad_free_id_++;
    row.upid = p.upid;
    row.seq = h.seq;
    row.ns = h.time_ns;
    row.utid = recent.utid;
    row.api = m.api();
    row.address = m.address();
    row.callsite_id = recent.callsite_id;
    row.reason = std::string(storage::kBadFreeUnknownAddress);
    writer_.add_bad_free(row);
    recent.bad_free_id = row.id;
  }
}

void TraceIngest::on_free_failed(Process& p, const wire::FreeFailed& m) {
  // Newest first: a free's failure comes right after it.
  RecentFree* it = nullptr;
  const size_t kept = p.recent_frees.size();
  for (size_t back = 1; back <= kept && it == nullptr; ++back) {
    RecentFree& f = p.recent_frees[(p.recent_free_next + kept - back) % kept];
    if (f.seq == m.free_seq()) it = &f;
  }
  if (it == nullptr) {
    count("free_failed_unmatched", storage::Severity::kInfo,
          "failed frees whose free record was not found");
    return;
  }
  // The failed call's stack comes with FreeFailed when the free went without one (the shim's
  // default: no stacks for frees).
  if (!it->callsite_id && stack_fits(m)) it->callsite_id = event_callsite(p, m);
  // A free of an unknown address that also failed is already a bad_free row; only a free of
  // live allocations has to be undone.
  if (it->bad_free_id) {
    writer_.fail_bad_free(*it->bad_free_id, m.result(), it->callsite_id);
    it->bad_free_id.reset();
  }
  if (it->ended.empty()) return;
  for (const auto& [address, entry] : it->ended) {
    writer_.clear_free(entry.id);
    p.live.restore(address, entry);
  }
  storage::BadFreeRow row;
  row.id = next_bad_free_id_++;
  row.upid = p.upid;
  row.seq = it->seq;
  row.ns = it->ns;
  row.utid = it->utid;
  row.api = it->api;
  row.address = it->address;
  row.result = m.result();
  row.callsite_id = it->callsite_id;
  row.reason = std::string(storage::kBadFreeCallFailed);
  writer_.add_bad_free(row);
  it->ended.clear();
}

void TraceIngest::on_marker(Process& p, const ring::RecordHeader& h, const wire::Marker& m) {
  const int64_t utid = utid_for(p, m.tid());
  auto begin = [&](std::string type, int depth, std::optional<int64_t> parent) {
    storage::MarkerRow row;
    row.id = next_marker_id_++;
    row.upid = p.upid;
    row.utid = utid;
    row.type = std::move(type);
    switch (m.source()) {
      case wire::Marker::SOURCE_API:
        row.source = storage::kMarkerFromApi;
        break;
      case wire::Marker::SOURCE_SHIM:
        row.source = storage::kMarkerFromShim;
        break;
      default:
        row.source = storage::kMarkerFromNvtx;
        break;
    }
    if (!m.domain().empty()) row.domain = m.domain();
    row.name = m.name();
    row.start_seq = h.seq;
    row.start_ns = h.time_ns;
    row.depth = depth;
    row.parent_id = parent;
    if (m.color() != 0) row.color = m.color();
    if (m.category() != 0) row.category = m.category();
    writer_.add_marker(row);
    return row.id;
  };
  auto finish = [&](std::optional<int64_t> id, const char* unmatched, const char* description) {
    if (!id) {
      count(unmatched, storage::Severity::kInfo, description);
      return;
    }
    writer_.end_marker(*id, storage::MarkerEndRow{h.seq, h.time_ns, utid});
  };
  switch (m.type()) {
    case wire::Marker::TYPE_MARK:
      begin("mark", 0, std::nullopt);
      return;
    case wire::Marker::TYPE_RANGE_PUSH: {
      // The id is known before the row exists, so the pairing can record it first.
      const int64_t id = next_marker_id_;
      const MarkerPairing::Nesting nesting = p.markers.push({m.tid(), m.source(), m.domain()}, id);
      begin("range", nesting.depth, nesting.parent);
      return;
    }
    case wire::Marker::TYPE_RANGE_POP:
      finish(p.markers.pop({m.tid(), m.source(), m.domain()}), "marker_pop_without_push",
             "range pops on a thread with no range pushed");
      return;
    case wire::Marker::TYPE_RANGE_START:
      p.markers.start(m.range_id(), begin("range", 0, std::nullopt));
      return;
    case wire::Marker::TYPE_RANGE_END:
      finish(p.markers.end(m.range_id()), "marker_end_without_start",
             "range ends whose start was not recorded");
      return;
    default:
      count("marker_unknown_type", storage::Severity::kInfo,
            "markers of a type this collector does not know (a newer shim)");
      return;
  }
}

void TraceIngest::on_notice(Process&, const wire::Notice& m) {
  const storage::Severity severity =
      m.severity() == wire::Notice::SEVERITY_ERROR       ? storage::Severity::kError
      : m.severity() == wire::Notice::SEVERITY_DATA_LOSS ? storage::Severity::kDataLoss
                                                         : storage::Severity::kInfo;
  std::string name = "shim_" + m.name();
  const auto times = static_cast<int64_t>(std::min<uint64_t>(m.count(), INT64_MAX));
  count(name.c_str(), severity, m.text().c_str(), times > 0 ? times : 1);
}

void TraceIngest::close_ring(int64_t ring_id, bool complete, int64_t end_ns,
                             std::optional<int> wait_status) {
  Process* p = process_for(ring_id);
  if (p == nullptr) return;
  if (auto pending = pending_wait_status_.find(p->pid); pending != pending_wait_status_.end()) {
    if (!wait_status) wait_status = pending->second;
    pending_wait_status_.erase(pending);
  }
  if (wait_status) apply_wait_status(*p, *wait_status);
  if (!p->started) {
    wire::ProcessStart unknown;
    unknown.set_pid(p->pid);
    on_process_start(*p, ring::RecordHeader{0, 0, 0, end_ns}, unknown);
  }
  storage::ProcessEndRow row;
  row.upid = p->upid;
  row.end_ns = std::max(p->last_ns, end_ns);
  row.exit_status = p->exit_status;
  row.signal = p->signal;
  row.complete = complete;
  writer_.end_process(row);
  p->closed = true;
  p->complete = complete;
  // Keep the process's identity for a later wait status; drop its bulky state.
  p->live.clear();
  p->markers.clear();
  p->recent_frees = {};
  p->recent_free_next = 0;
  p->stack_cache.clear();
  p->stack_names = {};
  p->far_stack_names = {};
  p->mappings.clear();
  p->threads.clear();
  p->last_utid = 0;
}

void TraceIngest::ring_corrupt(int64_t) {
  count("ring_corrupt", storage::Severity::kDataLoss,
        "rings that held a record that cannot be valid; the records after it are lost");
}

void TraceIngest::set_wait_status(uint32_t pid, int wait_status) {
  Process* latest = nullptr;
  for (auto& [id, p] : processes_)
    if (p.pid == pid && (latest == nullptr || p.upid > latest->upid)) latest = &p;
  if (latest == nullptr) {
    pending_wait_status_[pid] = wait_status;
    return;
  }
  apply_wait_status(*latest, wait_status);
}

void TraceIngest::apply_wait_status(Process& p, int wait_status) {
  // The kernel's word beats the shim's: it also covers _exit, abort and fatal signals.
  if (WIFEXITED(wait_status)) {
    p.exit_status = WEXITSTATUS(wait_status);
    p.signal.reset();
  } else if (WIFSIGNALED(wait_status)) {
    p.signal = WTERMSIG(wait_status);
    p.exit_status.reset();
  } else {
    return;  // stopped or continued: not an end
  }
  if (!p.closed) return;  // close_ring() will write them
  storage::ProcessEndRow row;
  row.upid = p.upid;
  row.end_ns = p.last_ns;
  row.exit_status = p.exit_status;
  row.signal = p.signal;
  row.complete = p.complete;
  writer_.end_process(row);
}

void TraceIngest::count(const char* name, storage::Severity severity, const char* description,
                        int64_t by) {
  auto [it, inserted] = counters_.try_emplace(name, Counter{severity, description, 0});
  it->second.value += by;
}

void TraceIngest::write_stats() {
  for (const auto& [name, c] : counters_)
    writer_.set_stat(name, c.severity, c.value, c.description);
  const Symbolizer::Stats& s = symbolizer_.stats();
  writer_.set_stat("symbolizer_modules_missing", storage::Severity::kInfo, s.modules_missing,
                   "modules whose file was not found or not readable: their frames have no names");
  writer_.set_stat("symbolizer_build_id_mismatch", storage::Severity::kInfo, s.build_id_mismatch,
                   "modules whose file on disk is another build than the one the process ran");
  writer_.set_stat("symbolizer_unresolved", storage::Severity::kInfo, s.unresolved,
                   "distinct addresses that got no function name");
  writer_.set_stat("stacks_by_name", storage::Severity::kInfo, stacks_by_name_,
                   "events whose stack came as the name of one sent before on its thread "
                   "(stack names: each thread sends a stack's frames once)");
}

}  // namespace vramtrace::collector
