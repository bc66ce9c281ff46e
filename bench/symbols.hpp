// symbols.hpp: naming the code an address belongs to, from the ELF symbol
// tables of the loaded objects (symbols.cc).
//
//   std::string object;
//   std::string fn = iov::bench::symbol_at(addr, &object);   // "" when unknown
#pragma once

#include <cstddef>
#include <string>

namespace iov::bench {

// The function symbol (demangled) holding a code address, found in the ELF
// symbol table of the object that maps it; "" when unknown. *object gets the
// object's path, *start and *size the symbol's range when non-null.
std::string symbol_at(const void* addr, std::string* object = nullptr, const void** start = nullptr,
                      size_t* size = nullptr);
// Is there a function of this (mangled) name in the program's symbol table?
bool program_has_symbol(const char* mangled_name);

}  // namespace iov::bench
