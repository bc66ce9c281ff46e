// symbols.cc: the function symbols of the loaded program, read from the ELF
// symbol tables of the objects that map them (dladdr1 names the object; the
// full .symtab when not stripped, else .dynsym). What the out-of-line check
// and the report use to name the code an address belongs to.
//
//   std::string fn = iov::bench::symbol_at(reinterpret_cast<const void*>(&iov::generic_iterate));
#include "symbols.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace iov::bench {

namespace {

struct elf_symbol {
  uintptr_t start;
  size_t size;
  std::string name;  // mangled
};

// The function symbols of one loaded object, at their run-time addresses.
std::vector<elf_symbol> read_symbols(const std::string& path, uintptr_t load_bias) {
  std::vector<elf_symbol> out;
  std::ifstream in(path, std::ios::binary);
  std::vector<char> file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (file.size() < sizeof(Elf64_Ehdr) || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0 ||
      file[EI_CLASS] != ELFCLASS64)
    return out;
  Elf64_Ehdr eh;
  std::memcpy(&eh, file.data(), sizeof eh);
  if (eh.e_shoff == 0 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
      eh.e_shoff + size_t{eh.e_shnum} * sizeof(Elf64_Shdr) > file.size())
    return out;
  std::vector<Elf64_Shdr> sh(eh.e_shnum);
  std::memcpy(sh.data(), file.data() + eh.e_shoff, sh.size() * sizeof(Elf64_Shdr));
  // The full table when the object is not stripped, else the dynamic one.
  for (uint32_t want : {uint32_t{SHT_SYMTAB}, uint32_t{SHT_DYNSYM}}) {
    for (const Elf64_Shdr& s : sh) {
      if (s.sh_type != want || s.sh_link >= sh.size() || s.sh_offset + s.sh_size > file.size())
        continue;
      const Elf64_Shdr& str = sh[s.sh_link];
      if (str.sh_offset + str.sh_size > file.size())
        continue;
      for (size_t k = 0; k < s.sh_size / sizeof(Elf64_Sym); k++) {
        Elf64_Sym sym;
        std::memcpy(&sym, file.data() + s.sh_offset + k * sizeof(Elf64_Sym), sizeof sym);
        unsigned type = ELF64_ST_TYPE(sym.st_info);
        if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str.sh_size ||
            (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
          continue;
        const char* name = file.data() + str.sh_offset + sym.st_name;
        out.push_back({load_bias + sym.st_value, sym.st_size,
                       std::string(name, strnlen(name, str.sh_size - sym.st_name))});
      }
    }
    if (!out.empty())
      break;
  }
  return out;
}

struct loaded_object {
  std::string path;
  std::vector<elf_symbol> symbols;
};

const loaded_object* object_of(const void* addr) {
  static std::mutex lock;
  static std::map<std::string, std::unique_ptr<loaded_object>> cache;
  Dl_info info;
  link_map* lm = nullptr;
  if (!dladdr1(addr, &info, reinterpret_cast<void**>(&lm), RTLD_DL_LINKMAP) || !lm)
    return nullptr;
  std::string path = lm->l_name && lm->l_name[0] ? lm->l_name : "/proc/self/exe";
  std::lock_guard<std::mutex> guard(lock);
  auto& slot = cache[path];
  if (!slot) {
    slot = std::make_unique<loaded_object>();
    slot->path = path == "/proc/self/exe" ? [] {
      char buf[4096];
      ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
      return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("/proc/self/exe");
    }() : path;
    slot->symbols = read_symbols(path, lm->l_addr);
  }
  return slot.get();
}

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

}  // namespace

std::string symbol_at(const void* addr, std::string* object, const void** start, size_t* size) {
  const loaded_object* obj = object_of(addr);
  if (!obj)
    return "";
  if (object)
    *object = obj->path;
  auto a = reinterpret_cast<uintptr_t>(addr);
  const elf_symbol* best = nullptr;
  for (const elf_symbol& s : obj->symbols) {
    bool inside = s.size ? (a >= s.start && a < s.start + s.size) : a == s.start;
    if (inside && (!best || s.size < best->size))
      best = &s;
  }
  if (!best)
    return "";
  if (start)
    *start = reinterpret_cast<const void*>(best->start);
  if (size)
    *size = best->size;
  return demangle(best->name);
}

bool program_has_symbol(const char* mangled_name) {
  const loaded_object* obj = object_of(reinterpret_cast<const void*>(&program_has_symbol));
  if (!obj)
    return false;
  for (const elf_symbol& s : obj->symbols)
    if (s.name == mangled_name)
      return true;
  return false;
}

}  // namespace iov::bench
