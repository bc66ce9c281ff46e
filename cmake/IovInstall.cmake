# IovInstall.cmake: what `cmake --install <build> --prefix <P>` puts in <P>:
#
#   include/iov/...                 every public header
#   lib/libiov.a (or .so)           the compiled part
#   lib/cmake/iov/                  iovConfig.cmake, its version file, the
#                                   iov:: targets and IovFindDeps.cmake
#   lib/pkgconfig/iov.pc            for non-CMake consumers
#   bin/...                         the programs subdirectories install
#
# Included once, at the end of the top-level CMakeLists.txt.

include(CMakePackageConfigHelpers)

set(IOV_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/iov")

install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/iov"
  DESTINATION "${CMAKE_INSTALL_INCLUDEDIR}")

install(TARGETS iov EXPORT iovTargets
  ARCHIVE DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  LIBRARY DESTINATION "${CMAKE_INSTALL_LIBDIR}"
  RUNTIME DESTINATION "${CMAKE_INSTALL_BINDIR}")

install(EXPORT iovTargets
  NAMESPACE iov::
  FILE iovTargets.cmake
  DESTINATION "${IOV_CMAKE_DIR}")

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
  DESTINATION "${IOV_CMAKE_DIR}")

# pkg-config: the prefix is derived from the .pc file's own directory.
set(IOV_PC_DIR "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
file(RELATIVE_PATH IOV_PC_PREFIX_FROM_PCDIR "/prefix/${IOV_PC_DIR}" "/prefix")
string(REGEX REPLACE "/$" "" IOV_PC_PREFIX_FROM_PCDIR "${IOV_PC_PREFIX_FROM_PCDIR}")
set(IOV_PC_REQUIRES "absl_status absl_statusor absl_span absl_strings libisal liburing")
if(BUILD_SHARED_LIBS)
  set(IOV_PC_REQUIRES_PRIVATE "liburcu-bp")
else()
  # A static libiov needs the RCU library on every link line.
  string(APPEND IOV_PC_REQUIRES " liburcu-bp")
  set(IOV_PC_REQUIRES_PRIVATE "")
endif()
configure_file("${PROJECT_SOURCE_DIR}/cmake/iov.pc.in" "${PROJECT_BINARY_DIR}/iov.pc" @ONLY)
install(FILES "${PROJECT_BINARY_DIR}/iov.pc" DESTINATION "${IOV_PC_DIR}")
