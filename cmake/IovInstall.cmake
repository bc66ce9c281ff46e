# IovInstall.cmake: what `cmake --install <build> --prefix <P>` puts in <P>:
#
#   include/iov/...                 every public header, and the generated
#                                   checks_mode.hpp
#   lib/libiov.a (or .so)           the compiled part
#   include/iov_drivers/, lib/libiov_drivers.a
#                                   the drivers component (src/drivers installs it)
#   lib/cmake/iov/                  iovConfig.cmake, its version file, the
#                                   iov:: targets and IovFindDeps.cmake
#   lib/pkgconfig/iov.pc            for non-CMake consumers
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
install(TARGETS iov EXPORT iovTargets
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

# pkg-config: iov (everything) and iov-headers (the header-only part); the
# prefix is derived from the .pc file's own directory.
set(IOV_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
file(RELATIVE_PATH IOV_PC_PREFIX_FROM_PCDIR "/prefix/${IOV_PC_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" IOV_PC_PREFIX_FROM_PCDIR "${IOV_PC_PREFIX_FROM_PCDIR}")
set(IOV_PC_REQUIRES "iov-headers absl_status absl_statusor absl_span libisal")
if(BUILD_SHARED_LIBS)
  set(IOV_PC_REQUIRES_PRIVATE "absl_strings liburcu-bp")
else()
  # A static libiov needs its private dependencies on every link line.
  string(APPEND IOV_PC_REQUIRES " absl_strings liburcu-bp")
  set(IOV_PC_REQUIRES_PRIVATE "")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/iov.pc.in" "${PROJECT_BINARY_DIR}/iov.pc" @ONLY)
configure_file("${PROJECT_SOURCE_DIR}/cmake/iov-headers.pc.in" "${PROJECT_BINARY_DIR}/iov-headers.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/iov.pc" "${PROJECT_BINARY_DIR}/iov-headers.pc" DESTINATION "${IOV_PC_DIR}"
  COMPONENT lib)

# The documentation and the examples (consumers of the installed package: a
# CMakeLists.txt for find_package(iov) and the sources).
file(GLOB _iov_docs LIST_DIRECTORIES false CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/docs/*")
install(FILES "${PROJECT_SOURCE_DIR}/README.md" ${_iov_docs} DESTINATION "${CMAKE_INSTALL_DOCDIR}" COMPONENT lib)
install(DIRECTORY "${PROJECT_SOURCE_DIR}/examples/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples" COMPONENT lib)
# systemd units for iov-nbd's socket activation, with the program they start.
install(DIRECTORY "${PROJECT_SOURCE_DIR}/docs/systemd/" DESTINATION "${CMAKE_INSTALL_DOCDIR}/examples/systemd"
  COMPONENT tools)
