// SymbolIndex against libdwfl's own address search: for real objects (this test's executable,
// built with gtest's weak and local symbols; libc and libstdc++ as the system ships them; the
// fixture libraries), every address at and around the edges of their symbols must get the name
// dwfl_module_addrinfo() gives it.
#include "collector/symbol_index.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace vramtrace::collector {
namespace {

char* g_debuginfo_path = nullptr;
const Dwfl_Callbacks kOffline = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &g_debuginfo_path,
};

struct DwflDeleter {
  void operator()(Dwfl* dwfl) const { dwfl_end(dwfl); }
};

// One file reported as the symbolizer reports it: at its own ELF addresses.
struct OpenModule {
  std::unique_ptr<Dwfl, DwflDeleter> dwfl;
  Dwfl_Module* module = nullptr;
};

OpenModule open_module(const std::string& path) {
  OpenModule open;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return open;
  open.dwfl.reset(dwfl_begin(&kOffline));
  dwfl_report_begin(open.dwfl.get());
  open.module = dwfl_report_elf(open.dwfl.get(), path.c_str(), path.c_str(), fd, 0, true);
  if (open.module == nullptr) ::close(fd);
  dwfl_report_end(open.dwfl.get(), nullptr, nullptr);
  return open;
}

std::string object_of(const void* address) {
  Dl_info info{};
  return dladdr(address, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "";
}

const char* dwfl_name_at(Dwfl_Module* module, Dwarf_Addr address) {
  GElf_Off offset = 0;
  GElf_Sym symbol;
  GElf_Word section = 0;
  Elf* elf = nullptr;
  Dwarf_Addr bias = 0;
  return dwfl_module_addrinfo(module, address, &offset, &symbol, &section, &elf, &bias);
}

// The addresses around each of (at most `most`, evenly chosen) symbols of the module: just
// below it, its first byte, its middle, its last byte and just past it.
std::vector<Dwarf_Addr> edges_of_symbols(Dwfl_Module* module, int most) {
  // Below and far above every symbol too.
  std::vector<Dwarf_Addr> addresses = {0, Dwarf_Addr(1) << 62};
  const int count = dwfl_module_getsymtab(module);
  const int step = count > most ? count / most : 1;
  for (int i = 1; i < count; i += step) {
    GElf_Sym symbol;
    GElf_Addr start = 0;
    GElf_Word section = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    if (dwfl_module_getsym_info(module, i, &symbol, &start, &section, &elf, &bias) == nullptr ||
        start == 0)
      continue;
    const Dwarf_Addr size = symbol.st_size;
    for (Dwarf_Addr a : {start - 1, start, start + size / 2, start + size - 1, start + size})
      addresses.push_back(a);
  }
  return addresses;
}

// Compares the index with libdwfl at each edge; returns how many addresses had a name.
int expect_same_names(const std::string& path, int most = 2000) {
  SCOPED_TRACE(path);
  OpenModule open = open_module(path);
  EXPECT_NE(open.module, nullptr) << "cannot open " << path;
  if (open.module == nullptr) return 0;
  const SymbolIndex index(open.module);
  EXPECT_GT(index.sized_symbols(), 0u);
  int named = 0, differing = 0;
  for (const Dwarf_Addr address : edges_of_symbols(open.module, most)) {
    const char* expected = dwfl_name_at(open.module, address);
    const char* got = index.name_at(address);
    if (expected != nullptr) ++named;
    const bool same =
        expected == nullptr ? got == nullptr : got != nullptr && std::strcmp(expected, got) == 0;
    if (!same && ++differing <= 5)
      ADD_FAILURE() << "at 0x" << std::hex << address << ": libdwfl "
                    << (expected ? expected : "(none)") << ", the index " << (got ? got : "(none)");
  }
  EXPECT_EQ(differing, 0);
  return named;
}

// Every address inside a sized function is answered from the index, never by libdwfl's scan:
// the index is what makes symbolizing a frame cost a binary search.
TEST(SymbolIndex, AnswersAddressesInsideFunctionsItself) {
  OpenModule open = open_module("/proc/self/exe");
  ASSERT_NE(open.module, nullptr);
  const SymbolIndex index(open.module);
  int functions = 0;
  for (int i = 1; i < dwfl_module_getsymtab(open.module); ++i) {
    GElf_Sym symbol;
    GElf_Addr start = 0;
    GElf_Word section = 0;
    Elf* elf = nullptr;
    Dwarf_Addr bias = 0;
    const char* name =
        dwfl_module_getsym_info(open.module, i, &symbol, &start, &section, &elf, &bias);
    if (name == nullptr || GELF_ST_TYPE(symbol.st_info) != STT_FUNC || symbol.st_size == 0 ||
        symbol.st_shndx == SHN_UNDEF)
      continue;
    ++functions;
    EXPECT_NE(index.name_at(start), nullptr);
    EXPECT_NE(index.name_at(start + symbol.st_size - 1), nullptr);
  }
  EXPECT_GT(functions, 1000);
  EXPECT_EQ(index.asked_libdwfl(), 0u);
}

TEST(SymbolIndex, NamesWhatLibdwflNamesInThisExecutable) {
  EXPECT_GT(expect_same_names("/proc/self/exe"), 1000);
}

TEST(SymbolIndex, NamesWhatLibdwflNamesInTheSystemLibraries) {
  EXPECT_GT(expect_same_names(object_of(reinterpret_cast<const void*>(&std::printf)), 500), 100);
  EXPECT_GT(expect_same_names(object_of(reinterpret_cast<const void*>(&std::terminate)), 500), 100);
}

TEST(SymbolIndex, NamesWhatLibdwflNamesInObjectsWithAndWithoutDebugInfo) {
  EXPECT_GT(expect_same_names(VT_PLAIN_LIB), 0);
  EXPECT_GT(expect_same_names(VT_NODEBUG_LIB), 0);
  EXPECT_GT(expect_same_names(VT_EXE), 0);
}

}  // namespace
}  // namespace vramtrace::collector
