#include "collector/module_tracker.h"

#include <algorithm>

#include "storage/trace_writer.h"

namespace vramtrace::collector {
namespace {

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

}  // namespace

size_t ModuleTracker::PcKeyHash::operator()(const PcKey& k) const {
  uint64_t h = static_cast<uint64_t>(k.module_id);
  h ^= k.rel_pc * 0xc4ceb9fe1a85ec53ull + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return static_cast<size_t>(h);
}

ModuleTracker::ModuleTracker(storage::TraceWriter& writer, IngestStats& stats)
    : writer_(writer), stats_(stats) {
  writer_.add_module(0, "[unknown]", "");
}

int64_t ModuleTracker::module_id_for(const std::string& path, const std::string& build_id) {
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

bool ModuleTracker::on_module(ProcessModules& p, int64_t upid, const wire::Module& m) {
  if (m.end() <= m.start() || m.path().empty()) {
    stats_.add(Stat::kModuleInvalid);
    return false;
  }
  const int64_t module_id = module_id_for(m.path(), m.build_id());
  writer_.add_mapping(next_mapping_id_++, upid, module_id, m.start(), m.end(), m.load_bias());
  // A new object can take the place of an unloaded one: drop mappings it overlaps.
  using Mapping = ProcessModules::Mapping;
  std::erase_if(p.mappings,
                [&](const Mapping& old) { return old.start < m.end() && m.start() < old.end; });
  Mapping mapping{m.start(), m.end(), m.load_bias(), module_id};
  p.mappings.insert(
      std::upper_bound(p.mappings.begin(), p.mappings.end(), mapping,
                       [](const Mapping& a, const Mapping& b) { return a.start < b.start; }),
      mapping);
  return true;
}

void ModuleTracker::on_python_code(ProcessModules& p, const wire::PythonCode& m) {
  if (m.id() == 0) {
    stats_.add(Stat::kPythonCodeInvalid);
    return;
  }
  // A .py file is the module of its frames, as an ELF object is of native ones. "<string>" and
  // other pseudo-files are kept as Python names them.
  const std::string& filename = m.filename().empty() ? std::string("<unknown>") : m.filename();
  p.python_codes[m.id()] = {module_id_for(filename, ""), m.name(), filename};
}

const std::vector<int64_t>& ModuleTracker::frames_for_pc(const ProcessModules& p, uint64_t pc) {
  using Mapping = ProcessModules::Mapping;
  // Find the module holding pc: the last mapping starting at or below it.
  auto it = std::upper_bound(p.mappings.begin(), p.mappings.end(), pc,
                             [](uint64_t v, const Mapping& m) { return v < m.start; });
  const Mapping* mapping = nullptr;
  if (it != p.mappings.begin() && pc < std::prev(it)->end) mapping = &*std::prev(it);

  const PcKey key = mapping ? PcKey{mapping->module_id, pc - mapping->load_bias} : PcKey{0, pc};
  auto [slot, inserted] = frames_by_pc_.try_emplace(key);
  if (!inserted) return slot->second;

  if (mapping == nullptr) {
    stats_.add(Stat::kFrameOutsideModules);
    storage::FrameRow row;
    row.id = next_frame_id_++;
    row.module_id = 0;
    row.rel_pc = pc;
    add_frame(row);
    slot->second.push_back(row.id);
    return slot->second;
  }
  const Module& module = modules_[static_cast<size_t>(mapping->module_id) - 1];
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

int64_t ModuleTracker::python_frame_id(const ProcessModules& p, uint64_t code, uint32_t line) {
  auto known = p.python_codes.find(code);
  if (known == p.python_codes.end()) stats_.add(Stat::kPythonCodeUnknown);
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

bool ModuleTracker::in_interpreter(const ProcessModules& p, uint64_t pc) {
  if (!p.python_interpreter_address) return false;
  const uint64_t anchor = *p.python_interpreter_address;
  for (const ProcessModules::Mapping& m : p.mappings) {
    if (anchor >= m.start && anchor < m.end) return pc >= m.start && pc < m.end;
  }
  return false;
}

void ModuleTracker::add_frame(const storage::FrameRow& row) {
  writer_.add_frame(row);
  if (frame_rows_.size() < static_cast<size_t>(row.id)) frame_rows_.resize(row.id);
  frame_rows_[static_cast<size_t>(row.id) - 1] = row;
}

std::optional<storage::StackFrame> ModuleTracker::stack_frame(int64_t frame_id) const {
  if (frame_id < 1 || static_cast<size_t>(frame_id) > frame_rows_.size()) return std::nullopt;
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
  return frame;
}

}  // namespace vramtrace::collector
