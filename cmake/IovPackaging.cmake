# IovPackaging.cmake: Debian packages of the install, with CPack's DEB
# generator, one per install component (cmake/IovInstall.cmake):
#
#   libiov-dev   headers, the static libraries (libiov and libiov_checked,
#                IOV_CHECKS on), the CMake package and the
#                pkg-config files, README.md, docs/ and examples/ under
#                /usr/share/doc/iov
#   iov-tools    iov-nbd, iov-fio, iov-scan, iov-bench and their man pages
#
#   make package                                      # or, by hand:
#   cmake --build --preset release --target package   # build/release/packages/*.deb
#
# The tools' Depends are read from the programs by dpkg-shlibdeps (Debian's
# dpkg-dev); the library's are stated: a static libiov carries nothing of its
# dependencies, so what links against it needs their development packages,
# as find_package(iov) and pkg-config --libs iov name them. Packages are made
# of the default static build.

set(IOV_PACKAGE_MAINTAINER "iov maintainers <iov@invalid>" CACHE STRING
  "The Maintainer of the Debian packages")

# The Debian version: the project's, and the commit for a build from git
# (0.1.0+f6b5195; a dirty tree 0.1.0+f6b5195.dirty).
set(_iov_deb_version "${PROJECT_VERSION}")
if(NOT IOV_COMMIT STREQUAL "unknown")
  string(REGEX REPLACE "[^A-Za-z0-9.+~]" "." _iov_commit_part "${IOV_COMMIT}")
  string(APPEND _iov_deb_version "+${_iov_commit_part}")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME iov)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_CONTACT "${IOV_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_OUTPUT_FILE_PREFIX "${PROJECT_BINARY_DIR}/packages")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL lib tools)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_VERSION "${_iov_deb_version}")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)

set(CPACK_DEBIAN_LIB_PACKAGE_NAME libiov-dev)
set(CPACK_DEBIAN_LIB_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_LIB_PACKAGE_DEPENDS "libabsl-dev, libisal-dev, liburcu-dev")
set(CPACK_DEBIAN_LIB_PACKAGE_SUGGESTS "pkg-config, cmake, librange-v3-dev")
set(CPACK_COMPONENT_LIB_DESCRIPTION "the Linux kernel's iov_iter in user space (C++20): development files
The kernel's iov_iter, its walks, the operations built on them (copies,
CRC32C, zero scans), pages and folios, the xarray, RCU and registered
buffers, with the kernel's names and semantics; and the user-space ports of
the kernel's brd and null_blk drivers. Headers, static libraries (libiov,
and libiov_checked: the same built with the programming-error checks on),
the CMake package (find_package(iov)) and pkg-config files (iov,
iov-checked, iov-headers).")

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME iov-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SHLIBDEPS ON)
# iov-bench's chart is drawn by a Python script (iov-plot-bench).
set(CPACK_DEBIAN_TOOLS_PACKAGE_DEPENDS "python3")
set(CPACK_DEBIAN_TOOLS_PACKAGE_RECOMMENDS "librsvg2-bin, libbenchmark-tools, python3-scipy")
set(CPACK_DEBIAN_TOOLS_PACKAGE_SUGGESTS "libnbd-bin, fio")
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "iov's programs: NBD server, fio-style workloads, file scans, benchmarks
iov-nbd serves an in-memory brd or null_blk device over NBD (TLS, structured
replies, extended headers); iov-fio runs fio's workloads on such a device in
process; iov-scan prints the CRC32C and the data and zero extents of files
read through io_uring registered buffers; iov-bench runs the kernel's
iov_iter benchmarks and prints KTAP. The programs keep their debugging
information: iov-bench reads its own symbol table.")

if(BUILD_SHARED_LIBS)
  message(WARNING "iov: the Debian packages are made of a static build; with BUILD_SHARED_LIBS=ON "
                  "the programs need a libiov.so that no package carries")
endif()

include(CPack)
