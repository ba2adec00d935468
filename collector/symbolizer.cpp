#include "symbolizer.h"

#include <cxxabi.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <utility>

#include "collector/symbol_index.h"

namespace vramtrace::collector {
namespace {

// nullptr selects libdwfl's default search path ":.debug:/usr/lib/debug": next to the file,
// in its .debug/ folder, and in the system debug tree, by build-id and by .gnu_debuglink.
// libdwfl wants a pointer to a mutable char*, hence no const.
char* g_default_debuginfo_path = nullptr;

// Offline callbacks: we hand libdwfl each file ourselves (dwfl_report_elf), so find_elf is only
// a formality; find_debuginfo is what locates separate debug files for stripped libraries.
// Where elfutils is built with debuginfod support, it also asks the servers listed in
// DEBUGINFOD_URLS when nothing is found locally; unset that variable to stay offline.
const Dwfl_Callbacks kOfflineCallbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_default_debuginfo_path,
};

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};
using DwflPtr = std::unique_ptr<Dwfl, DwflDeleter>;

// dwarf_getscopes_die returns a malloc'd array.
struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using ScopeArray = std::unique_ptr<Dwarf_Die, FreeDeleter>;

struct SourceLocation {
  std::string file;
  int line = 0;
};

// Only Itanium-mangled names are demangled: __cxa_demangle also accepts bare type encodings,
// so a C function called "f" would otherwise come back as "float".
std::string demangle(const char* name) {
  if (name == nullptr) return {};
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  std::unique_ptr<char, FreeDeleter> demangled(
      abi::__cxa_demangle(name, nullptr, nullptr, &status));
  return status == 0 && demangled ? std::string(demangled.get()) : std::string(name);
}

// libdw prefixes each line-table file with its directory entry; entry 0 is the compilation
// directory and the others may be relative to it. Joining with comp_dir serves to make a path
// absolute, so only an absolute comp_dir is joined. A relative one comes from
// -fdebug-prefix-map (distribution packages): libdw has already put it in front of the files
// of directory 0, and the other relative paths are relative to the mapped root, which nobody
// knows; they are left as in DWARF.
std::string join_comp_dir(const char* comp_dir, const char* file) {
  if (file == nullptr) return {};
  if (file[0] == '/' || comp_dir == nullptr || comp_dir[0] != '/') return file;
  return (std::filesystem::path(comp_dir) / file).string();
}

// The DIE that declares a function: an inlined or out-of-line instance points to its abstract
// instance through DW_AT_abstract_origin, and an out-of-class definition to its in-class
// declaration through DW_AT_specification. The declaration sits in its namespace or class and
// holds the parameters.
Dwarf_Die declaration_of(Dwarf_Die die) {
  Dwarf_Attribute attr;
  Dwarf_Die next;
  // Bounded: a malformed file could make the references loop.
  for (int hops = 0; hops < 8; ++hops) {
    if (dwarf_formref_die(dwarf_attr(&die, DW_AT_abstract_origin, &attr), &next) == nullptr &&
        dwarf_formref_die(dwarf_attr(&die, DW_AT_specification, &attr), &next) == nullptr) {
      break;
    }
    die = next;
  }
  return die;
}

// "ns::(anonymous namespace)::Class::" for a DIE declared in those scopes, as the demangler
// spells them.
std::string scope_prefix(Dwarf_Die* die) {
  Dwarf_Die* raw = nullptr;
  const int n = dwarf_getscopes_die(die, &raw);
  ScopeArray scopes(raw);
  std::string prefix;
  for (int i = n - 1; i >= 1; --i) {  // scopes[0] is `die` itself; the outermost comes last
    Dwarf_Die* scope = &scopes.get()[i];
    const char* name = dwarf_diename(scope);
    switch (dwarf_tag(scope)) {
      case DW_TAG_namespace:
        prefix += name != nullptr ? name : "(anonymous namespace)";
        prefix += "::";
        break;
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
        prefix += name != nullptr ? name : "{unnamed type}";
        prefix += "::";
        break;
      default:
        break;
    }
  }
  return prefix;
}

// A parameter type in the demangler's spelling ("double const*", "unsigned long"), with
// typedefs resolved as in mangled names; nullopt for shapes not handled here (arrays,
// function pointers, pointers to members), in which case the caller leaves out the whole
// parameter list rather than print a wrong one.
std::optional<std::string> type_name(Dwarf_Die* type, int depth = 0) {
  if (type == nullptr) return "void";
  if (depth > 16) return std::nullopt;
  Dwarf_Attribute attr;
  Dwarf_Die inner_mem;
  Dwarf_Die* inner = dwarf_formref_die(dwarf_attr(type, DW_AT_type, &attr), &inner_mem);
  const auto wrap = [&](const char* suffix) -> std::optional<std::string> {
    auto name = type_name(inner, depth + 1);
    if (name) *name += suffix;
    return name;
  };
  switch (dwarf_tag(type)) {
    case DW_TAG_typedef:
      return type_name(inner, depth + 1);
    case DW_TAG_pointer_type:
      return wrap("*");
    case DW_TAG_reference_type:
      return wrap("&");
    case DW_TAG_rvalue_reference_type:
      return wrap("&&");
    case DW_TAG_const_type:
      return wrap(" const");
    case DW_TAG_volatile_type:
      return wrap(" volatile");
    case DW_TAG_base_type:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_enumeration_type:
      if (const char* name = dwarf_diename(type)) return scope_prefix(type) + name;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

// "(int, double const*) const" from the declaration's parameters, skipping the artificial
// `this` but reading its constness.
std::optional<std::string> parameter_list(Dwarf_Die* declaration) {
  std::string list = "(";
  std::string qualifier;
  bool first = true;
  Dwarf_Die child;
  for (int more = dwarf_child(declaration, &child); more == 0;
       more = dwarf_siblingof(&child, &child)) {
    Dwarf_Attribute attr;
    Dwarf_Die type_mem;
    Dwarf_Die* type = dwarf_formref_die(dwarf_attr(&child, DW_AT_type, &attr), &type_mem);
    const int tag = dwarf_tag(&child);
    if (tag == DW_TAG_formal_parameter && dwarf_hasattr(&child, DW_AT_artificial)) {
      Dwarf_Die pointee_mem;
      Dwarf_Die* pointee =
          type ? dwarf_formref_die(dwarf_attr(type, DW_AT_type, &attr), &pointee_mem) : nullptr;
      if (pointee != nullptr && dwarf_tag(pointee) == DW_TAG_const_type) qualifier = " const";
      continue;
    }
    std::optional<std::string> name;
    if (tag == DW_TAG_formal_parameter) {
      name = type_name(type);
    } else if (tag == DW_TAG_unspecified_parameters) {
      name = "...";
    } else {
      continue;  // local variables, lexical blocks, template parameters
    }
    if (!name) return std::nullopt;
    list += first ? "" : ", ";
    list += *name;
    first = false;
  }
  return list + ")" + qualifier;
}

bool is_cplusplus(Dwarf_Die* die) {
  Dwarf_Die cu;
  if (dwarf_diecu(die, &cu, nullptr, nullptr) == nullptr) return false;
  switch (dwarf_srclang(&cu)) {
    case DW_LANG_C_plus_plus:
    case DW_LANG_C_plus_plus_03:
    case DW_LANG_C_plus_plus_11:
    case DW_LANG_C_plus_plus_14:
      return true;
    default:
      return false;
  }
}

// The name of a subprogram or inlined subroutine, spelled like the demangled ELF symbol so
// that a function reads the same whether it was inlined or not. A mangled linkage name
// demangles to exactly that. Other linkage names are C asm labels (glibc's "__GI_qsort" for
// qsort), so C functions go by DW_AT_name. GCC omits the linkage name for C++ functions that
// exist only inlined (and for extern "C" ones, which have plain names), so for C++ functions
// without external linkage the name is rebuilt from the declaration's scopes and parameter
// types.
std::string die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  for (int name_attr : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    const char* linkage = dwarf_formstring(dwarf_attr_integrate(die, name_attr, &attr));
    if (linkage != nullptr && std::string_view(linkage).starts_with("_Z")) {
      return demangle(linkage);
    }
  }
  Dwarf_Die declaration = declaration_of(*die);
  const char* name = dwarf_diename(&declaration);
  if (name == nullptr) return {};
  bool external = false;
  dwarf_formflag(dwarf_attr_integrate(die, DW_AT_external, &attr), &external);
  if (external || !is_cplusplus(&declaration)) return name;
  std::string qualified = scope_prefix(&declaration) + name;
  if (auto parameters = parameter_list(&declaration)) qualified += *parameters;
  return qualified;
}

// Appends to `path` the chain of DIEs below `parent` that contain `pc`, outermost first,
// descending into namespaces and classes, which have no addresses but hold functions.
// dwarf_getscopes would do this, but libdw 0.188's returns no scopes at all for pcs inside
// clang 14's DWARF 5 inlined subroutines; this walk also skips the subtrees of functions that
// do not contain pc.
bool find_scopes(Dwarf_Die* parent, Dwarf_Addr pc, std::vector<Dwarf_Die>& path, int depth = 0) {
  if (depth > 64) return false;  // bounded against malformed input
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return false;
  do {
    switch (dwarf_tag(&child)) {
      case DW_TAG_subprogram:
      case DW_TAG_inlined_subroutine:
      case DW_TAG_entry_point:
      case DW_TAG_lexical_block:
      case DW_TAG_try_block:
      case DW_TAG_catch_block:
        if (dwarf_haspc(&child, pc) == 1) {
          path.push_back(child);
          find_scopes(&child, pc, path, depth + 1);
          return true;
        }
        break;
      case DW_TAG_namespace:
      case DW_TAG_class_type:
      case DW_TAG_structure_type:
      case DW_TAG_union_type:
      case DW_TAG_module:
        if (find_scopes(&child, pc, path, depth + 1)) return true;
        break;
      default:
        break;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

// The functions containing `pc`, innermost first: zero or more DW_TAG_inlined_subroutine DIEs
// and then the concrete subprogram they were inlined into. These are the DIEs' physical
// parents; an inlined subroutine's abstract definition elsewhere plays no part.
std::vector<Dwarf_Die> enclosing_functions(Dwarf_Die* cu, Dwarf_Addr pc) {
  std::vector<Dwarf_Die> scopes;
  find_scopes(cu, pc, scopes);
  std::vector<Dwarf_Die> chain;
  for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope) {
    const int tag = dwarf_tag(&*scope);
    if (tag == DW_TAG_inlined_subroutine) {
      chain.push_back(*scope);
    } else if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) {
      chain.push_back(*scope);
      break;  // a concrete function is the outermost frame for this pc
    }
  }
  return chain;
}

// Where an inlined subroutine was called from, in its caller's terms.
SourceLocation call_site(Dwarf_Die* cu, Dwarf_Die* inlined) {
  SourceLocation where;
  Dwarf_Attribute attr;
  Dwarf_Word value = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &value) == 0) {
    where.line = static_cast<int>(value);
  }
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &value) == 0 &&
      dwarf_getsrcfiles(cu, &files, &file_count) == 0 && value < file_count) {
    where.file = join_comp_dir(dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)),
                               dwarf_filesrc(files, value, nullptr, nullptr));
  }
  return where;
}

}  // namespace

// One ELF file as it exists on disk, checked against the build-id the process reported, with
// the frames already computed for its addresses.
//
// Each module gets its own Dwfl rather than sharing one Dwfl with every module reported at
// a distinct fake base: we always know the module before we know the address, so libdwfl's
// address-to-module search would be wasted work; in a private Dwfl the module sits at its own
// ELF addresses, so rel_pc needs no translation beyond the file's bias; and two builds of the
// same path (from two processes in one trace) cannot collide. A Dwfl costs a few hundred
// bytes, and a trace has tens to hundreds of modules.
class Symbolizer::Module {
 public:
  enum class State { kUsable, kMissing, kBuildIdMismatch };

  Module(const std::string& path, std::string_view build_id) : build_id_(build_id) { open(path); }

  State state() const { return state_; }
  std::string_view build_id() const { return build_id_; }

  // Cached frames for rel_pc, or nullptr when they have not been computed yet.
  const std::vector<SymbolizedFrame>* find(uint64_t rel_pc) const {
    const auto it = frames_.find(rel_pc);
    return it == frames_.end() ? nullptr : &it->second;
  }
  // Stores frames for rel_pc. unordered_map never moves its elements, so the reference stays
  // valid as the cache grows.
  const std::vector<SymbolizedFrame>& insert(uint64_t rel_pc, std::vector<SymbolizedFrame> frames) {
    return frames_.emplace(rel_pc, std::move(frames)).first->second;
  }

  std::vector<SymbolizedFrame> resolve(uint64_t rel_pc) {
    if (state_ != State::kUsable) return {SymbolizedFrame{}};
    const Dwarf_Addr addr = rel_pc + bias_;

    std::vector<SymbolizedFrame> frames;
    SourceLocation where;
    Dwarf_Die cu;
    Dwarf_Addr cu_bias = 0;
    if (find_cu(addr, &cu, &cu_bias)) {
      const Dwarf_Addr pc = addr - cu_bias;
      where = line_table_location(&cu, pc);
      for (Dwarf_Die& function : enclosing_functions(&cu, pc)) {
        const bool inlined = dwarf_tag(&function) == DW_TAG_inlined_subroutine;
        frames.push_back({die_function_name(&function), where.file, where.line, inlined});
        // The next (outer) frame is at the place this one was inlined from.
        if (inlined) where = call_site(&cu, &function);
      }
    }
    // Without DWARF (or when the chain stopped at an inlined instance) the ELF symbol table
    // still names the function; it is also the fallback for a nameless subprogram DIE.
    if (frames.empty() || frames.back().inlined) {
      frames.push_back({symbol_name(addr), where.file, where.line, false});
    } else if (frames.back().function.empty()) {
      frames.back().function = symbol_name(addr);
    }
    return frames;
  }

 private:
  void open(const std::string& path) {
    state_ = State::kMissing;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    dwfl_.reset(dwfl_begin(&kOfflineCallbacks));
    if (!dwfl_) {
      ::close(fd);
      return;
    }
    dwfl_report_begin(dwfl_.get());
    // Base 0 with add_p_vaddr: a shared object is placed at its own ELF addresses (an
    // executable always is), so dwfl addresses are rel_pc plus the bias read back below.
    module_ = dwfl_report_elf(dwfl_.get(), path.c_str(), path.c_str(), fd, 0, true);
    if (module_ == nullptr) {
      ::close(fd);  // consumed by libdwfl only on success
      dwfl_.reset();
      return;
    }
    dwfl_report_end(dwfl_.get(), nullptr, nullptr);
    if (dwfl_module_getelf(module_, &bias_) == nullptr) return;

    if (!build_id_.empty()) {
      const unsigned char* bits = nullptr;
      GElf_Addr bits_vaddr = 0;
      const int length = dwfl_module_build_id(module_, &bits, &bits_vaddr);
      const std::string_view on_disk =
          length > 0 ? std::string_view(reinterpret_cast<const char*>(bits), length)
                     : std::string_view();
      if (on_disk != build_id_) {
        // Another build of this file: its symbols and lines would be plausible and wrong.
        state_ = State::kBuildIdMismatch;
        module_ = nullptr;
        dwfl_.reset();
        return;
      }
    }
    state_ = State::kUsable;
  }

  // The ELF symbol table's name for addr, from an index of it read at the first ask
  // (collector/symbol_index.h).
  std::string symbol_name(Dwarf_Addr addr) {
    if (!symbols_) symbols_.emplace(module_);
    return demangle(symbols_->name_at(addr));
  }

  // The compile unit covering `addr`, and the bias from dwfl to DWARF addresses. libdw 0.188
  // finds it through .debug_aranges only, which clang does not emit by default; for those
  // modules (and for addresses in no unit at all) a range index of the units is built from
  // their DW_AT_ranges / low_pc..high_pc on the first miss.
  bool find_cu(Dwarf_Addr addr, Dwarf_Die* cu, Dwarf_Addr* cu_bias) {
    if (Dwarf_Die* found = dwfl_module_addrdie(module_, addr, cu_bias)) {
      *cu = *found;
      return true;
    }
    if (!unit_ranges_) index_units();
    *cu_bias = unit_bias_;
    const Dwarf_Addr pc = addr - unit_bias_;
    auto after = std::upper_bound(unit_ranges_->begin(), unit_ranges_->end(), pc,
                                  [](Dwarf_Addr p, const UnitRange& r) { return p < r.start; });
    if (after == unit_ranges_->begin() || pc >= std::prev(after)->end) return false;
    *cu = std::prev(after)->cu;
    return true;
  }

  void index_units() {
    unit_ranges_.emplace();
    Dwarf_Die* cu = nullptr;
    Dwarf_Addr bias = 0;
    while ((cu = dwfl_module_nextcu(module_, cu, &bias)) != nullptr) {
      unit_bias_ = bias;  // one Dwarf per module, so one bias for all its units
      Dwarf_Addr base = 0, start = 0, end = 0;
      for (ptrdiff_t next = dwarf_ranges(cu, 0, &base, &start, &end); next > 0;
           next = dwarf_ranges(cu, next, &base, &start, &end)) {
        if (start < end) unit_ranges_->push_back({start, end, *cu});
      }
    }
    std::sort(unit_ranges_->begin(), unit_ranges_->end(),
              [](const UnitRange& a, const UnitRange& b) { return a.start < b.start; });
  }

  static SourceLocation line_table_location(Dwarf_Die* cu, Dwarf_Addr pc) {
    SourceLocation where;
    Dwarf_Line* line = dwarf_getsrc_die(cu, pc);
    if (line == nullptr) return where;
    Dwarf_Attribute attr;
    where.file = join_comp_dir(dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)),
                               dwarf_linesrc(line, nullptr, nullptr));
    dwarf_lineno(line, &where.line);
    return where;
  }

  std::string build_id_;
  State state_ = State::kMissing;
  DwflPtr dwfl_;
  Dwfl_Module* module_ = nullptr;  // owned by dwfl_
  GElf_Addr bias_ = 0;             // dwfl address minus ELF address

  struct UnitRange {
    Dwarf_Addr start, end;  // DWARF addresses, end exclusive
    Dwarf_Die cu;
  };
  std::optional<std::vector<UnitRange>> unit_ranges_;  // sorted by start; built on demand
  std::optional<SymbolIndex> symbols_;                 // built on demand
  Dwarf_Addr unit_bias_ = 0;                           // dwfl address minus DWARF address
  std::unordered_map<uint64_t, std::vector<SymbolizedFrame>> frames_;
};

Symbolizer::Symbolizer() = default;
Symbolizer::~Symbolizer() = default;

Symbolizer::Module& Symbolizer::module_for(const std::string& module_path,
                                           std::string_view build_id) {
  auto& builds = modules_[module_path];
  for (const auto& module : builds) {
    if (module->build_id() == build_id) return *module;
  }
  auto& module = builds.emplace_back(std::make_unique<Module>(module_path, build_id));
  switch (module->state()) {
    case Module::State::kMissing:
      ++stats_.modules_missing;
      break;
    case Module::State::kBuildIdMismatch:
      ++stats_.build_id_mismatch;
      break;
    case Module::State::kUsable:
      break;
  }
  return *module;
}

const std::vector<SymbolizedFrame>& Symbolizer::symbolize(const std::string& module_path,
                                                          std::string_view build_id,
                                                          uint64_t rel_pc) {
  Module& module = module_for(module_path, build_id);
  if (const auto* cached = module.find(rel_pc)) return *cached;
  std::vector<SymbolizedFrame> frames = module.resolve(rel_pc);
  bool resolved = false;
  for (const auto& frame : frames) resolved = resolved || !frame.function.empty();
  if (!resolved) ++stats_.unresolved;
  return module.insert(rel_pc, std::move(frames));
}

}  // namespace vramtrace::collector
