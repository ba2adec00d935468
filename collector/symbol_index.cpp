#include "collector/symbol_index.h"

#include <gelf.h>

#include <algorithm>

namespace vramtrace::collector {
namespace {

int binding_of(const GElf_Sym& symbol) {
  switch (GELF_ST_BIND(symbol.st_info)) {
    case STB_GLOBAL:
      return 3;
    case STB_WEAK:
      return 2;
    case STB_LOCAL:
      return 1;
    default:
      return 0;
  }
}

// The symbols libdwfl's address search considers at all.
bool names_code_or_data(const char* name, const GElf_Sym& symbol) {
  const int type = GELF_ST_TYPE(symbol.st_info);
  return name != nullptr && name[0] != '\0' && symbol.st_shndx != SHN_UNDEF &&
         type != STT_SECTION && type != STT_FILE && type != STT_TLS;
}

}  // namespace

SymbolIndex::SymbolIndex(Dwfl_Module* module) : module_(module) {
  const int count = dwfl_module_getsymtab(module);
  // All locals come before the globals in the table; 0: a table of globals alone.
  const int first_global = dwfl_module_getsymtab_first_global(module);
  for (int i = 1; i < count; ++i) {
    GElf_Sym symbol;
    GElf_Addr address = 0;
    GElf_Word section = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name = dwfl_module_getsym_info(module, i, &symbol, &address, &section, &elf, &bias);
    if (!names_code_or_data(name, symbol)) continue;
    Pass& pass = i >= first_global ? globals_ : locals_;
    if (symbol.st_size == 0) {
      pass.labels.push_back(address);
    } else {
      pass.sized.push_back({address, symbol.st_size, name, binding_of(symbol), i});
    }
  }
  globals_.sort();
  locals_.sort();
}

void SymbolIndex::Pass::sort() {
  std::sort(sized.begin(), sized.end(),
            [](const Symbol& a, const Symbol& b) { return a.start < b.start; });
  highest_end.resize(sized.size());
  Dwarf_Addr highest = 0;
  for (std::size_t i = 0; i < sized.size(); ++i) {
    highest = std::max(highest, sized[i].start + sized[i].size);
    highest_end[i] = highest;
  }
  std::sort(labels.begin(), labels.end());
}

const SymbolIndex::Symbol* SymbolIndex::Pass::covering(Dwarf_Addr address, bool* undecided) const {
  // Those starting at or below the address, nearest first, until none before can reach it.
  std::size_t i = static_cast<std::size_t>(
      std::upper_bound(sized.begin(), sized.end(), address,
                       [](Dwarf_Addr a, const Symbol& s) { return a < s.start; }) -
      sized.begin());
  const Symbol* chosen = nullptr;
  const Symbol* candidates[64];
  int count = 0;
  for (; i > 0 && highest_end[i - 1] > address; --i) {
    const Symbol& symbol = sized[i - 1];
    if (address - symbol.start >= symbol.size) continue;
    if (count == 64) {  // nested that deep: libdwfl decides
      *undecided = true;
      return nullptr;
    }
    candidates[count++] = &symbol;
  }
  // libdwfl's scan, in the table's order.
  std::sort(candidates, candidates + count,
            [](const Symbol* a, const Symbol* b) { return a->position < b->position; });
  for (int c = 0; c < count; ++c) {
    const Symbol& s = *candidates[c];
    if (chosen == nullptr || chosen->start < s.start || chosen->binding < s.binding ||
        (chosen->start == s.start && ((chosen->size > s.size && chosen->binding <= s.binding) ||
                                      (chosen->size >= s.size && chosen->binding < s.binding))))
      chosen = &s;
  }
  return chosen;
}

bool SymbolIndex::Pass::has_label_at(Dwarf_Addr address) const {
  return std::binary_search(labels.begin(), labels.end(), address);
}

const char* SymbolIndex::name_at(Dwarf_Addr address) const {
  bool undecided = false;
  if (const Symbol* symbol = globals_.covering(address, &undecided)) return symbol->name;
  // libdwfl keeps to a global label exactly at the address over any local.
  if (!undecided && !globals_.has_label_at(address)) {
    if (const Symbol* symbol = locals_.covering(address, &undecided)) return symbol->name;
  }
  ++asked_libdwfl_;
  GElf_Off offset = 0;
  GElf_Sym symbol;
  GElf_Word section = 0;
  Elf* elf = nullptr;
  Dwarf_Addr bias = 0;
  return dwfl_module_addrinfo(module_, address, &offset, &symbol, &section, &elf, &bias);
}

}  // namespace vramtrace::collector
