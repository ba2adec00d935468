// Symbolizer tests against real objects: fixture libraries built with known flags are loaded
// into this process, their functions hand back real return addresses, and those go through
// the same (path, build-id, rel_pc) translation the collector does. Expected lines are found
// by marker comments in the fixture sources, never hard-coded.
#include "collector/symbolizer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures/module_probe.h"

namespace vramtrace::collector {
namespace {

const std::string kFixtureDir = VT_FIXTURE_DIR;

// The 1-based line of the one line in `file` containing "MARKER: <name>".
int marker_line(const std::string& file, const std::string& name) {
  std::ifstream in(file);
  EXPECT_TRUE(in) << "cannot read " << file;
  const std::string marker = "MARKER: " + name;
  std::string text;
  int found = 0;
  for (int line = 1; std::getline(in, text); ++line) {
    if (text.find(marker) == std::string::npos) continue;
    EXPECT_EQ(found, 0) << marker << " appears twice in " << file;
    found = line;
  }
  EXPECT_NE(found, 0) << marker << " not found in " << file;
  return found;
}

// What the collector would pass for a return address: the module as the shim reports it,
// and rel_pc pointing into the call instruction.
struct Query {
  std::string path;
  std::string build_id;
  uint64_t rel_pc = 0;
};

Query query_for_return_address(const void* return_address) {
  const auto module = vramtrace_fixture::probe_module(return_address);
  if (!module) {
    ADD_FAILURE() << "no loaded module contains " << return_address;
    return {};
  }
  EXPECT_FALSE(module->build_id.empty()) << module->path << " has no build-id";
  return {module->path, module->build_id,
          reinterpret_cast<uintptr_t>(return_address) - 1 - module->load_bias};
}

struct DlCloser {
  void operator()(void* handle) const { dlclose(handle); }
};
using Library = std::unique_ptr<void, DlCloser>;

Library load(const char* path) {
  Library lib(dlopen(path, RTLD_NOW | RTLD_LOCAL));
  EXPECT_TRUE(lib) << dlerror();
  return lib;
}

// Calls the fixture entry point `symbol` in `lib`, which returns a return address.
template <class... Args>
const void* call_fixture(const Library& lib, const char* symbol, Args... args) {
  auto* entry = reinterpret_cast<void* (*)(Args...)>(dlsym(lib.get(), symbol));
  EXPECT_NE(entry, nullptr) << dlerror();
  return entry ? entry(args...) : nullptr;
}

std::string flip_first_byte(std::string build_id) {
  build_id.at(0) = static_cast<char>(build_id[0] ^ 0xff);
  return build_id;
}

std::vector<std::string> section_names(const std::string& path) {
  std::vector<std::string> names;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return names;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  size_t strings = 0;
  if (elf != nullptr && elf_getshdrstrndx(elf, &strings) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) == nullptr) continue;
      if (const char* name = elf_strptr(elf, strings, shdr.sh_name)) names.emplace_back(name);
    }
  }
  elf_end(elf);
  close(fd);
  return names;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

TEST(Symbolizer, FunctionFileAndLineInSharedLibrary) {
  const Library lib = load(VT_PLAIN_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_plain_address"));
  ASSERT_TRUE(std::filesystem::equivalent(q.path, VT_PLAIN_LIB));

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);

  const std::string source = kFixtureDir + "/plain_fixture.cpp";
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "vramtrace_fixture::Shape::area(int, double const*, void**) const");
  EXPECT_EQ(frames[0].file, source);
  EXPECT_EQ(frames[0].line, marker_line(source, "plain-call"));
  EXPECT_FALSE(frames[0].inlined);

  EXPECT_EQ(symbolizer.stats().modules_missing, 0);
  EXPECT_EQ(symbolizer.stats().build_id_mismatch, 0);
  EXPECT_EQ(symbolizer.stats().unresolved, 0);
}

// The inline fixture's return address lies in code inlined twice: innermost_helper (from a
// header) into middle_helper into outer_function.
void expect_inlined_frames(const char* library) {
  const Library lib = load(library);
  const Query q =
      query_for_return_address(call_fixture(lib, "vramtrace_fixture_inlined_address", 5));

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);

  const std::string header = kFixtureDir + "/inline_helpers.h";
  const std::string source = kFixtureDir + "/inline_fixture.cpp";
  const std::vector<SymbolizedFrame> expected = {
      {"vramtrace_fixture::innermost_helper(int)", header, marker_line(header, "innermost-call"),
       true},
      {"vramtrace_fixture::(anonymous namespace)::middle_helper(int)", source,
       marker_line(source, "middle-call"), true},
      {"vramtrace_fixture::outer_function(int)", source, marker_line(source, "outer-call"), false},
  };
  ASSERT_EQ(frames.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE("frame " + std::to_string(i));
    EXPECT_EQ(frames[i].function, expected[i].function);
    EXPECT_EQ(frames[i].file, expected[i].file);
    EXPECT_EQ(frames[i].line, expected[i].line);
    EXPECT_EQ(frames[i].inlined, expected[i].inlined);
  }
}

TEST(Symbolizer, InlinedFramesCarryTheirCallSites) {
  expect_inlined_frames(VT_INLINE_LIB);
}

TEST(Symbolizer, CompileUnitFoundWithoutDebugAranges) {
  ASSERT_FALSE(contains(section_names(VT_NOARANGES_LIB), ".debug_aranges"));
  ASSERT_TRUE(contains(section_names(VT_NOARANGES_LIB), ".debug_info"));
  expect_inlined_frames(VT_NOARANGES_LIB);
}

TEST(Symbolizer, RepeatedQueryReturnsTheCachedFrames) {
  const Library lib = load(VT_PLAIN_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_plain_address"));

  Symbolizer symbolizer;
  const auto& first = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);
  const auto& other = symbolizer.symbolize(q.path, q.build_id, q.rel_pc + 1);
  const auto& again = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);
  EXPECT_EQ(&first, &again);
  EXPECT_NE(&first, &other);
  EXPECT_FALSE(first.front().function.empty());
}

TEST(Symbolizer, MissingModuleGivesOneNamelessFrameAndIsCountedOnce) {
  Symbolizer symbolizer;
  const auto& frames =
      symbolizer.symbolize("/nonexistent/libvramtrace_nope.so", "\x01\x02", 0x1234);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0], SymbolizedFrame{});

  symbolizer.symbolize("/nonexistent/libvramtrace_nope.so", "\x01\x02", 0x5678);
  symbolizer.symbolize("/nonexistent/libvramtrace_nope.so", "\x01\x02", 0x1234);  // cached
  EXPECT_EQ(symbolizer.stats().modules_missing, 1);
  EXPECT_EQ(symbolizer.stats().build_id_mismatch, 0);
  EXPECT_EQ(symbolizer.stats().unresolved, 2);
}

TEST(Symbolizer, FileThatIsNotElfCountsAsMissing) {
  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(kFixtureDir + "/capture.h", "", 0x10);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].function.empty());
  EXPECT_EQ(symbolizer.stats().modules_missing, 1);
}

TEST(Symbolizer, BuildIdMismatchIsNotSymbolized) {
  const Library lib = load(VT_PLAIN_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_plain_address"));

  Symbolizer symbolizer;
  const auto& stale = symbolizer.symbolize(q.path, flip_first_byte(q.build_id), q.rel_pc);
  ASSERT_EQ(stale.size(), 1u);
  EXPECT_EQ(stale[0], SymbolizedFrame{});
  EXPECT_EQ(symbolizer.stats().build_id_mismatch, 1);
  EXPECT_EQ(symbolizer.stats().modules_missing, 0);
  EXPECT_EQ(symbolizer.stats().unresolved, 1);

  // The same path with the right build-id (another process of the same trace) still works.
  const auto& current = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);
  ASSERT_EQ(current.size(), 1u);
  EXPECT_EQ(current[0].function,
            "vramtrace_fixture::Shape::area(int, double const*, void**) const");
  EXPECT_EQ(symbolizer.stats().build_id_mismatch, 1);
}

TEST(Symbolizer, EmptyBuildIdSkipsTheCheck) {
  const Library lib = load(VT_PLAIN_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_plain_address"));

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(q.path, "", q.rel_pc);
  EXPECT_EQ(frames.at(0).function,
            "vramtrace_fixture::Shape::area(int, double const*, void**) const");
  EXPECT_EQ(symbolizer.stats().build_id_mismatch, 0);
}

TEST(Symbolizer, AddressOutsideAnyFunctionIsUnresolved) {
  const Library lib = load(VT_PLAIN_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_plain_address"));

  Symbolizer symbolizer;
  // rel_pc 0 is the ELF header: in the module, but in no function.
  const auto& frames = symbolizer.symbolize(q.path, q.build_id, 0);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_TRUE(frames[0].function.empty());
  EXPECT_EQ(symbolizer.stats().unresolved, 1);
  EXPECT_EQ(symbolizer.stats().modules_missing, 0);
}

TEST(Symbolizer, WithoutDebugInfoTheSymbolTableNamesTheFunction) {
  const Library lib = load(VT_NODEBUG_LIB);
  ASSERT_FALSE(contains(section_names(VT_NODEBUG_LIB), ".debug_info"));
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_nodebug_address"));

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "vramtrace_fixture::nodebug_function(long)");
  EXPECT_EQ(frames[0].file, "");
  EXPECT_EQ(frames[0].line, 0);
  EXPECT_EQ(symbolizer.stats().unresolved, 0);
}

TEST(Symbolizer, SeparateDebugFileFoundThroughDebuglink) {
  // The library itself must carry no DWARF, or this test would not need the debug file.
  const auto sections = section_names(VT_SPLIT_LIB);
  ASSERT_FALSE(contains(sections, ".debug_info"));
  ASSERT_TRUE(contains(sections, ".gnu_debuglink"));
  ASSERT_TRUE(std::filesystem::exists(std::string(VT_SPLIT_LIB) + ".debug"));

  const Library lib = load(VT_SPLIT_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_split_address"));

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);
  const std::string source = kFixtureDir + "/split_fixture.cpp";
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "vramtrace_fixture::split_function(unsigned long long)");
  EXPECT_EQ(frames[0].file, source);
  EXPECT_EQ(frames[0].line, marker_line(source, "split-call"));
}

TEST(Symbolizer, RelativeCompDirFromPrefixMapIsNotJoined) {
  const Library lib = load(VT_PREFIXMAP_LIB);
  const Query q = query_for_return_address(call_fixture(lib, "vramtrace_fixture_split_address"));

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(q.path, q.build_id, q.rel_pc);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "vramtrace_fixture::split_function(unsigned long long)");
  // Left as libdw composes it from the line table, without joining the relative comp_dir
  // ("build") once more. The compilers lay that table out differently: GCC puts the source in
  // directory entry 1 ("src/fixtures"), clang names it "src/fixtures/..." under entry 0.
#ifdef __clang__
  EXPECT_EQ(frames[0].file, "build/src/fixtures/split_fixture.cpp");
#else
  EXPECT_EQ(frames[0].file, "src/fixtures/split_fixture.cpp");
#endif
  EXPECT_EQ(frames[0].line, marker_line(kFixtureDir + "/split_fixture.cpp", "split-call"));
}

TEST(Symbolizer, NonPieExecutable) {
  {
    // Make sure the fixture is what it claims: an ET_EXEC with absolute addresses.
    std::ifstream exe(VT_EXE, std::ios::binary);
    Elf64_Ehdr header{};
    exe.read(reinterpret_cast<char*>(&header), sizeof header);
    ASSERT_TRUE(exe);
    ASSERT_EQ(header.e_type, ET_EXEC);
  }
  FILE* pipe = popen(VT_EXE, "r");
  ASSERT_NE(pipe, nullptr);
  char buffer[8192] = {};
  const size_t n = fread(buffer, 1, sizeof buffer - 1, pipe);
  ASSERT_EQ(pclose(pipe), 0);
  std::istringstream out(std::string(buffer, n));
  std::string path, build_id_hex, rel_pc_hex;
  ASSERT_TRUE(std::getline(out, path, '\t') && std::getline(out, build_id_hex, '\t') &&
              std::getline(out, rel_pc_hex));
  ASSERT_TRUE(std::filesystem::equivalent(path, VT_EXE));
  std::string build_id;
  for (size_t i = 0; i + 1 < build_id_hex.size(); i += 2) {
    build_id.push_back(static_cast<char>(std::stoi(build_id_hex.substr(i, 2), nullptr, 16)));
  }
  ASSERT_FALSE(build_id.empty());

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(path, build_id, std::stoull(rel_pc_hex, nullptr, 16));
  const std::string source = kFixtureDir + "/exe_fixture.cpp";
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "vramtrace_fixture::exe_function(unsigned short)");
  EXPECT_EQ(frames[0].file, source);
  EXPECT_EQ(frames[0].line, marker_line(source, "exe-call"));
}

// System libraries ship without DWARF; their debug files live under
// /usr/lib/debug/.build-id/xx/yyyy.debug when the distribution's -dbg package is installed.
TEST(Symbolizer, SystemLibraryThroughBuildIdDebugTree) {
  // Through libc's own handle: RTLD_DEFAULT could find a sanitizer's interceptor instead.
  const Library libc = load("libc.so.6");
  const void* qsort_entry = dlsym(libc.get(), "qsort");
  ASSERT_NE(qsort_entry, nullptr);
  const auto module = vramtrace_fixture::probe_module(qsort_entry);
  ASSERT_TRUE(module);
  ASSERT_FALSE(module->build_id.empty());
  std::string hex;
  for (const unsigned char byte : module->build_id) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", byte);
    hex += two;
  }
  const std::string debug_file =
      "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
  if (!std::filesystem::exists(debug_file)) {
    GTEST_SKIP() << "no debug file for " << module->path << " (" << debug_file << ")";
  }
  if (contains(section_names(module->path), ".debug_info")) {
    GTEST_SKIP() << module->path << " is not stripped; nothing to find";
  }

  Symbolizer symbolizer;
  const auto& frames = symbolizer.symbolize(
      module->path, module->build_id, reinterpret_cast<uintptr_t>(qsort_entry) - module->load_bias);
  ASSERT_FALSE(frames.empty());
  // DWARF names C functions by DW_AT_name, not by glibc's "__GI_qsort" asm label.
  EXPECT_EQ(frames.back().function, "qsort");
  // File and line can only come from the separate debug file.
  EXPECT_FALSE(frames.front().file.empty());
  EXPECT_GT(frames.front().line, 0);
}

}  // namespace
}  // namespace vramtrace::collector
