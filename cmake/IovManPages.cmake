# IovManPages.cmake: the section 1 man pages of the programs, written once in
# scdoc (docs/man/NAME.1.scd) and turned into roff by the build
# (scripts/scd2man; Debian's scdoc), installed to share/man/man1 with the
# programs (the `tools` component), and checked against each program by a
# test: every option of --help described in the page and the reverse, the
# page rendered by `man -l` without a warning, --version well formed
# (scripts/check-man-page).
#
#   cmake --build --preset release --target iov-man-pages   # build/release/man/*.1
#   man -l build/release/man/iov-nbd.1
#
# Included at the end of the top-level CMakeLists.txt, once the programs exist.

find_program(IOV_SCDOC scdoc)
if(NOT IOV_SCDOC)
  message(WARNING "iov: scdoc not found (Debian: apt-get install scdoc): no man pages are built or installed")
  return()
endif()

set(_iov_man_pages)
foreach(program iov-nbd iov-fio iov-scan iov-bench)
  set(source "${PROJECT_SOURCE_DIR}/docs/man/${program}.1.scd")
  if(NOT TARGET ${program} OR NOT EXISTS "${source}")
    continue()
  endif()
  set(page "${PROJECT_BINARY_DIR}/man/${program}.1")
  add_custom_command(OUTPUT "${page}"
    COMMAND "${PROJECT_SOURCE_DIR}/scripts/scd2man" "${source}" "${page}"
    DEPENDS "${source}" "${PROJECT_SOURCE_DIR}/scripts/scd2man"
    COMMENT "man page ${program}.1"
    VERBATIM)
  list(APPEND _iov_man_pages "${page}")
  if(IOV_BUILD_TESTS)
    add_test(NAME man_page_${program}
             COMMAND "${PROJECT_SOURCE_DIR}/scripts/check-man-page" "$<TARGET_FILE:${program}>" "${page}")
    set_tests_properties(man_page_${program} PROPERTIES LABELS docs)
  endif()
endforeach()

add_custom_target(iov-man-pages ALL DEPENDS ${_iov_man_pages})
install(FILES ${_iov_man_pages} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1" COMPONENT tools)
