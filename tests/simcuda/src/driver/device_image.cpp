#include "device_image.h"

#include <zstd.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

namespace simcuda::driver {
namespace {

constexpr std::uint32_t kWrapperMagic = 0x466243b1;
constexpr std::uint32_t kFatbinMagic = 0xba55ed50;
constexpr std::uint32_t kElfMagic = 0x464c457f;  // "\x7fELF"

// The layouts of the fat binary as nvcc writes them (fatbinary_section.h and the entries that
// follow the header).
struct Wrapper {
  std::uint32_t magic;
  std::uint32_t version;
  const void* data;
  const void* filename_or_fatbins;
};

struct FatbinHeader {
  std::uint32_t magic;
  std::uint16_t version;
  std::uint16_t header_size;
  std::uint64_t entries_size;  // the bytes of the entries after this header
};

struct EntryHeader {
  std::uint16_t kind;  // 1: PTX, 2: cubin
  std::uint16_t version;
  std::uint32_t header_size;
  std::uint32_t payload_size;
  std::uint32_t unknown_after_payload;
  std::uint32_t compressed_size;
  std::uint32_t unknown0;
  std::uint32_t unknown1;
  std::uint32_t architecture;
  std::uint32_t unknown2;
  std::uint32_t unknown3;
  std::uint64_t flags;
  std::uint64_t unknown4;
  std::uint64_t uncompressed_size;
};

constexpr std::uint16_t kEntryPtx = 1;
constexpr std::uint16_t kEntryCubin = 2;
constexpr std::uint64_t kCompressedLz4 = 0x2000;
constexpr std::uint64_t kCompressedZstd = 0x8000;

template <class T>
bool read_at(std::string_view bytes, std::size_t offset, T* out) {
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T)) return false;
  std::memcpy(out, bytes.data() + offset, sizeof(T));
  return true;
}

// ELF64, little-endian, as every cubin is.
struct Elf64Header {
  unsigned char ident[16];
  std::uint16_t type, machine;
  std::uint32_t version;
  std::uint64_t entry, phoff, shoff;
  std::uint32_t flags;
  std::uint16_t ehsize, phentsize, phnum, shentsize, shnum, shstrndx;
};

struct Elf64Section {
  std::uint32_t name, type;
  std::uint64_t flags, addr, offset, size;
  std::uint32_t link, info;
  std::uint64_t addralign, entsize;
};

struct Elf64Symbol {
  std::uint32_t name;
  unsigned char info, other;
  std::uint16_t shndx;
  std::uint64_t value, size;
};

constexpr std::uint32_t kSectionSymtab = 2;
constexpr std::uint32_t kSectionNobits = 8;
constexpr std::uint64_t kSectionAlloc = 0x2;
constexpr unsigned kSymbolObject = 1;
constexpr std::size_t kReservedSharedPerBlock = 1024;
constexpr unsigned kSymbolFunction = 2;

std::string_view c_string_at(std::string_view table, std::size_t offset) {
  if (offset >= table.size()) return {};
  const std::size_t end = table.find('\0', offset);
  return table.substr(offset,
                      end == std::string_view::npos ? std::string_view::npos : end - offset);
}

// .nv.info attributes: a format byte, an attribute byte, then a value whose size the format
// gives (EIFMT_SVAL: a 16-bit length and that many bytes).
constexpr std::uint8_t kInfoFormatNone = 0x01;
constexpr std::uint8_t kInfoFormatByte = 0x02;
constexpr std::uint8_t kInfoFormatHalf = 0x03;
constexpr std::uint8_t kInfoFormatSized = 0x04;
constexpr std::uint8_t kInfoMaxThreads = 0x05;
constexpr std::uint8_t kInfoRegisterCount = 0x2f;

// Calls visit(attribute, value bytes) for each attribute of an .nv.info section.
template <class Visit>
void for_each_info(std::string_view info, Visit&& visit) {
  std::size_t at = 0;
  while (at + 2 <= info.size()) {
    const auto format = static_cast<std::uint8_t>(info[at]);
    const auto attribute = static_cast<std::uint8_t>(info[at + 1]);
    at += 2;
    std::size_t size = 0;
    if (format == kInfoFormatNone) {
      size = 2;
    } else if (format == kInfoFormatByte || format == kInfoFormatHalf) {
      size = 2;
    } else if (format == kInfoFormatSized) {
      std::uint16_t length = 0;
      if (!read_at(info, at, &length)) return;
      at += 2;
      size = length;
    } else {
      return;  // a format this reader does not know: the rest cannot be framed
    }
    if (at + size > info.size()) return;
    visit(attribute, info.substr(at, size));
    at += size;
  }
}

std::optional<DeviceImage> read_cubin(std::string_view elf) {
  Elf64Header header;
  if (!read_at(elf, 0, &header) || header.ident[4] != 2 ||
      header.shentsize != sizeof(Elf64Section)) {
    return std::nullopt;
  }
  std::vector<Elf64Section> sections(header.shnum);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    if (!read_at(elf, header.shoff + i * sizeof(Elf64Section), &sections[i])) return std::nullopt;
  }
  auto section_bytes = [&](const Elf64Section& section) -> std::string_view {
    if (section.type == kSectionNobits || section.offset > elf.size() ||
        elf.size() - section.offset < section.size) {
      return {};
    }
    return elf.substr(section.offset, section.size);
  };
  if (header.shstrndx >= sections.size()) return std::nullopt;
  const std::string_view section_names = section_bytes(sections[header.shstrndx]);
  auto section_name = [&](const Elf64Section& section) {
    return c_string_at(section_names, section.name);
  };

  DeviceImage image;
  // Per-kernel sections are named after the kernel: .nv.shared.<name>, .nv.constant0.<name>.
  std::map<std::string, std::size_t, std::less<>> shared_by_kernel;
  std::map<std::string, std::size_t, std::less<>> constants_by_kernel;
  for (const Elf64Section& section : sections) {
    const std::string_view name = section_name(section);
    // Shared memory is carved per block at launch and local memory per thread: neither is
    // taken when the module loads.
    const bool per_launch = name.starts_with(".nv.shared") || name.starts_with(".nv.local");
    if ((section.flags & kSectionAlloc) != 0 && !per_launch) image.device_bytes += section.size;
    if (name.starts_with(".nv.shared.")) {
      shared_by_kernel[std::string(name.substr(11))] = section.size;
    } else if (name.starts_with(".nv.constant0.")) {
      constants_by_kernel[std::string(name.substr(14))] = section.size;
    }
  }

  std::vector<std::string> symbol_names;  // by symbol index, for the register counts
  std::size_t global_end = 0;
  for (const Elf64Section& table : sections) {
    if (table.type != kSectionSymtab || table.link >= sections.size()) continue;
    const std::string_view symbols = section_bytes(table);
    const std::string_view names = section_bytes(sections[table.link]);
    for (std::size_t at = 0; at + sizeof(Elf64Symbol) <= symbols.size();
         at += sizeof(Elf64Symbol)) {
      Elf64Symbol symbol;
      read_at(symbols, at, &symbol);
      const std::string_view name = c_string_at(names, symbol.name);
      symbol_names.emplace_back(name);
      // Undefined symbols (the driver's reserved shared memory, among them) are not the image's.
      if (name.empty() || symbol.shndx == 0) continue;
      const unsigned type = symbol.info & 0xf;
      if (type == kSymbolFunction) {
        KernelImage kernel;
        kernel.code_bytes = symbol.size;
        if (const auto shared = shared_by_kernel.find(name); shared != shared_by_kernel.end()) {
          kernel.static_shared = shared->second;
        }
        if (const auto constants = constants_by_kernel.find(name);
            constants != constants_by_kernel.end()) {
          kernel.constant_bytes = constants->second;
        }
        image.kernels.emplace(name, kernel);
      } else if (type == kSymbolObject) {
        // Globals are laid out one after the other, 256-byte aligned as the driver aligns
        // allocations; their sections are already counted in device_bytes.
        const std::size_t offset = (global_end + 255) / 256 * 256;
        image.globals.emplace(name, GlobalImage{offset, symbol.size});
        global_end = offset + symbol.size;
      }
    }
    break;  // a cubin has one symbol table
  }
  image.device_bytes = std::max(image.device_bytes, global_end);
  // The architecture is in the header's flags: bits 8-15 from ELF ABI version 8 (CUDA 12.8 on),
  // bits 0-7 before.
  image.architecture =
      static_cast<int>(header.ident[8] >= 8 ? (header.flags >> 8) & 0xff : header.flags & 0xff);
  // From sm_80 on, a kernel's shared memory section includes the 1 KiB the system reserves in
  // every block, which the driver reports apart from the kernel's own.
  if (image.architecture >= 80) {
    for (auto& [name, kernel] : image.kernels) {
      if (kernel.static_shared >= kReservedSharedPerBlock) {
        kernel.static_shared -= kReservedSharedPerBlock;
      }
    }
  }

  for (const Elf64Section& section : sections) {
    const std::string_view name = section_name(section);
    if (name == ".nv.info") {
      for_each_info(section_bytes(section), [&](std::uint8_t attribute, std::string_view value) {
        std::uint32_t symbol = 0;
        std::uint32_t count = 0;
        if (attribute != kInfoRegisterCount || !read_at(value, 0, &symbol) ||
            !read_at(value, 4, &count) || symbol >= symbol_names.size()) {
          return;
        }
        const auto kernel = image.kernels.find(symbol_names[symbol]);
        if (kernel != image.kernels.end()) kernel->second.registers = static_cast<int>(count);
      });
    } else if (name.starts_with(".nv.info.")) {
      const auto kernel = image.kernels.find(std::string(name.substr(9)));
      if (kernel == image.kernels.end()) continue;
      for_each_info(section_bytes(section), [&](std::uint8_t attribute, std::string_view value) {
        std::uint32_t x = 0;
        std::uint32_t y = 0;
        std::uint32_t z = 0;
        if (attribute == kInfoMaxThreads && read_at(value, 0, &x) && read_at(value, 4, &y) &&
            read_at(value, 8, &z)) {
          kernel->second.max_threads_per_block = static_cast<int>(x * y * z);
        }
      });
    }
  }
  return image;
}

// PTX is text that names its version and target; `.entry name(` declares a kernel.
std::optional<DeviceImage> read_ptx(std::string_view ptx) {
  if (ptx.find(".version") == std::string_view::npos ||
      ptx.find(".target") == std::string_view::npos) {
    return std::nullopt;
  }
  DeviceImage image;
  auto identifier_at = [&](std::size_t at) {
    while (at < ptx.size() && (ptx[at] == ' ' || ptx[at] == '\t')) ++at;
    std::size_t end = at;
    while (end < ptx.size() && (std::isalnum(static_cast<unsigned char>(ptx[end])) != 0 ||
                                ptx[end] == '_' || ptx[end] == '$')) {
      ++end;
    }
    return ptx.substr(at, end - at);
  };
  for (std::size_t at = ptx.find(".entry"); at != std::string_view::npos;
       at = ptx.find(".entry", at + 6)) {
    const std::string_view name = identifier_at(at + 6);
    if (!name.empty()) image.kernels.emplace(name, KernelImage{});
  }
  // What the compiled code would take, as a rough measure: the text's size.
  image.device_bytes = ptx.size();
  return image;
}

std::optional<std::string> decompress(std::string_view payload, const EntryHeader& entry) {
  if ((entry.flags & kCompressedZstd) != 0) {
    std::string out(entry.uncompressed_size, '\0');
    const std::size_t size =
        ZSTD_decompress(out.data(), out.size(), payload.data(), entry.compressed_size);
    if (ZSTD_isError(size)) return std::nullopt;
    out.resize(size);
    return out;
  }
  // LZ4 (CUDA 12 toolkits) is not read: the toolkit here compresses with zstd.
  if ((entry.flags & kCompressedLz4) != 0) return std::nullopt;
  return std::string(payload);
}

struct Candidate {
  std::uint16_t kind;
  std::uint32_t architecture;
  std::string_view payload;
  EntryHeader entry;
};

ImageResult read_fatbin(const unsigned char* data, int architecture) {
  FatbinHeader header;
  std::memcpy(&header, data, sizeof header);
  if (header.magic != kFatbinMagic) return {};
  const std::string_view entries(reinterpret_cast<const char*>(data) + header.header_size,
                                 header.entries_size);
  std::optional<Candidate> best_cubin;
  std::optional<Candidate> best_ptx;
  for (std::size_t at = 0; at < entries.size();) {
    EntryHeader entry;
    if (!read_at(entries, at, &entry) || entry.header_size < sizeof(EntryHeader)) return {};
    const std::size_t payload_at = at + entry.header_size;
    if (payload_at > entries.size() || entries.size() - payload_at < entry.payload_size) return {};
    const Candidate candidate{entry.kind, entry.architecture,
                              entries.substr(payload_at, entry.payload_size), entry};
    const int major = static_cast<int>(entry.architecture) / 10;
    if (entry.kind == kEntryCubin && major == architecture / 10 &&
        static_cast<int>(entry.architecture) <= architecture &&
        (!best_cubin || entry.architecture > best_cubin->architecture)) {
      best_cubin = candidate;
    }
    // PTX for an architecture up to the device's can be compiled for it.
    if (entry.kind == kEntryPtx && static_cast<int>(entry.architecture) <= architecture &&
        (!best_ptx || entry.architecture > best_ptx->architecture)) {
      best_ptx = candidate;
    }
    at = payload_at + entry.payload_size;
  }
  const std::optional<Candidate>& chosen = best_cubin ? best_cubin : best_ptx;
  if (!chosen) return {std::nullopt, ImageError::NoBinaryForDevice};
  const std::optional<std::string> payload = decompress(chosen->payload, chosen->entry);
  if (!payload) return {};
  std::optional<DeviceImage> image =
      chosen->kind == kEntryCubin ? read_cubin(*payload) : read_ptx(*payload);
  return {std::move(image)};
}

}  // namespace

ImageResult read_device_image(const void* code, int architecture) {
  if (code == nullptr) return {};
  std::uint32_t magic;
  std::memcpy(&magic, code, sizeof magic);
  if (magic == kWrapperMagic) {
    Wrapper wrapper;
    std::memcpy(&wrapper, code, sizeof wrapper);
    if (wrapper.data == nullptr) return {};
    return read_fatbin(static_cast<const unsigned char*>(wrapper.data), architecture);
  }
  if (magic == kFatbinMagic)
    return read_fatbin(static_cast<const unsigned char*>(code), architecture);
  if (magic == kElfMagic) {
    // A cubin handed over alone carries its size in its section headers; the last one ends it.
    Elf64Header header;
    std::memcpy(&header, code, sizeof header);
    const std::size_t size = header.shoff + std::size_t{header.shnum} * header.shentsize;
    ImageResult result{read_cubin(std::string_view(static_cast<const char*>(code), size))};
    return result;
  }
  const char* text = static_cast<const char*>(code);
  return {read_ptx(std::string_view(text, std::strlen(text)))};
}

}  // namespace simcuda::driver
