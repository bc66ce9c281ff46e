# IovFindDeps.cmake: finds the dependencies that ship no CMake package and
# wraps each in an imported target, the same way in iov's own build and in the
# installed iovConfig.cmake (which installs this file beside itself), so the
# exported iov::iov target names the same targets in both places:
#
#   include(IovFindDeps)
#   target_link_libraries(app PRIVATE iov_deps::isal)
#
# Targets: iov_deps::isal (ISA-L: libisal + isa-l.h) and iov_deps::urcu_bp
# (userspace RCU, bulletproof flavour), which the library needs; a part of
# the tree that needs another such library calls _iov_find_dep itself (the
# tools: liburing).
# Each is looked up through pkg-config first and by plain find_library /
# find_path when pkg-config or the .pc file is missing (ISA-L has no .pc on
# some distributions). Threads and absl have CMake packages and are
# found by the caller with find_package / find_dependency.

include_guard(GLOBAL)

find_package(PkgConfig QUIET)

# _iov_find_dep(<target> PC <module> LIBS <name>... HEADER <relative path>)
function(_iov_find_dep target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "PC;HEADER" "LIBS")
  if(TARGET ${target})
    return()
  endif()
  string(MAKE_C_IDENTIFIER "IOV_DEP_${arg_PC}" var)

  set(link "")
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(${var} QUIET IMPORTED_TARGET ${arg_PC})
    if(${var}_FOUND)
      set(link PkgConfig::${var})
    endif()
  endif()

  if(NOT link)
    find_path(${var}_INCLUDE_DIR NAMES ${arg_HEADER})
    set(libs "")
    foreach(name IN LISTS arg_LIBS)
      find_library(${var}_LIB_${name} NAMES ${name})
      if(NOT ${var}_LIB_${name})
        set(${var}_INCLUDE_DIR "${var}_INCLUDE_DIR-NOTFOUND")
        break()
      endif()
      list(APPEND libs "${${var}_LIB_${name}}")
    endforeach()
    if(NOT ${var}_INCLUDE_DIR)
      message(FATAL_ERROR
        "iov: ${arg_PC} not found (library ${arg_LIBS}, header ${arg_HEADER}). "
        "On Debian, run scripts/install-deps.")
    endif()
    add_library(${var}_raw INTERFACE IMPORTED)
    set_target_properties(${var}_raw PROPERTIES
      INTERFACE_INCLUDE_DIRECTORIES "${${var}_INCLUDE_DIR}"
      INTERFACE_LINK_LIBRARIES "${libs}")
    set(link ${var}_raw)
  endif()

  add_library(${target} INTERFACE IMPORTED)
  set_target_properties(${target} PROPERTIES INTERFACE_LINK_LIBRARIES "${link}")
endfunction()

_iov_find_dep(iov_deps::isal    PC libisal    LIBS isal               HEADER isa-l/crc.h)
_iov_find_dep(iov_deps::urcu_bp PC liburcu-bp LIBS urcu-bp urcu-common HEADER urcu-bp.h)
