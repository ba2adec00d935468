// The ELF symbols of one module, sorted by address: the name of the symbol that holds an
// address, found by binary search.
//
// Why not dwfl_module_addrinfo() alone: libdwfl (elfutils 0.188) reads the module's whole
// symbol table for every address it is asked about. A PyTorch stack passes through libraries of
// hundreds of thousands of symbols (libtorch_cpu.so), so each new frame cost a scan of all of
// them, and symbolizing a training job's frames took a fifth of the collector's CPU
// (docs/performance.md). This reads the table once, when the module's first address is asked.
//
// The answer is libdwfl's. Where sized symbols cover the address, it is chosen among them as
// libdwfl's scan chooses (global and weak symbols first, the locals only where none of those
// covers it; then, in the table's order, a symbol replaces the one chosen so far when it starts
// nearer the address or binds more strongly, or starts at the same place and is smaller). An
// address that no sized symbol covers (a PLT stub, a hand-written assembly label, no symbol at
// all) is rare in a stack and is left to dwfl_module_addrinfo(), whose rules for sizeless labels
// depend on the sections.
#pragma once

#include <elfutils/libdwfl.h>

#include <cstddef>
#include <vector>

namespace vramtrace::collector {

class SymbolIndex {
 public:
  // Reads the symbols of `module` (libdwfl's table: .symtab, or .dynsym and the auxiliary
  // table of a MiniDebugInfo section). Names point into the module's ELF data: the index must
  // not outlive the module's Dwfl.
  explicit SymbolIndex(Dwfl_Module* module);

  // The name of the symbol holding `address` (a dwfl address, as dwfl_module_addrinfo takes
  // it), or nullptr where none does.
  const char* name_at(Dwarf_Addr address) const;

  // Sized symbols kept, and the addresses left to libdwfl so far: for tests.
  std::size_t sized_symbols() const { return globals_.sized.size() + locals_.sized.size(); }
  std::size_t asked_libdwfl() const { return asked_libdwfl_; }

 private:
  struct Symbol {
    Dwarf_Addr start, size;
    const char* name;
    int binding;   // libdwfl's preference: GLOBAL 3, WEAK 2, LOCAL 1, others 0
    int position;  // in the symbol table: libdwfl's scan order
  };
  // The sized symbols of one pass of libdwfl's search, sorted by start, each with the highest
  // end of it and those before it (the search stops where nothing before can reach the
  // address); and the starts of its sizeless ones, sorted.
  struct Pass {
    std::vector<Symbol> sized;
    std::vector<Dwarf_Addr> highest_end;
    std::vector<Dwarf_Addr> labels;
    void sort();
    // The symbol libdwfl's scan of this pass chooses among those covering `address`; null
    // where none covers it, or (*undecided set) where too many nested symbols do.
    const Symbol* covering(Dwarf_Addr address, bool* undecided) const;
    bool has_label_at(Dwarf_Addr address) const;
  };

  Dwfl_Module* module_;
  Pass globals_, locals_;
  mutable std::size_t asked_libdwfl_ = 0;
};

}  // namespace vramtrace::collector
