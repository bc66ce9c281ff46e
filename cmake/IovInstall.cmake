# IovInstall.cmake: what `cmake --install <build> --prefix <P>` puts in <P>:
#
#   include/iov/...                 every public header, and the generated
#                                   checks_mode.hpp
#   lib/libiov.a (or .so)           the compiled part
#   include/iov-checked/iov/checks_mode.hpp, lib/libiov_checked.a
#                                   the same built with IOV_CHECKS on
#                                   (iov::iov_checked, pkg-config iov-checked)
#   include/iov_drivers/, lib/libiov_drivers.a
#                                   the drivers component (src/drivers installs it)
#   lib/cmake/iov/                  iovConfig.cmake, its version file, the
#                                   iov:: targets and IovFindDeps.cmake
#   lib/pkgconfig/iov.pc, iov-checked.pc, iov-headers.pc
#                                   for non-CMake consumers
#   bin/...                         the programs subdirectories install
#   share/man/man1/                 their man pages (cmake/IovManPages.cmake)
#   share/doc/iov/                  README.md, docs/ and examples/
#
# Each rule names its component, the Debian package it goes to
# (cmake/IovPackaging.cmake): `lib` (headers, libraries, CMake and pkg-config
# files, the documentation) or `tools` (programs and man pages).
# Included once, at the end of the top-level CMakeLists.txt.

include(CMakePackageConfigHelpers)

set(IOV_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/iov")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/iov"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}" COMPONENT lib)
install(FILES "${IOV_GENERATED_INCLUDE_DIR}/iov/checks_mode.hpp"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/iov" COMPONENT lib)

# One export set per component, so that find_package(iov COMPONENTS headers)
# needs nothing of what the compiled library links.
install(TARGETS iov_headers EXPORT iovHeadersTargets COMPONENT lib)
if(NOT IOV_CHECKS_BUILT)
  install(FILES "${IOV_CHECKED_INCLUDE_DIR}/iov/checks_mode.hpp"
    DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}/iov-checked/iov" COMPONENT lib)
endif()
install(TARGETS iov iov_checked EXPORT iovTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT lib
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}" COMPONENT lib
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}" COMPONENT lib)

set(_iov_export_sets iovHeadersTargets iovTargets)
if(TARGET iov_drivers)
  list(APPEND _iov_export_sets iovDriversTargets)
endif()
foreach(set IN LISTS _iov_export_sets)
  install(EXPORT ${set}
    NAMESPACE iov::
    FILE ${set}.cmake
    DESTINATION "${IOV_CMAKE_DIR}"
    COMPONENT lib)
endforeach()

configure_package_config_file(
  "${PROJECT_SOURCE_DIR}/cmake/iovConfig.cmake.in"
  "${PROJECT_BINARY_DIR}/iovConfig.cmake"
  INSTALL_DESTINATION "${IOV_CMAKE_DIR}")
# 0.x: a minor release may break the API.
write_basic_package_version_file(
  "${PROJECT_BINARY_DIR}/iovConfigVersion.cmake"
  COMPATIBILITY SameMinorVersion)
install(FILES
    "${PROJECT_BINARY_DIR}/iovConfig.cmake"
    "${PROJECT_BINARY_DIR}/iovConfigVersion.cmake"
    "${PROJECT_SOURCE_DIR}/cmake/IovFindDeps.cmake"
  DESTINATION "${IOV_CMAKE_DIR}"
  COMPONENT lib)

# pkg-config: iov (everything), iov-checked (the same with IOV_CHECKS on) and
# iov-headers (the header-only part); the prefix is derived from the .pc
# file's own directory. The dependencies' flags are resolved now, through
# their own .pc files, and written out filtered rather than named in
# Requires: Abseil's add -DNOMINMAX (a Windows define) and liburcu-bp's
# -I/usr/include/x86_64-linux-gnu (a directory the compiler searches anyway),
# which a consumer must not get. Only the headers' dependencies (Abseil's
# Status, ISA-L) give compile flags; liburcu-bp and absl_strings are the
# compiled part's own, named for a static libiov's link line only.
set(IOV_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
file(RELATIVE_PATH IOV_PC_PREFIX_FROM_PCDIR "/prefix/${IOV_PC_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" IOV_PC_PREFIX_FROM_PCDIR "${IOV_PC_PREFIX_FROM_PCDIR}")
set(_iov_pc_public absl_status absl_statusor absl_span libisal)
set(_iov_pc_link ${_iov_pc_public})
if(NOT BUILD_SHARED_LIBS)
  list(APPEND _iov_pc_link absl_strings liburcu-bp)
endif()
# _iov_pc_flags(OUT --cflags|--libs MODULE...): the modules' flags, less
# -DNOMINMAX and the compiler's own search directories.
function(_iov_pc_flags out what)
  execute_process(COMMAND "${PKG_CONFIG_EXECUTABLE}" ${what} ${ARGN}
    OUTPUT_VARIABLE flags RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "iov: pkg-config ${what} ${ARGN} failed")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(kept "")
  foreach(f IN LISTS flags)
    if(f STREQUAL "-DNOMINMAX")
      continue()
    elseif(f MATCHES "^-I(.+)$" AND CMAKE_MATCH_1 IN_LIST CMAKE_CXX_IMPLICIT_INCLUDE_DIRECTORIES)
      continue()
    elseif(f MATCHES "^-L(.+)$" AND CMAKE_MATCH_1 IN_LIST CMAKE_CXX_IMPLICIT_LINK_DIRECTORIES)
      continue()
    endif()
    list(APPEND kept "${f}")
  endforeach()
  list(JOIN kept " " kept)
  if(kept)
    string(PREPEND kept " ")  # after the file's own flags
  endif()
  set(${out} "${kept}" PARENT_SCOPE)
endfunction()
if(NOT PKG_CONFIG_FOUND)
  message(FATAL_ERROR "iov: pkg-config is needed to write iov.pc")
endif()
_iov_pc_flags(IOV_PC_DEP_CFLAGS --cflags ${_iov_pc_public})
_iov_pc_flags(IOV_PC_DEP_LIBS --libs ${_iov_pc_link})
set(IOV_PC_NAME iov)
set(IOV_PC_DESCRIPTION "The Linux kernel's iov_iter in user space (C++20)")
set(IOV_PC_INCLUDES "-I\${includedir}")
set(IOV_PC_LIB iov)
configure_file("${PROJECT_SOURCE_DIR}/cmake/iov.pc.in" "${PROJECT_BINARY_DIR}/iov.pc" @ONLY)
set(IOV_PC_NAME iov-checked)
set(IOV_PC_DESCRIPTION "The Linux kernel's iov_iter in user space (C++20), built with IOV_CHECKS on")
if(IOV_CHECKS_BUILT)
  set(IOV_PC_INCLUDES "-I\${includedir}")
  set(IOV_PC_LIB iov)
else()
  set(IOV_PC_INCLUDES "-I\${includedir}/iov-checked -I\${includedir}")
  set(IOV_PC_LIB iov_checked)
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/iov.pc.in" "${PROJECT_BINARY_DIR}/iov-checked.pc" @ONLY)
configure_file("${PROJECT_SOURCE_DIR}/cmake/iov-headers.pc.in" "${PROJECT_BINARY_DIR}/iov-headers.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/iov.pc" "${PROJECT_BINARY_DIR}/iov-checked.pc"
    "${PROJECT_BINARY_DIR}/iov-headers.pc"
  DESTINATION "${IOV_PC_DIR}" COMPONENT lib)

# The documentation and the examples (consumers of the installed package: a
# CMakeLists.txt for find_package(iov) and the sources).
file(GLOB _iov_docs LIST_DIRECTORIES false CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*")
install(FILES "${PROJECT_SOURCE_DIR}/README.md" ${_iov_docs} DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT lib)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/examples/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples" COMPONENT lib)
# systemd units for iov-nbd's socket activation, with the program they start.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/systemd/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples/systemd"
  COMPONENT tools)
